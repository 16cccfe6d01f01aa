package plan

// Replay holds a resumed search's prior runs, each under its point, to be taken in place
// of new runs of that point: a point's runs in the order they were added (Take). A
// search that asks again for the same points in the same order (the sweep) checks, with
// Next, that the run it takes is the earliest of all that are left, so that a stream of
// another plan is refused rather than taken out of order: its comparisons pair runs by
// round, and a run taken out of order would be paired with runs measured at other
// times. The hunt takes a run by its point, in whatever order it asks. The zero value is
// empty and ready.
type Replay[T any] struct {
	runs  []T
	pts   []Point
	taken []bool
	left  map[Point][]int // per point, the indexes of the runs not taken, first added first
	head  int             // no run before it is left
	n     int             // runs left
}

// Add adds run v of point pt, after those added before.
func (r *Replay[T]) Add(pt Point, v T) {
	if r.left == nil {
		r.left = map[Point][]int{}
	}
	r.left[pt] = append(r.left[pt], len(r.runs))
	r.runs, r.pts, r.taken = append(r.runs, v), append(r.pts, pt), append(r.taken, false)
	r.n++
}

// Len is how many runs are left (none in a nil Replay).
func (r *Replay[T]) Len() int {
	if r == nil {
		return 0
	}
	return r.n
}

// Next is the point of the earliest run left, in the order the runs were added; false
// when none is.
func (r *Replay[T]) Next() (Point, bool) {
	for r.head < len(r.runs) && r.taken[r.head] {
		r.head++
	}
	if r.head == len(r.runs) {
		return Point{}, false
	}
	return r.pts[r.head], true
}

// Take takes pt's earliest run left; false when none is.
func (r *Replay[T]) Take(pt Point) (T, bool) {
	q := r.left[pt]
	if len(q) == 0 {
		var zero T
		return zero, false
	}
	i := q[0]
	if len(q) == 1 {
		delete(r.left, pt)
	} else {
		r.left[pt] = q[1:]
	}
	r.taken[i] = true
	r.n--
	return r.runs[i], true
}
