package hunt

// The files: space.go (the space, its points and their configs), rules.go (the classes,
// the thresholds and what a run shows), hunt.go (the Plan, Run, the budget and the
// search), confirm.go (a candidate's fresh runs and the minimal set), record.go (the
// NDJSON records), repro.go (the command lines), summary.go (the terminal's lines).

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/rdmabench/rdmabench/result"
)

// Measurer runs one test; sweep.Measurer is the same interface, so the engine a sweep
// uses serves a hunt as it is. An error with a method StopsSweep() returning true (a
// lost session) ends the hunt; any other error is the run's (result.Error).
type Measurer interface {
	Measure(ctx context.Context, cfg result.Config) (result.Result, error)
}

// Plan is one hunt.
type Plan struct {
	// Space is what is searched (DefaultSpace, Override).
	Space Space
	// Base holds the settings every run shares: the duration of a run (a profile's
	// point_duration_s), the warm-up, counters ("auto": the counters rule reads the
	// flags), hugepages, completion events. Its swept fields are the points'.
	Base result.Config
	// Budget bounds the hunt's time on the Now clock, a resumed hunt's prior runs
	// included: no run starts once it is spent (<= 0: no limit). MaxRuns bounds the
	// runs the same way (prior runs included; 0: no limit).
	Budget  time.Duration
	MaxRuns int
	// Seed makes the search repeatable: the same seed and the same measurements make the
	// same hunt.
	Seed  uint64
	Rules Rules
	// LinkGbps is the nominal link rate, for Rules.LinkFraction (0: unknown).
	LinkGbps float64
	// Validate refuses a config rdmabench would refuse; a refused point is not an
	// anomaly, and is never measured. nil: CheckConfig. The CLI passes bench's rules,
	// which take a plan after its defaults: func(c result.Config) error {
	// ops.Defaults(&c); return ops.Validate(c) }.
	Validate func(result.Config) error
	// Prior are the records of an earlier hunt (--resume): its runs are not measured
	// again (a run asked for is taken from them where one of the same config is left, in
	// their order), its findings are kept and their sets skipped, and the budget is
	// charged with their wall time.
	Prior []Record
	// Now is the budget's clock (time.Now when nil; tests simulate it).
	Now func() time.Time
	// Server names the server in the findings' command lines ("SERVER" when empty).
	Server string
}

// Outcome is what a hunt did and found.
type Outcome struct {
	// Findings are every finding known at the end: the prior ones, then the new.
	Findings []Finding `json:"findings"`
	New      int       `json:"new_findings"`
	// Runs are the runs measured by this call; Reused, the prior runs it took instead of
	// measuring; PriorRuns, all the prior records' runs; Points, the configurations
	// measured (prior included).
	Runs      int `json:"runs"`
	Reused    int `json:"reused"`
	PriorRuns int `json:"prior_runs"`
	Points    int `json:"points"`
	// Candidates: screened runs that looked anomalous and were measured afresh; Rejected,
	// those the fresh runs did not all show (noise); Duplicates, confirmed candidates whose
	// minimal set was one already known.
	Candidates int `json:"candidates"`
	Rejected   int `json:"rejected"`
	Duplicates int `json:"duplicates"`
	// RampBound: runs whose throughput was not judged, their queues' ramp too large a
	// share of them (Rules.MaxRampShare: raise the point duration).
	RampBound int `json:"ramp_bound"`
	// Skipped: proposals not measured because a known finding's set holds them.
	Skipped         int     `json:"skipped"`
	BudgetS         float64 `json:"budget_s"`
	BudgetSpentS    float64 `json:"budget_spent_s"`
	MaxRuns         int     `json:"max_runs,omitempty"`
	BudgetExhausted bool    `json:"budget_exhausted"` // it stopped for the budget or MaxRuns
	Interrupted     bool    `json:"interrupted"`      // it stopped for ctx (Ctrl-C); what it found is kept
	// Exhausted: no unmeasured point is left outside the known findings' sets.
	Exhausted bool `json:"exhausted"`
}

