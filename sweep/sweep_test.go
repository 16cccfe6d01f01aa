package sweep

import (
	"context"
	"errors"
	"maps"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/profiles"
	"github.com/rdmabench/rdmabench/result"
)

// fake is a NIC model: bandwidth rises with message size and depth and saturates,
// falls with misalignment and with heavy signalling; p99 grows with depth. A run of
// fixed iterations has iterations x QPs / cq-mod samples, and a p99 only where they
// support one; a timed run has enough.
type fake struct {
	calls     int
	noise     func() float64
	stopAfter int
	cancel    context.CancelFunc
	configs   []result.Config
}

func (f *fake) Measure(ctx context.Context, c result.Config) (result.Result, error) {
	f.calls++
	f.configs = append(f.configs, c)
	if f.stopAfter > 0 && f.calls >= f.stopAfter {
		f.cancel()
		return result.Result{Config: c, Interrupted: true}, ctx.Err()
	}
	size, depth := float64(c.MsgSizeBytes), float64(c.SQDepth)
	bw := truth(PointOf(c))
	if f.noise != nil {
		bw *= 1 + f.noise()
	}
	r := result.Result{SchemaVersion: result.SchemaVersion, Config: c, Iterations: 1000}
	r.BWGbps = bw
	r.MsgRateMpps = bw * 1e3 / 8 / size
	r.Lat = result.Latency{Samples: 1000}
	if c.DurationS == 0 {
		r.Lat.Samples = c.Iterations * uint64(c.NumQPs) / uint64(c.CQMod)
	}
	if result.Supported(0.99, r.Lat.Samples) {
		r.Lat.P99 = ptr(int64(depth * size / 100))
	}
	return r, nil
}

func ptr(v int64) *int64 { return &v }

// truth is the fake NIC's bandwidth without noise: the ground truth.
func truth(p profiles.Point) float64 {
	inflight := float64(p.MsgSizeBytes) * float64(p.SQDepth)
	bw := 100 * inflight / (inflight + 4<<20)
	bw *= 1 - 0.3/float64(p.CQMod)
	if p.BufOffsetBytes%4096 != 0 {
		bw *= 0.9
	}
	return bw * (1 + 0.01*float64(p.PostList))
}

// rxe is the rxe profile without its QP timeout dimension: the tests of the search
// and the statistics run on the five dimensions (TestQPTimeoutIsSwept has the sixth).
func rxe(t *testing.T) profiles.Profile {
	p, err := profiles.Load("rxe")
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range []string{"write", "read"} {
		g := maps.Clone(p.Grid[op])
		delete(g, "qp_timeout")
		p.Grid[op] = g
		p.Start[op] = p.Start[op].With("qp_timeout", 0)
	}
	return p
}

func plan(p profiles.Profile, search string) Plan {
	return Plan{Op: "write", Base: result.Config{Test: "bw", DurationS: 0.1, NumQPs: 1}, Grid: p.Grid["write"],
		Start: p.Start["write"], Search: search, Objective: Objective{Name: "bw"}, Repeat: 1, Resolution: 0.02}
}

func pt(size, depth, off, mod, pl int) profiles.Point {
	return profiles.Point{MsgSizeBytes: size, SQDepth: depth, BufOffsetBytes: off, CQMod: mod, PostList: pl}
}

func gridBest(g map[string][]int) (profiles.Point, float64) {
	var best profiles.Point
	for _, p := range gridPoints(g) {
		if truth(p) > truth(best) || best == (profiles.Point{}) {
			best = p
		}
	}
	return best, truth(best)
}

