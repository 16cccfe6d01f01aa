package sweep

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/plan"
	"github.com/rdmabench/rdmabench/profiles"
	"github.com/rdmabench/rdmabench/result"
)

// Where a grid has the QP timeout, the sweep tunes it like any dimension:
// on a link that retransmits at the short timeout (its runs tainted and slower), the
// long one is chosen; the configs carry it as -u does (the default said as 0), and
// perftest's defaults are measured at the default.
func TestQPTimeoutIsSwept(t *testing.T) {
	p, err := profiles.Load("rxe")
	if err != nil {
		t.Fatal(err)
	}
	var timeouts = map[int]int{}
	m := measurerFunc(func(ctx context.Context, c result.Config) (result.Result, error) {
		timeouts[c.QPTimeout]++
		r, err := (&fake{}).Measure(ctx, c)
		if c.QPTimeout == 0 { // the default, 14: a spurious retransmission in every run
			r.BWGbps *= 0.7
			r.Tainted = true
		}
		return r, err
	})
	pl := sweepPlan(p, "descent")
	// The rxe profile holds the timeout at 20; a grid may still sweep it.
	pl.Start, pl.Grid = p.Start["write"], maps.Clone(p.Grid["write"])
	pl.Grid["qp_timeout"] = []int{14, 20}
	pl.References = map[string]plan.Point{RefPerftest: pt(65536, 128, 0, 1, 1)}
	o, err := NewRunner(m, nil, nil).Run(context.Background(), pl)
	if err != nil {
		t.Fatal(err)
	}
	if o.Chosen.Point.QPTimeout != 20 || timeouts[0] == 0 || timeouts[20] == 0 || timeouts[14] != 0 {
		t.Fatalf("chosen %v; runs per config QP timeout %v", o.Chosen.Point, timeouts)
	}
	if ref := o.References[RefPerftest]; ref.Point.QPTimeout != plan.DefaultQPTimeout || ref.Tainted != ref.Runs {
		t.Fatalf("perftest's defaults: %+v", ref)
	}
	if v := o.Verdicts["qp_timeout"]; v.Verdict != NoArticle || v.Chosen != 20 {
		t.Fatalf("qp_timeout verdict %+v", v)
	}
}

// Options.Plan assembles an operation's sweep as rdmabench sweep asks for it: the
// profile's grid and start, the point durations' defaults, every other objective as a
// further one, the tuning article's configuration and perftest's defaults (from Defaults,
// with -u's QP timeout where it fixes every point's) as the references.
func TestOptionsPlan(t *testing.T) {
	p, err := profiles.Load("rxe")
	if err != nil {
		t.Fatal(err)
	}
	var asked []result.Config
	defaults := func(c *result.Config) { // perftest's, as the bench's Defaults fills them (in part)
		asked = append(asked, *c)
		c.MsgSizeBytes, c.SQDepth, c.CQMod, c.PostList, c.Iterations = 65536, 128, 100, 1, 5000
	}
	o := Options{Profile: p, Search: "grid", Objective: Objective{Name: "rate"}, MaxP99: 500 * time.Microsecond,
		Resolution: 0.05, Repeat: 3, Budget: time.Minute, QPs: 2, Counters: "all",
		Events: result.Config{CompletionEvents: true, CQModerationCount: 8, CQModerationUS: 5}, Defaults: defaults,
		Fabric: result.Config{DisablePCIeRelaxed: true, SL: 3, TrafficClass: 96}}
	pl := o.Plan("read")
	base := result.Config{Op: "read", Test: result.BW, DurationS: 0.4, WarmupIterations: 16, NumQPs: 2, CompletionEvents: true,
		CQModerationCount: 8, CQModerationUS: 5, Counters: "all", DisablePCIeRelaxed: true, SL: 3, TrafficClass: 96}
	if pl.Op != "read" || pl.Base != base || pl.MaxDurationS != 1.6 || pl.Search != "grid" || pl.Repeat != 3 ||
		pl.Resolution != 0.05 || pl.Budget != time.Minute || pl.Objective != o.Objective {
		t.Fatalf("plan %+v", pl)
	}
	var others []string
	for _, ob := range pl.Others {
		others = append(others, ob.String())
	}
	if fmt.Sprint(others) != "[bw p99 bw-p99<=500µs]" {
		t.Errorf("further objectives %v", others)
	}
	if !maps.EqualFunc(pl.Grid, p.Grid["read"], slices.Equal) || pl.Start != p.Start["read"] || !maps.EqualFunc(pl.Article, p.Reference["read"], slices.Equal) {
		t.Errorf("grid %v start %v article %v: want the profile's", pl.Grid, pl.Start, pl.Article)
	}
	perftest := pt(65536, 128, 0, 100, 1).WithInt("qp_timeout", plan.DefaultQPTimeout)
	if len(asked) != 1 || asked[0] != (result.Config{Op: "read", Test: result.BW, CompletionEvents: true}) || pl.References[RefPerftest] != perftest {
		t.Errorf("perftest's reference %v, from %+v", pl.References[RefPerftest], asked)
	}
	if a := pl.References[RefArticle]; a != ArticlePoint(pl.Grid, pl.Article, pl.Start) || len(pl.References) != 2 {
		t.Errorf("references %v", pl.References)
	}
	// -u fixes every point's QP timeout, the references' too; no Defaults, no perftest.
	o.QPTimeout, o.Defaults, o.PointDurationS, o.MaxDurationS = 20, nil, 2, 1
	pl = o.Plan("write")
	if got := pl.Grid["qp_timeout"]; !slices.Equal(got, []int{20}) || pl.Start.QPTimeout != 20 || pl.Base.QPTimeout != 20 {
		t.Errorf("-u 20: grid %v, start %v, base %d", got, pl.Start, pl.Base.QPTimeout)
	}
	if _, ok := pl.References[RefPerftest]; ok || pl.Base.DurationS != 2 || pl.MaxDurationS != 2 {
		t.Errorf("without Defaults: references %v; %v s up to %v s", pl.References, pl.Base.DurationS, pl.MaxDurationS)
	}
	o.Defaults = defaults
	if got := o.Plan("write").References[RefPerftest]; got.QPTimeout != 20 {
		t.Errorf("-u 20: perftest's reference %v", got)
	}
}

// The virtual bed's noise is a few hundredths of a percent: shown as 0.0% it read as none.
func TestFmtNoise(t *testing.T) {
	for n, want := range map[float64]string{0.2: "20.0%", 0.012: "1.2%", 0.0034: "0.34%", 0.00028: "0.03%", 0.00004: "under 0.01%", 0: "under 0.01%"} {
		if got := FmtNoise(n); got != want {
			t.Errorf("FmtNoise(%g) = %q, want %q", n, got, want)
		}
	}
}

func TestFmtResolution(t *testing.T) {
	for r, want := range map[float64]string{2: "nothing finer than +-100%", 0.3: "+-30%", 0.02: "+-2.0%", 0.005: "+-0.5%", 0.0002: "+-0.02%"} {
		if got := FmtResolution(r); got != want {
			t.Errorf("FmtResolution(%g) = %q, want %q", r, got, want)
		}
	}
}
