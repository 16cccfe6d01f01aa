package hunt

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/rdmabench/rdmabench/counters"
	"github.com/rdmabench/rdmabench/internal/stat"
	"github.com/rdmabench/rdmabench/result"
)

// trial is what a run is tested for: a class, and its key (the failure's status, the
// low-throughput bar, the counters finding's counter). A counters candidate starts with
// every counter its run moved (keys); its confirmation keeps those that move in every run
// and not at its control (ctl).
type trial struct {
	class Class
	key   string
	keys  map[string]counters.Class
	// ctl (counters): the point each round is paired with, where the counter must not
	// move: the space's baseline, or, where the baseline holds the counter's trigger, the
	// baseline with one parameter moved that silences it (settle).
	ctl *Point
}

func (t trial) id() string {
	s := string(t.class) + "|" + t.key + "|" + strings.Join(slices.Sorted(maps.Keys(t.keys)), ",")
	if t.ctl != nil {
		s += "|" + t.ctl.String()
	}
	return s
}

// verdict is what one round says of a trial.
type verdict int

const (
	miss       verdict = iota // it did not show
	hit                       // it showed
	cannotTell                // the round cannot say: a run whose throughput is its queues' ramp (Rules.MaxRampShare), a failed run's numbers, a setup that failed
	untested                  // (bounds) a value not tried
)

// trialOut is what a point's fresh runs showed.
type trialOut struct {
	hit bool
	// unknown: the trial cannot say (most rounds could not be judged, or a low-throughput
	// trial found no reference): neither a hit nor a miss.
	unknown bool
	runs    int       // runs taken, references and controls included
	rounds  int       // rounds judged
	values  []float64 // per run that showed it: the effect's metric
	paused  int       // of those runs, the paused ones (Measurement.Paused)
	// low-throughput against the best seen: the reference and the Gb/s of both
	ref           *Point
	gbps, refGbps []float64
	keys          map[string]counters.Class // counters: those that moved in every run, not at the control
	moves         []map[string]uint64       // counters: each run's deltas
	moved         map[string]bool           // every flagged counter of the runs ("local error x")
	ctlMoved      map[string]int            // counters: the rounds each key moved at the control
	errText       string
}

// errAbandon: a counters finding's minimisation stopped because its counter moved at its
// control and was settled otherwise (background, or a new control): no finding.
var errAbandon = errors.New("hunt: the counter moved at its control")

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

// confirm measures candidate tr of pt afresh (trialAt). A counters candidate's rounds are
// paired with its control; a counter that moved at the control is settled (settle), and
// where that finds the baseline holds its trigger, the candidate is tried again against
// the point that silences it.
func (h *hunter) confirm(ctx context.Context, pt Point, tr trial) (trial, trialOut, error) {
	if tr.class != Counters {
		out, err := h.trialAt(ctx, pt, tr, PhaseConfirm)
		return tr, out, err
	}
	out := trialOut{keys: tr.keys, moved: map[string]bool{}, ctlMoved: map[string]int{}}
	var suspects []string
	if pt == *tr.ctl {
		suspects = slices.Sorted(maps.Keys(tr.keys)) // the candidate is its own control
	} else {
		var err error
		if out, err = h.trialAt(ctx, pt, tr, PhaseConfirm); err != nil {
			return tr, out, err
		}
		for _, k := range slices.Sorted(maps.Keys(tr.keys)) {
			if out.ctlMoved[k] > 0 {
				suspects = append(suspects, k)
			}
		}
	}
	for _, k := range suspects {
		n, err := h.settle(ctx, k, tr.keys[k], *tr.ctl)
		out.runs += n
		if err != nil {
			return tr, out, err
		}
		q := h.control(k)
		if out.hit || h.background[k] != nil || q == *tr.ctl || q == pt {
			continue
		}
		// The baseline holds k's trigger and q silences it: the candidate against q.
		t2 := trial{class: Counters, keys: map[string]counters.Class{k: tr.keys[k]}, ctl: &q}
		o2, err := h.trialAt(ctx, pt, t2, PhaseConfirm)
		o2.runs += out.runs
		if err != nil || o2.hit {
			return t2, o2, err
		}
		out.runs = o2.runs
	}
	return tr, out, nil
}

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

