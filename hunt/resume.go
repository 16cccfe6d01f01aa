package hunt

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rdmabench/rdmabench/counters"
	"github.com/rdmabench/rdmabench/plan"
)

// loadPrior takes an earlier hunt's records: search and reference runs are measured
// points (screened again, in their order: a candidate the earlier hunt had not finished
// confirming is confirmed now), confirm, minimize and probe runs wait to be taken by a
// trial of their point, findings are known (each ID's last record); a finding cut short
// waits to be minimised again (complete). Every prior run is charged to the budget. A
// prior run of other common settings than Base's, or outside the space, is an error.
func (h *hunter) loadPrior() error {
	var fs []Finding
	at := map[string]int{}
	for _, rec := range h.p.Prior {
		if rec.Kind == KindFinding {
			f := *rec.Finding
			if i, ok := at[f.ID]; ok {
				fs[i] = f
			} else {
				at[f.ID] = len(fs)
				fs = append(fs, f)
			}
			var n int
			if _, err := fmt.Sscanf(f.ID, "F%d", &n); err == nil {
				h.nextID = max(h.nextID, n)
			}
			continue
		}
		m := *rec.Measurement
		if err := h.samePlan(m); err != nil {
			return err
		}
		h.o.PriorRuns++
		h.led.Charge(time.Duration(m.WallNS))
		h.seq = max(h.seq, m.Seq)
		pt := plan.PointOf(m.Config)
		h.observe(m)
		switch m.Phase {
		case PhaseSearch, PhaseReference:
			h.add(pt, m, true)
		default:
			h.add(pt, m, false)
			h.pool.Add(pt, m)
		}
	}
	for _, f := range fs {
		if f.Minimal {
			h.found = append(h.found, f)
		} else {
			h.pending = append(h.pending, f)
		}
	}
	return nil
}

// samePlan says what makes prior run m another plan's: a common setting that is not
// Base's, or a point outside the space.
func (h *hunter) samePlan(m Measurement) error {
	c := m.Config
	if err := plan.SameSettings(c, h.p.Base); err != nil {
		return fmt.Errorf("hunt: the prior records' run %d has %w: resume with the settings it was begun with", m.Seq, err)
	}
	pt := plan.PointOf(c)
	for _, d := range DimNames {
		if vals, v := h.p.Space.admits(d), pt.Get(d); !slices.Contains(vals, v) {
			return fmt.Errorf("hunt: the prior records' run %d measured %v, outside this space (%s %s is not one of its values %s): resume with a space that holds every point measured",
				m.Seq, pt, d, v, strings.Join(vals, ","))
		}
	}
	return nil
}

// complete minimises again the prior findings cut short (loadPrior), first to last: each
// is confirmed again at the point the search found it and minimised, the prior runs of
// each point taken first (they replay what the earlier hunt did, at no cost); the
// completed finding keeps its ID and is recorded again. One the fresh runs do not
// confirm, or whose minimisation is again cut short before it changed, is kept as it was
// (reported, never skipped).
func (h *hunter) complete(ctx context.Context) error {
	for len(h.pending) > 0 {
		f := h.pending[0]
		tr := trial{class: f.Class, key: f.Key}
		if f.Class == Counters {
			c := h.control(f.Key)
			tr.keys, tr.ctl = map[string]counters.Class{f.Key: h.counterClass(f.Key)}, &c
		}
		tr, out, err := h.confirm(ctx, f.FoundAt, tr)
		if err != nil {
			return err
		}
		h.pending = h.pending[1:]
		if !out.hit {
			h.kept = append(h.kept, f)
			continue
		}
		if tr.class == Counters {
			tr.key = f.Key
			tr.keys = map[string]counters.Class{f.Key: out.keys[f.Key]}
		}
		g, err := h.minimize(ctx, f.FoundAt, tr, out)
		switch {
		case errors.Is(err, errAbandon):
			h.kept = append(h.kept, f)
			continue
		case !g.Minimal && sameSet(g.Set, f.Set):
			h.kept = append(h.kept, f)
		default:
			if ferr := h.addFinding(g, f.ID); ferr != nil {
				return ferr
			}
			if !slices.ContainsFunc(h.found, func(x Finding) bool { return x.ID == f.ID }) {
				h.kept = append(h.kept, f) // a duplicate of another: the record stays as it was
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}
