package sweep

import (
	"context"
	"errors"
	"math"
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

func rxe(t *testing.T) profiles.Profile {
	p, err := profiles.Load("rxe")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func plan(p profiles.Profile, search string) Plan {
	return Plan{Op: "write", Base: result.Config{Test: "bw", DurationS: 0.1, NumQPs: 1}, Grid: p.Grid["write"],
		Start: p.Start["write"], Search: search, Objective: Objective{Name: "bw"}, Repeat: 1, Tolerance: 0.02}
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
	if lo := math.Log(*r.Low); math.Abs(lo-(0.1-4.303*0.01/math.Sqrt(3))) > 1e-9 {
		t.Errorf("t-interval low %v", lo)
	}
	if math.Abs(t975(40)-2.0211) > 1e-3 || math.Abs(t975(1000)-1.9623) > 1e-3 {
		t.Errorf("t975: %v %v", t975(40), t975(1000))
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
	var stream []result.Result
	record := func(r result.Result) error { stream = append(stream, r); return nil }
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
		if math.Abs(r.GainMedian-want) > 1e-9 {
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
	if v := o.Verdicts["msg_size_bytes"]; v.Verdict != Differs || v.Ratio == nil || v.ArticleValue != 65536 {
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
