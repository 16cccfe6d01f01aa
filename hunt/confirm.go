package hunt

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/rdmabench/rdmabench/counters"
	"github.com/rdmabench/rdmabench/result"
)

// trial is what a run is tested for: a class, and its key (the failure's status, the
// low-throughput bar, the counters finding's counter). A counters candidate starts with
// every counter its run moved (keys); its confirmation keeps those that move in every run.
type trial struct {
	class Class
	key   string
	keys  map[string]counters.Class
}

func (t trial) id() string {
	return string(t.class) + "|" + t.key + "|" + strings.Join(slices.Sorted(maps.Keys(t.keys)), ",")
}

// trialOut is what a point's fresh runs showed.
type trialOut struct {
	hit    bool
	runs   int       // runs taken, references included
	rounds int       // rounds judged
	values []float64 // per run that showed it: the effect's metric
	// low-throughput against the best seen: the reference and the Gb/s of both
	ref           *Point
	gbps, refGbps []float64
	keys          map[string]counters.Class // counters: those that moved in every run
	moves         []map[string]uint64       // counters: each run's deltas
	moved         map[string]bool           // every flagged counter of the runs ("local error x")
	errText       string
}

// screenQueue screens the measured points in their order: each candidate class of a
// point's first run is measured afresh (confirm); a confirmed one is minimised and
// recorded, and the point is done.
func (h *hunter) screenQueue(ctx context.Context) error {
	for len(h.queue) > 0 {
		pt := h.queue[0]
		h.queue = h.queue[1:]
		if h.known(pt) {
			continue
		}
		// A size measured at fewer than minRefPoints other points gets random points of
		// its own first: a reference drawn from the whole space, not from the chain's
		// neighbourhood (a chain inside a slow region measures mostly slow points).
		if first := h.points[pt].first; h.r.on(LowThroughput) && h.r.judgeable(first) {
			if err := h.ensureRefs(ctx, pt); err != nil {
				return err
			}
		}
		for _, tr := range h.candidates(pt, h.points[pt].first) {
			id := fmt.Sprintf("%v|%s", pt, tr.id())
			if h.rejected[id] {
				continue
			}
			h.o.Candidates++
			out, err := h.trialAt(ctx, pt, tr, PhaseConfirm)
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
			if ferr := h.addFinding(f); ferr != nil {
				return ferr
			}
			if err != nil {
				return err
			}
			h.cur = nil // the chain's region is known now: start afresh
			break
		}
	}
	return nil
}

// candidates are the classes whose bar a run m of pt crossed, in Classes' order.
func (h *hunter) candidates(pt Point, m Measurement) []trial {
	var out []trial
	if k := failKey(m.Error); k != "" && h.r.on(Failed) {
		out = append(out, trial{class: Failed, key: k})
	}
	if mv := h.r.moved(m); len(mv) > 0 && h.r.on(Counters) {
		keys := map[string]counters.Class{}
		for n, f := range mv {
			keys[n] = f.Class
		}
		out = append(out, trial{class: Counters, keys: keys})
	}
	if m.Error != "" {
		return out
	}
	if h.r.on(LowThroughput) && h.r.judgeable(m) {
		ref := h.screenRef(pt)
		if ref > 0 && m.BWGbps < h.r.LowThroughput*ref {
			out = append(out, trial{class: LowThroughput, key: KeyBestSeen})
		}
		if ref == 0 || m.BWGbps >= h.r.LowThroughput*ref {
			h.watch(pt) // screened again should its size's reference rise
		}
		if h.r.LinkFraction > 0 && h.p.LinkGbps > 0 && m.BWGbps < h.r.LinkFraction*h.p.LinkGbps {
			out = append(out, trial{class: LowThroughput, key: KeyLink})
		}
	}
	if r, ok := tailRatio(m); ok && r > h.r.TailRatio && h.r.on(Tail) {
		out = append(out, trial{class: Tail})
	}
	if m.ShareRatio != nil && *m.ShareRatio < h.r.UnfairRatio && h.r.judgeable(m) && h.r.on(Unfair) {
		out = append(out, trial{class: Unfair})
	}
	return out
}