func TestDescentReachesGridOptimumWithAQuarterOfThePoints(t *testing.T) {
	p := rxe(t)
	grid, err := NewRunner(&fake{}, nil, nil).Run(context.Background(), plan(p, "grid"))
	if err != nil {
		t.Fatal(err)
	}
	desc, err := NewRunner(&fake{}, nil, nil).Run(context.Background(), plan(p, "descent"))
	if err != nil {
		t.Fatal(err)
	}
	if grid.Points != grid.GridPoints || grid.GridPoints != 160 {
		t.Fatalf("grid search measured %d of %d points", grid.Points, grid.GridPoints)
	}
	if desc.Best.Median < 0.95*grid.Best.Median {
		t.Fatalf("descent best %.3f is more than 5%% below the grid's %.3f", desc.Best.Median, grid.Best.Median)
	}
	if 4*desc.Points > grid.GridPoints {
		t.Fatalf("descent measured %d points, more than a quarter of %d", desc.Points, grid.GridPoints)
	}
	if !desc.Decided || desc.Chosen.Runs < 1 {
		t.Fatalf("without noise every comparison decides: %+v", desc)
	}
	t.Logf("grid: %d points, best %.2f at %v; descent: %d points (%d runs), best %.2f at %v",
		grid.Points, grid.Best.Median, grid.Best.Point, desc.Points, desc.Runs, desc.Best.Median, desc.Best.Point)
}

func TestRatioJudge(t *testing.T) {
	for _, c := range []struct {
		d    []float64
		want Relation
	}{
		{[]float64{0.001, -0.001, 0.002, 0}, Equal},
		{[]float64{0.10, 0.11, 0.09}, Better},
		{[]float64{-0.10, -0.11, -0.09}, Worse},
		{[]float64{0.10, -0.10, 0.05}, Undecided},
		{[]float64{0.5}, Undecided}, // one pair: no interval
	} {
		if got := pairRatio(c.d).Judge(0.02); got != c.want {
			t.Errorf("%v: %s, want %s", c.d, got, c.want)
		}
	}
	// The interval: mean 0.1, sd 0.01, n 3: 0.1 +- 4.303 x 0.01 / sqrt 3.
	r := pairRatio([]float64{0.09, 0.10, 0.11})
	if lo := math.Log(*r.Low); math.Abs(lo-(0.1-4.3027*0.01/math.Sqrt(3))) > 1e-6 {
		t.Errorf("t-interval low %v", lo)
	}
	if math.Abs(tQuantile(0.975, 40)-2.0211) > 1e-3 || math.Abs(tQuantile(0.975, 1000)-1.9623) > 1e-3 {
		t.Errorf("t975: %v %v", tQuantile(0.975, 40), tQuantile(0.975, 1000))
	}
}

func TestChoosesTheCheapestStatisticallyEqual(t *testing.T) {
	// A plateau: depth 128 and 512 give the same bandwidth; 512 must not win.
	p := rxe(t)
	g := p.Grid["write"]
	f := measurerFunc(func(ctx context.Context, c result.Config) (result.Result, error) {
		bw := 10.0
		if c.SQDepth < 128 {
			bw = 5
		}
		return result.Result{Config: c, Iterations: 1000, BWGbps: bw, MsgRateMpps: 1, Lat: result.Latency{Samples: 1000}}, nil
	})
	pl := plan(p, "grid")
	pl.Grid = map[string][]int{"msg_size_bytes": {65536}, "sq_depth": g["sq_depth"], "buf_offset_bytes": {0}, "cq_mod": {8}, "post_list": {1}}
	pl.Start = pt(65536, 512, 0, 8, 1)
	pl.Repeat = 3
	o, err := NewRunner(f, nil, nil).Run(context.Background(), pl)
	if err != nil {
		t.Fatal(err)
	}
	if o.Chosen.Point.SQDepth != 128 || !o.Decided || o.Chosen.Runs < 3 {
		t.Fatalf("want depth 128, decided, 3 runs: %+v", o.Chosen)
	}
}

