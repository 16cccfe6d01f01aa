package hunt

import (
	"context"
	"slices"

	"github.com/rdmabench/rdmabench/internal/stat"
)

// A run is screened for low throughput once its operation and size have minScreenPoints
// other points measured; a candidate's reference is the best of at least minRefPoints
// (measured for it where the search has not).
const (
	minScreenPoints = 3
	minRefPoints    = 3
)

// refList are the points of operation and size k that can be a reference, best first,
// with their median throughputs: not in a known low-throughput set (those are known to be
// slow), with a successful run.
func (h *hunter) refList(k opSize) []pointMedian {
	var out []pointMedian
	for _, q := range h.byOpSize[k] {
		d := h.points[q]
		if h.knownSlow(q, d) {
			continue
		}
		if m, ok := d.median(h.r); ok {
			out = append(out, pointMedian{d, m})
		}
	}
	slices.SortFunc(out, func(a, b pointMedian) int {
		switch {
		case a.med > b.med:
			return -1
		case a.med < b.med:
			return 1
		}
		return 0
	})
	return out
}

type pointMedian struct {
	d   *pointData
	med float64
}

func (h *hunter) knownSlow(q Point, d *pointData) bool {
	if d.slowN != len(h.found)+1 {
		d.slowN, d.slow = len(h.found)+1, false
		for _, f := range h.found {
			if f.Class == LowThroughput && f.Key == KeyBestSeen && f.Matches(q) {
				d.slow = true
				break
			}
		}
	}
	return d.slow
}

// screenRef is the throughput a run of pt is screened against: the median of the best
// quarter (at most the best three) of the point medians of its operation and size, pt
// aside (0 until minScreenPoints are measured). Not the best one alone once there are
// many: the best of many single runs is the luckiest draw of noise, and against it every
// point would look slow. It only picks candidates; a candidate is confirmed against a
// reference measured alongside it.
func (h *hunter) screenRef(pt Point) float64 {
	return screenRefFrom(h.refList(opSize{pt.Op, pt.MsgSizeBytes}), pt)
}

func screenRefFrom(list []pointMedian, pt Point) float64 {
	var meds []float64
	for _, q := range list {
		if q.d.pt != pt {
			meds = append(meds, q.med)
		}
	}
	if len(meds) < minScreenPoints {
		return 0
	}
	return stat.Median(meds[:min(3, max(1, len(meds)/4))])
}

// reference is the point a low-throughput trial of pt is judged against: of the points
// of pt's operation and size (pt aside, known-slow sets aside), the one whose runs' median
// throughput is the best. Where fewer than minRefPoints are measured, fresh points of
// that operation and size are measured first (phase reference).
//
// Why this keeps false positives rare: the reference is chosen by its past runs but
// judged by fresh ones, measured in the same rounds as the candidate, so the winner's
// curse (the best of many noisy runs is lucky) does not carry into the ratio: a lucky
// choice re-measures at its true throughput, which can only make the candidate look
// less slow. Each of Rules.Confirm rounds must then fall below the bar on its own; with
// a noise of s per run, a benign point at a fraction r of the best passes a round with
// the chance P(z < ln(bar/r) / (s sqrt 2)), and all three rounds with its cube: for
// r = 0.7, bar 0.5 and s = 15%, about 0.056^3 = 2e-4.
func (h *hunter) reference(ctx context.Context, pt Point) (Point, bool, error) {
	if err := h.ensureRefs(ctx, pt); err != nil {
		return Point{}, false, err
	}
	for _, q := range h.refList(opSize{pt.Op, pt.MsgSizeBytes}) {
		if q.d.pt != pt {
			return q.d.pt, true, nil
		}
	}
	return Point{}, false, nil
}

// ensureRefs measures points of pt's operation and size (phase reference) until
// minRefPoints other than pt can be a reference, of the baseline's servers (one): a
// fan-out's total is judged against what one server's runs reached too, and where a
// fan-out is slow, its runs would otherwise make their own reference.
func (h *hunter) ensureRefs(ctx context.Context, pt Point) error {
	n, peers := 0, h.p.Space.Baseline.Peers
	for _, q := range h.refList(opSize{pt.Op, pt.MsgSizeBytes}) {
		if q.d.pt != pt && q.d.pt.Peers == peers {
			n++
		}
	}
	pin := func(p Point) Point { p.Op, p.MsgSizeBytes, p.Peers = pt.Op, pt.MsgSizeBytes, peers; return p }
	for try := 0; n < minRefPoints && try < 3*minRefPoints; try++ {
		q, ok := h.sample(pin)
		if !ok {
			return nil
		}
		m, err := h.measure(ctx, q, PhaseReference)
		if err != nil {
			return err
		}
		if h.r.judgeable(m) {
			n++
		}
	}
	return nil
}

// watch keeps a screened point that did not look slow, to screen again (rewatch).
func (h *hunter) watch(pt Point) {
	k := opSize{pt.Op, pt.MsgSizeBytes}
	if !slices.Contains(h.watched[k], pt) {
		h.watched[k] = append(h.watched[k], pt)
	}
}

// rewatch queues again the watched points of k that its reference now puts below the
// low-throughput bar.
func (h *hunter) rewatch(k opSize) {
	w := h.watched[k]
	if len(w) == 0 {
		return
	}
	list := h.refList(k)
	keep := w[:0]
	for _, pt := range w {
		if ref := screenRefFrom(list, pt); ref > 0 && h.r.judgeable(h.points[pt].first) && h.points[pt].first.BWGbps < h.r.LowThroughput*ref {
			h.queue = append(h.queue, pt)
			continue
		}
		keep = append(keep, pt)
	}
	h.watched[k] = keep
}
