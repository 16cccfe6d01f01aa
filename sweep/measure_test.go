package sweep

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/plan"
	"github.com/rdmabench/rdmabench/result"
)

func TestWithP99Samples(t *testing.T) {
	bw := result.Config{Test: result.BW, CQMod: 8, NumQPs: 3}
	got := WithP99Samples(bw).Iterations
	if got*3/8 < 1000 || (got-1)*3/8 >= 1000 {
		t.Fatalf("cq-mod 8, 3 QPs: %d iterations, want the fewest with 1000 signalled WRs", got)
	}
	bw.Iterations = 50000
	if got := WithP99Samples(bw).Iterations; got != 50000 {
		t.Fatalf("more iterations than needed are kept: %d", got)
	}
	if got := WithP99Samples(result.Config{Test: result.Lat, CQMod: 100, NumQPs: 1}).Iterations; got != 1000 {
		t.Fatalf("latency runs sample every iteration: %d", got)
	}
	if got := WithP99Samples(result.Config{Test: result.BW, CQMod: 64, NumQPs: 1, DurationS: 1}).Iterations; got != 0 {
		t.Fatalf("a timed run is left alone: %d", got)
	}
}

func TestP99SearchMeasuresEnoughSamples(t *testing.T) {
	p := rxe(t)
	pl := sweepPlan(p, "grid")
	pl.Base.DurationS, pl.Base.Iterations = 0, 100 // 100 WRs: no point has 1000 signalled
	f := &fake{}
	if _, err := NewRunner(f, nil, nil).Run(context.Background(), pl); err != nil {
		t.Fatal(err)
	}
	for _, c := range f.configs {
		if c.Iterations != 100 {
			t.Fatalf("a bw search leaves the iterations alone: %+v", c)
		}
	}
	pl.Objective = Objective{Name: "p99"}
	f = &fake{}
	o, err := NewRunner(f, nil, nil).Run(context.Background(), pl)
	if err != nil {
		t.Fatalf("a p99 search must measure points with a supported p99: %v", err)
	}
	for _, c := range f.configs {
		if c.Iterations*uint64(c.NumQPs)/uint64(c.CQMod) < 1000 {
			t.Fatalf("a p99 search point with too few signalled WRs: %+v", c)
		}
	}
	if o.Best.P99NS == nil {
		t.Fatalf("best without a p99: %+v", o.Best)
	}
}

func TestFailedPointsStayFailed(t *testing.T) {
	p := rxe(t)
	calls := map[plan.Point]int{}
	m := measurerFunc(func(ctx context.Context, c result.Config) (result.Result, error) {
		pt := PointOf(c)
		calls[pt]++
		if pt.SQDepth == 512 {
			return result.Result{Config: c}, errors.New("ibv_create_qp: cannot allocate memory")
		}
		return (&fake{}).Measure(ctx, c)
	})
	o, err := NewRunner(m, nil, nil).Run(context.Background(), sweepPlan(p, "descent"))
	if err != nil {
		t.Fatal(err)
	}
	failed := 0
	for pt, n := range calls {
		if pt.SQDepth == 512 && n != 1 {
			t.Fatalf("failed point %v measured %d times", pt, n)
		}
	}
	for _, ps := range o.All {
		if ps.Error != "" {
			failed++
		}
	}
	if failed == 0 || o.Chosen.Point.SQDepth == 512 {
		t.Fatalf("failed points: %d, chosen %v", failed, o.Chosen.Point)
	}
}

