package sweep

import (
	"math"
	"slices"

	"github.com/rdmabench/rdmabench/internal/stat"
	"github.com/rdmabench/rdmabench/plan"
	"github.com/rdmabench/rdmabench/profiles"
	"github.com/rdmabench/rdmabench/result"
)

// conclude fills the outcome from what was measured.
func (s *state) conclude(f *final, inc plan.Point) error {
	s.summarise()
	if f == nil || !f.dec.ok {
		// No final rounds (interrupted, or nothing met the objective): the search's point.
		return s.concludeMeasured(inc)
	}
	s.concludeFinal(f)
	return nil
}

// summarise lists every measured point of the grid, all its runs (Outcome.All), and
// counts the queue-bound ones.
func (s *state) summarise() {
	o := s.o
	o.All = nil
	for _, pt := range s.order {
		if !s.onGrid(pt) {
			continue
		}
		ps := PointSummary{Point: pt, Runs: len(s.runs[pt]), Error: s.failed[pt]}
		e := s.estimate(pt, s.objs[0], 0)
		ps.BWGbps, ps.MsgRateMpps, ps.P99NS, ps.Tainted = e.BWGbps, e.MsgRateMpps, e.P99NS, e.Tainted
		if s.p.Base.DurationS > 0 {
			ps.DurationS = s.length(pt)
		}
		if sh, ok := s.share[pt]; ok && ps.Runs > 0 {
			ps.RampShare = &sh
		}
		// Queue-bound: a run without a steady window of a quarter of its length at the
		// longest a point may run, or one whose turnover asks for more than that (a
		// point the search left shorter could still have been lengthened).
		ps.QueueBound = ps.Runs > 0 && s.unsteady[pt] && (s.p.MaxDurationS <= s.length(pt) || s.p.Base.DurationS <= 0 || s.beyondCap[pt])
		if ps.QueueBound {
			o.QueueBound++
		}
		o.All = append(o.All, ps)
	}
	o.Points = len(o.All)
}

// concludeMeasured concludes without final rounds: the search's point (the best
// measured where it does not qualify), and each objective's best measured point.
func (s *state) concludeMeasured(inc plan.Point) error {
	o := s.o
	if _, ok := s.mean(inc, s.objs[0]); !ok {
		var found bool
		if inc, found = s.best(s.objs[0], s.measured()); !found {
			return ErrNoFeasible
		}
	}
	o.Chosen, o.Best = s.estimate(inc, s.objs[0], 0), s.estimate(inc, s.objs[0], 0)
	o.Optima = map[string]Optimum{}
	for _, obj := range s.objs { // no final rounds: each objective's best measured
		b, ok := s.best(obj, s.measured())
		if !ok {
			continue
		}
		op := Optimum{Objective: obj.String(), Unit: obj.Unit(), Basis: BestMeasured, Estimate: s.estimate(b, obj, 0),
			Gains: map[string]Gain{}, Unresolved: []Comparison{}}
		op.Contenders = s.qualifying(obj)
		o.Optima[obj.String()] = op
	}
	return nil
}

// concludeFinal concludes from the final rounds f and the gains' rounds: the choice
// and the best, the gains over the references, every objective's optimum and the
// verdicts.
func (s *state) concludeFinal(f *final) {
	o := s.o
	d, main := f.dec, s.objs[0]
	gainsFrom := f.gains
	if gainsFrom == 0 { // interrupted before the gains' rounds
		gainsFrom = f.first
	}
	o.Decided = d.decided
	o.Chosen, o.Best = s.estimate(d.chosen, main, gainsFrom), s.estimate(d.leader, main, f.first)
	o.Noise = s.noise(d.leader, f.members, main, 0)
	o.References = map[string]Reference{}
	for name, pt := range s.p.References {
		o.References[name] = Reference{Estimate: s.estimate(pt, main, gainsFrom), Gain: gain(pairRatio(s.diffs(d.chosen, pt, main, gainsFrom)))}
	}
	o.Optima = map[string]Optimum{}
	for i, obj := range s.objs {
		if op, ok := s.optimum(f, i, gainsFrom); ok {
			o.Optima[obj.String()] = op
		}
	}
	o.Verdicts = map[string]Verdict{}
	for _, dim := range profiles.Dims {
		o.Verdicts[dim] = s.verdict(f, dim)
	}
}

