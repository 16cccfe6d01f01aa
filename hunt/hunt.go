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
	"strings"
	"time"

	"github.com/rdmabench/rdmabench/counters"
	"github.com/rdmabench/rdmabench/internal/stat"
	"github.com/rdmabench/rdmabench/plan"
	"github.com/rdmabench/rdmabench/result"
)

// Measurer runs one test; sweep.Measurer is the same interface, so the engine a sweep
// uses serves a hunt as it is. An error with a method StopsSweep() returning true (a
// lost session) ends the hunt; any other error is the run's (result.Error).
type Measurer = plan.Measurer

// Plan is one hunt.
type Plan struct {
	// Space is what is searched (DefaultSpace, Override).
	Space Space
	// Base holds the settings every run shares: the duration of a run (a profile's
	// point_duration_s), the warm-up, counters ("auto": the counters rule reads the
	// flags), hugepages, completion events. Its swept fields are the points'.
	Base result.Config
	// Budget bounds the hunt's time on the Now clock, a resumed hunt's prior runs
	// included (<= 0: no limit): no run starts that would end past it by its estimate
	// (its setup, the median of the runs' wall time over their duration; its duration;
	// the drain of its queues at the best rate its operation showed). MaxRuns bounds the
	// runs (prior runs included; 0: no limit): no run starts once it is reached.
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
	// their order), its findings are kept (each ID's last record; one cut short, Minimal
	// false, is minimised again and recorded under its ID), and the budget is charged
	// with their wall time. Its runs must share Base's common settings (duration,
	// iterations, warm-up, counters, hugepages, completion events) and lie in Space:
	// Run refuses a plan that differs, naming what.
	Prior []Record
	// Now is the budget's clock (time.Now when nil; tests simulate it).
	Now func() time.Time
	// Server names the server in the findings' command lines ("SERVER" when empty): its
	// last word is the servers, comma-separated where the space has a peers dimension
	// (WithPeers: a fan-out point of k runs against the first k), the words before it
	// flags that go with them ("-d mlx5_0 host-a,host-b"). A point of one server names
	// the first, a fan-out the first k (Reproducer).
	Server string
}

// Outcome is what a hunt did and found.
type Outcome struct {
	// Findings are every finding known at the end, in the order of their IDs: the prior
	// ones (completed where this call minimised again one cut short), then the new.
	// New: the findings this call made (a prior one completed is not new).
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
	// Skipped: proposals not measured because every class the rules look for is known
	// there (by findings whose sets are not empty).
	Skipped int `json:"skipped"`
	// Background: the counters that moved at the space's baseline too, dropped from the
	// counters rule (see the package documentation), in the order found.
	Background []BackgroundCounter `json:"background,omitempty"`
	// Errors: this call's runs that did not run (an error that is no anomaly: a setup
	// that failed, a server that refused; not a completion status or a timeout), and the
	// first one's error.
	Errors     int    `json:"errors"`
	FirstError string `json:"first_error,omitempty"`
	// TooLong: runs not started because their estimated wall time (setup, duration and
	// the drain of their queues) would have run past the budget.
	TooLong         int     `json:"too_long"`
	BudgetS         float64 `json:"budget_s"`
	BudgetSpentS    float64 `json:"budget_spent_s"`
	MaxRuns         int     `json:"max_runs,omitempty"`
	BudgetExhausted bool    `json:"budget_exhausted"` // it stopped for the budget or MaxRuns
	Interrupted     bool    `json:"interrupted"`      // it stopped for ctx (Ctrl-C); what it found is kept
	// Exhausted: no unmeasured point is left that could show anything new.
	Exhausted bool `json:"exhausted"`
}

// BackgroundCounter is a counter that moved at the space's baseline too: a bed's or a
// NIC's background, no anomaly of a configuration. It is no longer judged.
type BackgroundCounter struct {
	Counter string         `json:"counter"`
	Class   counters.Class `json:"class"`
	// Moved of Runs: the hunt's runs (prior ones included) in which it moved.
	Moved int `json:"moved_runs"`
	Runs  int `json:"runs"`
	// ControlMoved of ControlRuns: its moves in the runs of its control (the baseline, or
	// the point that had silenced it) when it was settled.
	ControlMoved int `json:"control_moved_runs"`
	ControlRuns  int `json:"control_runs"`
	// Probed: it moved in every run of the baseline, and moving any one parameter of the
	// baseline to another value of the space did not silence it.
	Probed bool `json:"probed,omitempty"`
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
	// defaultRateGbps: a run's drain is estimated at this rate until a run of its
	// operation has shown one (conservative: most NICs run faster).
	defaultRateGbps = 10
	// maxTooLong: the search's proposals in a row that would run past the budget before
	// the hunt counts the budget spent.
	maxTooLong = 64
	// noneRanStop: this many runs, none of which ran (Outcome.Errors), end the hunt.
	noneRanStop = 10
)

