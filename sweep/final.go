package sweep

import (
	"context"
	"math"
	"slices"
	"sort"

	"github.com/rdmabench/rdmabench/internal/stat"
	"github.com/rdmabench/rdmabench/plan"
	"github.com/rdmabench/rdmabench/profiles"
)

// member is a point in the final rounds.
type member struct {
	pt      plan.Point
	compete bool // a contender for the chosen point (not only a reference)
	out     bool // never measured in these rounds: a neighbour left out (expand)
}

// final holds the final rounds and what they decided.
type final struct {
	obj     Objective // what these final rounds decide
	rounds  int       // final rounds measured
	members []*member
	first   int         // the first final round
	cut     int         // contenders of the search's point left out (maxRivals, lean): not decided
	lean    bool        // measures only what the verdicts and gains need (planFinal)
	home    *plan.Point // a further objective's starting point, nil for the searched one (expand)
	lvl     float64
	dec     decision
	// The gains' rounds: the chosen points (per objective) and the references,
	// measured afresh once the choice is made.
	gains  int          // the first of them (0: none)
	others []plan.Point // per further objective, its chosen point (confirmed, or best measured)
	// otherFinals: per further objective, its own final rounds (nil: the budget did not
	// reach them, or nothing qualified), see confirmOthers.
	otherFinals []*final
}

// other is the final rounds of further objective i (0-based), or nil.
func (f *final) other(i int) *final {
	if f == nil || i >= len(f.otherFinals) {
		return nil
	}
	return f.otherFinals[i]
}

// decision is the search objective's state in the final rounds.
type decision struct {
	leader, chosen plan.Point
	rel            map[plan.Point]Ratio    // each contender over the leader (95% interval)
	judged         map[plan.Point]Relation // what the look decided (Holm, at the look's level)
	contenders     int
	decided, ok    bool
}

func (f *final) add(pt plan.Point, compete bool) {
	for _, m := range f.members {
		if m.pt == pt {
			m.compete, m.out = m.compete || compete, false
			return
		}
	}
	f.members = append(f.members, &member{pt: pt, compete: compete})
}

// final measures the contenders of the search's point in interleaved rounds, judged
// at finalLooks rounds (each look at alpha / len(finalLooks), Holm across the
// contenders), until the choice is decided or the budget or the looks are spent. The
// contenders: the search's point and the best points measured that came within reach
// of it, the chosen point's neighbours (one parameter one grid step away: a decided
// choice is at least a local optimum) and its variants with the tuning article's values,
// and the references on the grid.
func (s *state) final(ctx context.Context, inc plan.Point) (*final, error) {
	return s.finalFor(ctx, inc, s.objs[0])
}

// finalFor runs final rounds that decide objective main, from its point inc.
func (s *state) finalFor(ctx context.Context, inc plan.Point, main Objective) (*final, error) {
	looks := s.looks
	if len(looks) == 0 {
		looks = finalLooks
	}
	f := &final{obj: main, first: s.round + 1, lvl: alpha / float64(len(looks))}
	if _, ok := s.mean(inc, main); !ok {
		var found bool
		if inc, found = s.best(main, s.measured()); !found {
			return f, nil // nothing feasible: conclude says so
		}
	}
	s.enter(f, inc)
	if main != s.objs[0] {
		f.home = &inc // a further objective confirms its best point (see home)
	} else { // the search's final rounds fix the resolution and the looks
		if !s.expand(f) {
			return f, nil
		}
		s.planFinal(f)
		looks = s.looks
		f.lvl = alpha / float64(len(looks))
	}
	for look := 0; ; look++ {
		if !s.expand(f) {
			return f, nil
		}
		// The leader alone left to measure, with runs enough for its own estimate, pairs
		// with nothing: more rounds decide nothing.
		n := len(s.active(f))
		alone := n == 1 && s.count(f.dec.leader, f.obj) >= 2
		if look == len(looks)-1 || s.settled(f) || alone || !s.fits(n) || ctx.Err() != nil {
			return f, nil
		}
		if err := s.finalRounds(ctx, f, looks[look+1]); err != nil {
			return f, err
		}
	}
}

