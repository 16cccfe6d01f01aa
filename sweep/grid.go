package sweep

import (
	"math"
	"slices"

	"github.com/rdmabench/rdmabench/plan"
	"github.com/rdmabench/rdmabench/profiles"
	"github.com/rdmabench/rdmabench/result"
)

// PointOf reads the swept dimensions out of a config, each by its plan.Dim (its QP
// timeout 0 is the default's exponent).
func PointOf(c result.Config) plan.Point { return plan.PointOf(c, profiles.Dims...) }

// Apply sets the swept dimensions of a config, each by its plan.Dim (the default QP
// timeout said as 0, as a config says it); a point without a value on one (a QP
// timeout the grid left out: plan.Point.Holds) leaves the config's.
func Apply(c result.Config, p plan.Point) result.Config { return p.Apply(c, profiles.Dims...) }

// gridPoints lists the valid points of a grid in a fixed order. A dimension the grid
// leaves out (an optional one, before profiles.Complete) is not held by its points.
func gridPoints(g map[string][]int) []plan.Point {
	out := []plan.Point{{}}
	for _, d := range profiles.Dims {
		if len(g[d]) == 0 {
			continue
		}
		var next []plan.Point
		for _, p := range out {
			for _, v := range g[d] {
				next = append(next, p.WithInt(d, v))
			}
		}
		out = next
	}
	valid := out[:0]
	for _, p := range out {
		if p.Valid() {
			valid = append(valid, p)
		}
	}
	return valid
}

func (s *state) onGrid(p plan.Point) bool {
	for _, d := range profiles.Dims {
		if !slices.Contains(s.p.Grid[d], p.Int(d)) {
			return false
		}
	}
	return true
}

func (s *state) step(p plan.Point, d string, delta int) (plan.Point, bool) {
	vals := s.p.Grid[d]
	i := slices.Index(vals, p.Int(d)) + delta
	if i < 0 || i >= len(vals) {
		return p, false
	}
	return p.WithInt(d, vals[i]), true
}

// neighbours are pt's one-parameter neighbours on the grid (one step either way)
// that can run.
func (s *state) neighbours(pt plan.Point) []plan.Point {
	var out []plan.Point
	for _, d := range profiles.Dims {
		for _, delta := range []int{-1, 1} {
			if n, ok := s.step(pt, d, delta); ok && n.Valid() {
				out = append(out, n)
			}
		}
	}
	return out
}

// cheaper orders statistically equal configurations, dimension by dimension in
// profiles.Cheaper's order, the smaller value first.
func cheaper(a, b plan.Point) int {
	for _, d := range profiles.Cheaper {
		if a.Int(d) != b.Int(d) {
			return a.Int(d) - b.Int(d)
		}
	}
	return 0
}

// ArticleValue is the grid value for dimension d that the tuning article's range [lo, hi]
// stands for, nearest to near: a value in the range if the grid has one, else the
// value nearest to the range. The tuning article's offsets are from a 4 KiB boundary.
func ArticleValue(d string, grid []int, r []int, near int) int {
	in := func(v int) bool { return inRange(d, r, v) }
	dist := func(v int) int {
		switch {
		case in(v):
			return abs(v - near)
		case v < r[0]:
			return 1<<40 + r[0] - v
		}
		return 1<<40 + v - r[1]
	}
	best := grid[0]
	for _, v := range grid[1:] {
		if dist(v) < dist(best) {
			best = v
		}
	}
	return best
}

func inRange(d string, r []int, v int) bool {
	if d == "buf_offset_bytes" {
		v %= 4096
	}
	return v >= r[0] && v <= r[1]
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

// ArticlePoint is the tuning article's recommended configuration on a grid: per dimension the
// value that stands for its range (nearest to the range's geometric middle), and the
// start point's value where the tuning article gives none.
func ArticlePoint(grid map[string][]int, article map[string][]int, start plan.Point) plan.Point {
	p := start
	for _, d := range profiles.Dims {
		if r, ok := article[d]; ok && len(grid[d]) > 0 {
			p = p.WithInt(d, ArticleValue(d, grid[d], r, int(math.Sqrt(float64(r[0])*float64(r[1])))))
		}
	}
	return p
}

// variants are the chosen point with one parameter set to the tuning article's value, where
// it differs and can run: what the verdicts compare.
func (s *state) variants(chosen plan.Point) []plan.Point {
	var out []plan.Point
	for _, d := range profiles.Dims {
		r, ok := s.p.Article[d]
		if !ok || inRange(d, r, chosen.Int(d)) {
			continue
		}
		v := chosen.WithInt(d, ArticleValue(d, s.p.Grid[d], r, chosen.Int(d)))
		if v != chosen && v.Valid() {
			out = append(out, v)
		}
	}
	return out
}
