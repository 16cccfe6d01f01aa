package sweep

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/profiles"
	"github.com/rdmabench/rdmabench/result"
)

// noisy is the fake NIC with multiplicative noise and drift, on a simulated clock:
// run i's bandwidth is truth x exp(sigma z_i) x exp(sigma sin(2 pi i / 37 + phase)):
// independent noise of sigma per run, plus a slow drift of the same amplitude that a
// comparison of runs far apart would mistake for a difference. A run costs 2 s.
type noisy struct {
	rng   *rand.Rand
	sigma float64
	phase float64
	n     int
	clock time.Time
	tr    func(profiles.Point) float64 // the truth (nil: truth)
}

func (f *noisy) Measure(ctx context.Context, c result.Config) (result.Result, error) {
	f.n++
	f.clock = f.clock.Add(2 * time.Second)
	tr := f.tr
	if tr == nil {
		tr = truth
	}
	drift := f.sigma * math.Sin(2*math.Pi*float64(f.n)/37+f.phase)
	bw := tr(PointOf(c)) * math.Exp(f.sigma*f.rng.NormFloat64()+drift)
	r := result.Result{Config: c, Iterations: 1000, BWGbps: bw, MsgRateMpps: bw * 1e3 / 8 / float64(c.MsgSizeBytes), DurationNS: 1e9}
	r.Lat = result.Latency{Samples: 1000, P99: ptr(int64(float64(c.SQDepth*c.MsgSizeBytes) / 100 * math.Exp(f.sigma*f.rng.NormFloat64())))}
	return r, nil
}

// flatTop is a landscape where many points tie at the optimum (any size from 64K,
// any depth from 128, any moderation above 1): the choice among equals, and the
// gains of a winner picked among ties (the winner's curse).
func flatTop(q profiles.Point) float64 {
	bw := 100.0
	if q.MsgSizeBytes < 65536 {
		bw *= 0.6
	}
	if q.SQDepth < 128 {
		bw *= 0.7
	}
	if q.BufOffsetBytes != 0 {
		bw *= 0.9
	}
	if q.CQMod == 1 {
		bw *= 0.7
	}
	return bw
}

// calibration is what one noise level gave over the seeds.
type calibration struct {
	landscape                string
	sigma                    float64
	seeds, within5, covered  int
	gains                    int
	decided, decidedRight    int
	right, wrong, cannotTell int
	runs                     int
}

// calibrationPlan is the sweep the calibration runs: WRITE on the rxe grid, --repeat
// 3, a budget of 600 runs, the article and perftest's defaults as references.
func calibrationPlan(p profiles.Profile) Plan {
	pl := plan(p, "descent")
	pl.Repeat, pl.Budget = 3, 20*time.Minute
	pl.Others = []Objective{{Name: "rate"}, {Name: "p99"}}
	pl.Article = p.Reference["write"]
	pl.References = map[string]profiles.Point{"perftest_defaults": pt(65536, 128, 0, 1, 1),
		"article": ArticlePoint(pl.Grid, pl.Article, pl.Start)}
	return pl
}

// calibrate runs seeds sweeps at one noise level on one landscape.
func calibrate(t *testing.T, p profiles.Profile, name string, tr func(profiles.Point) float64, li int, sigma float64, seeds int) calibration {
	best := 0.0
	for _, q := range gridPoints(p.Grid["write"]) {
		best = max(best, tr(q))
	}
	c := calibration{landscape: name, sigma: sigma, seeds: seeds}
	for seed := range seeds {
		f := &noisy{rng: rand.New(rand.NewPCG(uint64(seed), uint64(li))), sigma: sigma, phase: float64(seed), tr: tr}
		r := NewRunner(f, nil, nil)
		r.Now = func() time.Time { return f.clock }
		pl := calibrationPlan(p)
		o, err := r.Run(context.Background(), pl)
		if err != nil {
			t.Fatal(err)
		}
		c.runs += o.Runs
		good := tr(o.Chosen.Point) >= 0.95*best
		if good {
			c.within5++
		}
		if o.Decided {
			c.decided++
			if good {
				c.decidedRight++
			}
		}
		for _, ref := range o.References {
			c.gains++
			g := tr(o.Chosen.Point)/tr(ref.Point) - 1
			if ref.GainLow != nil && *ref.GainLow <= g && g <= *ref.GainHigh {
				c.covered++
			}
		}
		for d, v := range o.Verdicts {
			switch verdictTruth(pl, tr, o.Chosen.Point, d, v) {
			case "right":
				c.right++
			case "wrong":
				c.wrong++
			case "cannot":
				c.cannotTell++
			}
		}
	}
	return c
}