var (
	errBudget  = errors.New("hunt: the budget is spent")
	errTooLong = fmt.Errorf("%w: the next run would end past it", errBudget)
)

// Run hunts: it searches the plan's space through m, confirms each candidate with fresh
// runs, finds each confirmed anomaly's minimal set, and calls record with every new run
// and every finding as it comes (nil: none). It returns when the budget or MaxRuns is
// spent, the space is exhausted, or ctx ends (Interrupted: what was found is kept, and a
// finding whose minimisation was cut short is recorded with Minimal false). Its error
// is a plan that cannot run (prior records of another plan among them), a record that
// cannot be written, the Measurer's session-ending error, a hunt none of whose runs ran
// (Outcome.Errors: it stops after noneRanStop such runs), or a space none of whose
// points Validate lets run; with the outcome so far.
func Run(ctx context.Context, m Measurer, p Plan, record func(Record) error) (Outcome, error) {
	p, err := p.normalised()
	if err != nil {
		return Outcome{}, err
	}
	h := newHunter(m, p, record)
	if err := h.loadPrior(); err != nil {
		return Outcome{}, err
	}
	err = h.complete(ctx)
	if err == nil {
		err = h.hunt(ctx)
	}
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
			d.med = stat.Median(bw)
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
	watched map[opSize][]Point
	// found: the findings the screening and the search know (minimal, or cut short in
	// this call); pending: prior findings cut short, to be minimised again (complete);
	// kept: prior findings reported as they were (not minimised again, or again cut short
	// without progress), which no search or screening reads
	found   []Finding
	pending []Finding
	kept    []Finding
	nextID  int
	// background: counters dropped from the counters rule (settle), in bgOrder's order;
	// controls: the points counters are paired with where the baseline holds their trigger
	background map[string]*BackgroundCounter
	bgOrder    []string
	controls   map[string]Point
	ctlTally   map[string][2]int // per counter: the runs of its control in which it moved, and all
	// the budget's estimate of a run (estimate): each run's wall time over its duration,
	// and the best Gb/s of each operation; tooLong: points the search did not measure for
	// the budget
	overheads []float64
	overMed   float64
	overN     int
	bestGbps  map[string]float64
	tooLong   map[Point]bool
	rejected  map[string]bool
	coverage  map[string]map[string]int
	validity  map[Point]bool
	varied    []Dim

	// the annealing chain
	cur   *Point
	steps int
}

