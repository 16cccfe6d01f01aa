package bench_test

import (
	"testing"

	"github.com/rdmabench/rdmabench/bench/benchtest"
	"github.com/rdmabench/rdmabench/bench/ops"
	"github.com/rdmabench/rdmabench/result"
)

// The plan's mode reaches the loop and the loop's registrations reach the result (the
// fake engine's numbers are synthetic: this is the plumbing).
func TestPipeMR(t *testing.T) {
	r := benchtest.NewRig(t, ops.All, nil)
	c := dial(t, r, "")
	for _, tc := range []struct {
		cfg                          result.Config
		regs, hits, misses, deregsAW uint64
	}{
		{result.Config{Op: "write", Test: result.BW, MR: "per-io", Iterations: 300, MsgSizeBytes: 4096, SQDepth: 16, Verify: true}, 300, 0, 0, 0},
		{result.Config{Op: "read", Test: result.BW, MR: "per-io", Iterations: 300, MsgSizeBytes: 64, Verify: true}, 300, 0, 0, 0},
		// 64-byte messages cycle through 64 slots: a cache of 64 holds them all ...
		{result.Config{Op: "write", Test: result.BW, MR: "cache", MRCache: 64, Iterations: 300, MsgSizeBytes: 64, SQDepth: 16}, 64, 236, 64, 64},
		// ... one of 16 misses every time.
		{result.Config{Op: "read", Test: result.BW, MR: "cache", Iterations: 300, MsgSizeBytes: 64, SQDepth: 16}, 300, 0, 300, 16},
		{result.Config{Op: "write", Test: result.BW, MR: "pool", Iterations: 300, MsgSizeBytes: 64}, 0, 0, 0, 0},
	} {
		res, err := run(t, c, tc.cfg)
		name := tc.cfg.Op + " bw --mr " + tc.cfg.MR
		if err != nil || res.Error != "" {
			t.Fatalf("%s: %v (%s)", name, err, res.Error)
		}
		if tc.cfg.Verify && (res.Verify == nil || !res.Verify.OK) {
			t.Errorf("%s: verification %+v", name, res.Verify)
		}
		m := res.MR
		if tc.cfg.MR == "pool" {
			if m != nil || res.Config.MR != "" {
				t.Errorf("%s: config mr %q, result mr %+v", name, res.Config.MR, m)
			}
			continue
		}
		switch {
		case m == nil:
			t.Errorf("%s: no mr in the result", name)
		case m.Mode != tc.cfg.MR || res.Config.MR != tc.cfg.MR || res.Config.CQMod != 1 && tc.cfg.MR == "per-io":
			t.Errorf("%s: mr %+v, config %+v", name, m, res.Config)
		case m.Regs != tc.regs || m.Deregs != m.Regs || m.Hits != tc.hits || m.Misses != tc.misses || m.DeregsAfterWindow != tc.deregsAW:
			t.Errorf("%s: mr %+v, want %d registrations, %d hits, %d misses, %d deregistered after the window", name, m, tc.regs, tc.hits, tc.misses, tc.deregsAW)
		case m.WindowShare <= 0 || m.WindowShare > 1:
			t.Errorf("%s: window share %v", name, m.WindowShare)
		}
	}
}
