package hunt

import (
	"context"
	"errors"
	"math"
	"slices"
)

// The search's annealing: a chain of chainLen moves from a fresh point, its temperature
// falling from tStart to tEnd (in units of the anomaly score, where 1 is a rule's bar).
const (
	chainLen = 30
	tStart   = 0.25
	tEnd     = 0.02
	maxTries = 400 // draws for a fresh point before the space counts as exhausted
	// maxTooLong: the search's proposals in a row that would run past the budget before
	// the hunt counts the budget spent.
	maxTooLong = 64
)

// hunt is the search: screen what was measured, then take the annealing's next point.
func (h *hunter) hunt(ctx context.Context) error {
	tooLong := 0
	for {
		if err := h.screenQueue(ctx); err != nil {
			return err
		}
		pt, ok := h.propose()
		if !ok {
			h.o.Exhausted = true
			return nil
		}
		m, err := h.measure(ctx, pt, PhaseSearch)
		if errors.Is(err, errTooLong) {
			// Not measured: another point may fit what is left, until none can (the
			// setup and the duration alone) or maxTooLong proposals in a row did not.
			h.tooLong[pt], tooLong = true, tooLong+1
			short := pt
			short.SQDepth, short.NumQPs, short.Bidirectional, short.Peers = 1, 1, false, 0
			if tooLong >= maxTooLong || !h.fits(h.estimate(short)) {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		tooLong = 0
		h.move(pt, m)
		if h.o.Runs >= noneRanStop && h.o.Errors == h.o.Runs {
			return h.noneRan()
		}
	}
}

// score is how anomalous a run looks, 1 at a rule's bar: the largest of its throughput's
// shortfall against its size's reference (the bar's fraction x the reference / its
// throughput), its tail over the tail bar, the unfair bar over its lowest judged share
// (Share); a failure or counters that moved score above every bar. A class (and key) a
// finding already holds at pt does not count: the annealing climbs towards what is not
// known. It is what the annealing climbs.
func (h *hunter) score(pt Point, m Measurement) float64 {
	if k := failKey(m.Error); k != "" && h.r.on(Failed) && !h.knownFor(pt, Failed, k) {
		return 3
	}
	s := 0.0
	if h.r.on(Counters) {
		for n := range h.moved(m) {
			if !h.knownFor(pt, Counters, n) {
				s = 1.5
				break
			}
		}
	}
	if m.Error != "" {
		return s
	}
	if ref := h.screenRef(pt); ref > 0 && h.r.judgeable(m) && h.r.on(LowThroughput) && !h.knownFor(pt, LowThroughput, KeyBestSeen) {
		s = max(s, h.r.LowThroughput*ref/m.BWGbps)
	}
	if r, ok := tailRatio(m); ok && h.r.on(Tail) && !h.knownFor(pt, Tail, "") {
		s = max(s, r/h.r.TailRatio)
	}
	if h.r.on(Unfair) && h.r.judgeable(m) {
		for _, k := range unfairKeys {
			if r, ok := m.share(k); ok && !h.knownFor(pt, Unfair, k) {
				s = max(s, h.r.UnfairRatio/max(r, 0.01)) // a share of none: far past the bar
			}
		}
	}
	return s
}

// move is the annealing's step to pt (measured as m): taken when pt scores at least the
// chain's current point, else with the Metropolis chance exp(-drop / T).
func (h *hunter) move(pt Point, m Measurement) {
	if h.cur == nil {
		h.cur, h.steps = &pt, 0
		return
	}
	sx, sy := h.score(*h.cur, h.points[*h.cur].first), h.score(pt, m)
	t := tStart * math.Pow(tEnd/tStart, float64(h.steps)/chainLen)
	if sy >= sx || h.rng.Float64() < math.Exp((sy-sx)/t) {
		h.cur = &pt
	}
	h.steps++
}

// propose is the search's next point to measure: a neighbour of the chain's current
// point (moving over measured neighbours without measuring them again), or, when the
// chain is spent or stuck, a fresh point that starts a new chain.
func (h *hunter) propose() (Point, bool) {
	for range 64 {
		if h.cur == nil || h.steps >= chainLen {
			break
		}
		y, ok := h.neighbour(*h.cur)
		if !ok {
			break
		}
		if d, seen := h.points[y]; seen {
			h.move(y, d.first)
			continue
		}
		return y, true
	}
	h.cur = nil
	return h.sample(nil)
}

// neighbour changes one parameter of x (two, a time in three): an ordered one a step up
// or down (more often) or to any value, a category to another value. The result is
// repaired to a point rdmabench runs, and is neither x, refused, known (every class
// known there), nor a point the budget could not fit.
func (h *hunter) neighbour(x Point) (Point, bool) {
	if len(h.varied) == 0 {
		return x, false
	}
	for range 40 {
		y := x
		k := 1
		if h.rng.IntN(3) == 0 {
			k = 2
		}
		for range k {
			d := h.varied[h.rng.IntN(len(h.varied))]
			i := slices.Index(d.Values, y.Get(d.Name))
			j := i
			if Ordered(d.Name) && h.rng.Float64() < 0.6 {
				j = i + 1 - 2*h.rng.IntN(2)
				if j < 0 || j >= len(d.Values) {
					j = 2*i - j
				}
			} else {
				j = h.rng.IntN(len(d.Values) - 1)
				if j >= i {
					j++
				}
			}
			if j >= 0 && j < len(d.Values) {
				y = y.With(d.Name, d.Values[j])
			}
		}
		y = repair(y, h.p.Space)
		if y == x || !h.valid(y) || h.tooLong[y] {
			continue
		}
		if h.known(y) {
			h.o.Skipped++
			continue
		}
		return y, true
	}
	return x, false
}

// sample draws a fresh point: each parameter's value weighted against how often it was
// measured already (1/(1+n): every value of every parameter gets its share early),
// pinned by pin where given, repaired, and neither measured, refused, known (every class
// known there) nor a point the budget could not fit.
//
// A known draw counts as coverage of its values (the sets cover them), so that the
// weights turn to the values outside them. The space counts as exhausted when maxTries
// weighted draws and as many uniform ones found no point.
func (h *hunter) sample(pin func(Point) Point) (Point, bool) {
	for try := range 2 * maxTries {
		var p Point
		for _, d := range h.p.Space.Dims {
			p = p.With(d.Name, h.pick(d, try >= maxTries))
		}
		if pin != nil {
			p = pin(p)
		}
		p = repair(p, h.p.Space)
		if _, seen := h.points[p]; seen || !h.valid(p) || h.tooLong[p] {
			continue
		}
		if h.known(p) {
			h.o.Skipped++
			for _, d := range h.varied {
				h.coverage[d.Name][p.Get(d.Name)]++
			}
			continue
		}
		return p, true
	}
	return Point{}, false
}

func (h *hunter) pick(d Dim, uniform bool) string {
	if len(d.Values) == 1 {
		return d.Values[0]
	}
	if uniform {
		return d.Values[h.rng.IntN(len(d.Values))]
	}
	cov := h.coverage[d.Name]
	w := make([]float64, len(d.Values))
	total := 0.0
	for i, v := range d.Values {
		w[i] = 1 / (1 + float64(cov[v]))
		total += w[i]
	}
	x := h.rng.Float64() * total
	for i, wi := range w {
		if x < wi {
			return d.Values[i]
		}
		x -= wi
	}
	return d.Values[len(d.Values)-1]
}
