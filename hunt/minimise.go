package hunt

import (
	"context"
	"maps"
	"slices"
)

// phaseAOrder is the order the minimisation moves parameters to the baseline: the modes
// that constrain others first (--mr, the servers, the direction, the QPs, the post
// list), the operation last.
var phaseAOrder = []string{DimMR, DimPeers, DimBidi, DimQPs, DimPostList, DimCQMod, DimDepth, DimSize, DimOffset, DimMTU, DimQPTimeout, DimOp}

// minimize finds the minimal set of a confirmed anomaly found at pt (conf: its
// confirming runs). First every parameter is moved to the space's baseline where the
// anomaly still triggers there (Rules.Confirm runs of Rules.Confirm): the reproducer's
// point R; a parameter whose move could not be judged (cannotTell) is tried again after
// the others, as one rdmabench refuses there. Then each parameter in turn is varied alone
// from R (bounds); each value is judged by most of Rules.Confirm rounds (trialRounds). A
// parameter is in the set when some value it can take (a config rdmabench runs, whose
// runs can be judged) does not trigger; its condition is the values that do.
//
// A counters trial's rounds are paired with its control, where its counter does not move
// (the control itself is not measured: it is known not to trigger). Should the counter
// move at the control, it is settled afresh; where that makes it background or gives it
// another control, the minimisation is abandoned (errAbandon) and no finding made.
func (h *hunter) minimize(ctx context.Context, pt Point, tr trial, conf trialOut) (Finding, error) {
	f := Finding{Class: tr.class, Key: tr.key, FoundAt: pt}
	r, best, spent := pt, conf, conf.runs
	moved := maps.Clone(conf.moved)
	blocked := map[string]bool{}
	for pass := range 2 {
		for _, d := range phaseAOrder {
			b := h.p.Space.Baseline.Get(d)
			if r.Get(d) == b || len(h.p.Space.values(d)) < 2 || (pass == 1 && !blocked[d]) {
				continue
			}
			v, ok := h.towards(r, d, b)
			if !ok {
				blocked[d] = true
				continue
			}
			if tr.class == Counters && v == *tr.ctl {
				continue // its control: it does not trigger there
			}
			out, n, err := h.checkedTrial(ctx, v, tr, true)
			spent += n
			if err != nil {
				return h.finish(f, r, best, moved, nil, 0, spent, err), err
			}
			switch {
			case out.hit:
				r, best = v, out
				delete(blocked, d)
			case out.unknown:
				blocked[d] = true // not a miss: tried again once the others moved
			}
		}
	}
	var set []Condition
	for i, d := range DimNames {
		c, needed, runs, err := h.bounds(ctx, r, d, tr)
		spent += runs
		if err != nil {
			return h.finish(f, r, best, moved, set, i, spent, err), err
		}
		if needed {
			set = append(set, c)
		}
	}
	if tr.class == Counters {
		// A counter that moves in a share p of all runs passes a confirmation against a
		// silent control with p^3 (1-p)^3 (4e-3 at p = 0.2), and among a hundred
		// candidates one does; its minimisation is then noise. So the reproducer is
		// confirmed again, against the control, and the counter's moves at its control
		// so far must be a stray's: a background passes both with some 1e-5.
		out, n, err := h.checkedTrial(ctx, r, tr, true)
		spent += n
		if err != nil {
			return h.finish(f, r, best, moved, set, len(DimNames), spent, err), err
		}
		if t := h.ctlTally[tr.key]; !out.hit || binomialTail(t[1], t[0], bgStray) < bgLevel {
			if t[0] > 0 && binomialTail(t[1], t[0], bgStray) < bgLevel {
				h.markBackground(tr.key, tr.keys[tr.key], t[0], t[1], false)
			}
			return Finding{}, errAbandon
		}
	}
	return h.finish(f, r, best, moved, set, len(DimNames), spent, nil), nil
}

// checkedTrial is a minimisation's trial of tr at pt (all its rounds, or with all false
// as many as decide it), then checkControl on what it saw: the outcome, the runs both
// took, and the first error.
func (h *hunter) checkedTrial(ctx context.Context, pt Point, tr trial, all bool) (trialOut, int, error) {
	out, err := h.trialRounds(ctx, pt, tr, PhaseMinimize, all)
	runs := out.runs
	if err == nil {
		var n int
		n, err = h.checkControl(ctx, tr, out)
		runs += n
	}
	return out, runs, err
}

// towards is r with parameter d at b, or where that cannot run, at the value between b
// and r's nearest to b that can.
func (h *hunter) towards(r Point, d, b string) (Point, bool) {
	vals := h.p.Space.values(d)
	if !Ordered(d) {
		v := r.With(d, b)
		return v, h.valid(v)
	}
	ib, ir := slices.Index(vals, b), slices.Index(vals, r.Get(d))
	step := 1
	if ir < ib {
		step = -1
	}
	for j := ib; j != ir; j += step {
		if v := r.With(d, vals[j]); h.valid(v) {
			return v, true
		}
	}
	return r, false
}

// allValues: an ordered dimension of this many values or fewer has every value tried
// (the values that trigger need not be one interval: "sq_depth in {64, 1024}"); a larger
// one is searched from its bounds by bisection, which takes them to be an interval.
const allValues = 6

