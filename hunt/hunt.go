package hunt

// The files, one a phase: hunt.go (the Plan, Run, the Outcome and the hunter's state),
// resume.go (a Plan's Prior: its runs, its findings cut short), budget.go (a run's cost,
// the budget, measuring a point), anneal.go (the search), references.go (what a run's
// throughput is judged against), screen.go (a measured run's candidates), trial.go (a
// candidate's fresh runs and each round's verdict), controls.go (a counter's control,
// background counters), minimise.go (the minimal set), finding.go (a finding made and
// what the known ones hold); and space.go (the space, its points and their configs),
// rules.go (the classes, the thresholds and what a run shows), record.go (the NDJSON
// records), repro.go (the command lines), summary.go (the terminal's lines).

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
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
	// Budget bounds the time the hunt's runs take, the sum of their wall times on the Now
	// clock (plan.Ledger, as a sweep's), a resumed hunt's prior runs included at their
	// recorded wall times (<= 0: no limit): no run starts that would end past it by its estimate
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
	// Now is the clock the runs are timed on (time.Now when nil; tests simulate it).
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
	// SchemaVersion is SchemaVersion: the outcome's JSON (hunt --json) has it first.
	SchemaVersion int `json:"schema_version"`
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

// noneRanStop: this many runs, none of which ran (Outcome.Errors), end the hunt.
const noneRanStop = 10

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
	o, err := run(ctx, m, p, record)
	o.SchemaVersion = SchemaVersion
	return o, err
}

func run(ctx context.Context, m Measurer, p Plan, record func(Record) error) (Outcome, error) {
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

	led plan.Ledger // the budget and the runs' wall times, the prior runs' too
	seq int

	points   map[Point]*pointData
	byOpSize map[opSize][]Point
	pool     plan.Replay[Measurement] // prior trial runs, taken in place of new runs of their point
	queue    []Point                  // measured points to screen
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
		led: plan.Ledger{Budget: p.Budget}, points: map[Point]*pointData{}, byOpSize: map[opSize][]Point{},
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

func (h *hunter) valid(p Point) bool {
	v, ok := h.validity[p]
	if !ok {
		v = h.p.Validate(p.Config(h.p.Base)) == nil
		h.validity[p] = v
	}
	return v
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
	h.o.BudgetSpentS = h.led.Spent().Seconds()
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