func TestFailedPointsStayFailed(t *testing.T) {
	p := rxe(t)
	calls := map[profiles.Point]int{}
	m := measurerFunc(func(ctx context.Context, c result.Config) (result.Result, error) {
		pt := PointOf(c)
		calls[pt]++
		if pt.SQDepth == 512 {
			return result.Result{Config: c}, errors.New("ibv_create_qp: cannot allocate memory")
		}
		return (&fake{}).Measure(ctx, c)
	})
	o, err := NewRunner(m, nil, nil).Run(context.Background(), plan(p, "descent"))
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
	pl := plan(p, "descent")
	calls := map[profiles.Point]int{}
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

type sessionLost struct{}

func (sessionLost) Error() string    { return "lost the server" }
func (sessionLost) StopsSweep() bool { return true }

func TestLostSessionStopsTheSweep(t *testing.T) {
	p := rxe(t)
	n := 0
	m := measurerFunc(func(ctx context.Context, c result.Config) (result.Result, error) {
		if n++; n > 3 {
			return result.Result{Config: c}, sessionLost{}
		}
		return (&fake{}).Measure(ctx, c)
	})
	if _, err := NewRunner(m, nil, nil).Run(context.Background(), plan(p, "grid")); !errors.As(err, &sessionLost{}) || n != 4 {
		t.Fatalf("a lost session must end the sweep at once: %v after %d calls", err, n)
	}
}

func TestResumeDoesNotRemeasure(t *testing.T) {
	p := rxe(t)
	var stream []Recorded
	record := func(r Recorded) error { stream = append(stream, r); return nil }
	ctx, cancel := context.WithCancel(context.Background())
	f := &fake{stopAfter: 10, cancel: cancel}
	pl := plan(p, "grid")
	pl.References = map[string]profiles.Point{"perftest_defaults": pt(65536, 128, 0, 100, 1)}
	first, err := NewRunner(f, record, nil).Run(ctx, pl)
	if err != nil || !first.Interrupted || len(stream) != 9 {
		t.Fatalf("interrupted run: err %v, interrupted %v, %d recorded", err, first.Interrupted, len(stream))
	}
	f2 := &fake{}
	second, err := NewRunner(f2, record, stream).Run(context.Background(), pl)
	if err != nil {
		t.Fatal(err)
	}
	if second.Reused != 9 || second.Points != 160 || f2.calls != second.Runs {
		t.Fatalf("resume measured %d, reused %d, points %d", f2.calls, second.Reused, second.Points)
	}
	// A finished sweep resumed from its own stream measures nothing, and decides the same.
	f3 := &fake{}
	third, err := NewRunner(f3, nil, stream).Run(context.Background(), pl)
	if err != nil || f3.calls != 0 || third.Chosen.Point != second.Chosen.Point {
		t.Fatalf("resuming a finished sweep: %d measured, chosen %v vs %v, %v", f3.calls, third.Chosen.Point, second.Chosen.Point, err)
	}
}

func TestLatencyBoundObjective(t *testing.T) {
	p := rxe(t)
	pl := plan(p, "grid")
	pl.Objective = Objective{Name: "bw-p99", MaxP99: 20 * time.Microsecond}
	o, err := NewRunner(&fake{}, nil, nil).Run(context.Background(), pl)
	if err != nil {
		t.Fatal(err)
	}
	if o.Best.P99NS == nil || *o.Best.P99NS > 20000 {
		t.Fatalf("best breaks the bound: p99 %v ns", o.Best.P99NS)
	}
	pl.Objective.MaxP99 = time.Nanosecond
	if _, err := NewRunner(&fake{}, nil, nil).Run(context.Background(), pl); err != ErrNoFeasible {
		t.Fatalf("an impossible bound must say so: %v", err)
	}
}

func TestReferencesAreMeasuredAsOftenAsTheChosen(t *testing.T) {
	p := rxe(t)
	pl := plan(p, "descent")
	pl.Repeat = 3
	pl.Article = p.Reference["write"]
	pl.References = map[string]profiles.Point{"perftest_defaults": pt(65536, 128, 0, 100, 1),
		"article": ArticlePoint(pl.Grid, pl.Article, pl.Start)}
	if a := pl.References["article"]; a != pt(65536, 512, 0, 8, 1) {
		t.Fatalf("article point on the rxe grid: %+v", a)
	}
	o, err := NewRunner(&fake{}, nil, nil).Run(context.Background(), pl)
	if err != nil {
		t.Fatal(err)
	}
	for name, r := range o.References {
		if r.Runs < 3 || r.Runs != o.Chosen.Runs || r.Pairs != r.Runs || r.GainLow == nil {
			t.Fatalf("%s: %d runs, %d pairs; chosen %d runs", name, r.Runs, r.Pairs, o.Chosen.Runs)
		}
		want := truth(o.Chosen.Point)/truth(r.Point) - 1
		if r.Point.CQMod == 100 {
			want = truth(o.Chosen.Point)/truth(pt(65536, 128, 0, 100, 1)) - 1
		}
		if r.GainMedian == nil || math.Abs(*r.GainMedian-want) > 1e-9 {
			t.Fatalf("%s: gain %v, want %v", name, r.GainMedian, want)
		}
	}
	for _, st := range o.All {
		if st.Point.CQMod == 100 {
			t.Fatal("an off-grid reference must not compete")
		}
	}
	if v := o.Verdicts["sq_depth"]; v.Verdict != Agrees || v.Chosen != 512 {
		t.Fatalf("depth 512 is the article's: %+v", v)
	}
	if v := o.Verdicts["msg_size_bytes"]; v.Verdict != Differs || v.Ratio == nil || v.ArticleValue == nil || *v.ArticleValue != 65536 {
		t.Fatalf("256K beats the article's 64K by far: %+v", v)
	}
}

func TestTopCandidatesAreAllConfirmed(t *testing.T) {
	p := rxe(t)
	// Lucky single runs: the first run of every point is 20% high, later runs are not.
	seen := map[profiles.Point]int{}
	f := &fake{}
	m := measurerFunc(func(ctx context.Context, c result.Config) (result.Result, error) {
		r, err := f.Measure(ctx, c)
		if seen[PointOf(c)] == 0 {
			r.BWGbps *= 1.2
		}
		seen[PointOf(c)]++
		return r, err
	})
	pl := plan(p, "grid")
	pl.Repeat = 3
	o, err := NewRunner(m, nil, nil).Run(context.Background(), pl)
	if err != nil {
		t.Fatal(err)
	}
	if o.Best.Runs < 3 || o.Chosen.Runs < 3 {
		t.Fatalf("best measured %d times, chosen %d; lucky single runs must not win unconfirmed", o.Best.Runs, o.Chosen.Runs)
	}
}

type measurerFunc func(context.Context, result.Config) (result.Result, error)

func (f measurerFunc) Measure(ctx context.Context, c result.Config) (result.Result, error) {
	return f(ctx, c)
}

func TestScoreNeedsASupportedP99(t *testing.T) {
	r := result.Result{Iterations: 50, BWGbps: 10, Lat: result.Latency{Samples: 50}} // no p99: 50 samples
	for _, o := range []Objective{{Name: "p99"}, {Name: "bw-p99", MaxP99: time.Hour}} {
		if _, ok := o.Score(r); ok {
			t.Errorf("%s: a result without a supported p99 must not qualify", o)
		}
	}
	if v, ok := (Objective{Name: "bw"}).Score(r); !ok || v != 10 {
		t.Errorf("bw does not need a p99: %v %v", v, ok)
	}
	r.Lat = result.Latency{Samples: 1000, P99: ptr(5000)}
	if v, ok := (Objective{Name: "p99"}).Value(r); !ok || v != 5000 {
		t.Errorf("p99 5 us: %v %v", v, ok)
	}
}

func TestWithP99Samples(t *testing.T) {
	bw := result.Config{Test: "bw", CQMod: 8, NumQPs: 3}
	got := WithP99Samples(bw).Iterations
	if got*3/8 < 1000 || (got-1)*3/8 >= 1000 {
		t.Fatalf("cq-mod 8, 3 QPs: %d iterations, want the fewest with 1000 signalled WRs", got)
	}
	bw.Iterations = 50000
	if got := WithP99Samples(bw).Iterations; got != 50000 {
		t.Fatalf("more iterations than needed are kept: %d", got)
	}
	if got := WithP99Samples(result.Config{Test: "lat", CQMod: 100, NumQPs: 1}).Iterations; got != 1000 {
		t.Fatalf("latency runs sample every iteration: %d", got)
	}
	if got := WithP99Samples(result.Config{Test: "bw", CQMod: 64, NumQPs: 1, DurationS: 1}).Iterations; got != 0 {
		t.Fatalf("a timed run is left alone: %d", got)
	}
}

func TestP99SearchMeasuresEnoughSamples(t *testing.T) {
	p := rxe(t)
	pl := plan(p, "grid")
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

func TestUnsupportedP99IsNoCandidate(t *testing.T) {
	p := rxe(t)
	f := &fake{}
	// Timed points at depth 512 complete too few signalled WRs for a p99 (say).
	m := measurerFunc(func(ctx context.Context, c result.Config) (result.Result, error) {
		r, err := f.Measure(ctx, c)
		if c.SQDepth == 512 {
			r.Lat = result.Latency{Samples: 999}
		}
		return r, err
	})
	pl := plan(p, "grid")
	pl.Objective = Objective{Name: "bw-p99", MaxP99: time.Hour}
	pl.Others = []Objective{{Name: "p99"}}
	o, err := NewRunner(m, nil, nil).Run(context.Background(), pl)
	if err != nil {
		t.Fatal(err)
	}
	if o.Best.Point.SQDepth == 512 || o.Best.P99NS == nil {
		t.Fatalf("best has no supported p99: %+v", o.Best)
	}
	if op := o.Optima["p99"]; op.Point.SQDepth == 512 || op.P99NS == nil || op.Unit != "ns" {
		t.Fatalf("p99 optimum: %+v", op)
	}
}

func TestTDistribution(t *testing.T) {
	for _, c := range []struct {
		p  float64
		df int
		q  float64
	}{{0.975, 1, 12.706}, {0.975, 2, 4.303}, {0.975, 10, 2.228}, {0.975, 29, 2.045}, {0.995, 5, 4.032}, {0.9995, 3, 12.924}} {
		if q := tQuantile(c.p, c.df); math.Abs(q-c.q) > 2e-3 {
			t.Errorf("t quantile %v, %d df: %v, want %v", c.p, c.df, q, c.q)
		}
	}
	// p is the level at which a comparison starts to decide.
	for _, d := range [][]float64{{0.01, 0.02, 0.015}, {0.001, -0.002, 0.0005, 0.001}, {0.1, -0.05, 0.08}} {
		r := pairRatio(d)
		p := r.p(0.02)
		if p < 1 && (r.JudgeAt(0.02, p*1.01) == Undecided || r.JudgeAt(0.02, p*0.99) != Undecided) {
			t.Errorf("%v: p %v does not separate decided from undecided", d, p)
		}
	}
}

// Two equal points judged at every look of the final rounds, stopping at the first
// decision: calling them better or worse must stay within alpha, not grow with the
// looks (at 95% each look, 40 looks gave 31% at 5% noise).
func TestRepeatedLooksKeepTheError(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 4000
	wrong := 0
	lvl := alpha / float64(len(finalLooks))
	for range n {
		var d []float64
		for _, look := range finalLooks[1:] {
			for len(d) < look {
				d = append(d, math.Sqrt2*0.05*rng.NormFloat64())
			}
			if j := pairRatio(d).JudgeAt(0.02, lvl); j != Undecided {
				if j != Equal {
					wrong++
				}
				break
			}
		}
	}
	if float64(wrong) > alpha*n {
		t.Fatalf("equal points called different %d of %d times, want <= %.0f%%", wrong, n, 100*alpha)
	}
}

// A sweep under a budget, resumed from its own finished stream, charges the recorded
// runs their time, so it takes the same decisions and measures nothing.
func TestResumeUnderABudgetIsDeterministic(t *testing.T) {
	p := rxe(t)
	for seed := range 4 {
		f := &noisy{rng: rand.New(rand.NewPCG(uint64(seed), 7)), sigma: 0.15, phase: float64(seed)}
		var stream []Recorded
		r := NewRunner(f, func(x Recorded) error { stream = append(stream, x); return nil }, nil)
		r.Now = func() time.Time { return f.clock }
		pl := calibrationPlan(p)
		pl.Budget = 2 * time.Minute
		o1, err := r.Run(context.Background(), pl)
		if err != nil || !o1.BudgetExhausted {
			t.Fatalf("first: %v, exhausted %v", err, o1.BudgetExhausted)
		}
		f2 := &noisy{rng: rand.New(rand.NewPCG(uint64(seed), 99)), sigma: 0.15, phase: float64(seed)}
		r2 := NewRunner(f2, nil, stream)
		r2.Now = func() time.Time { return f2.clock }
		o2, err := r2.Run(context.Background(), pl)
		if err != nil || o2.Runs != 0 || o2.Chosen.Point != o1.Chosen.Point || o2.Decided != o1.Decided || o2.BudgetSpentS != o1.BudgetSpentS {
			t.Fatalf("seed %d: resumed %d new runs, chosen %v vs %v, spent %v vs %v: %v", seed, o2.Runs, o2.Chosen.Point, o1.Chosen.Point, o2.BudgetSpentS, o1.BudgetSpentS, err)
		}
	}
}

func TestResumeFromAnotherSweepFails(t *testing.T) {
	p := rxe(t)
	var stream []Recorded
	pl := plan(p, "descent")
	if _, err := NewRunner(&fake{}, func(x Recorded) error { stream = append(stream, x); return nil }, nil).Run(context.Background(), pl); err != nil {
		t.Fatal(err)
	}
	pl.Start = pl.Start.With("sq_depth", 1024)
	if _, err := NewRunner(&fake{}, nil, stream).Run(context.Background(), pl); !errors.Is(err, ErrStreamMismatch) {
		t.Fatalf("a stream of another sweep must be refused: %v", err)
	}
}

// A lucky first run of the start point must not freeze the descent: the best
// candidate is re-measured against it.
func TestLuckyStartDoesNotFreezeTheDescent(t *testing.T) {
	p := rxe(t)
	first := true
	m := measurerFunc(func(ctx context.Context, c result.Config) (result.Result, error) {
		r, err := (&fake{}).Measure(ctx, c)
		if first {
			r.BWGbps *= 3 // the start point's first run: far above anything
			first = false
		}
		return r, err
	})
	pl := plan(p, "descent")
	pl.Repeat = 3
	o, err := NewRunner(m, nil, nil).Run(context.Background(), pl)
	if err != nil {
		t.Fatal(err)
	}
	if _, best := gridBest(pl.Grid); truth(o.Chosen.Point) < 0.95*best || len(o.Descent) == 0 {
		t.Fatalf("chosen %v (%.0f%% of the best) after %d duels", o.Chosen.Point, 100*truth(o.Chosen.Point)/best, len(o.Descent))
	}
}

// Every objective's optimum is confirmed in final rounds of its own when the budget
// allows (issue 8: the same rules for all); with the budget spent by the searched
// objective, the others stay "best of N measured".
func TestOtherObjectivesConfirmed(t *testing.T) {
	p := rxe(t)
	pl := plan(p, "descent")
	pl.Others = []Objective{{Name: "rate"}}
	pl.Repeat = 2
	o, err := NewRunner(&fake{}, nil, nil).Run(context.Background(), pl)
	if err != nil {
		t.Fatal(err)
	}
	op := o.Optima["rate"]
	if op.Basis != Searched || op.Contenders < 2 || !op.Decided || op.MsgRateMpps <= 0 {
		t.Fatalf("rate optimum without a budget: %+v", op)
	}
	// The fake's rate is highest at the smallest messages.
	if op.Point.MsgSizeBytes != p.Grid["write"]["msg_size_bytes"][0] {
		t.Errorf("rate optimum at %d B", op.Point.MsgSizeBytes)
	}
	pl.Budget = time.Nanosecond // spent at once: no final rounds for anyone
	o, err = NewRunner(&fake{}, nil, nil).Run(context.Background(), pl)
	if err != nil {
		t.Fatal(err)
	}
	if op := o.Optima["rate"]; op.Basis != BestMeasured {
		t.Errorf("rate optimum with the budget spent: basis %q", op.Basis)
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
				if PointOf(c) != p.Start["write"].With("qp_timeout", profiles.DefaultQPTimeout) {
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

// A timed point whose queues hold much of what a run moves is measured again, longer,
// up to the cap: a shallow queue never is; one that stays above a quarter of the
// resolution at the cap is flagged queue-bound, and only its longer runs count.
func TestPointsLongEnoughForTheirQueue(t *testing.T) {
	p := rxe(t)
	const rate = 40e6 // bytes per second, the link
	f := &fake{}
	m := measurerFunc(func(ctx context.Context, c result.Config) (result.Result, error) {
		r, err := f.Measure(ctx, c)
		moved := rate * c.DurationS
		r.Bytes = uint64(moved)
		r.SetRampShare(c, 0)
		return r, err
	})
	pl := plan(p, "descent")
	pl.Base.DurationS, pl.MaxDurationS, pl.Resolution = 0.4, 4, 0.08
	o, err := NewRunner(m, nil, nil).Run(context.Background(), pl)
	if err != nil {
		t.Fatal(err)
	}
	target := pl.Resolution / 4
	for _, ps := range o.All {
		inflight := float64(ps.Point.SQDepth * ps.Point.MsgSizeBytes)
		need := inflight / target / rate // seconds for a share of the target
		switch {
		case ps.RampShare == nil:
			t.Errorf("%v: no ramp share", ps.Point)
		case need <= 0.4 && ps.DurationS != 0.4:
			t.Errorf("%v: lengthened to %v s, needs %.2f s", ps.Point, ps.DurationS, need)
		case need > 0.4 && need <= 4 && (ps.DurationS < need*0.999 || ps.QueueBound):
			t.Errorf("%v: %v s (queue-bound %v), needs %.2f s", ps.Point, ps.DurationS, ps.QueueBound, need)
		case need > 4 && (ps.DurationS != 4 || !ps.QueueBound):
			t.Errorf("%v: %v s, queue-bound %v: needs %.2f s, beyond the cap", ps.Point, ps.DurationS, ps.QueueBound, need)
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

// Where the profile's grid has the QP timeout, the sweep tunes it like any dimension:
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
	pl := plan(p, "descent")
	pl.Start, pl.Grid = p.Start["write"], p.Grid["write"]
	pl.References = map[string]profiles.Point{RefPerftest: pt(65536, 128, 0, 1, 1)}
	o, err := NewRunner(m, nil, nil).Run(context.Background(), pl)
	if err != nil {
		t.Fatal(err)
	}
	if o.Chosen.Point.QPTimeout != 20 || timeouts[0] == 0 || timeouts[20] == 0 || timeouts[14] != 0 {
		t.Fatalf("chosen %v; runs per config QP timeout %v", o.Chosen.Point, timeouts)
	}
	if ref := o.References[RefPerftest]; ref.Point.QPTimeout != profiles.DefaultQPTimeout || ref.Tainted != ref.Runs {
		t.Fatalf("perftest's defaults: %+v", ref)
	}
	if v := o.Verdicts["qp_timeout"]; v.Verdict != NoArticle || v.Chosen != 20 {
		t.Fatalf("qp_timeout verdict %+v", v)
	}
}

// A budget that buys too few final rounds of every contender goes lean: the final
// rounds measure the chosen point, its variants with the article's values and the
// references, so that the verdicts get rounds; the choice is then not decided, and what
// was left out is counted.
func TestLeanFinalRounds(t *testing.T) {
	p := rxe(t)
	lean, decidedVerdicts := 0, 0
	for seed := range 10 {
		f := &noisy{rng: rand.New(rand.NewPCG(uint64(seed), 5)), sigma: 0.15, phase: float64(seed)}
		r := NewRunner(f, nil, nil)
		r.Now = func() time.Time { return f.clock }
		pl := calibrationPlan(p)
		pl.Budget = 3 * time.Minute
		o, err := r.Run(context.Background(), pl)
		if err != nil {
			t.Fatal(err)
		}
		if !o.FinalLean {
			continue
		}
		lean++
		if o.Decided || o.FinalPlan == nil || o.FinalPlan.Points > 2+len(pl.Article)+len(pl.References) || o.Optima["bw"].ContendersCut == 0 {
			t.Errorf("seed %d: lean, yet decided %v, plan %+v, cut %d", seed, o.Decided, o.FinalPlan, o.Optima["bw"].ContendersCut)
		}
		for d, v := range o.Verdicts {
			switch verdictTruth(pl, o, truth, o.Chosen.Point, d, v) {
			case "wrong":
				t.Errorf("seed %d: %s verdict %s is wrong at %.0f%%", seed, d, v.Verdict, 100*o.Resolution)
			case "right":
				decidedVerdicts++
			}
		}
	}
	if lean < 5 || decidedVerdicts == 0 {
		t.Fatalf("%d of 10 sweeps lean, %d verdicts decided: want most lean, some decided", lean, decidedVerdicts)
	}
}