// A tainted run counts as measured: never measured again, its point's taint counted in
// the outcome and the estimates; the stream holds every run, and a resumed sweep takes
// the same decisions.
func TestTaintedRunsCountAsMeasured(t *testing.T) {
	p := rxe(t)
	pl := sweepPlan(p, "descent")
	calls := map[plan.Point]int{}
	m := measurerFunc(func(ctx context.Context, c result.Config) (result.Result, error) {
		pt := PointOf(c)
		calls[pt]++
		r, err := (&fake{}).Measure(ctx, c)
		r.Tainted = pt.BufOffsetBytes != 0 || (pt.SQDepth == 128 && calls[pt] == 1) // always / once
		return r, err
	})
	var stream []Recorded
	o, err := NewRunner(m, func(r Recorded) error { stream = append(stream, r); return nil }, nil).Run(context.Background(), pl)
	if err != nil {
		t.Fatal(err)
	}
	tainted, runs := 0, 0
	for _, ps := range o.All {
		runs += ps.Runs
		tainted += ps.Tainted
		if ps.Error != "" {
			t.Errorf("tainted runs are no failures: %+v", ps)
		}
		if ps.Point.BufOffsetBytes != 0 && ps.Tainted != ps.Runs {
			t.Errorf("%v: %d of %d runs tainted, want all", ps.Point, ps.Tainted, ps.Runs)
		}
	}
	if runs != len(stream) || tainted != o.Tainted || o.Tainted == 0 {
		t.Fatalf("%d runs counted of %d measured; %d tainted, outcome %d", runs, len(stream), tainted, o.Tainted)
	}
	again, err := NewRunner(measurerFunc(func(context.Context, result.Config) (result.Result, error) {
		t.Fatal("a resumed finished sweep measures nothing")
		return result.Result{}, nil
	}), nil, stream).Run(context.Background(), pl)
	if err != nil || again.Chosen.Point != o.Chosen.Point || again.Tainted != o.Tainted {
		t.Fatalf("resumed: chosen %v (was %v), tainted %d (was %d), %v", again.Chosen.Point, o.Chosen.Point, again.Tainted, o.Tainted, err)
	}
}

func TestLostSessionStopsTheSweep(t *testing.T) {
	p := rxe(t)
	n := 0
	m := measurerFunc(func(ctx context.Context, c result.Config) (result.Result, error) {
		if n++; n > 3 {
			return result.Result{Config: c}, sessionLost{}
		}
		return (&fake{}).Measure(ctx, c)
	})
	if _, err := NewRunner(m, nil, nil).Run(context.Background(), sweepPlan(p, "grid")); !errors.As(err, &sessionLost{}) || n != 4 {
		t.Fatalf("a lost session must end the sweep at once: %v after %d calls", err, n)
	}
}

// A timed point whose steady window is under a quarter of its length is measured
// again, longer (doubling), up to the cap: a shallow queue never is; one still without
// enough of one at the cap is flagged queue-bound, and only its longer runs count. The
// fake's queue takes 7 ms a WR to fill before its steady window opens.
func TestPointsLongEnoughForTheirQueue(t *testing.T) {
	p := rxe(t)
	const fillPerWR = 0.007 // seconds
	f := &fake{}
	m := measurerFunc(func(ctx context.Context, c result.Config) (result.Result, error) {
		r, err := f.Measure(ctx, c)
		r.Steady = nil
		if steady := c.DurationS - fillPerWR*float64(c.SQDepth); steady > 0 {
			r.Steady = &result.Steady{Messages: 1000, DurationNS: int64(steady * 1e9), BWGbps: r.BWGbps, MsgRateMpps: r.MsgRateMpps}
		}
		return r, err
	})
	pl := sweepPlan(p, "descent")
	pl.Base.DurationS, pl.MaxDurationS, pl.Resolution = 0.4, 4, 0.08
	o, err := NewRunner(m, nil, nil).Run(context.Background(), pl)
	if err != nil {
		t.Fatal(err)
	}
	lengths := []float64{0.4, 0.8, 1.6, 3.2, 4}
	for _, ps := range o.All {
		fill := fillPerWR * float64(ps.Point.SQDepth)
		need := 0.4 // the first length whose steady window is a quarter of it
		for _, l := range lengths {
			if need = l; l-fill >= l/4 {
				break
			}
		}
		bound := 4-fill < 1
		switch {
		case !bound && ps.DurationS != need:
			t.Errorf("%v: %v s, needs %v s (fill %.3f s)", ps.Point, ps.DurationS, need, fill)
		case ps.QueueBound != bound:
			t.Errorf("%v: queue-bound %v at %v s (fill %.3f s)", ps.Point, ps.QueueBound, ps.DurationS, fill)
		case bound && ps.DurationS != 4:
			t.Errorf("%v: %v s, queue-bound: want the cap", ps.Point, ps.DurationS)
		}
	}
	for _, c := range f.configs {
		if c.DurationS > 4 {
			t.Fatalf("a run of %v s, beyond the cap", c.DurationS)
		}
	}
	if o.Lengthened == 0 || o.QueueBound == 0 {
		t.Fatalf("lengthened %d, queue-bound %d: want both", o.Lengthened, o.QueueBound)
	}
}