// enter makes f's first contenders: inc, its rivals (those left out counted as cut)
// and the references on the grid.
func (s *state) enter(f *final, inc plan.Point) {
	f.add(inc, true)
	rivals, cut := s.rivals(inc, f.obj)
	f.cut = cut
	for _, pt := range rivals {
		f.add(pt, true)
	}
	for _, name := range sortedKeys(s.p.References) {
		pt := s.p.References[name]
		if s.onGrid(pt) && pt.Valid() {
			f.add(pt, true)
		}
	}
}

// expand decides f and makes the chosen point's variants with the tuning article's values
// contenders, and its neighbours too unless f is lean: a new chosen point brings new
// neighbours, judged in the same look. It is false where no contender qualifies.
//
// A further objective's rounds confirm its best measured point, with that point's
// neighbours and without the article's variants; they do not search on. Where another
// point takes the lead, its neighbours the sweep never measured are left out:
// contenders never measured, so the choice is decided only where they are covered.
func (s *state) expand(f *final) bool {
	for {
		f.dec = s.decide(f)
		if !f.dec.ok {
			return false
		}
		n := len(f.members)
		add := s.variantsOf(f)
		var out []plan.Point
		switch nb := s.neighbours(f.dec.chosen); {
		case f.lean:
		case f.home != nil && *f.home != f.dec.chosen:
			for _, pt := range nb {
				if len(s.runs[pt]) > 0 {
					add = append(add, pt)
				} else {
					out = append(out, pt)
				}
			}
		default:
			add = append(add, nb...)
		}
		for _, v := range add {
			f.add(v, true)
		}
		for _, v := range out {
			f.leaveOut(v)
		}
		if len(f.members) == n {
			return true
		}
	}
}

// variantsOf are the variants of f's chosen point with the tuning article's values, for
// the verdicts; none for a further objective's rounds (the verdicts are the searched
// objective's).
func (s *state) variantsOf(f *final) []plan.Point {
	if f.home != nil {
		return nil
	}
	return s.variants(f.dec.chosen)
}

// leaveOut makes pt a contender that f's rounds do not measure, unless it is one already.
func (f *final) leaveOut(pt plan.Point) {
	if !slices.ContainsFunc(f.members, func(m *member) bool { return m.pt == pt }) {
		f.members = append(f.members, &member{pt: pt, compete: true, out: true})
	}
}

// finalRounds measures f's active members in interleaved rounds until f has upTo
// rounds (the next look), or the budget's share affords no further round.
func (s *state) finalRounds(ctx context.Context, f *final, upTo int) error {
	pts := s.active(f)
	for f.rounds < upTo && s.fits(len(pts)) {
		if s.round%2 == 1 {
			slices.Reverse(pts)
		}
		if err := s.measureRound(ctx, pts, "final"); err != nil {
			return err
		}
		f.rounds++
		s.o.FinalRounds++
	}
	return nil
}

// FinalPlan is how the final rounds were planned when the resolution was fixed: the
// points a round measured then, the rounds the budget's final share affords (the last
// look), and the noise of one run pooled from the probe and the descent's duels.
type FinalPlan struct {
	Points  int     `json:"points"`
	Rounds  int     `json:"rounds"`
	Noise   float64 `json:"noise"`
	NoiseDF int     `json:"noise_df"`
}