// optimum is objective i's (s.objs) optimum after the final rounds f, its estimate and
// gains from round gainsFrom on: the search's objective's as f decided it; a further
// objective's as its own final rounds decided it (confirmOthers), or else the best of
// the points measured. ok is false where no measured point qualifies for it.
func (s *state) optimum(f *final, i, gainsFrom int) (op Optimum, ok bool) {
	obj := s.objs[i]
	op = Optimum{Objective: obj.String(), Unit: obj.Unit(), Gains: map[string]Gain{}, Unresolved: []Comparison{}}
	switch {
	case i == 0:
		s.decidedOptimum(&op, f, f.dec.chosen, gainsFrom)
	case i > len(f.others):
		return op, false
	default:
		pt := f.others[i-1]
		if _, ok := s.mean(pt, obj); !ok {
			return op, false // no measured point qualifies
		}
		if fo := f.other(i - 1); fo != nil { // confirmed in final rounds of its own
			s.decidedOptimum(&op, fo, pt, gainsFrom)
			break
		}
		op.Basis, op.Estimate = BestMeasured, s.estimate(pt, obj, gainsFrom)
		op.Contenders = s.qualifying(obj)
		var refs []*member
		for _, name := range sortedKeys(s.p.References) {
			refs = append(refs, &member{pt: s.p.References[name]})
		}
		op.Noise = s.noise(pt, refs, obj, gainsFrom)
	}
	for name, ref := range s.p.References {
		op.Gains[name] = gain(pairRatio(s.diffs(op.Point, ref, obj, gainsFrom)))
	}
	return op, true
}

// decidedOptimum fills op from the final rounds fin that decided its objective, pt the
// point they chose: the estimate from round gainsFrom on, the noise, and the
// comparisons left open.
func (s *state) decidedOptimum(op *Optimum, fin *final, pt plan.Point, gainsFrom int) {
	d, obj := fin.dec, fin.obj
	op.Basis, op.Decided, op.Contenders, op.ContendersCut = Searched, d.decided, d.contenders, fin.cut
	op.Estimate = s.estimate(pt, obj, gainsFrom)
	op.Noise = s.noise(d.leader, fin.members, obj, 0)
	for _, m := range fin.members {
		if j, ok := d.judged[m.pt]; ok && j != Equal && j != Worse {
			op.Unresolved = append(op.Unresolved, comparison(m.pt, d.rel[m.pt]))
		}
	}
}

// verdict compares the chosen value of d with the tuning article's.
func (s *state) verdict(f *final, d string) Verdict {
	main := f.dec
	c := main.chosen
	v := Verdict{Chosen: c.Int(d), Decided: true}
	// Open comparisons of points with another value of d: the parameter is undecided.
	for _, m := range f.members {
		j, ok := main.judged[m.pt]
		if ok && m.pt.Int(d) != c.Int(d) && !settledRel(j) && (j == Better || !main.covered(m.pt)) {
			r := main.rel[m.pt]
			if v.Unresolved == nil || high(&r) > high(v.Unresolved.Ratio) {
				c := comparison(m.pt, r)
				v.Unresolved = &c
			}
			v.Decided = false
		}
	}
	if !main.decided && main.leader != c && main.leader.Int(d) != c.Int(d) {
		v.Decided = false
	}
	for _, m := range f.members {
		if m.compete && len(s.runs[m.pt]) == 0 && s.failed[m.pt] == "" && m.pt.Int(d) != c.Int(d) && !main.covered(m.pt) {
			v.Decided = false // a contender never measured (the budget)
		}
	}
	if f.cut > 0 {
		v.Decided = false // contenders left out: any parameter may be wrong
	}
	v.Equal = s.equalValues(f, d)
	r, ok := s.p.Article[d]
	if !ok {
		v.Verdict = NoArticle
		return v
	}
	v.Article = slices.Clone(r)
	av := ArticleValue(d, s.p.Grid[d], r, c.Int(d))
	if inRange(d, r, c.Int(d)) {
		av = c.Int(d)
		v.Verdict = map[bool]string{true: Agrees, false: CannotTell}[v.Decided]
	}
	v.ArticleValue, v.Nearest = &av, !inRange(d, r, av)
	if v.Verdict != "" {
		return v
	}
	alt := c.WithInt(d, av)
	if alt == c || !alt.Valid() || s.failed[alt] != "" {
		v.Verdict = NotApplicable
		return v
	}
	ratio := s.pair(c, alt, s.objs[0])
	if ratio.N > 0 {
		v.Ratio = &ratio
	}
	v.Verdict = map[Relation]string{Equal: Agrees, Better: Differs, Worse: ArticleBetter, Undecided: CannotTell}[ratio.JudgeAt(s.tol, f.lvl)]
	return v
}

