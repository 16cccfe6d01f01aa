package report

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/internal/plaintest"
	"github.com/rdmabench/rdmabench/sweep"
)

// demoTuned is the tuned report of a real demo (make demo on the test bed), the HTML
// report's fixture.
func demoTuned(t *testing.T) Tuned {
	t.Helper()
	b, err := os.ReadFile("html/testdata/demo4-tuned.json")
	if err != nil {
		t.Fatal(err)
	}
	tu, ok, err := ReadTuned(b)
	if !ok || err != nil {
		t.Fatalf("demo4-tuned.json: ok %v, %v", ok, err)
	}
	return tu
}

// afterTable is what comes after a boxed table's last line.
func afterTable(t *testing.T, s string) []string {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "└") {
			return lines[i+1:]
		}
	}
	t.Fatalf("no table:\n%s", s)
	return nil
}

// The sweep's default output on a real demo: the tuned table first, one row per
// parameter (the QP timeout too: the demo swept it), then a few lines, none wider than
// 100 columns; nothing of the rest (measurements, optima, open comparisons, notes).
func TestTunedSummaryLeadsWithTheTable(t *testing.T) {
	var out bytes.Buffer
	if err := TunedSummary(&out, demoTuned(t), FormatTable); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	want := `Tuned parameters for Soft-RoCE (rxe) (profile rxe), objective bw
┌─────────────────┬───────┬───────┬────────────────────┬───────────────────┐
│    parameter    │ WRITE │ READ  │      article       │      verdict      │
├─────────────────┼───────┼───────┼────────────────────┼───────────────────┤
│ message size    │ 64K ? │ 64K ? │ 64K-128K / 32K-64K │ cannot tell       │
│ SQ depth        │ 512 ? │ 512 ? │ 512 / 1024         │ cannot tell / n/a │
│ buffer offset   │ 0 ?   │ 0 ?   │ aligned            │ cannot tell       │
│ CQ moderation   │ 1 ?   │ 1 ?   │ 8-16 / 4-8         │ cannot tell       │
│ post list       │ 1 ?   │ 1 ?   │ -                  │ -                 │
│ QP timeout (-u) │ 14 ?  │ 14 ?  │ -                  │ -                 │
└─────────────────┴───────┴───────┴────────────────────┴───────────────────┘
write: equal within +-100% (noise 14.8% a run); budget 273 of 280 s
  gain over perftest's defaults: equal; over the article's: cannot tell
read: equal within +-21% (noise 8.8% a run); budget 272 of 280 s
  gain over perftest's defaults: cannot tell; over the article's: cannot tell
"?": not decided; "a / b": WRITE's / READ's; all the numbers and notes: --verbose, --json, --html
`
	if s != want {
		t.Errorf("default output:\n%s\nwant:\n%s", s, want)
	}
	if n := len(afterTable(t, s)); n > 8 {
		t.Errorf("%d lines after the table, want <= 8:\n%s", n, s)
	}
	for i, l := range strings.Split(s, "\n") {
		if n := len([]rune(l)); n > 100 {
			t.Errorf("line %d is %d columns wide, want <= 100:\n%s", i, n, l)
		}
	}
	for _, not := range []string{"Measured in the same", "Optimum per objective", "probe", "inconclusive", "queue-bound", "tainted", "descent"} {
		if strings.Contains(s, not) {
			t.Errorf("the default output has %q (--verbose's):\n%s", not, s)
		}
	}
}

// --verbose (TunedShow) is the whole report as it was before the default became the
// summary: the demo's, byte for byte.
func TestTunedShowIsTheWholeReport(t *testing.T) {
	want, err := os.ReadFile("testdata/demo4-tuned-verbose.txt")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := TunedShow(&out, demoTuned(t), FormatTable); err != nil {
		t.Fatal(err)
	}
	if out.String() != string(want) {
		t.Errorf("the whole report changed:\n%s\nwant (testdata/demo4-tuned-verbose.txt):\n%s", out.String(), want)
	}
}