// planFinal fixes the resolution of the final rounds (and of everything after them)
// once their contenders are known, from the noise pooled so far, the points a round
// measures and the rounds the final share of the budget affords; asked for one, the
// rounds it takes. The looks are fixed with it.
//
// The rounds follow from the noise, not from a fixed count: the plan is the fewest
// rounds (a look of finalLooks) whose resolution is within a quarter of the finest
// the affordable rounds buy, or at minResolution; a flat top decided at that
// resolution ends the rounds (settled), and the rest of the budget is not spent.
//
// Where the share buys fewer than minPairs rounds of every contender, the rivals
// ranked last are left out (counted as cut: the choice is then not decided) until it
// does; where it still does not, the rounds go lean: only the chosen point, the
// leader, the chosen point's variants with the article's values and the references,
// for the verdicts and the gains.
func (s *state) planFinal(f *final) {
	most := finalLooks[len(finalLooks)-1]
	sd, df := s.pairedNoise()
	rounds := func() (m, n int) {
		// The contenders known now, and the neighbours a new chosen point may bring.
		m = max(len(s.active(f))+planSlack, 2)
		n = most
		if runs := s.o.Runs + s.o.Reused; s.p.Budget > 0 && runs > 0 && s.led.Spent() > 0 {
			roundS := float64(m) * s.led.Spent().Seconds() / float64(runs)
			n = min(most, max(0, int((s.phaseEnd-s.led.Spent()).Seconds()/roundS)))
		}
		return m, n
	}
	m, n := rounds()
	for s.p.Budget > 0 && n < minPairs && s.dropRival(f) {
		m, n = rounds()
	}
	if s.p.Budget > 0 && n < minPairs {
		s.goLean(f)
		m, n = rounds()
	}
	n = max(n, minPairs)
	s.o.FinalPlan = &FinalPlan{Points: m, Rounds: n, NoiseDF: df, Noise: math.Expm1(sd / math.Sqrt2)}
	switch {
	case s.p.Resolution > 0:
		if s.p.Budget <= 0 && df > 0 { // no noise measured: the looks run to the last
			n, _ = planRounds(sd, s.p.Resolution, m, most, df)
		}
		s.tol = s.p.Resolution
	case df > 0:
		finest := max(planResolution(sd, n, m, df), minResolution)
		for _, l := range finalLooks {
			if l >= minPairs && l < n && planResolution(sd, l, m, df) <= 1.25*finest {
				n = l
				break
			}
		}
		s.tol = min(max(planResolution(sd, n, m, df), minResolution), 1)
		s.o.ResolutionBasis = "budget"
	}
	// From here on, every comparison's spread is moderated by this pool.
	s.priorSD, s.priorDF = sd, df
	s.o.FinalPlan.Rounds = n
	s.looks = looksUpTo(n)
	s.o.Resolution = s.tol
	s.notice("final rounds: %d points, up to %d rounds, %s noise per run (%d degrees of freedom): deciding at %s", m, n, FmtNoise(s.o.FinalPlan.Noise), df, FmtResolution(s.tol))
}

// dropRival leaves out of f the rival ranked last (by its mean in the search) among
// those the rounds still measure, not the leader, the chosen point, its variants or
// neighbours, or a reference, counted as cut; false when there is none to drop.
func (s *state) dropRival(f *final) bool {
	keep := map[plan.Point]bool{f.dec.leader: true, f.dec.chosen: true}
	for _, v := range append(s.variantsOf(f), s.neighbours(f.dec.chosen)...) {
		keep[v] = true // expand would bring them back
	}
	for _, pt := range s.p.References {
		keep[pt] = true
	}
	active := s.active(f) // dropping a member the rounds no longer measure buys nothing
	worst, wv := -1, math.Inf(1)
	for i, mb := range f.members {
		if v, ok := s.mean(mb.pt, f.obj); ok && !keep[mb.pt] && slices.Contains(active, mb.pt) && v < wv {
			worst, wv = i, v
		}
	}
	if worst < 0 {
		return false
	}
	f.members = slices.Delete(f.members, worst, worst+1)
	f.cut++
	f.dec = s.decide(f)
	return true
}