// trialAt measures pt afresh for tr, up to Rules.Confirm rounds, and says whether it
// showed it: in every round (all: a confirmation, and the reproducer's point), stopping
// at the first that does not; or in most rounds (a parameter's bound in the minimal
// set's search), stopping once most rounds agree. A low-throughput trial against the
// best seen measures its reference in every round too, the order alternating (pt
// first, then the reference first, ...), and judges each round's ratio: a slow drift of
// the bed moves both alike.
//
// Why most rounds for a bound: the minimal set tests some twenty values, and one noisy
// round that misses would put a parameter in the set that is not needed (a false miss
// of a true trigger is then as rare as two, not one, in three rounds), while a value
// that does not trigger must still fail most rounds.
func (h *hunter) trialAt(ctx context.Context, pt Point, tr trial, phase string) (trialOut, error) {
	return h.trialRounds(ctx, pt, tr, phase, true)
}

func (h *hunter) trialRounds(ctx context.Context, pt Point, tr trial, phase string, all bool) (trialOut, error) {
	out := trialOut{keys: tr.keys, moved: map[string]bool{}}
	var ref Point
	paired := tr.class == LowThroughput && tr.key == KeyBestSeen
	if paired {
		r, ok, err := h.reference(ctx, pt)
		if err != nil || !ok {
			return out, err // no reference: the trial cannot show it
		}
		ref, out.ref = r, &r
	}
	for i := range h.r.Confirm {
		var m, mr Measurement
		var err error
		if paired {
			a, b := pt, ref
			if i%2 == 1 {
				a, b = b, a
			}
			var ma, mb Measurement
			if ma, err = h.measure(ctx, a, phase); err == nil {
				out.runs++
				mb, err = h.measure(ctx, b, phase)
			}
			m, mr = ma, mb
			if i%2 == 1 {
				m, mr = mb, ma
			}
		} else {
			m, err = h.measure(ctx, pt, phase)
		}
		if err != nil {
			return out, err
		}
		out.runs++
		out.rounds++
		for _, f := range m.CountersFlags {
			out.moved[strings.TrimSpace(f.Side+" "+string(f.Class)+" "+f.Counter)] = true
		}
		v, hit := h.judge(tr, &out, m, mr)
		if hit {
			out.values = append(out.values, v)
		}
		misses := out.rounds - len(out.values)
		switch {
		case all && !hit:
			return out, nil
		case !all && 2*len(out.values) > h.r.Confirm:
			out.hit = true
			return out, nil
		case !all && 2*misses >= h.r.Confirm:
			return out, nil
		}
	}
	out.hit = true
	return out, nil
}

