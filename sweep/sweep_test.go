package sweep

import (
	"context"
	"maps"
	"testing"

	"github.com/rdmabench/rdmabench/plan"
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
func truth(p plan.Point) float64 {
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
		p.Start[op] = p.Start[op].WithInt("qp_timeout", 0)
	}
	return p
}

func sweepPlan(p profiles.Profile, search string) Plan {
	return Plan{Op: "write", Base: result.Config{Test: result.BW, DurationS: 0.1, NumQPs: 1}, Grid: p.Grid["write"],
		Start: p.Start["write"], Search: search, Objective: Objective{Name: "bw"}, Repeat: 1, Resolution: 0.02}
}

func pt(size, depth, off, mod, pl int) plan.Point {
	return plan.Point{MsgSizeBytes: size, SQDepth: depth, BufOffsetBytes: off, CQMod: mod, PostList: pl}
}

func gridBest(g map[string][]int) (plan.Point, float64) {
	var best plan.Point
	for _, p := range gridPoints(g) {
		if truth(p) > truth(best) || best == (plan.Point{}) {
			best = p
		}
	}
	return best, truth(best)
}

type sessionLost struct{}

func (sessionLost) Error() string    { return "lost the server" }
func (sessionLost) StopsSweep() bool { return true }

type measurerFunc func(context.Context, result.Config) (result.Result, error)

func (f measurerFunc) Measure(ctx context.Context, c result.Config) (result.Result, error) {
	return f(ctx, c)
}
