package sweep

import (
	"context"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/result"
)

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

func TestLatencyBoundObjective(t *testing.T) {
	p := rxe(t)
	pl := sweepPlan(p, "grid")
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
	pl := sweepPlan(p, "grid")
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