func newHunter(m Measurer, p Plan, record func(Record) error) *hunter {
	h := &hunter{m: m, p: p, r: p.Rules, record: record, rng: rand.New(rand.NewPCG(p.Seed, 0x68756e74)),
		t0: p.Now(), points: map[Point]*pointData{}, byOpSize: map[opSize][]Point{}, pool: map[Point][]Measurement{},
		watched: map[opSize][]Point{}, rejected: map[string]bool{}, coverage: map[string]map[string]int{}, validity: map[Point]bool{},
		background: map[string]*BackgroundCounter{}, controls: map[string]Point{}, ctlTally: map[string][2]int{}, bestGbps: map[string]float64{}, tooLong: map[Point]bool{}}
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
		h.priorCharge += time.Duration(m.WallNS)
		h.seq = max(h.seq, m.Seq)
		pt := PointOf(m.Config)
		h.observe(m)
		switch m.Phase {
		case PhaseSearch, PhaseReference:
			h.add(pt, m, true)
		default:
			h.add(pt, m, false)
			h.pool[pt] = append(h.pool[pt], m)
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
	c, b := m.Config, h.p.Base
	auto := func(s string) string {
		if s == "" {
			return "auto"
		}
		return s
	}
	for _, d := range []struct {
		name        string
		prior, plan any
	}{
		{"duration_s", c.DurationS, b.DurationS},
		{"iterations", c.Iterations, b.Iterations},
		{"warmup_iterations", c.WarmupIterations, b.WarmupIterations},
		{"counters", auto(c.Counters), auto(b.Counters)},
		{"hugepages", c.Hugepages, b.Hugepages},
		{"completion_events", c.CompletionEvents, b.CompletionEvents},
	} {
		if d.prior != d.plan {
			return fmt.Errorf("hunt: the prior records' run %d has %s %v, this plan %v: resume with the settings it was begun with",
				m.Seq, d.name, d.prior, d.plan)
		}
	}
	pt := PointOf(c)
	for _, d := range DimNames {
		if vals, v := h.p.Space.admits(d), pt.Get(d); !slices.Contains(vals, v) {
			return fmt.Errorf("hunt: the prior records' run %d measured %v, outside this space (%s %s is not one of its values %s): resume with a space that holds every point measured",
				m.Seq, pt, d, v, strings.Join(vals, ","))
		}
	}
	return nil
}

// observe keeps what a successful run m says of a run's cost: its wall time over its
// duration, and its operation's throughput (a run that failed can have stopped early).
func (h *hunter) observe(m Measurement) {
	if m.Error != "" {
		return
	}
	if m.WallNS > 0 {
		h.overheads = append(h.overheads, max(0, float64(m.WallNS)/1e9-m.Config.DurationS))
	}
	if m.BWGbps > 0 {
		h.bestGbps[m.Config.Op] = max(h.bestGbps[m.Config.Op], m.BWGbps)
	}
}

// estimate is what a run of pt is expected to cost the budget: the setup (the median of
// the runs' wall time over their duration so far; none before the first), the duration,
// and the drain of what its queues hold (depth x size x QPs, or x servers for a fan-out,
// doubled for two directions; with iterations instead of a duration, those too) at the
// best rate its operation reached (defaultRateGbps before any).
func (h *hunter) estimate(pt Point) time.Duration {
	if len(h.overheads) != h.overN {
		h.overN, h.overMed = len(h.overheads), stat.Median(h.overheads)
	}
	setup := 0.0
	if h.overN > 0 {
		setup = h.overMed
	}
	rate := h.bestGbps[pt.Op]
	if rate <= 0 {
		rate = defaultRateGbps
	}
	dirs := 1.0
	if pt.Bidirectional {
		dirs = 2
	}
	qps := float64(pt.NumQPs) * float64(max(pt.Peers, 1))
	bytes := float64(pt.SQDepth) * float64(pt.MsgSizeBytes) * qps * dirs
	if h.p.Base.DurationS <= 0 {
		bytes += float64(h.p.Base.Iterations) * float64(pt.MsgSizeBytes) * qps * dirs
	}
	secs := setup + max(h.p.Base.DurationS, 0) + bytes*8/(rate*1e9)
	return time.Duration(secs * float64(time.Second))
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
		return Measurement{}, errBudget
	}
	if h.p.Budget > 0 && h.elapsed()+h.estimate(pt) > h.p.Budget {
		h.o.TooLong++
		return Measurement{}, errTooLong
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
	h.observe(m)
	if m.Error == "" && !h.r.judgeable(m) {
		h.o.RampBound++
	}
	if setupFailed(m) {
		if h.o.Errors++; h.o.FirstError == "" {
			h.o.FirstError = m.Error
		}
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

// knownFor says whether a finding of class c and key k holds p: p's runs are not screened
// for it again (a finding whose set is empty holds every point: its class and key would
// only make it again). An unfair finding of a hunt before the unfair keys (its key
// empty) stands for every key.
func (h *hunter) knownFor(p Point, c Class, k string) bool {
	for _, f := range h.found {
		if f.Class == c && (f.Key == k || c == Counters && f.moved(k) || c == Unfair && f.Key == "") && f.Matches(p) {
			return true
		}
	}
	return false
}

// known says whether nothing new can show at p, so that the search does not propose it:
// every class the rules look for is known there, by findings whose sets are not empty (a
// failure known there stands for the throughput, tail and fairness too: a failed run
// shows none of them). A finding whose set is empty is never read here: it would make
// every point known, and end the search.
func (h *hunter) known(p Point) bool {
	covered := map[Class]bool{}
	for _, f := range h.found {
		if len(f.Set) > 0 && f.Matches(p) {
			covered[f.Class] = true
		}
	}
	if covered[Failed] {
		covered[LowThroughput], covered[Tail], covered[Unfair] = true, true, true
	}
	for _, c := range Classes {
		if h.r.on(c) && !covered[c] {
			return false
		}
	}
	return true
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

func (h *hunter) end(ctx context.Context, err error) (Outcome, error) {
	if errors.Is(err, errBudget) {
		err, h.o.BudgetExhausted = nil, true
	}
	if ctx.Err() != nil && (err == nil || errors.Is(err, ctx.Err())) {
		h.o.Interrupted, err = true, nil
	}
	h.o.Findings = append(append(slices.Clone(h.found), h.kept...), h.pending...)
	slices.SortStableFunc(h.o.Findings, func(a, b Finding) int { return idNumber(a.ID) - idNumber(b.ID) })
	h.o.Points = len(h.points)
	h.o.BudgetSpentS = h.elapsed().Seconds()
	for _, k := range h.bgOrder {
		b := *h.background[k]
		for _, d := range h.points {
			for _, m := range d.runs {
				b.Runs++
				if _, ok := h.r.moved(m)[k]; ok {
					b.Moved++
				}
			}
		}
		h.o.Background = append(h.o.Background, b)
	}
	switch {
	case err != nil:
	case h.o.Runs > 0 && h.o.Errors == h.o.Runs:
		err = h.noneRan()
	case h.o.Exhausted && len(h.points) == 0:
		err = errors.New("hunt: no configuration in the space can run: Validate refuses every point")
		if verr := h.p.Validate(h.p.Space.Baseline.Config(h.p.Base)); verr != nil {
			err = fmt.Errorf("hunt: no configuration in the space can run (the baseline: %v)", verr)
		}
	}
	return h.o, err
}

func (h *hunter) noneRan() error {
	return fmt.Errorf("hunt: none of the %d runs ran (an error that is no anomaly: a setup that failed, a server that refused); the first: %s",
		h.o.Runs, h.o.FirstError)
}

// idNumber is a finding ID's number (F12: 12).
func idNumber(id string) int {
	var n int
	if _, err := fmt.Sscanf(id, "F%d", &n); err != nil {
		return math.MaxInt
	}
	return n
}

// hunt is the search: screen what was measured, then take the annealing's next point.
func (h *hunter) hunt(ctx context.Context) error {
	tooLong := 0
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
		if errors.Is(err, errTooLong) {
			// Not measured: another point may fit what is left, until none can (the
			// setup and the duration alone) or maxTooLong proposals in a row did not.
			h.tooLong[pt], tooLong = true, tooLong+1
			short := pt
			short.SQDepth, short.NumQPs, short.Bidirectional, short.Peers = 1, 1, false, 0
			if tooLong >= maxTooLong || h.elapsed()+h.estimate(short) > h.p.Budget {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		tooLong = 0
		h.move(pt, m)
		if h.o.Runs >= noneRanStop && h.o.Errors == h.o.Runs {
			return h.noneRan()
		}
	}
}

// score is how anomalous a run looks, 1 at a rule's bar: the largest of its throughput's
// shortfall against its size's reference (the bar's fraction x the reference / its
// throughput), its tail over the tail bar, the unfair bar over its lowest judged share
// (Share); a failure or counters that moved score above every bar. A class (and key) a
// finding already holds at pt does not count: the annealing climbs towards what is not
// known. It is what the annealing climbs.
func (h *hunter) score(pt Point, m Measurement) float64 {
	if k := failKey(m.Error); k != "" && h.r.on(Failed) && !h.knownFor(pt, Failed, k) {
		return 3
	}
	s := 0.0
	if h.r.on(Counters) {
		for n := range h.moved(m) {
			if !h.knownFor(pt, Counters, n) {
				s = 1.5
				break
			}
		}
	}
	if m.Error != "" {
		return s
	}
	if ref := h.screenRef(pt); ref > 0 && h.r.judgeable(m) && h.r.on(LowThroughput) && !h.knownFor(pt, LowThroughput, KeyBestSeen) {
		s = max(s, h.r.LowThroughput*ref/m.BWGbps)
	}
	if r, ok := tailRatio(m); ok && h.r.on(Tail) && !h.knownFor(pt, Tail, "") {
		s = max(s, r/h.r.TailRatio)
	}
	if h.r.on(Unfair) && h.r.judgeable(m) {
		for _, k := range unfairKeys {
			if r, ok := m.share(k); ok && !h.knownFor(pt, Unfair, k) {
				s = max(s, h.r.UnfairRatio/max(r, 0.01)) // a share of none: far past the bar
			}
		}
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
// repaired to a point rdmabench runs, and is neither x, refused, known (every class
// known there), nor a point the budget could not fit.
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
		if y == x || !h.valid(y) || h.tooLong[y] {
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
// pinned by pin where given, repaired, and neither measured, refused, known (every class
// known there) nor a point the budget could not fit.
//
// A known draw counts as coverage of its values (the sets cover them), so that the
// weights turn to the values outside them. The space counts as exhausted when maxTries
// weighted draws and as many uniform ones found no point.
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
		if _, seen := h.points[p]; seen || !h.valid(p) || h.tooLong[p] {
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
	return stat.Median(meds[:min(3, max(1, len(meds)/4))])
}