// equalValues are the values of d whose point (the chosen one's other parameters) is
// the leader or was judged equal to it in f's last look, sorted; nil unless the chosen
// value has company.
func (s *state) equalValues(f *final, d string) []int {
	c, dec := f.dec.chosen, f.dec
	var vals []int
	for _, m := range f.members {
		if !m.compete || m.pt.WithInt(d, c.Int(d)) != c {
			continue // another parameter differs
		}
		if m.pt == dec.leader || dec.judged[m.pt] == Equal {
			vals = append(vals, m.pt.Int(d))
		}
	}
	slices.Sort(vals)
	vals = slices.Compact(vals)
	if len(vals) < 2 || !slices.Contains(vals, c.Int(d)) {
		return nil
	}
	return vals
}

func high(r *Ratio) float64 {
	if r == nil || r.High == nil {
		return math.Inf(1)
	}
	return *r.High
}

// noise is an objective's run-to-run noise: the median, over the points paired with
// pt in at least 3 rounds from round `from` on, of the standard deviation of a paired
// log difference over sqrt 2 (one run's share), as a relative spread.
func (s *state) noise(pt plan.Point, with []*member, o Objective, from int) float64 {
	var sds []float64
	for _, m := range with {
		if diff := s.diffs(m.pt, pt, o, from); m.pt != pt && len(diff) >= 3 {
			_, sd := stat.MeanSD(diff)
			sds = append(sds, sd/math.Sqrt2)
		}
	}
	if len(sds) == 0 {
		return 0
	}
	return math.Exp(stat.Median(sds)) - 1
}

// estimate summarises pt's runs from round `from` on (all runs where it has none there).
func (s *state) estimate(pt plan.Point, o Objective, from int) Estimate {
	var rs []result.Result
	for _, r := range s.runs[pt] {
		if r.round >= from {
			rs = append(rs, r.res)
		}
	}
	if len(rs) == 0 {
		for _, r := range s.runs[pt] {
			rs = append(rs, r.res)
		}
	}
	e := Estimate{Point: pt, Runs: len(rs)}
	var vals, bw, rate, p99 []float64
	for _, r := range rs {
		if r.Tainted {
			e.Tainted++
		}
		if v, ok := o.Value(r); ok {
			vals = append(vals, v)
		}
		b, m := Throughput(r)
		bw, rate = append(bw, b), append(rate, m)
		if r.Lat.P99 != nil {
			p99 = append(p99, float64(*r.Lat.P99))
		}
	}
	if len(rs) == 0 {
		return e
	}
	e.Median, e.CILow, e.CIHigh = level(vals)
	e.BWGbps, e.MsgRateMpps = stat.Median(bw), stat.Median(rate)
	if len(p99) > 0 {
		m := int64(stat.Median(p99))
		e.P99NS = &m
	}
	return e
}
