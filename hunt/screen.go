package hunt

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/rdmabench/rdmabench/counters"
)

// screenQueue screens the measured points in their order: each candidate class of a
// point's first run, not known there already, is measured afresh (confirm); a confirmed
// one is minimised and recorded, and the point's other candidates are tried in turn.
func (h *hunter) screenQueue(ctx context.Context) error {
	for len(h.queue) > 0 {
		pt := h.queue[0]
		h.queue = h.queue[1:]
		// A size measured at fewer than minRefPoints other points gets random points of
		// its own first: a reference drawn from the whole space, not from the chain's
		// neighbourhood (a chain inside a slow region measures mostly slow points).
		if first := h.points[pt].first; h.r.on(LowThroughput) && h.r.judgeable(first) && !h.knownFor(pt, LowThroughput, KeyBestSeen) {
			if err := h.ensureRefs(ctx, pt); err != nil {
				return err
			}
		}
		for _, tr := range h.candidates(pt, h.points[pt].first) {
			if !h.stillCandidate(pt, &tr) {
				continue // a finding made since says it, or its counters are background now
			}
			id := fmt.Sprintf("%v|%s", pt, tr.id())
			if h.rejected[id] {
				continue
			}
			h.o.Candidates++
			tr, out, err := h.confirm(ctx, pt, tr)
			if err != nil {
				return err
			}
			if !out.hit {
				h.rejected[id] = true
				h.o.Rejected++
				continue
			}
			if tr.class == Counters {
				tr.key = pickCounter(out.keys)
				tr.keys = map[string]counters.Class{tr.key: out.keys[tr.key]}
			}
			f, err := h.minimize(ctx, pt, tr, out)
			if errors.Is(err, errAbandon) {
				// Not this trial again; the point is screened again, its counter settled
				// now (background, or another control: another trial).
				h.rejected[id] = true
				h.o.Rejected++
				h.queue = append(h.queue, pt)
				break
			}
			if ferr := h.addFinding(f, ""); ferr != nil {
				return ferr
			}
			if err != nil {
				return err
			}
			h.cur = nil // the chain's region is known now: start afresh
		}
	}
	return nil
}

// stillCandidate says whether trial tr of pt is still to be tried: no finding of its
// class and key holds pt (a counters trial drops the counters known there, or background).
func (h *hunter) stillCandidate(pt Point, tr *trial) bool {
	if tr.class != Counters {
		return !h.knownFor(pt, tr.class, tr.key)
	}
	keys := map[string]counters.Class{}
	for n, c := range tr.keys {
		if h.background[n] == nil && !h.knownFor(pt, Counters, n) && h.control(n) == *tr.ctl {
			keys[n] = c
		}
	}
	tr.keys = keys
	return len(keys) > 0
}

// candidates are the classes whose bar a run m of pt crossed, in Classes' order, each
// class (and key) only where no finding of it holds pt: a point in a known set is still
// screened for every other class.
func (h *hunter) candidates(pt Point, m Measurement) []trial {
	var out []trial
	if k := failKey(m.Error); k != "" && h.r.on(Failed) && !h.knownFor(pt, Failed, k) {
		out = append(out, trial{class: Failed, key: k})
	}
	if h.r.on(Counters) {
		// one trial per control: the counters whose trigger the baseline holds are paired
		// with their own
		groups := map[Point]map[string]counters.Class{}
		for n, f := range h.moved(m) {
			if h.knownFor(pt, Counters, n) {
				continue
			}
			c := h.control(n)
			if groups[c] == nil {
				groups[c] = map[string]counters.Class{}
			}
			groups[c][n] = f.Class
		}
		ctls := slices.SortedFunc(maps.Keys(groups), func(a, b Point) int { return strings.Compare(a.String(), b.String()) })
		for _, c := range ctls {
			out = append(out, trial{class: Counters, keys: groups[c], ctl: &c})
		}
	}
	if m.Error != "" {
		return out
	}
	if h.r.on(LowThroughput) && h.r.judgeable(m) {
		if !h.knownFor(pt, LowThroughput, KeyBestSeen) {
			ref := h.screenRef(pt)
			if ref > 0 && m.BWGbps < h.r.LowThroughput*ref {
				out = append(out, trial{class: LowThroughput, key: KeyBestSeen})
			}
			if ref == 0 || m.BWGbps >= h.r.LowThroughput*ref {
				h.watch(pt) // screened again should its size's reference rise
			}
		}
		if h.r.LinkFraction > 0 && h.p.LinkGbps > 0 && m.BWGbps < h.r.LinkFraction*h.p.LinkGbps && !h.knownFor(pt, LowThroughput, KeyLink) {
			out = append(out, trial{class: LowThroughput, key: KeyLink})
		}
	}
	if r, ok := tailRatio(m); ok && r > h.r.TailRatio && h.r.on(Tail) && !h.knownFor(pt, Tail, "") {
		out = append(out, trial{class: Tail})
	}
	if h.r.on(Unfair) && h.r.judgeable(m) {
		for _, k := range unfairKeys {
			if r, ok := m.share(k); ok && r < h.r.UnfairRatio && !h.knownFor(pt, Unfair, k) {
				out = append(out, trial{class: Unfair, key: k})
			}
		}
	}
	return out
}