// bounds varies parameter d of r alone: its condition, whether the set needs it, and the
// runs it took. Each value is judged by most of Rules.Confirm rounds; a value rdmabench
// refuses in r's context, or whose runs cannot be judged, is not counted either way.
//
// A category, or an ordered dimension of allValues values or fewer, tries every value. A
// larger ordered one goes from r's value towards each bound: the outermost value that can
// be judged first; where it triggers, every value between is taken to; where not, a
// bisection between it and r's value finds the last that does.
//
// The condition (describe): a category's "=" or "in" its set; an ordered dimension's
// ">=" or "<=" where no value beyond the triggering ones on that side fails to trigger,
// "=" for one value, "in" lo..hi for a range, "one-of" its values where a value between
// two that trigger does not.
func (h *hunter) bounds(ctx context.Context, r Point, d string, tr trial) (c Condition, needed bool, runs int, err error) {
	vals := h.p.Space.values(d)
	n := len(vals)
	if n < 2 {
		return c, false, 0, nil
	}
	b := &boundSearch{h: h, ctx: ctx, r: r, d: d, tr: tr, vals: vals, i: slices.Index(vals, r.Get(d)), st: make([]verdict, n)}
	for j := range b.st {
		b.st[j] = untested
	}
	b.st[b.i] = hit
	if !Ordered(d) || n <= allValues {
		for j := range vals {
			if j != b.i {
				if err := b.test(j); err != nil {
					return c, false, b.runs, err
				}
			}
		}
	} else {
		for _, dir := range []int{-1, +1} {
			if err := b.edge(dir); err != nil {
				return c, false, b.runs, err
			}
		}
	}
	c, needed = describe(d, vals, b.st)
	return c, needed, b.runs, nil
}

// boundSearch is bounds' search of parameter d of r: each value's verdict (st), r's
// value's index (i), and the runs taken.
type boundSearch struct {
	h    *hunter
	ctx  context.Context
	r    Point
	d    string
	tr   trial
	vals []string
	st   []verdict
	i    int
	runs int
}

// test judges value j of the parameter (most of Rules.Confirm rounds).
func (b *boundSearch) test(j int) error {
	h, tr := b.h, b.tr
	v := b.r.With(b.d, b.vals[j])
	switch {
	case !h.valid(v):
		b.st[j] = cannotTell
		return nil
	case tr.class == Counters && v == *tr.ctl:
		b.st[j] = miss // its control: it does not trigger there
		return nil
	}
	out, k, err := h.checkedTrial(b.ctx, v, tr, false)
	b.runs += k
	switch {
	case err != nil:
		b.st[j] = cannotTell
	case out.hit:
		b.st[j] = hit
	case out.unknown:
		b.st[j] = cannotTell
	default:
		b.st[j] = miss
	}
	return err
}

// edge walks from r's value towards the bound (dir -1: the smallest value, +1: the
// largest).
func (b *boundSearch) edge(dir int) error {
	st, i, n := b.st, b.i, len(b.vals)
	far, start := -1, 0
	if dir > 0 {
		start = n - 1
	}
	for j := start; j != i; j -= dir { // the outermost value that can be judged
		if err := b.test(j); err != nil {
			return err
		}
		if st[j] != cannotTell {
			far = j
			break
		}
	}
	if far < 0 {
		return nil
	}
	if st[far] == hit {
		for j := i + dir; j != far; j += dir {
			if st[j] == untested {
				st[j] = hit // taken to trigger: an interval
			}
		}
		return nil
	}
	in, out := i, far // in triggers, out does not
	for {
		mid := -1
		for k := 0; mid < 0 && k < n; k++ { // the untried value nearest the middle
			for _, j := range []int{(in+out)/2 + k, (in+out)/2 - k} {
				if (j-in)*dir > 0 && (out-j)*dir > 0 && st[j] == untested {
					mid = j
					break
				}
			}
		}
		if mid < 0 {
			break
		}
		if err := b.test(mid); err != nil {
			return err
		}
		switch st[mid] {
		case hit:
			in = mid
		case miss:
			out = mid
		}
	}
	for j := i + dir; j != far; j += dir {
		if st[j] == untested && (j-in)*dir < 0 {
			st[j] = hit
		} else if st[j] == untested {
			st[j] = miss
		}
	}
	return nil
}

// describe is dimension d's condition from each value's verdict (bounds), and whether
// the set needs it: some value did not trigger.
func describe(d string, vals []string, st []verdict) (Condition, bool) {
	var hits []int
	anyMiss := false
	for j, s := range st {
		switch s {
		case hit:
			hits = append(hits, j)
		case miss:
			anyMiss = true
		}
	}
	if !anyMiss || len(hits) == 0 {
		return Condition{}, false
	}
	pick := func(idx []int) []string {
		out := make([]string, len(idx))
		for k, j := range idx {
			out[k] = vals[j]
		}
		return out
	}
	if !Ordered(d) {
		c := Condition{Dim: d, Op: OpEq, Values: pick(hits)}
		if len(hits) > 1 {
			c.Op = OpIn
		}
		return c, true
	}
	lo, hi := hits[0], hits[len(hits)-1]
	below, between, above := false, false, false
	for j, s := range st {
		if s != miss {
			continue
		}
		switch {
		case j < lo:
			below = true
		case j > hi:
			above = true
		default:
			between = true
		}
	}
	if between {
		return Condition{Dim: d, Op: OpOneOf, Values: pick(hits)}, true
	}
	c := Condition{Dim: d, Values: slices.Clone(vals[lo : hi+1])}
	switch {
	case !below:
		c.Op = OpLE
	case !above:
		c.Op = OpGE
	case lo == hi:
		c.Op = OpEq
	default:
		c.Op = OpIn
	}
	return c, true
}