// The search's annealing: a chain of chainLen moves from a fresh point, its temperature
// falling from tStart to tEnd (in units of the anomaly score, where 1 is a rule's bar).
const (
	chainLen = 30
	tStart   = 0.25
	tEnd     = 0.02
	// A run is screened for low throughput once its operation and size have
	// minScreenPoints other points measured; a candidate's reference is the best of at
	// least minRefPoints (measured for it where the search has not).
	minScreenPoints = 3
	minRefPoints    = 3
	maxTries        = 400 // draws for a fresh point before the space counts as exhausted
)

var errBudget = errors.New("hunt: the budget is spent")

// Run hunts: it searches the plan's space through m, confirms each candidate with fresh
// runs, finds each confirmed anomaly's minimal set, and calls record with every new run
// and every finding as it comes (nil: none). It returns when the budget or MaxRuns is
// spent, the space is exhausted, or ctx ends (Interrupted: what was found is kept, and a
// finding whose minimisation was cut short is recorded with Minimal false). Its error
// is a plan that cannot run, a record that cannot be written, or the Measurer's
// session-ending error, with the outcome so far.
func Run(ctx context.Context, m Measurer, p Plan, record func(Record) error) (Outcome, error) {
	p, err := p.normalised()
	if err != nil {
		return Outcome{}, err
	}
	h := newHunter(m, p, record)
	if err := h.loadPrior(); err != nil {
		return Outcome{}, err
	}
	err = h.hunt(ctx)
	return h.end(ctx, err)
}

func (p Plan) normalised() (Plan, error) {
	if len(p.Space.Dims) == 0 {
		return p, errors.New("hunt: the plan has no space (DefaultSpace)")
	}
	if err := p.Space.check(); err != nil {
		return p, err
	}
	r, err := p.Rules.normalised()
	if err != nil {
		return p, err
	}
	p.Rules = r
	if p.Validate == nil {
		p.Validate = CheckConfig
	}
	if p.Now == nil {
		p.Now = time.Now
	}
	if p.Base.Test == "" {
		p.Base.Test = result.BW
	}
	switch {
	case p.Base.Test != result.BW:
		return p, fmt.Errorf("hunt: runs bandwidth tests, not %s", p.Base.Test)
	case p.MaxRuns < 0:
		return p, fmt.Errorf("hunt: max runs %d: want 0 (no limit) or more", p.MaxRuns)
	case !(p.LinkGbps >= 0):
		return p, fmt.Errorf("hunt: link rate %v: want 0 (unknown) or more", p.LinkGbps)
	}
	for i, rec := range p.Prior {
		if (rec.Kind == KindPoint) != (rec.Measurement != nil) || (rec.Kind == KindFinding) != (rec.Finding != nil) ||
			(rec.Kind != KindPoint && rec.Kind != KindFinding) {
			return p, fmt.Errorf("hunt: prior record %d is neither a point nor a finding", i+1)
		}
	}
	return p, nil
}

type opSize struct {
	op   string
	size int
}

// pointData is what is known of a point: its runs (all phases), and the run it is
// screened and scored on (its first search or reference run).
type pointData struct {
	pt         Point
	runs       []Measurement
	first      Measurement
	screenable bool
	// caches: the median throughput of the successful runs (medN: the runs it is of;
	// medOK: there is one), and whether a known low-throughput set holds the point (slowN:
	// the findings known when it was said, plus one)
	med         float64
	medN, slowN int
	medOK, slow bool
}

// median is the point's median throughput over its judgeable runs.
func (d *pointData) median(r Rules) (float64, bool) {
	if d.medN != len(d.runs) {
		var bw []float64
		for _, m := range d.runs {
			if r.judgeable(m) {
				bw = append(bw, m.BWGbps)
			}
		}
		d.medN, d.medOK = len(d.runs), len(bw) > 0
		if d.medOK {
			d.med = median(bw)
		}
	}
	return d.med, d.medOK
}

