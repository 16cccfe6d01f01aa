package hunt

import (
	"context"
	"errors"
	"math"

	"github.com/rdmabench/rdmabench/counters"
)

// errAbandon: a counters finding's minimisation stopped because its counter moved at its
// control and was settled otherwise (background, or a new control): no finding.
var errAbandon = errors.New("hunt: the counter moved at its control")

// control is the point counter k's trials are paired with: the baseline, or the point
// the probe found silencing it where the baseline holds its trigger.
func (h *hunter) control(k string) Point {
	if q, ok := h.controls[k]; ok {
		return q
	}
	return h.p.Space.Baseline
}

// The bar of settle: a counter is background when it moved at its control more often
// than a stray rate of bgStray explains, a one-sided binomial test at bgLevel: a real
// trigger's counter that strays now and then at a benign point (2-3% of runs) stays
// judged, one that moves in a fifth of the runs is background within some twenty-five
// runs of its control, in half of them within six.
const (
	bgStray = 0.05
	bgLevel = 0.01
)

// binomialTail is P(X >= k) for X binomial of n trials with chance p each.
func binomialTail(n, k int, p float64) float64 {
	sum := 0.0
	for i := k; i <= n; i++ {
		ln, _ := math.Lgamma(float64(n + 1))
		li, _ := math.Lgamma(float64(i + 1))
		lr, _ := math.Lgamma(float64(n - i + 1))
		sum += math.Exp(ln - li - lr + float64(i)*math.Log(p) + float64(n-i)*math.Log1p(-p))
	}
	return min(sum, 1)
}

// settle decides what counter k (of class cl) is, having moved at its control ctl in a
// trial's round. It measures ctl Rules.Confirm times afresh. Where k moved in all of
// them and ctl is the baseline, the baseline may hold k's trigger, or k moves
// everywhere: probe; where ctl is the point a probe found, it no longer silences k:
// background. Otherwise the runs of ctl paired with k's trials so far, these
// included, decide (ctlTally): k moved there more often than a stray explains (bgStray,
// bgLevel): background; else that was a stray, and k stays judged (a round where it
// moves at the control still does not count). It returns the runs it took.
func (h *hunter) settle(ctx context.Context, k string, cl counters.Class, ctl Point) (int, error) {
	if h.background[k] != nil || h.control(k) != ctl {
		return 0, nil // settled already
	}
	runs, told, moved := 0, 0, 0
	for range h.r.Confirm {
		m, err := h.measure(ctx, ctl, PhaseProbe)
		if err != nil {
			return runs, err
		}
		runs++
		if setupFailed(m) {
			continue // it did not run: it says nothing
		}
		told++
		_, ok := h.moved(m)[k]
		h.tally(k, ok)
		if ok {
			moved++
		}
	}
	if told == 0 {
		return runs, nil
	}
	t := h.ctlTally[k]
	switch {
	case moved == told && ctl == h.p.Space.Baseline:
	case moved == told, binomialTail(t[1], t[0], bgStray) < bgLevel: // a silencer that no longer silences, or too many moves
		h.markBackground(k, cl, t[0], t[1], false)
		return runs, nil
	default:
		return runs, nil
	}
	q, n, err := h.probe(ctx, k)
	runs += n
	if err != nil {
		return runs, err
	}
	if q == nil {
		h.markBackground(k, cl, t[0], t[1], true)
	} else {
		h.controls[k] = *q
		delete(h.ctlTally, k) // a new control: its own tally
	}
	return runs, nil
}

// tally counts a run of counter k's control, and whether k moved there.
func (h *hunter) tally(k string, moved bool) {
	t := h.ctlTally[k]
	t[1]++
	if moved {
		t[0]++
	}
	h.ctlTally[k] = t
}

// probe looks for a point that silences counter k, which moved in every run of the
// baseline: the baseline with one parameter moved to another value of the space, each
// measured once (a counter that moves everywhere costs one run a value); one where k did
// not move is tried Rules.Confirm rounds more, each paired with the baseline: k silent
// there and moving at the baseline in every round makes it k's control (the baseline
// holds k's trigger). None: k is background.
func (h *hunter) probe(ctx context.Context, k string) (*Point, int, error) {
	base := h.p.Space.Baseline
	runs := 0
	// moves: k moved in a run of p; a run that did not run counts as moving (it does
	// not show p silent, nor the baseline moving: see below)
	moves := func(p Point) (bool, error) {
		m, err := h.measure(ctx, p, PhaseProbe)
		if err != nil {
			return false, err
		}
		runs++
		_, ok := h.moved(m)[k]
		return ok || setupFailed(m) && p != base, nil
	}
	for _, d := range DimNames {
		for _, v := range h.p.Space.values(d) {
			q := base.With(d, v)
			if v == base.Get(d) || !h.valid(q) {
				continue
			}
			if mv, err := moves(q); err != nil || mv {
				if err != nil {
					return nil, runs, err
				}
				continue
			}
			silent := true
			for range h.r.Confirm {
				mq, err := moves(q)
				if err != nil {
					return nil, runs, err
				}
				mb := false
				if !mq {
					if mb, err = moves(base); err != nil {
						return nil, runs, err
					}
				}
				if mq || !mb {
					silent = false
					break
				}
			}
			if silent {
				return &q, runs, nil
			}
		}
	}
	return nil, runs, nil
}

// markBackground drops counter k from the counters rule for the rest of the hunt, and
// keeps it for the outcome.
func (h *hunter) markBackground(k string, cl counters.Class, moved, runs int, probed bool) {
	h.background[k] = &BackgroundCounter{Counter: k, Class: cl, ControlMoved: moved, ControlRuns: runs, Probed: probed}
	h.bgOrder = append(h.bgOrder, k)
	delete(h.controls, k)
}

// checkControl settles a counters trial's counter that moved at its control in out, and
// says errAbandon where its control no longer holds (background, or another control).
func (h *hunter) checkControl(ctx context.Context, tr trial, out trialOut) (int, error) {
	if tr.class != Counters || out.ctlMoved[tr.key] == 0 {
		return 0, nil
	}
	n, err := h.settle(ctx, tr.key, tr.keys[tr.key], *tr.ctl)
	if err == nil && (h.background[tr.key] != nil || h.control(tr.key) != *tr.ctl) {
		err = errAbandon
	}
	return n, err
}

// moved are run m's counters that the counters rule reads (Rules.moved), background
// counters aside.
func (h *hunter) moved(m Measurement) map[string]counters.Flag {
	mv := h.r.moved(m)
	for n := range mv {
		if h.background[n] != nil {
			delete(mv, n)
		}
	}
	return mv
}

// counterClass is counter k's class as the runs flagged it (error where none did).
func (h *hunter) counterClass(k string) counters.Class {
	for _, d := range h.points {
		for _, m := range d.runs {
			for _, f := range m.CountersFlags {
				if f.Counter == k {
					return f.Class
				}
			}
		}
	}
	return counters.Error
}
