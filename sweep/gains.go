package sweep

import (
	"context"
	"slices"

	"github.com/rdmabench/rdmabench/plan"
)

// gains measures, once the choice is made, every objective's chosen point and the
// references afresh: Repeat interleaved rounds (made even), from the budget's share set
// aside for them (and no run once the budget is spent). The estimates and
// gains are computed from these rounds only, so that the luck that made a point win
// does not inflate its gain.
func (s *state) gains(ctx context.Context, f *final) error {
	if !f.dec.ok {
		return nil
	}
	pts := []plan.Point{f.dec.chosen}
	for i, o := range s.objs[1:] {
		b, _ := s.best(o, s.measured())
		if fo := f.other(i); fo != nil {
			b = fo.dec.chosen
		}
		f.others = append(f.others, b)
		pts = append(pts, b)
	}
	for _, name := range sortedKeys(s.p.References) {
		pts = append(pts, s.p.References[name])
	}
	var uniq []plan.Point
	for _, pt := range pts {
		if pt != (plan.Point{}) && !slices.Contains(uniq, pt) && s.failed[pt] == "" {
			uniq = append(uniq, pt)
		}
	}
	f.gains = s.round + 1
	for range s.p.Repeat + s.p.Repeat%2 { // even: the alternating order cancels a linear drift
		if s.round%2 == 1 {
			slices.Reverse(uniq)
		}
		if err := s.measureRound(ctx, uniq, "gains"); err != nil {
			return err
		}
	}
	return nil
}

func gain(r Ratio) Gain {
	g := Gain{Pairs: r.N}
	if r.N == 0 {
		return g
	}
	med := r.Median - 1
	g.GainMedian = &med
	if r.Low != nil {
		lo, hi := *r.Low-1, *r.High-1
		g.GainLow, g.GainHigh = &lo, &hi
	}
	return g
}