type hunter struct {
	m      Measurer
	p      Plan
	r      Rules
	record func(Record) error
	rng    *rand.Rand
	o      Outcome

	t0          time.Time
	priorCharge time.Duration
	seq         int

	points   map[Point]*pointData
	byOpSize map[opSize][]Point
	pool     map[Point][]Measurement // prior trial runs, taken in place of new runs of their point
	queue    []Point                 // measured points to screen
	// watched: points that did not look slow when screened (their size had no reference
	// yet, or a low one: a chain inside a slow region measures mostly slow points); each is
	// screened again when the reference rises enough that it falls below the bar
	watched  map[opSize][]Point
	found    []Finding
	nextID   int
	rejected map[string]bool
	coverage map[string]map[string]int
	validity map[Point]bool
	varied   []Dim

	// the annealing chain
	cur   *Point
	steps int
}

func newHunter(m Measurer, p Plan, record func(Record) error) *hunter {
	h := &hunter{m: m, p: p, r: p.Rules, record: record, rng: rand.New(rand.NewPCG(p.Seed, 0x68756e74)),
		t0: p.Now(), points: map[Point]*pointData{}, byOpSize: map[opSize][]Point{}, pool: map[Point][]Measurement{},
		watched: map[opSize][]Point{}, rejected: map[string]bool{}, coverage: map[string]map[string]int{}, validity: map[Point]bool{}}
	for _, d := range p.Space.Dims {
		h.coverage[d.Name] = map[string]int{}
		if len(d.Values) > 1 {
			h.varied = append(h.varied, d)
		}
	}
	h.o.BudgetS, h.o.MaxRuns = max(p.Budget.Seconds(), 0), p.MaxRuns
	return h
}

// loadPrior takes an earlier hunt's records: search and reference runs are measured
// points (screened again, in their order: a candidate the earlier hunt had not finished
// confirming is confirmed now), confirm and minimize runs wait to be taken by a trial of
// their point, findings are known. Every prior run is charged to the budget.
func (h *hunter) loadPrior() error {
	for _, rec := range h.p.Prior {
		if rec.Kind == KindFinding {
			f := *rec.Finding
			h.found = append(h.found, f)
			var n int
			if _, err := fmt.Sscanf(f.ID, "F%d", &n); err == nil {
				h.nextID = max(h.nextID, n)
			}
			continue
		}
		m := *rec.Measurement
		h.o.PriorRuns++
		h.priorCharge += time.Duration(m.WallNS)
		h.seq = max(h.seq, m.Seq)
		pt := PointOf(m.Config)
		switch m.Phase {
		case PhaseSearch, PhaseReference:
			h.add(pt, m, true)
		default:
			h.add(pt, m, false)
			h.pool[pt] = append(h.pool[pt], m)
		}
	}
	return nil
}

