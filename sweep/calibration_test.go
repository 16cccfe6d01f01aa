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
}

func (f *noisy) Measure(ctx context.Context, c result.Config) (result.Result, error) {
	f.n++
	f.clock = f.clock.Add(2 * time.Second)
	drift := f.sigma * math.Sin(2*math.Pi*float64(f.n)/37+f.phase)
	bw := truth(PointOf(c)) * math.Exp(f.sigma*f.rng.NormFloat64()+drift)
	r := result.Result{Config: c, Iterations: 1000, BWGbps: bw, MsgRateMpps: bw * 1e3 / 8 / float64(c.MsgSizeBytes)}
	r.Lat = result.Latency{Samples: 1000, P99: ptr(int64(float64(c.SQDepth*c.MsgSizeBytes) / 100 * math.Exp(f.sigma*f.rng.NormFloat64())))}
	return r, nil
}

// calibration is what one noise level gave over the seeds.
type calibration struct {
	sigma                    float64
	seeds, within5, covered  int
	gains                    int
	right, wrong, cannotTell int
	runs                     int
}

// TestCalibration runs the whole sweep (descent, the final rounds, the references and
// the verdicts) on a NIC whose truth is known, at 1%, 5%, 15% and 30% noise, 50 seeds
// each, and checks that the method's confidence is earned: the chosen point within 5%
// of the true optimum in >= 90% of seeds at 1% and 5% noise; the 95% intervals of the
// gains covering the true gains >= 90% of the time at every level; and wrong verdicts
// rare, so that at 30% noise the verdicts are mostly "cannot tell".
func TestCalibration(t *testing.T) {
	p, err := profiles.Load("rxe")
	if err != nil {
		t.Fatal(err)
	}
	const seeds = 50
	_, best := gridBest(p.Grid["write"])
	var rows []calibration
	for li, sigma := range []float64{0.01, 0.05, 0.15, 0.30} {
		c := calibration{sigma: sigma, seeds: seeds}
		for seed := range seeds {
			f := &noisy{rng: rand.New(rand.NewPCG(uint64(seed), uint64(li))), sigma: sigma, phase: float64(seed)}
			r := NewRunner(f, nil, nil)
			r.Now = func() time.Time { return f.clock }
			pl := plan(p, "descent")
			pl.Repeat, pl.Budget = 3, 20*time.Minute
			pl.Others = []Objective{{Name: "rate"}, {Name: "p99"}}
			pl.Article = p.Reference["write"]
			pl.References = map[string]profiles.Point{"perftest_defaults": pt(65536, 128, 0, 1, 1),
				"article": ArticlePoint(pl.Grid, pl.Article, pl.Start)}
			o, err := r.Run(context.Background(), pl)
			if err != nil {
				t.Fatal(err)
			}
			c.runs += o.Runs
			if truth(o.Chosen.Point) >= 0.95*best {
				c.within5++
			}
			for _, ref := range o.References {
				c.gains++
				g := truth(o.Chosen.Point)/truth(ref.Point) - 1
				if ref.GainLow != nil && *ref.GainLow <= g && g <= *ref.GainHigh {
					c.covered++
				}
			}
			for d, v := range o.Verdicts {
				switch verdictTruth(pl, o.Chosen.Point, d, v) {
				case "right":
					c.right++
				case "wrong":
					c.wrong++
				case "cannot":
					c.cannotTell++
				}
			}
		}
		rows = append(rows, c)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "| noise | chosen within 5%% of the optimum | gain intervals covering the truth | verdicts right / wrong / cannot tell | runs per sweep |\n|---|---|---|---|---|\n")
	for _, c := range rows {
		v := c.right + c.wrong + c.cannotTell
		fmt.Fprintf(&b, "| %.0f%% | %d%% | %d%% | %d%% / %d%% / %d%% | %d |\n", 100*c.sigma, 100*c.within5/c.seeds, 100*c.covered/c.gains,
			100*c.right/v, 100*c.wrong/v, 100*c.cannotTell/v, c.runs/c.seeds)
	}
	t.Logf("calibration over %d seeds per noise level:\n%s", seeds, b.String())
	for _, c := range rows {
		v := c.right + c.wrong + c.cannotTell
		if c.sigma <= 0.05 && 10*c.within5 < 9*c.seeds {
			t.Errorf("noise %.0f%%: the chosen point is within 5%% of the optimum in %d of %d seeds, want >= 90%%", 100*c.sigma, c.within5, c.seeds)
		}
		if 10*c.covered < 9*c.gains {
			t.Errorf("noise %.0f%%: the gain intervals cover the true gain %d of %d times, want >= 90%%", 100*c.sigma, c.covered, c.gains)
		}
		if 10*c.wrong > v {
			t.Errorf("noise %.0f%%: %d of %d verdicts wrong, want <= 10%%", 100*c.sigma, c.wrong, v)
		}
		if c.sigma >= 0.3 && c.cannotTell <= c.wrong {
			t.Errorf("noise %.0f%%: %d verdicts cannot tell, %d wrong: the noise must show as cannot tell", 100*c.sigma, c.cannotTell, c.wrong)
		}
	}
}

// verdictTruth grades one parameter's verdict against the fake's truth:
//   - "agrees" with the chosen value in the article's range claims that this value is
//     as good as any other: wrong if another value of the parameter (the rest as
//     chosen) is truly better by more than the tolerance;
//   - "agrees" with another value claims the article's value is within the tolerance
//     of ours: wrong if the true ratio is outside it;
//   - "differs" claims ours is better than the article's value: wrong if it is not.
func verdictTruth(pl Plan, c profiles.Point, d string, v Verdict) string {
	tol := pl.Tolerance
	switch {
	case v.Verdict == "":
		return "" // no article value
	case v.Verdict == CannotTell:
		return "cannot"
	case v.Verdict == Agrees && v.ArticleValue == c.Get(d):
		for _, x := range pl.Grid[d] {
			if alt := c.With(d, x); alt.Valid() && truth(alt) > (1+tol)*truth(c) {
				return "wrong"
			}
		}
	case v.Verdict == Agrees:
		if r := truth(c) / truth(c.With(d, v.ArticleValue)); r > 1+tol || r < 1-tol {
			return "wrong"
		}
	case v.Verdict == Differs:
		if truth(c) <= truth(c.With(d, v.ArticleValue)) {
			return "wrong"
		}
	}
	return "right"
}
