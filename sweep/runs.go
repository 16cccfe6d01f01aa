package sweep

import (
	"math"
	"slices"

	"github.com/rdmabench/rdmabench/plan"
)

// goodness is a run's goodness for o (computed once, when the run is taken).
func (s *state) goodness(r run, o Objective) (float64, bool) {
	if i := slices.Index(s.objs, o); i >= 0 {
		return r.good[i], r.ok[i]
	}
	return o.goodness(r.res)
}

// count is how many of pt's runs qualify for o.
func (s *state) count(pt plan.Point, o Objective) int {
	n := 0
	for _, r := range s.runs[pt] {
		if _, ok := s.goodness(r, o); ok {
			n++
		}
	}
	return n
}

// pair compares a with b on the rounds where both qualified: a over b.
func (s *state) pair(a, b plan.Point, o Objective) Ratio {
	return moderatedRatio(s.diffs(a, b, o, 0), s.priorSD, s.priorDF)
}

// diffs are a's goodness minus b's, per round from round `from` on where both
// qualified (runs are kept in round order: a merge).
func (s *state) diffs(a, b plan.Point, o Objective, from int) []float64 {
	ra, rb := s.runs[a], s.runs[b]
	var d []float64
	for i, j := 0, 0; i < len(ra) && j < len(rb); {
		switch x, y := ra[i], rb[j]; {
		case x.round < y.round:
			i++
		case x.round > y.round:
			j++
		default:
			ga, oka := s.goodness(x, o)
			gb, okb := s.goodness(y, o)
			if oka && okb && x.round >= from {
				d = append(d, ga-gb)
			}
			i, j = i+1, j+1
		}
	}
	return d
}

// mean is pt's mean goodness over all its runs (unpaired: for screening only), and
// whether pt is a candidate for o: more than half its runs qualify.
func (s *state) mean(pt plan.Point, o Objective) (float64, bool) {
	var sum float64
	n := 0
	for _, r := range s.runs[pt] {
		if g, ok := s.goodness(r, o); ok {
			sum, n = sum+g, n+1
		}
	}
	if n == 0 || 2*n <= len(s.runs[pt]) {
		return math.Inf(-1), false
	}
	return sum / float64(n), true
}

func (s *state) measured() []plan.Point {
	var out []plan.Point
	for _, pt := range s.order {
		if len(s.runs[pt]) > 0 && s.onGrid(pt) {
			out = append(out, pt)
		}
	}
	return out
}

// qualifying is how many of the measured grid points are candidates for o (more than
// half their runs qualify).
func (s *state) qualifying(o Objective) int {
	n := 0
	for _, q := range s.measured() {
		if _, ok := s.mean(q, o); ok {
			n++
		}
	}
	return n
}

// best is the candidate with the highest mean goodness.
func (s *state) best(o Objective, pts []plan.Point) (plan.Point, bool) {
	var b plan.Point
	bv, found := math.Inf(-1), false
	for _, pt := range pts {
		if v, ok := s.mean(pt, o); ok && (!found || v > bv) {
			b, bv, found = pt, v, true
		}
	}
	return b, found
}