// judge says whether run m (and its reference's run mr) shows tr, and its metric.
func (h *hunter) judge(tr trial, out *trialOut, m, mr Measurement) (float64, bool) {
	switch tr.class {
	case Failed:
		if failKey(m.Error) != tr.key {
			return 0, false
		}
		if out.errText == "" {
			out.errText = m.Error
		}
		return 1, true
	case Counters:
		mv := h.r.moved(m)
		next := map[string]counters.Class{}
		deltas := map[string]uint64{}
		for n, c := range out.keys {
			if f, ok := mv[n]; ok {
				next[n], deltas[n] = c, *f.Delta
			}
		}
		out.moves = append(out.moves, deltas)
		if len(next) == 0 {
			return 0, false // the keys stay: a trial by most rounds goes on
		}
		out.keys = next
		return float64(deltas[pickCounter(next)]), true
	case LowThroughput:
		if !h.r.judgeable(m) {
			return 0, false
		}
		if tr.key == KeyLink {
			r := m.BWGbps / h.p.LinkGbps
			return r, r < h.r.LinkFraction
		}
		if !h.r.judgeable(mr) {
			return 0, false
		}
		r := m.BWGbps / mr.BWGbps
		if r >= h.r.LowThroughput {
			return r, false
		}
		out.gbps, out.refGbps = append(out.gbps, m.BWGbps), append(out.refGbps, mr.BWGbps)
		return r, true
	case Tail:
		r, ok := tailRatio(m)
		return r, ok && r > h.r.TailRatio
	case Unfair:
		if m.ShareRatio == nil || !h.r.judgeable(m) {
			return 0, false
		}
		return *m.ShareRatio, *m.ShareRatio < h.r.UnfairRatio
	}
	return 0, false
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

func (h *hunter) ensureRefs(ctx context.Context, pt Point) error {
	n := 0
	for _, q := range h.refList(opSize{pt.Op, pt.MsgSizeBytes}) {
		if q.d.pt != pt {
			n++
		}
	}
	pin := func(p Point) Point { p.Op, p.MsgSizeBytes = pt.Op, pt.MsgSizeBytes; return p }
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

// phaseAOrder is the order the minimisation moves parameters to the baseline: the modes
// that constrain others first (--mr, the direction, the QPs, the post list), the
// operation last.
var phaseAOrder = []string{DimMR, DimBidi, DimQPs, DimPostList, DimCQMod, DimDepth, DimSize, DimOffset, DimMTU, DimQPTimeout, DimOp}

// minimize finds the minimal set of a confirmed anomaly found at pt (conf: its
// confirming runs). First every parameter is moved to the space's baseline where the
// anomaly still triggers there (Rules.Confirm runs of Rules.Confirm): the reproducer's
// point R. Then each parameter in turn is varied alone from R towards both its bounds:
// the bound itself first, and where it does not trigger, a bisection between the bound
// and R's value finds the last value that does; a category tries every value; each value
// is judged by most of Rules.Confirm rounds (trialRounds). A
// parameter is in the set when some value it can take (a config rdmabench runs) does
// not trigger; its condition is the range (or set) of values that do. The bisection
// takes the triggering values to be an interval around R's.
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
			out, err := h.trialAt(ctx, v, tr, PhaseMinimize)
			spent += out.runs
			if err != nil {
				return h.finish(f, r, best, moved, nil, 0, spent, err), err
			}
			if out.hit {
				r, best = v, out
				delete(blocked, d)
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
	return h.finish(f, r, best, moved, set, len(DimNames), spent, nil), nil
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

// bounds varies parameter d of r alone (see minimize): its condition, whether the set
// needs it, and the runs it took.
func (h *hunter) bounds(ctx context.Context, r Point, d string, tr trial) (c Condition, needed bool, runs int, err error) {
	vals := h.p.Space.values(d)
	n := len(vals)
	if n < 2 {
		return c, false, 0, nil
	}
	i := slices.Index(vals, r.Get(d))
	ok := func(j int) bool { return h.valid(r.With(d, vals[j])) }
	test := func(j int) (bool, error) {
		out, err := h.trialRounds(ctx, r.With(d, vals[j]), tr, PhaseMinimize, false)
		runs += out.runs
		return out.hit, err
	}
	if !Ordered(d) {
		hits, miss := []string{}, false
		for j, v := range vals {
			if j == i {
				hits = append(hits, v)
				continue
			}
			if !ok(j) {
				continue
			}
			hit, err := test(j)
			if err != nil {
				return c, false, runs, err
			}
			if hit {
				hits = append(hits, v)
			} else {
				miss = true
			}
		}
		c = Condition{Dim: d, Op: "=", Values: hits}
		if len(hits) > 1 {
			c.Op = "in"
		}
		return c, miss, runs, nil
	}
	// edge walks from r's value towards the bound (dir -1: the smallest value, +1: the
	// largest): the last value that triggers, and whether every value that can run on
	// that side does.
	edge := func(dir int) (int, bool, error) {
		far := -1 // the outermost value that can run
		for j := i + dir; j >= 0 && j < n; j += dir {
			if ok(j) {
				far = j
			}
		}
		if far < 0 {
			return i, true, nil
		}
		hit, err := test(far)
		if err != nil || hit {
			return far, hit, err
		}
		in, out := i, far // in triggers, out does not
		for (out-in)*dir > 1 {
			mid := -1
			for k := 0; mid < 0 && k < n; k++ { // the value that can run nearest the middle
				for _, j := range []int{(in+out)/2 + k, (in+out)/2 - k} {
					if (j-in)*dir > 0 && (out-j)*dir > 0 && ok(j) {
						mid = j
						break
					}
				}
			}
			if mid < 0 {
				break
			}
			hit, err := test(mid)
			if err != nil {
				return in, false, err
			}
			if hit {
				in = mid
			} else {
				out = mid
			}
		}
		return in, false, nil
	}
	lo, loAll, err := edge(-1)
	if err != nil {
		return c, false, runs, err
	}
	hi, hiAll, err := edge(+1)
	if err != nil {
		return c, false, runs, err
	}
	c = Condition{Dim: d, Values: slices.Clone(vals[lo : hi+1])}
	switch {
	case loAll && hiAll:
		return c, false, runs, nil
	case loAll:
		c.Op = "<="
	case hiAll:
		c.Op = ">="
	case lo == hi:
		c.Op = "="
	default:
		c.Op = "in"
	}
	return c, true, runs, nil
}

// finish completes a finding at point r from its confirming runs best: the set found
// (set, for DimNames[:done]; the parameters not varied yet are held at r's values, and
// the finding is then not minimal), its effect and command lines.
func (h *hunter) finish(f Finding, r Point, best trialOut, moved map[string]bool, set []Condition, done int, spent int, err error) Finding {
	f.Set = set
	for _, d := range DimNames[done:] {
		if len(h.p.Space.values(d)) > 1 {
			f.Set = append(f.Set, Condition{Dim: d, Op: "=", Values: []string{r.Get(d)}, Held: true})
		}
	}
	if f.Set == nil {
		f.Set = []Condition{}
	}
	f.Minimal = err == nil
	f.Point = r
	maps.Copy(moved, best.moved)
	f.CountersMoved = slices.Sorted(maps.Keys(moved))
	f.Runs = len(best.values)
	f.TrialRuns = spent
	f.ErrorText = best.errText
	f.Effect = h.effect(f, best)
	f.ReproConfig = r.Config(h.p.Base)
	f.Command, f.PerftestCommand = Reproducer(f.ReproConfig, h.p.Server), Perftest(f.ReproConfig, h.p.Server)
	return f
}

// effect states a finding's effect from its confirming runs: the median and range of
// the rule's metric, and a sentence.
func (h *hunter) effect(f Finding, out trialOut) Effect {
	vals := out.values
	if f.Class == Counters {
		vals = nil
		for _, m := range out.moves {
			if d, ok := m[f.Key]; ok {
				vals = append(vals, float64(d))
			}
		}
	}
	e := Effect{Runs: len(vals), Median: median(vals)}
	if len(vals) > 0 {
		e.Min, e.Max = slices.Min(vals), slices.Max(vals)
	}
	n := len(vals)
	rng := func(format string) string {
		return fmt.Sprintf("%d runs: "+format+"-"+format, n, e.Min, e.Max)
	}
	switch {
	case f.Class == LowThroughput && f.Key == KeyLink:
		e.Metric = "bw_over_link"
		e.Text = fmt.Sprintf("%.2fx the %g Gb/s link (%s)", e.Median, h.p.LinkGbps, rng("%.2f"))
	case f.Class == LowThroughput:
		e.Metric, e.Reference = "bw_over_best_seen", out.ref
		e.Gbps, e.ReferenceGbps = median(out.gbps), median(out.refGbps)
		e.Text = fmt.Sprintf("%.2fx the best %s %s throughput seen (%.3g against %.3g Gb/s, the best point re-measured alongside; %s)",
			e.Median, strings.ToUpper(f.Point.Op), result.FormatSize(f.Point.MsgSizeBytes), e.Gbps, e.ReferenceGbps, rng("%.2f"))
	case f.Class == Tail:
		e.Metric = "p99_over_p50"
		e.Text = fmt.Sprintf("p99 %.1fx the p50 (%s)", e.Median, rng("%.1f"))
	case f.Class == Unfair:
		e.Metric = "share_ratio"
		e.Text = fmt.Sprintf("the slowest peer or direction got %.2fx the fastest's throughput (%s)", e.Median, rng("%.2f"))
	case f.Class == Counters:
		e.Metric = "counter_delta"
		e.Text = fmt.Sprintf("%s moved in %d of %d runs, +%.0f a run (%s)", f.Key, n, n, e.Median, rng("%.0f"))
	case f.Class == Failed:
		e.Metric = "failed_runs"
		e.Text = fmt.Sprintf("failed in %d of %d runs: %s", n, n, f.Key)
	}
	return e
}

// addFinding keeps a new finding (its ID the next) and records it; one whose class, key
// and set are a known finding's is a duplicate, counted and dropped.
func (h *hunter) addFinding(f Finding) error {
	if f.Class == "" {
		return nil
	}
	for _, g := range h.found {
		if g.Class == f.Class && g.Key == f.Key && sameSet(g.Set, f.Set) {
			h.o.Duplicates++
			return nil
		}
	}
	h.nextID++
	f.ID = fmt.Sprintf("F%d", h.nextID)
	if h.record != nil {
		if err := h.record(Record{Kind: KindFinding, Finding: &f}); err != nil {
			return fmt.Errorf("hunt: recording a finding: %w", err)
		}
	}
	h.found = append(h.found, f)
	h.o.New++
	return nil
}