// goLean keeps of f's members only the leader, the chosen point, its variants with the
// article's values and the references (planFinal), counts those left out as cut, and
// decides f again.
func (s *state) goLean(f *final) {
	keep := map[plan.Point]bool{f.dec.leader: true, f.dec.chosen: true}
	for _, v := range s.variantsOf(f) {
		keep[v] = true
	}
	for _, pt := range s.p.References {
		keep[pt] = true
	}
	var kept []*member
	for _, mb := range f.members {
		if keep[mb.pt] {
			kept = append(kept, mb)
		} else {
			f.cut++
		}
	}
	f.members, f.lean, s.o.FinalLean = kept, true, true
	f.dec = s.decide(f)
}

// rivals are the search point's contenders: the best points measured that looked
// within reach of it (three standard deviations of a single-run difference), best
// first, at most maxRivals; cut is how many within reach were left out.
func (s *state) rivals(inc plan.Point, o Objective) (rivals []plan.Point, cut int) {
	iv, _ := s.mean(inc, o)
	margin := s.reach(o, 3)
	var cands []plan.Point
	for _, pt := range s.measured() {
		if v, ok := s.mean(pt, o); ok && pt != inc && v >= iv-margin {
			cands = append(cands, pt)
		}
	}
	sort.SliceStable(cands, func(i, j int) bool {
		a, _ := s.mean(cands[i], o)
		b, _ := s.mean(cands[j], o)
		return a > b
	})
	n := min(len(cands), maxRivals)
	return cands[:n], len(cands) - n
}

// decide finds the best contender (the highest mean difference to a common anchor,
// over paired rounds), judges every contender against it (Holm at the look's level),
// and chooses the cheapest of those equal to it. It is decided when every contender
// is equal or worse, every contender has been measured, and none was left out.
func (s *state) decide(f *final) decision {
	o := f.obj
	var comp, unmeasured []plan.Point // unmeasured, then also the comparisons left open
	for _, m := range f.members {
		if !m.compete || s.failed[m.pt] != "" {
			continue
		}
		if _, ok := s.mean(m.pt, o); ok {
			comp = append(comp, m.pt)
		} else if len(s.runs[m.pt]) == 0 {
			unmeasured = append(unmeasured, m.pt)
		}
	}
	if len(comp) == 0 {
		return decision{}
	}
	anchor := comp[0]
	for _, pt := range comp {
		if s.count(pt, o) > s.count(anchor, o) {
			anchor = pt
		}
	}
	d := decision{leader: anchor, rel: map[plan.Point]Ratio{}, judged: map[plan.Point]Relation{}, ok: true, contenders: len(comp)}
	bestV := 0.0
	for _, pt := range comp {
		if diff := s.diffs(pt, anchor, o, 0); len(diff) > 0 && pt != anchor {
			if m, _ := stat.MeanSD(diff); m > bestV {
				d.leader, bestV = pt, m
			}
		}
	}
	// A contender whose own paired rounds with the leader say it is better takes the
	// lead (the anchor's differences span other rounds: an early lucky run of a
	// sometimes-retransmitting point can make it the leader that the final rounds refute).
	for range comp {
		next, nextV := d.leader, 0.0
		for _, pt := range comp {
			if r := s.pair(pt, d.leader, o); pt != d.leader && r.JudgeAt(s.tol, f.lvl) == Better && r.mean > nextV {
				next, nextV = pt, r.mean
			}
		}
		if next == d.leader {
			break
		}
		d.leader = next
	}
	d.chosen = d.leader
	var rs []Ratio
	var others []plan.Point
	for _, pt := range comp {
		if pt != d.leader {
			others = append(others, pt)
			rs = append(rs, s.pair(pt, d.leader, o))
		}
	}
	d.decided = f.cut == 0 && (len(comp) > 1 || s.count(comp[0], o) >= 2)
	for i, rel := range holm(rs, s.tol, f.lvl) {
		pt := others[i]
		if rel == Undecided {
			// Not equal, nor worse, yet no better by more than the tolerance: the rounds
			// go on for it, but a parameter's verdict is not left open by it (settled).
			if _, hi := rs[i].bounds(f.lvl / float64(len(rs))); hi <= 1+s.tol {
				rel = NotBetter
			}
		}
		d.rel[pt], d.judged[pt] = rs[i], rel
		switch rel {
		case Equal:
			if cheaper(pt, d.chosen) < 0 {
				d.chosen = pt
			}
		case Worse:
		case Better:
			d.decided = false
		default: // the choice is decided only where every contender is equal or worse, or covered
			unmeasured = append(unmeasured, pt)
		}
	}
	for _, pt := range unmeasured {
		if !d.covered(pt) {
			d.decided = false
		}
	}
	return d
}