// TestCalibration runs the whole sweep (descent, the final rounds, the gains' rounds,
// the references and the verdicts) on NICs whose truth is known (the fake's, and a
// flat top where many points tie), at 1%, 5%, 15% and 30% noise, 200 seeds each, and
// checks that the method's confidence is earned: the chosen point within 5% of the
// true optimum in >= 90% of seeds at 1% and 5% noise; the 95% intervals of the gains
// covering the true gains >= 90% of the time at every level; a sweep that says it
// decided within 5% of the optimum >= 90% of the time; wrong verdicts at most 10%,
// and at 30% noise the verdicts that are not right mostly "cannot tell".
func TestCalibration(t *testing.T) {
	p, err := profiles.Load("rxe")
	if err != nil {
		t.Fatal(err)
	}
	seeds := 200
	if testing.Short() {
		seeds = 50
	}
	var rows []calibration
	for _, l := range []struct {
		name string
		tr   func(profiles.Point) float64
	}{{"rxe fake", truth}, {"flat top", flatTop}} {
		for li, sigma := range []float64{0.01, 0.05, 0.15, 0.30} {
			rows = append(rows, calibrate(t, p, l.name, l.tr, li, sigma, seeds))
		}
	}
	pc := func(a, b int) string {
		if b == 0 {
			return "-"
		}
		return fmt.Sprintf("%d%%", int(math.Round(100*float64(a)/float64(b))))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "| landscape | noise | chosen within 5%% of the optimum | gain intervals covering the truth | decided (of which within 5%%) | verdicts right / wrong / cannot tell | runs per sweep |\n|---|---|---|---|---|---|---|\n")
	for _, c := range rows {
		v := c.right + c.wrong + c.cannotTell
		fmt.Fprintf(&b, "| %s | %.0f%% | %s | %s | %s (%s) | %s / %s / %s | %d |\n", c.landscape, 100*c.sigma, pc(c.within5, c.seeds), pc(c.covered, c.gains),
			pc(c.decided, c.seeds), pc(c.decidedRight, c.decided), pc(c.right, v), pc(c.wrong, v), pc(c.cannotTell, v), c.runs/c.seeds)
	}
	t.Logf("calibration over %d seeds per noise level:\n%s", seeds, b.String())
	for _, c := range rows {
		v := c.right + c.wrong + c.cannotTell
		at := fmt.Sprintf("%s, noise %.0f%%", c.landscape, 100*c.sigma)
		if c.sigma <= 0.05 && 10*c.within5 < 9*c.seeds {
			t.Errorf("%s: the chosen point is within 5%% of the optimum in %d of %d seeds, want >= 90%%", at, c.within5, c.seeds)
		}
		if 10*c.covered < 9*c.gains {
			t.Errorf("%s: the gain intervals cover the true gain %d of %d times, want >= 90%%", at, c.covered, c.gains)
		}
		if 10*c.decidedRight < 9*c.decided {
			t.Errorf("%s: %d of %d decided sweeps chose within 5%% of the optimum, want >= 90%%", at, c.decidedRight, c.decided)
		}
		if 10*c.wrong > v {
			t.Errorf("%s: %d of %d verdicts wrong, want <= 10%%", at, c.wrong, v)
		}
		if c.sigma >= 0.3 && c.wrong > 0 && c.cannotTell <= c.wrong {
			t.Errorf("%s: %d verdicts cannot tell, %d wrong: the noise must show as cannot tell", at, c.cannotTell, c.wrong)
		}
	}
}

// verdictTruth grades one parameter's verdict against the truth tr:
//   - "agrees" with the chosen value in the article's range claims that this value is
//     as good as any other: wrong if another value of the parameter (the rest as
//     chosen) is truly better by more than the tolerance;
//   - "agrees" with another value claims the article's value is within the tolerance
//     of ours: wrong if the true ratio is outside it;
//   - "differs" claims ours is better than the article's value, "article_better" the
//     opposite: wrong if it is not.
func verdictTruth(pl Plan, tr func(profiles.Point) float64, c profiles.Point, d string, v Verdict) string {
	tol := pl.Tolerance
	switch {
	case v.Verdict == "" || v.Verdict == NotApplicable:
		return "" // nothing claimed
	case v.Verdict == CannotTell:
		return "cannot"
	case v.Verdict == Agrees && v.ArticleValue == c.Get(d):
		for _, x := range pl.Grid[d] {
			if alt := c.With(d, x); alt.Valid() && tr(alt) > (1+tol)*tr(c) {
				return "wrong"
			}
		}
	case v.Verdict == Agrees:
		if r := tr(c) / tr(c.With(d, v.ArticleValue)); r > 1+tol || r < 1/(1+tol) {
			return "wrong"
		}
	case v.Verdict == Differs:
		if tr(c) <= tr(c.With(d, v.ArticleValue)) {
			return "wrong"
		}
	case v.Verdict == ArticleBetter:
		if tr(c) >= tr(c.With(d, v.ArticleValue)) {
			return "wrong"
		}
	}
	return "right"
}