// A report from a profile that does not sweep the QP timeout has no row for it; the
// summary says where the sweep stopped because it had decided, and the gains with their
// intervals where they are beyond no change.
func TestTunedSummaryDecided(t *testing.T) {
	var out bytes.Buffer
	if err := TunedSummary(&out, tunedFixture(t), FormatTable); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{
		"│ message size  │ 256K  │ -     │ 64K-128K / 32K-64K │ differs / -               │",
		"│ CQ moderation │ 16    │ 1 ?   │ 8-16 / 4-8         │ agrees / article's better │",
		"write: equal within +-2.0% (noise 1.1% a run); budget 412 of 900 s, stopped: decided\n",
		"  gain over perftest's defaults: +18.8% [+17.0%, +20.5%]; over the article's: +5.6% [+4.1%, +7.0%]\n",
		"read: equal within +-8.0%; budget 905 of 900 s\n",
		"  gain over perftest's defaults: not measured; over the article's: not measured\n",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "QP timeout") {
		t.Errorf("a QP timeout row where it was not swept:\n%s", s)
	}
	for i, l := range strings.Split(s, "\n") {
		if n := len([]rune(l)); n > 100 {
			t.Errorf("line %d is %d columns wide, want <= 100:\n%s", i, n, l)
		}
	}
}