// trialAt measures pt afresh for tr, up to Rules.Confirm rounds, and says whether it
// showed it: in every round (all: a confirmation, and the reproducer's point), stopping
// at the first that does not; or in most rounds (a parameter's bound in the minimal
// set's search), stopping once most rounds agree. A low-throughput trial against the
// best seen measures its reference in every round too, the order alternating (pt
// first, then the reference first, ...), and judges each round's ratio: a slow drift of
// the bed moves both alike. A counters trial measures its control in every round the
// same way: a round shows it where the counter moved at pt and not at the control.
//
// A round that cannot be judged (a ramp-bound run, a failed run's numbers, a setup that
// failed: judge) is neither: it is not counted, and once half of Rules.Confirm rounds
// could not be judged the trial cannot tell (unknown), which the minimisation takes as
// it takes a value rdmabench refuses: it is not tried.
//
// Why most rounds for a bound: the minimal set tests some twenty values, and one noisy
// round that misses would put a parameter in the set that is not needed (a false miss
// of a true trigger is then as rare as two, not one, in three rounds), while a value
// that does not trigger must still fail most rounds.
func (h *hunter) trialAt(ctx context.Context, pt Point, tr trial, phase string) (trialOut, error) {
	return h.trialRounds(ctx, pt, tr, phase, true)
}

