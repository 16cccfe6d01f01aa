package sweep

import (
	"context"
	"math"
	"slices"

	"github.com/rdmabench/rdmabench/internal/stat"
	"github.com/rdmabench/rdmabench/plan"
	"github.com/rdmabench/rdmabench/profiles"
)

// Step is one decision of the descent: a candidate that looked better, re-measured
// against the current point.
type Step struct {
	From  plan.Point `json:"from"`
	To    plan.Point `json:"to"`
	Ratio Ratio      `json:"ratio"` // To over From
	Moved bool       `json:"moved"`
}

// search finds where the optimum lies, by the plan's search: the grid's best point, or
// the descent's.
func (s *state) search(ctx context.Context) (plan.Point, error) {
	if s.p.Search == "grid" {
		return s.searchGrid(ctx)
	}
	return s.descent(ctx)
}

// searchGrid measures every valid point of the grid once, in gridPoints' order, while
// the search's share of the budget lasts, and returns the best measured.
func (s *state) searchGrid(ctx context.Context) (plan.Point, error) {
	var err error
	for _, pt := range gridPoints(s.p.Grid) {
		if s.exhausted() {
			break
		}
		if err = s.once(ctx, pt, s.next(), "search"); err != nil {
			break
		}
	}
	inc, _ := s.best(s.objs[0], s.measured())
	return inc, err
}

// descent: coordinate descent from the start point. Each dimension's values are
// measured once with the others fixed; the most promising one, if it looks better than
// the current point, is re-measured against it in interleaved pairs, and the descent
// moves only when the pairs say it is significantly better. Then a local refinement
// over pairs of neighbouring values of interacting dimensions, by the same rule.
func (s *state) descent(ctx context.Context) (plan.Point, error) {
	cur := s.p.Start
	if err := s.once(ctx, cur, s.next(), "search"); err != nil {
		return cur, err
	}
	for pass := 0; pass < 3 && !s.exhausted(); pass++ {
		moved := false
		for _, d := range profiles.Dims {
			var line []plan.Point
			for _, v := range s.p.Grid[d] {
				if c := cur.WithInt(d, v); c != cur && c.Valid() {
					line = append(line, c)
				}
			}
			m, err := s.tryMove(ctx, &cur, line)
			if err != nil {
				return cur, err
			}
			moved = moved || m
		}
		if !moved {
			break
		}
	}
	for _, pr := range [][2]string{{"msg_size_bytes", "sq_depth"}, {"sq_depth", "cq_mod"}, {"cq_mod", "post_list"}} {
		var cands []plan.Point
		for _, da := range []int{-1, 1} {
			for _, db := range []int{-1, 1} {
				c, ok := s.step(cur, pr[0], da)
				if ok {
					c, ok = s.step(c, pr[1], db)
				}
				if ok && c.Valid() {
					cands = append(cands, c)
				}
			}
		}
		if _, err := s.tryMove(ctx, &cur, cands); err != nil {
			return cur, err
		}
	}
	return cur, nil
}

// tryMove measures the candidates not yet measured, and moves cur to the most
// promising one if re-measuring says it is significantly better. The most promising
// one is re-measured whenever it is within reach of the current point (a single run
// can be unlucky, and so can the current point's first run): within the tolerance or
// two standard deviations of a single-run difference, or always while the noise is
// not known yet.
func (s *state) tryMove(ctx context.Context, cur *plan.Point, cands []plan.Point) (bool, error) {
	for _, c := range cands {
		if s.exhausted() {
			return false, nil
		}
		if _, seen := s.runs[c]; !seen {
			if err := s.once(ctx, c, s.next(), "search"); err != nil {
				return false, err
			}
		}
	}
	o := s.objs[0]
	b, ok := s.best(o, cands)
	if !ok {
		return false, nil
	}
	cv, curOK := s.mean(*cur, o)
	if !curOK { // the current point failed or does not qualify: any candidate is better
		*cur = b
		return true, nil
	}
	if bv, _ := s.mean(b, o); bv < cv-s.reach(o, 2) || s.exhausted() {
		return false, nil
	}
	r, moved, err := s.duel(ctx, b, *cur)
	if err != nil {
		return false, err
	}
	s.o.Descent = append(s.o.Descent, Step{From: *cur, To: b, Ratio: r, Moved: moved})
	if moved {
		*cur = b
	}
	return moved, nil
}

// reach is how far below a point's mean another point's runs may lie and still be
// plausibly as good: k standard deviations of a single-run difference (from the
// duels so far; unbounded before there is one), at least the tolerance.
func (s *state) reach(o Objective, k float64) float64 {
	sd, ok := s.searchNoise(o)
	if !ok {
		return math.Inf(1)
	}
	return max(math.Log1p(s.tol), k*sd)
}

// duel re-measures challenger a against incumbent b in interleaved rounds (a b, b a,
// ...), judging at duelLooks pairs only, each look at alpha / len(duelLooks): a
// moves when it is significantly better; the duel ends when a cannot be better by
// more than the resolution, or after maxPairs rounds, or when the budget runs out.
// The rounds are counted, not the pairs: a round in which one side's statistic is
// missing (a p99 without the samples) still counts, so noise or a missing statistic
// cannot keep a duel going. It returns a over b.
func (s *state) duel(ctx context.Context, a, b plan.Point) (Ratio, bool, error) {
	o := s.objs[0]
	start := s.led.Spent()
	lvl := alpha / float64(len(duelLooks))
	for rounds := 0; ; rounds++ {
		// One duel takes at most a sixth of the search's share beyond its minimum: a
		// near tie under heavy noise must not eat what the rest of the search needs.
		share := s.p.Budget > 0 && s.led.Spent()-start >= s.p.Budget/12
		r := s.pair(a, b, o)
		last := rounds >= maxPairs || !s.fits(2) || (r.N >= minPairs && share) || s.failed[a] != "" || s.failed[b] != ""
		if slices.Contains(duelLooks, r.N) || last {
			lo, hi := r.bounds(lvl)
			if lo > 1 {
				return r, true, nil
			}
			if hi < 1+s.tol || last {
				return r, false, nil
			}
		}
		order := []plan.Point{a, b}
		if s.round%2 == 1 {
			order = []plan.Point{b, a}
		}
		if err := s.measureRound(ctx, order, "confirm"); err != nil {
			return r, false, err
		}
	}
}

// searchNoise is the spread of paired differences seen while re-measuring in the
// search (standard deviation of a difference), where there were any.
func (s *state) searchNoise(o Objective) (float64, bool) {
	var sds []float64
	for _, st := range s.o.Descent {
		if d := s.diffs(st.To, st.From, o, 0); len(d) >= minPairs {
			_, sd := stat.MeanSD(d)
			sds = append(sds, sd)
		}
	}
	if len(sds) == 0 {
		return 0, false
	}
	return stat.Median(sds), true
}