// Plain: the parameters' table as the whole report's plain one, then lines that each
// start with the operation and a colon, and the "tuned:" line.
func TestTunedSummaryPlain(t *testing.T) {
	var out bytes.Buffer
	if err := TunedSummary(&out, demoTuned(t), FormatPlain); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	rows := plaintest.Rows(t, s, "parameter write write_article write_verdict read read_article read_verdict", 6)
	if rows[1][0] != "SQ_depth" || rows[1][1] != "512_?" || rows[1][6] != "n/a" || rows[5][0] != "QP_timeout_(-u)" {
		t.Errorf("rows: %q", rows)
	}
	for _, want := range []string{"\nwrite: equal within +-100% (noise 14.8% a run); budget 273 of 280 s\n",
		"\nread: gain over perftest's defaults: cannot tell; over the article's: cannot tell\n",
		"\ntuned: parameters for Soft-RoCE (rxe) (profile rxe), objective bw\n"} {
		if !strings.Contains(s, want) {
			t.Errorf("lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "\n  ") || strings.Contains(s, `"?"`) {
		t.Errorf("an indented line or the legend in plain:\n%s", s)
	}
}

// A flat top: the values found equal to the best, in the chosen value's cell, as a
// range where they are contiguous on the profile's grid, else as a list.
func TestFlatTopCells(t *testing.T) {
	for _, tc := range []struct {
		d           string
		equal, grid []int
		want        string
	}{
		{"sq_depth", []int{32, 128, 512}, []int{8, 32, 128, 512}, "32-512"},
		{"sq_depth", []int{8, 32, 128, 512}, []int{512, 128, 32, 8}, "8-512"},
		{"sq_depth", []int{32, 512}, []int{8, 32, 128, 512}, "32,512"},
		{"sq_depth", []int{8, 32, 512}, []int{8, 32, 128, 512}, "8,32,512"},
		{"sq_depth", []int{8, 32}, []int{8, 32, 128, 512}, "8,32"}, // two: listed
		{"sq_depth", []int{32, 128, 512}, nil, "32,128,512"},       // no grid known
		{"sq_depth", []int{32, 64, 128}, []int{8, 32, 128, 512}, "32,64,128"},
		{"msg_size_bytes", []int{16384, 65536, 262144}, []int{4096, 16384, 65536, 262144}, "16K-256K"},
	} {
		if got := FmtEqual(tc.d, tc.equal, tc.grid); got != tc.want {
			t.Errorf("FmtEqual(%s, %v, %v) = %q, want %q", tc.d, tc.equal, tc.grid, got, tc.want)
		}
	}

	tu := demoTuned(t) // profile rxe: sq_depth [8, 32, 128, 512]
	set := func(op, d string, equal []int, decided bool) {
		o := tu.Ops[op]
		v := o.Verdicts[d]
		v.Equal, v.Decided = equal, decided
		o.Verdicts[d] = v
		tu.Ops[op] = o
	}
	set("write", "sq_depth", []int{128, 512}, true)
	set("read", "sq_depth", []int{32, 128, 512}, false)
	if got := tu.FmtChosen("write", "sq_depth"); got != "512 (128,512 equal)" {
		t.Errorf("write: %q", got)
	}
	if got := tu.FmtChosen("read", "sq_depth"); got != "512 ? (32-512 equal)" {
		t.Errorf("read: %q", got)
	}
	if got := tu.FmtChosen("read", "cq_mod"); got != "1 ?" {
		t.Errorf("no company: %q", got)
	}
	var out bytes.Buffer
	if err := TunedSummary(&out, tu, FormatTable); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "│ SQ depth        │ 512 (128,512 equal) │ 512 ? (32-512 equal) │ 512 / 1024         │ cannot tell / n/a │") {
		t.Errorf("the short table:\n%s", out.String())
	}
	// Two flat tops side by side widen the table past the 100 columns of a report
	// without them (105 here), not past the whole report's 120.
	for i, l := range strings.Split(out.String(), "\n") {
		if n := len([]rune(l)); n > 120 {
			t.Errorf("line %d is %d columns wide, want <= 120:\n%s", i, n, l)
		}
	}
	out.Reset()
	if err := TunedShow(&out, tu, FormatTable); err != nil ||
		!strings.Contains(out.String(), "│ SQ depth                │ 512 (128,512 equal) │ 512      │ cannot tell, at +-100% │ 512 ? (32-512 equal) │ 1024    │") {
		t.Errorf("the whole report: %v\n%s", err, out.String())
	}
	// A profile that is not built in: the grid is not known, so a list.
	tu.Profile = "my-nic"
	if got := tu.FmtChosen("read", "sq_depth"); got != "512 ? (32,128,512 equal)" {
		t.Errorf("unknown grid: %q", got)
	}
}

// The gains as the summary judges them, at the operation's resolution.
func TestGainWords(t *testing.T) {
	g := func(lo, hi float64) sweep.Gain {
		m := (lo + hi) / 2
		return sweep.Gain{Pairs: 6, GainMedian: &m, GainLow: &lo, GainHigh: &hi}
	}
	m := 0.1
	for _, tc := range []struct {
		g    sweep.Gain
		r    float64
		want string
	}{
		{g(0.05, 0.15), 0.02, "+10.0% [+5.0%, +15.0%]"},
		{g(-0.15, -0.05), 0.02, "-10.0% [-15.0%, -5.0%]"},
		{g(-0.01, 0.015), 0.02, "equal"},
		{g(0.005, 0.015), 0.02, "equal"}, // within the resolution, as a verdict's Equal comes first
		{g(-0.01, 0.015), 0, "cannot tell"},
		{g(-0.05, 0.15), 0.02, "cannot tell"},
		{sweep.Gain{Pairs: 1, GainMedian: &m}, 0.02, "cannot tell (1 pair)"},
		{sweep.Gain{}, 0.02, "not measured"},
	} {
		if got := GainWords(tc.g, tc.r); got != tc.want {
			t.Errorf("GainWords(%s, %g) = %q, want %q", FmtGain(tc.g), tc.r, got, tc.want)
		}
	}
}

// The QP timeout is a row where the search measured more than one (the demo's 14 and
// 20), not where -u held it (every point at 20, perftest's defaults too).
func TestQPTimeoutRowWhereSwept(t *testing.T) {
	tu := demoTuned(t)
	if !tu.swept("qp_timeout") {
		t.Error("the demo swept the QP timeout")
	}
	for op, o := range tu.Ops {
		for i := range o.All {
			o.All[i].Point.QPTimeout = 20
		}
		o.Chosen.Point.QPTimeout = 20
		tu.Ops[op] = o
	}
	var out bytes.Buffer
	if err := TunedSummary(&out, tu, FormatTable); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "QP timeout") || !strings.Contains(out.String(), "│ post list ") {
		t.Errorf("-u 20: a QP timeout row:\n%s", out.String())
	}
}