// covered: the contender pt, never measured or left open (not better), is one
// parameter away from the chosen point, and that parameter's value was measured and
// settled (equal, worse or no better than the leader) at a point of the top (the
// leader, or a point judged equal to it) that has the chosen point's value there. A flat top's cheapest point chosen
// late brings neighbours of its own that the rounds may not reach; the value they
// stand for was compared at an equal of the chosen point. That assumes the parameters
// in which the two differ do not interact with it there (the choice is a local optimum
// around the top, as any descent's is); docs/sweep-method.md says so.
func (d decision) covered(pt plan.Point) bool {
	for _, dim := range profiles.Dims {
		v := pt.Int(dim)
		if v == d.chosen.Int(dim) || pt.WithInt(dim, d.chosen.Int(dim)) != d.chosen {
			continue
		}
		for q, j := range d.judged {
			if q.Int(dim) != v || !settledRel(j) {
				continue
			}
			top := q.WithInt(dim, d.chosen.Int(dim))
			if top == d.leader || d.judged[top] == Equal {
				return true
			}
		}
		return false
	}
	return false
}

// settled: the choice is decided and so is every comparison with the tuning article's values.
func (s *state) settled(f *final) bool {
	if !f.dec.decided {
		return false
	}
	for _, v := range s.variantsOf(f) {
		if s.failed[v] == "" && s.pair(f.dec.chosen, v, f.obj).JudgeAt(s.tol, f.lvl) == Undecided {
			return false
		}
	}
	return true
}

// active are the members that the next rounds measure: the leader and the chosen
// point, contenders not yet decided or not measured, and the tuning article's values not yet
// decided against the chosen point.
func (s *state) active(f *final) []plan.Point {
	var out []plan.Point
	d, o := f.dec, f.obj
	vars := s.variantsOf(f)
	for _, m := range f.members {
		if s.failed[m.pt] != "" || m.out {
			continue
		}
		on := m.pt == d.leader || m.pt == d.chosen || len(s.runs[m.pt]) == 0
		if _, ok := s.mean(m.pt, o); ok && m.compete {
			if j := d.judged[m.pt]; m.pt != d.leader && j != Equal && j != Worse {
				on = true
			}
		}
		if slices.Contains(vars, m.pt) && s.pair(d.chosen, m.pt, o).JudgeAt(s.tol, f.lvl) == Undecided {
			on = true
		}
		if on {
			out = append(out, m.pt)
		}
	}
	return out
}

// confirmOthers gives each further objective final rounds of its own, as the searched
// one had: its best measured point and the points within reach of it (by that
// objective's own noise), interleaved and judged the same way, while the budget lasts.
// An objective the budget did not reach stays the best of the points measured.
func (s *state) confirmOthers(ctx context.Context, f *final) error {
	if f == nil || !f.dec.ok {
		return nil
	}
	f.otherFinals = make([]*final, len(s.objs)-1)
	for i, o := range s.objs[1:] {
		if s.exhausted() || ctx.Err() != nil {
			return nil
		}
		b, ok := s.best(o, s.measured())
		if !ok {
			continue
		}
		fo, err := s.finalFor(ctx, b, o)
		if err != nil {
			return err
		}
		if fo.dec.ok {
			f.otherFinals[i] = fo
		}
	}
	return nil
}