// add keeps run m of pt; a search or reference run makes pt screenable (queued once).
func (h *hunter) add(pt Point, m Measurement, screenable bool) {
	d := h.points[pt]
	if d == nil {
		d = &pointData{pt: pt, first: m}
		h.points[pt] = d
		k := opSize{pt.Op, pt.MsgSizeBytes}
		h.byOpSize[k] = append(h.byOpSize[k], pt)
		for _, dim := range h.p.Space.Dims {
			h.coverage[dim.Name][pt.Get(dim.Name)]++
		}
	}
	d.runs = append(d.runs, m)
	if screenable && !d.screenable {
		d.screenable, d.first = true, m
		if h.p.Space.Contains(pt) {
			h.queue = append(h.queue, pt)
		}
		h.rewatch(opSize{pt.Op, pt.MsgSizeBytes})
	}
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

func (h *hunter) elapsed() time.Duration { return h.priorCharge + h.p.Now().Sub(h.t0) }

// spent: no run may start (the budget's time or MaxRuns).
func (h *hunter) spent() bool {
	if h.p.MaxRuns > 0 && h.o.PriorRuns+h.o.Runs >= h.p.MaxRuns {
		return true
	}
	return h.p.Budget > 0 && h.elapsed() >= h.p.Budget
}

// measure runs pt once for phase, or takes a prior run of it left for a trial.
func (h *hunter) measure(ctx context.Context, pt Point, phase string) (Measurement, error) {
	if err := ctx.Err(); err != nil {
		return Measurement{}, err
	}
	if q := h.pool[pt]; len(q) > 0 {
		h.pool[pt] = q[1:]
		h.o.Reused++
		return q[0], nil
	}
	if h.spent() {
		h.o.BudgetExhausted = true
		return Measurement{}, errBudget
	}
	cfg := pt.Config(h.p.Base)
	t := h.p.Now()
	res, merr := h.m.Measure(ctx, cfg)
	wall := h.p.Now().Sub(t)
	if err := ctx.Err(); err != nil {
		return Measurement{}, err // an interrupted run is no data
	}
	var stop interface{ StopsSweep() bool }
	if merr != nil && errors.As(merr, &stop) && stop.StopsSweep() {
		return Measurement{}, merr
	}
	if merr != nil && res.Error == "" {
		res.Error = merr.Error()
	}
	h.seq++
	m := summarise(res, cfg, phase, h.seq, wall.Nanoseconds())
	if h.record != nil {
		if err := h.record(Record{Kind: KindPoint, Measurement: &m}); err != nil {
			return m, fmt.Errorf("hunt: recording a run: %w", err)
		}
	}
	h.o.Runs++
	if m.Error == "" && !h.r.judgeable(m) {
		h.o.RampBound++
	}
	h.add(pt, m, phase == PhaseSearch || phase == PhaseReference)
	return m, nil
}

func (h *hunter) valid(p Point) bool {
	v, ok := h.validity[p]
	if !ok {
		v = h.p.Validate(p.Config(h.p.Base)) == nil
		h.validity[p] = v
	}
	return v
}

// known says whether a known finding's set holds p.
func (h *hunter) known(p Point) bool {
	for _, f := range h.found {
		if f.Matches(p) {
			return true
		}
	}
	return false
}

func (h *hunter) end(ctx context.Context, err error) (Outcome, error) {
	if errors.Is(err, errBudget) {
		err = nil
	}
	if ctx.Err() != nil && (err == nil || errors.Is(err, ctx.Err())) {
		h.o.Interrupted, err = true, nil
	}
	h.o.Findings = slices.Clone(h.found)
	h.o.Points = len(h.points)
	h.o.BudgetSpentS = h.elapsed().Seconds()
	return h.o, err
}

// hunt is the search: screen what was measured, then take the annealing's next point.
func (h *hunter) hunt(ctx context.Context) error {
	for {
		if err := h.screenQueue(ctx); err != nil {
			return err
		}
		pt, ok := h.propose()
		if !ok {
			h.o.Exhausted = true
			return nil
		}
		m, err := h.measure(ctx, pt, PhaseSearch)
		if err != nil {
			return err
		}
		h.move(pt, m)
	}
}

// score is how anomalous a run looks, 1 at a rule's bar: the largest of its throughput's
// shortfall against its size's reference (the bar's fraction x the reference / its
// throughput), its tail over the tail bar, the unfair bar over its share; a failure or
// counters that moved score above every bar. It is what the annealing climbs.
func (h *hunter) score(pt Point, m Measurement) float64 {
	if h.r.on(Failed) && failKey(m.Error) != "" {
		return 3
	}
	s := 0.0
	if h.r.on(Counters) && len(h.r.moved(m)) > 0 {
		s = 1.5
	}
	if m.Error != "" {
		return s
	}
	if ref := h.screenRef(pt); ref > 0 && h.r.judgeable(m) && h.r.on(LowThroughput) {
		s = max(s, h.r.LowThroughput*ref/m.BWGbps)
	}
	if r, ok := tailRatio(m); ok && h.r.on(Tail) {
		s = max(s, r/h.r.TailRatio)
	}
	if m.ShareRatio != nil && *m.ShareRatio > 0 && h.r.judgeable(m) && h.r.on(Unfair) {
		s = max(s, h.r.UnfairRatio / *m.ShareRatio)
	}
	return s
}

// move is the annealing's step to pt (measured as m): taken when pt scores at least the
// chain's current point, else with the Metropolis chance exp(-drop / T).
func (h *hunter) move(pt Point, m Measurement) {
	if h.cur == nil {
		h.cur, h.steps = &pt, 0
		return
	}
	sx, sy := h.score(*h.cur, h.points[*h.cur].first), h.score(pt, m)
	t := tStart * math.Pow(tEnd/tStart, float64(h.steps)/chainLen)
	if sy >= sx || h.rng.Float64() < math.Exp((sy-sx)/t) {
		h.cur = &pt
	}
	h.steps++
}

// propose is the search's next point to measure: a neighbour of the chain's current
// point (moving over measured neighbours without measuring them again), or, when the
// chain is spent or stuck, a fresh point that starts a new chain.
func (h *hunter) propose() (Point, bool) {
	for range 64 {
		if h.cur == nil || h.steps >= chainLen {
			break
		}
		y, ok := h.neighbour(*h.cur)
		if !ok {
			break
		}
		if d, seen := h.points[y]; seen {
			h.move(y, d.first)
			continue
		}
		return y, true
	}
	h.cur = nil
	return h.sample(nil)
}

// neighbour changes one parameter of x (two, a time in three): an ordered one a step up
// or down (more often) or to any value, a category to another value. The result is
// repaired to a point rdmabench runs, and is neither x, refused, nor in a known set.
func (h *hunter) neighbour(x Point) (Point, bool) {
	if len(h.varied) == 0 {
		return x, false
	}
	for range 40 {
		y := x
		k := 1
		if h.rng.IntN(3) == 0 {
			k = 2
		}
		for range k {
			d := h.varied[h.rng.IntN(len(h.varied))]
			i := slices.Index(d.Values, y.Get(d.Name))
			j := i
			if Ordered(d.Name) && h.rng.Float64() < 0.6 {
				j = i + 1 - 2*h.rng.IntN(2)
				if j < 0 || j >= len(d.Values) {
					j = 2*i - j
				}
			} else {
				j = h.rng.IntN(len(d.Values) - 1)
				if j >= i {
					j++
				}
			}
			if j >= 0 && j < len(d.Values) {
				y = y.With(d.Name, d.Values[j])
			}
		}
		y = repair(y, h.p.Space)
		if y == x || !h.valid(y) {
			continue
		}
		if h.known(y) {
			h.o.Skipped++
			continue
		}
		return y, true
	}
	return x, false
}

// sample draws a fresh point: each parameter's value weighted against how often it was
// measured already (1/(1+n): every value of every parameter gets its share early),
// pinned by pin where given, repaired, and neither measured, refused nor in a known set.
//
// A draw in a known set counts as coverage of its values (the set covers them), so that
// the weights turn to the values outside it. The space counts as exhausted when
// maxTries weighted draws and as many uniform ones found no point.
func (h *hunter) sample(pin func(Point) Point) (Point, bool) {
	for try := range 2 * maxTries {
		var p Point
		for _, d := range h.p.Space.Dims {
			p = p.With(d.Name, h.pick(d, try >= maxTries))
		}
		if pin != nil {
			p = pin(p)
		}
		p = repair(p, h.p.Space)
		if _, seen := h.points[p]; seen || !h.valid(p) {
			continue
		}
		if h.known(p) {
			h.o.Skipped++
			for _, d := range h.varied {
				h.coverage[d.Name][p.Get(d.Name)]++
			}
			continue
		}
		return p, true
	}
	return Point{}, false
}

func (h *hunter) pick(d Dim, uniform bool) string {
	if len(d.Values) == 1 {
		return d.Values[0]
	}
	if uniform {
		return d.Values[h.rng.IntN(len(d.Values))]
	}
	cov := h.coverage[d.Name]
	w := make([]float64, len(d.Values))
	total := 0.0
	for i, v := range d.Values {
		w[i] = 1 / (1 + float64(cov[v]))
		total += w[i]
	}
	x := h.rng.Float64() * total
	for i, wi := range w {
		if x < wi {
			return d.Values[i]
		}
		x -= wi
	}
	return d.Values[len(d.Values)-1]
}

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
	return median(meds[:min(3, max(1, len(meds)/4))])
}
