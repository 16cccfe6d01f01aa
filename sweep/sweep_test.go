package sweep

import (
	"context"
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
	inflight := size * depth
	bw := 100 * inflight / (inflight + 4<<20)
	bw *= 1 - 0.3/float64(c.CQMod)
	if c.BufOffsetBytes%4096 != 0 {
		bw *= 0.9
	}
	bw *= 1 + 0.01*float64(c.PostList)
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
	if desc.Best.Score < 0.95*grid.Best.Score {
		t.Fatalf("descent best %.3f is more than 5%% below the grid's %.3f", desc.Best.Score, grid.Best.Score)
	}
	if 4*desc.Points > grid.GridPoints {
		t.Fatalf("descent measured %d points, more than a quarter of %d", desc.Points, grid.GridPoints)
	}
	t.Logf("grid: %d points, best %.2f at %v; descent: %d points, best %.2f at %v",
		grid.Points, grid.Best.Score, grid.Best.Point, desc.Points, desc.Best.Score, desc.Best.Point)
}

func TestChoosePrefersTheCheapestWithinTolerance(t *testing.T) {
	pt := func(depth, mod, pl int) profiles.Point {
		return profiles.Point{"msg_size_bytes": 65536, "sq_depth": depth, "buf_offset_bytes": 0, "cq_mod": mod, "post_list": pl}
	}
	stats := []Stat{
		{Point: pt(512, 64, 4), Score: 100, Feasible: true},
		{Point: pt(128, 16, 1), Score: 98.5, Feasible: true},
		{Point: pt(128, 8, 1), Score: 98.1, Feasible: true},
		{Point: pt(32, 8, 1), Score: 90, Feasible: true},
		{Point: pt(8, 1, 1), Score: math.Inf(-1)},
	}
	best, chosen, within, ok := Choose(stats, 0.02, 1)
	if !ok || best.Score != 100 {
		t.Fatalf("best: %+v", best)
	}
	if chosen.Point["sq_depth"] != 128 || chosen.Point["cq_mod"] != 8 {
		t.Fatalf("want depth 128 / cq_mod 8 (cheapest within 2%%), got %v", chosen.Point)
	}
	if len(within) != 3 || within[0].Score != 100 {
		t.Fatalf("within: %+v", within)
	}
	if _, chosen, _, _ = Choose(stats, 0.2, 1); chosen.Point["sq_depth"] != 32 {
		t.Fatalf("a wider tolerance admits depth 32: %v", chosen.Point)
	}
}

func TestResumeDoesNotRemeasure(t *testing.T) {
	p := rxe(t)
	var stream []result.Result
	record := func(r result.Result) error { stream = append(stream, r); return nil }
	ctx, cancel := context.WithCancel(context.Background())
	f := &fake{stopAfter: 10, cancel: cancel}
	first, err := NewRunner(f, record, nil).Run(ctx, plan(p, "grid"))
	if err != nil || !first.Interrupted || len(stream) != 9 {
		t.Fatalf("interrupted run: err %v, interrupted %v, %d recorded", err, first.Interrupted, len(stream))
	}
	f2 := &fake{}
	second, err := NewRunner(f2, record, stream).Run(context.Background(), plan(p, "grid"))
	if err != nil {
		t.Fatal(err)
	}
	if f2.calls != 160-9 || second.Reused != 9 || second.Points != 160 {
		t.Fatalf("resume measured %d (want %d), reused %d, points %d", f2.calls, 160-9, second.Reused, second.Points)
	}
}

func TestNoiseWidensTheTolerance(t *testing.T) {
	p := rxe(t)
	i := 0
	noise := func() float64 { i++; return []float64{-0.05, 0.05}[i%2] }
	pl := plan(p, "descent")
	pl.Repeat = 3
	o, err := NewRunner(&fake{noise: noise}, nil, nil).Run(context.Background(), pl)
	if err != nil {
		t.Fatal(err)
	}
	if o.Noise < 0.05 || o.Tolerance != o.Noise {
		t.Fatalf("10%% run-to-run spread must show as noise and set the tolerance: noise %.3f tol %.3f", o.Noise, o.Tolerance)
	}
	if o.Best.Runs < 3 {
		t.Fatalf("the top candidates are measured %d times, want 3", o.Chosen.Runs)
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

func TestBaselinesAreMeasured(t *testing.T) {
	p := rxe(t)
	pl := plan(p, "descent")
	pl.Baselines = map[string]profiles.Point{"perftest": {"msg_size_bytes": 65536, "sq_depth": 128, "buf_offset_bytes": 0, "cq_mod": 100, "post_list": 1}}
	o, err := NewRunner(&fake{}, nil, nil).Run(context.Background(), pl)
	if err != nil {
		t.Fatal(err)
	}
	b := o.Baselines["perftest"]
	if !b.Feasible || b.Runs != 1 {
		t.Fatalf("baseline: %+v", b)
	}
	for _, st := range o.All {
		if st.Point["cq_mod"] == 100 {
			t.Fatal("an off-grid baseline must not compete in the search")
		}
	}
}

func TestTopCandidatesAreAllConfirmed(t *testing.T) {
	p := rxe(t)
	// Lucky single runs: the first run of every point is 20% high, later runs are not.
	seen := map[string]int{}
	f := &fake{}
	m := measurerFunc(func(ctx context.Context, c result.Config) (result.Result, error) {
		r, err := f.Measure(ctx, c)
		k := Key(c.Op, PointOf(c))
		if seen[k] == 0 {
			r.BWGbps *= 1.2
		}
		seen[k]++
		return r, err
	})
	pl := plan(p, "grid")
	pl.Repeat = 3
	o, err := NewRunner(m, nil, nil).Run(context.Background(), pl)
	if err != nil {
		t.Fatal(err)
	}
	if o.Best.Runs < 3 {
		t.Fatalf("the best point was measured %d times; lucky single runs must not win unconfirmed", o.Best.Runs)
	}
	if o.Chosen.Runs < 3 {
		t.Fatalf("the chosen point was measured %d times, want 3", o.Chosen.Runs)
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
	if v, ok := (Objective{Name: "p99"}).Score(r); !ok || v != -5000 {
		t.Errorf("p99 5 us: %v %v", v, ok)
	}
	st := Rescore([]Stat{{Runs: 1, Feasible: true, BWGbps: 10}}, Objective{Name: "p99"})
	if st[0].Feasible {
		t.Error("a stat without a p99 is no p99 optimum")
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
	o, err := NewRunner(m, nil, nil).Run(context.Background(), pl)
	if err != nil {
		t.Fatal(err)
	}
	if o.Best.Point["sq_depth"] == 512 || o.Best.P99NS == nil {
		t.Fatalf("best has no supported p99: %+v", o.Best)
	}
	for _, st := range o.All {
		if st.Point["sq_depth"] == 512 && st.Feasible {
			t.Fatalf("a point without a supported p99 is feasible: %+v", st)
		}
	}
}
