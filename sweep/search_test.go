package sweep

import (
	"context"
	"testing"

	"github.com/rdmabench/rdmabench/result"
)

func TestDescentReachesGridOptimumWithAQuarterOfThePoints(t *testing.T) {
	p := rxe(t)
	grid, err := NewRunner(&fake{}, nil, nil).Run(context.Background(), sweepPlan(p, "grid"))
	if err != nil {
		t.Fatal(err)
	}
	desc, err := NewRunner(&fake{}, nil, nil).Run(context.Background(), sweepPlan(p, "descent"))
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
	pl := sweepPlan(p, "descent")
	pl.Repeat = 3
	o, err := NewRunner(m, nil, nil).Run(context.Background(), pl)
	if err != nil {
		t.Fatal(err)
	}
	if _, best := gridBest(pl.Grid); truth(o.Chosen.Point) < 0.95*best || len(o.Descent) == 0 {
		t.Fatalf("chosen %v (%.0f%% of the best) after %d duels", o.Chosen.Point, 100*truth(o.Chosen.Point)/best, len(o.Descent))
	}
}