// The budget holds whatever the objective: with a p99 objective whose challengers never
// have a supported p99 (a duel that counted qualifying pairs would never end), every
// sweep ends within its budget and one run; without a budget it still ends (every loop
// is bounded).
func TestBudgetHoldsWhateverTheObjective(t *testing.T) {
	p := rxe(t)
	for _, obj := range []string{"bw", "p99", "bw-p99"} {
		for _, budget := range []time.Duration{0, 60 * time.Second, 5 * time.Minute} {
			f := &noisy{rng: rand.New(rand.NewPCG(1, 2)), sigma: 0.1}
			m := measurerFunc(func(ctx context.Context, c result.Config) (result.Result, error) {
				r, err := f.Measure(ctx, c)
				if PointOf(c) != p.Start["write"].WithInt("qp_timeout", plan.DefaultQPTimeout) {
					r.Lat.P99 = nil // only the start point ever has a p99
				}
				return r, err
			})
			r := NewRunner(m, nil, nil)
			r.Now = func() time.Time { return f.clock }
			pl := calibrationPlan(p)
			pl.Objective, pl.Budget = Objective{Name: obj, MaxP99: time.Second}, budget
			o, err := r.Run(context.Background(), pl)
			if err != nil {
				t.Fatal(err)
			}
			if budget > 0 && o.BudgetSpentS > budget.Seconds()+2 {
				t.Errorf("%s, budget %v: spent %.0f s", obj, budget, o.BudgetSpentS)
			}
			if budget == 0 && o.Runs > 3000 {
				t.Errorf("%s without a budget: %d runs", obj, o.Runs)
			}
			t.Logf("%s, budget %v: %d runs, %.0f s spent, resolution %.3f (%s)", obj, budget, o.Runs, o.BudgetSpentS, o.Resolution, o.ResolutionBasis)
		}
	}
}

// A run without enough of a steady window says how long its queues take to turn over
// (WRs in the queues at its whole window's rate): the next run is 1.5 turnovers long
// (at least twice as long), in one step; a point that cannot get a steady quarter even at
// the cap (a turnover over 3/4 of it) is not lengthened at all and is queue-bound at
// the plan's length.
func TestLengthenByTurnover(t *testing.T) {
	p := rxe(t)
	const perWR = 0.004 // seconds a WR, one QP: a queue of depth d turns over in d x perWR
	f := &fake{}
	m := measurerFunc(func(ctx context.Context, c result.Config) (result.Result, error) {
		r, err := f.Measure(ctx, c)
		turn := perWR * float64(c.SQDepth)
		r.Iterations, r.DurationNS = uint64(c.DurationS/perWR)+uint64(c.SQDepth), int64((c.DurationS+turn)*1e9)
		r.Steady = nil
		if steady := c.DurationS - turn; steady > 0 {
			r.Steady = &result.Steady{Messages: 1000, DurationNS: int64(steady * 1e9), BWGbps: r.BWGbps, MsgRateMpps: r.MsgRateMpps}
		}
		return r, err
	})
	pl := sweepPlan(p, "descent")
	pl.Base.DurationS, pl.MaxDurationS, pl.Resolution = 0.4, 1.6, 0.08
	o, err := NewRunner(m, nil, nil).Run(context.Background(), pl)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, ps := range o.All {
		turn := perWR * float64(ps.Point.SQDepth)
		switch {
		case 0.4-turn >= 0.1: // steady enough at the plan's length
			if ps.DurationS != 0.4 || ps.QueueBound {
				t.Errorf("%v: %v s, queue-bound %v: want 0.4 s", ps.Point, ps.DurationS, ps.QueueBound)
			}
		case turn > 0.75*1.6: // beyond the cap: not lengthened
			seen++
			if ps.DurationS != 0.4 || !ps.QueueBound {
				t.Errorf("%v (turnover %.2f s): %v s, queue-bound %v: want 0.4 s, queue-bound", ps.Point, turn, ps.DurationS, ps.QueueBound)
			}
		default:
			seen++
			// Lengthened once, to a steady quarter: a turnover measured over a window
			// longer than the run itself reads longer, so at least the need.
			if ps.DurationS < min(1.6, 4*turn/3) || ps.DurationS > 1.6 || ps.QueueBound {
				t.Errorf("%v (turnover %.2f s): %v s, queue-bound %v: want lengthened within the cap", ps.Point, turn, ps.DurationS, ps.QueueBound)
			}
		}
	}
	if seen == 0 {
		t.Fatal("no point needed lengthening")
	}
}