func (h *hunter) trialRounds(ctx context.Context, pt Point, tr trial, phase string, all bool) (trialOut, error) {
	out := trialOut{keys: tr.keys, moved: map[string]bool{}, ctlMoved: map[string]int{}}
	var ref Point
	paired := false
	switch {
	case tr.class == LowThroughput && tr.key == KeyBestSeen:
		r, ok, err := h.reference(ctx, pt)
		if err != nil || !ok {
			out.unknown = true
			return out, err // no reference: the trial cannot show it
		}
		ref, out.ref, paired = r, &r, true
	case tr.class == Counters && tr.ctl != nil:
		ref, paired = *tr.ctl, true
		if ref == pt {
			return out, nil // its own control: it does not show there
		}
	}
	untold := 0
	for i := 0; out.rounds < h.r.Confirm; i++ {
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
		for _, f := range m.CountersFlags {
			out.moved[strings.TrimSpace(f.Side+" "+string(f.Class)+" "+f.Counter)] = true
		}
		v, vd := h.judge(tr, &out, m, mr, paired)
		if vd == cannotTell {
			if untold++; 2*untold >= h.r.Confirm {
				out.unknown = true
				return out, nil
			}
			continue
		}
		out.rounds++
		if vd == hit {
			out.values = append(out.values, v)
			if m.Paused {
				out.paused++
			}
		}
		misses := out.rounds - len(out.values)
		switch {
		case all && vd == miss:
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

// setupFailed: a run whose error is no anomaly (a setup that failed, a server that
// refused): it shows nothing of its configuration.
func setupFailed(m Measurement) bool { return m.Error != "" && failKey(m.Error) == "" }

// judge says whether run m (and its reference's or control's run mr, where paired) shows
// tr, and its metric; cannotTell where the run cannot say.
func (h *hunter) judge(tr trial, out *trialOut, m, mr Measurement, paired bool) (float64, verdict) {
	if setupFailed(m) || paired && setupFailed(mr) {
		return 0, cannotTell
	}
	switch tr.class {
	case Failed:
		if failKey(m.Error) != tr.key {
			return 0, miss
		}
		if out.errText == "" {
			out.errText = m.Error
		}
		return 1, hit
	case Counters:
		mv := h.moved(m)
		var mc map[string]counters.Flag
		if paired {
			mc = h.moved(mr)
		}
		next := map[string]counters.Class{}
		deltas := map[string]uint64{}
		for n, c := range out.keys {
			_, atCtl := mc[n]
			if paired {
				h.tally(n, atCtl)
			}
			if atCtl {
				out.ctlMoved[n]++
			}
			if f, ok := mv[n]; ok {
				deltas[n] = *f.Delta
				if !atCtl {
					next[n] = c
				}
			}
		}
		out.moves = append(out.moves, deltas)
		if len(next) == 0 {
			return 0, miss // the keys stay: a trial by most rounds goes on
		}
		out.keys = next
		return float64(deltas[pickCounter(next)]), hit
	case LowThroughput:
		if !h.r.judgeable(m) {
			return 0, cannotTell
		}
		if tr.key == KeyLink {
			r := m.BWGbps / h.p.LinkGbps
			return r, verdictOf(r < h.r.LinkFraction)
		}
		if !h.r.judgeable(mr) {
			return 0, cannotTell
		}
		r := m.BWGbps / mr.BWGbps
		if r >= h.r.LowThroughput {
			return r, miss
		}
		out.gbps, out.refGbps = append(out.gbps, m.BWGbps), append(out.refGbps, mr.BWGbps)
		return r, hit
	case Tail:
		r, ok := tailRatio(m)
		if !ok {
			return 0, cannotTell
		}
		return r, verdictOf(r > h.r.TailRatio)
	case Unfair:
		if m.Error != "" {
			return 0, cannotTell
		}
		if tr.key == "" { // a finding of a hunt before the unfair keys: any share
			r, ok := m.share("")
			if !ok {
				return 0, miss
			}
			return r, verdictOf(r < h.r.UnfairRatio)
		}
		s, has, judged := m.shareOf(tr.key)
		switch {
		case !has:
			return 0, miss // one QP, one server, one direction: nothing to be unfair between
		case !judged || !h.r.judgeable(m):
			return 0, cannotTell // within the run's edges ("cannot tell"), no shares, or its ramp
		}
		return s.Ratio, verdictOf(s.Ratio < h.r.UnfairRatio)
	}
	return 0, miss
}

func verdictOf(b bool) verdict {
	if b {
		return hit
	}
	return miss
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
	i := slices.Index(vals, r.Get(d))
	st := make([]verdict, n)
	for j := range st {
		st[j] = untested
	}
	st[i] = hit
	test := func(j int) error {
		v := r.With(d, vals[j])
		switch {
		case !h.valid(v):
			st[j] = cannotTell
			return nil
		case tr.class == Counters && v == *tr.ctl:
			st[j] = miss // its control: it does not trigger there
			return nil
		}
		out, k, err := h.checkedTrial(ctx, v, tr, false)
		runs += k
		switch {
		case err != nil:
			st[j] = cannotTell
		case out.hit:
			st[j] = hit
		case out.unknown:
			st[j] = cannotTell
		default:
			st[j] = miss
		}
		return err
	}
	if !Ordered(d) || n <= allValues {
		for j := range vals {
			if j != i {
				if err := test(j); err != nil {
					return c, false, runs, err
				}
			}
		}
		c, needed = describe(d, vals, st)
		return c, needed, runs, nil
	}
	// edge walks from r's value towards the bound (dir -1: the smallest value, +1: the
	// largest).
	edge := func(dir int) error {
		far, start := -1, 0
		if dir > 0 {
			start = n - 1
		}
		for j := start; j != i; j -= dir { // the outermost value that can be judged
			if err := test(j); err != nil {
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
			if err := test(mid); err != nil {
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
	for _, dir := range []int{-1, +1} {
		if err := edge(dir); err != nil {
			return c, false, runs, err
		}
	}
	c, needed = describe(d, vals, st)
	return c, needed, runs, nil
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
	f.Runs, f.PausedRuns = len(best.values), best.paused
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
	e := Effect{Runs: len(vals), Median: stat.Median(vals)}
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
		e.Gbps, e.ReferenceGbps = stat.Median(out.gbps), stat.Median(out.refGbps)
		e.Text = fmt.Sprintf("%.2fx the best %s %s throughput seen (%.3g against %.3g Gb/s, the best point re-measured alongside; %s)",
			e.Median, strings.ToUpper(f.Point.Op), result.FormatSize(f.Point.MsgSizeBytes), e.Gbps, e.ReferenceGbps, rng("%.2f"))
	case f.Class == Tail:
		e.Metric = "p99_over_p50"
		e.Text = fmt.Sprintf("p99 %.1fx the p50 (%s)", e.Median, rng("%.1f"))
	case f.Class == Unfair:
		e.Metric = "share_ratio"
		what := map[string]string{
			KeyPeers:      "the slowest peer got %.2fx the fastest peer's throughput (uneven beyond the runs' edges; %s)",
			KeyQPs:        "the slowest QP got %.2fx the fastest QP's messages (uneven beyond the runs' edges; %s)",
			KeyThreads:    "the slowest thread got %.2fx the fastest thread's messages (uneven beyond the runs' edges; %s)",
			KeyDirections: "the slower direction got %.2fx the faster's throughput (%s)",
		}[f.Key]
		if what == "" {
			what = "the slowest peer or direction got %.2fx the fastest's throughput (%s)"
		}
		e.Text = fmt.Sprintf(what, e.Median, rng("%.2f"))
	case f.Class == Counters:
		e.Metric = "counter_delta"
		e.Text = fmt.Sprintf("%s moved in %d of %d runs, +%.0f a run (%s)", f.Key, n, n, e.Median, rng("%.0f"))
	case f.Class == Failed:
		e.Metric = "failed_runs"
		e.Text = fmt.Sprintf("failed in %d of %d runs: %s", n, n, f.Key)
	}
	return e
}

// addFinding keeps a new finding and records it: its ID the next, or id where given (a
// prior finding completed: the same ID, recorded again); one whose class, key and set
// are another known finding's is a duplicate, counted and dropped.
func (h *hunter) addFinding(f Finding, id string) error {
	if f.Class == "" {
		return nil
	}
	for _, g := range h.found {
		if g.ID != id && g.Class == f.Class && g.Key == f.Key && sameSet(g.Set, f.Set) {
			h.o.Duplicates++
			return nil
		}
	}
	if id == "" {
		h.nextID++
		id = fmt.Sprintf("F%d", h.nextID)
		h.o.New++
	}
	f.ID = id
	if h.record != nil {
		if err := h.record(Record{Kind: KindFinding, Finding: &f}); err != nil {
			return fmt.Errorf("hunt: recording a finding: %w", err)
		}
	}
	h.found = append(h.found, f)
	return nil
}
