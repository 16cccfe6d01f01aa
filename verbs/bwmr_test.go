package verbs

import (
	"strings"
	"testing"
)

// What the loop that registers in the loop cannot run is refused before it starts
// (on a device and in the fake engine alike).
func TestCheckMR(t *testing.T) {
	ok := BWParams{SQDepth: 16, PostList: 1, CQMod: 1, MRCache: 16}
	for _, tc := range []struct {
		mode string
		nqp  int
		mod  func(*BWParams)
		want string // "" = fine
	}{
		{"", 8, func(p *BWParams) { p.PostList, p.Events, p.Rounds = 4, true, true }, ""},
		{MRModePool, 8, nil, ""},
		{MRModePerIO, 1, nil, ""},
		{MRModeCache, 1, func(p *BWParams) { p.CQMod = 16 }, ""},
		{"bogus", 1, nil, `MR mode "bogus"`},
		{MRModePerIO, 2, nil, "one QP (the session has 2)"},
		{MRModeCache, 1, func(p *BWParams) { p.PostList = 2 }, "one WR per post"},
		{MRModePerIO, 1, func(p *BWParams) { p.Events = true }, "busy-polling"},
		{MRModePerIO, 1, func(p *BWParams) { p.Rounds = true }, "no rounds"},
		{MRModePerIO, 1, func(p *BWParams) { p.PerQP = true }, "one QP"},
		{MRModePerIO, 1, func(p *BWParams) { p.CQMod = 2 }, "cq-mod 2, want 1"},
		{MRModeCache, 1, func(p *BWParams) { p.MRCache = 15 }, "15 entries for 16 WRs in flight"},
	} {
		p := ok
		p.MR = tc.mode
		if tc.mod != nil {
			tc.mod(&p)
		}
		err := p.CheckMR(tc.nqp)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q over %d QPs: %v", tc.mode, tc.nqp, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%q over %d QPs: want an error with %q, got %v", tc.mode, tc.nqp, tc.want, err)
		}
	}
	if MRInLoop("") || MRInLoop(MRModePool) || !MRInLoop(MRModePerIO) || !MRInLoop(MRModeCache) {
		t.Error("MRInLoop: per-io and cache only")
	}
}
