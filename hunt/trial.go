package hunt

import (
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/rdmabench/rdmabench/counters"
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
