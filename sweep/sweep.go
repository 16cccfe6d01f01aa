// Package sweep searches the parameters that decide RDMA performance (message size,
// SQ depth, buffer offset, completion moderation, post-list length) for the best
// configuration of one operation, measuring through a Measurer, and says how sure it
// is. It is pure Go: the real measurer is a bench.Client, tests use a fake.
//
// A sweep has four phases. The probe measures the start point against perftest's
// defaults in a few interleaved rounds: from their noise and the budget it states the
// resolution R, the smallest relative difference the budget lets it decide, before it
// spends the rest (or, asked for a resolution, what that costs). The search (coordinate
// descent, or the whole grid) measures points to find where the optimum lies; descent
// moves only when a re-measured, interleaved comparison says the new point is better.
// The final rounds then measure the contenders, the tuning article's configuration and
// perftest's defaults together, round after round (the order alternating), until every
// comparison is decided at R or the budget is spent: the chosen configuration is the
// cheapest one equal to the best within +-R (stat.go), and what could not be decided
// even at R is reported as such, with its interval. The gains' rounds measure the
// choice and the references afresh. The budget holds: nothing is measured once it is
// spent, so a plan ends within its budget and one point's run.
//
// A point is measured long enough for its queue: a bandwidth run whose queues hold more
// than R/4 of the bytes it moved (result.Result.RampShare: its window is that much
// ramp-up and drain) is measured again, longer, up to Plan.MaxDurationS; a point that
// cannot be measured that well within the cap is flagged (PointSummary.QueueBound).
// Every run counts as measured, tainted or not: a point's taint rate is part of its
// measurement, never a reason to measure it again.
package sweep

// The files follow the phases: plan.go (the Plan, its Options and the planning of the
// resolution and the looks), probe.go, search.go (the grid or the descent, with its
// duels), final.go (the final rounds), gains.go (the gains' rounds) and conclude.go
// (the Outcome, outcome.go, from the runs). measure.go takes the runs (the budget,
// the resumed stream, lengthening), runs.go reads them, grid.go holds the points of a
// grid and the tuning article's values on it; this file, the Runner and Run, which runs the
// phases in turn.

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/rdmabench/rdmabench/plan"
	"github.com/rdmabench/rdmabench/result"
)

// Measurer runs one test (plan.Measurer, which the hunt takes too). An error that has a
// method StopsSweep() returning true (a lost session) ends the sweep; any other error
// is a failed point.
type Measurer = plan.Measurer

// Event is a progress report: one measurement finished.
type Event struct {
	Op string
	// "search", "confirm" (re-measuring before a move), "final" (deciding the
	// chosen point) or "gains" (the chosen points and the references, measured afresh)
	Phase    string
	Point    plan.Point
	Result   result.Result
	Measured int // measurements so far in this plan
	Expected int // a best guess of the total
	Reused   bool
}

// Runner measures points and remembers a resumed stream.
type Runner struct {
	M        Measurer
	Record   func(Recorded) error // called with every new measurement, before anything else
	Progress func(Event)
	Now      func() time.Time // the budget's clock (time.Now; tests simulate it)
	// Notice, when set, gets the plan's statements as it makes them, before it spends
	// the budget: what the probe measured and what the budget buys, and the resolution
	// the final rounds decide at.
	Notice func(op, line string)
	prior  map[string]*plan.Replay[Recorded] // per operation, in the stream's order
}

// NewRunner starts from prior runs (a resumed stream). The sweep is deterministic
// given its measurements and their recorded wall times (the budget is charged with
// them), so a resumed sweep asks for the same points in the same order: each request
// takes the operation's next prior run, which must be of the point asked for
// (ErrStreamMismatch otherwise), and only what the stream lacks is measured. Failed
// points stay failed; interrupted runs are dropped.
func NewRunner(m Measurer, record func(Recorded) error, prior []Recorded) *Runner {
	r := &Runner{M: m, Record: record, prior: map[string]*plan.Replay[Recorded]{}}
	for _, p := range prior {
		if !p.Interrupted {
			if r.prior[p.Config.Op] == nil {
				r.prior[p.Config.Op] = &plan.Replay[Recorded]{}
			}
			r.prior[p.Config.Op].Add(PointOf(p.Config), p)
		}
	}
	return r
}

func (r *Runner) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// Run runs a plan. The budget bounds the sum of its runs' wall times (plan.Ledger),
// whatever the objective: no run starts once it is spent, so a plan ends within its budget and one
// point's run. After the probe it is shared out: the gains' rounds are set aside, and
// of the rest the search takes at most half (a grid search may not finish it), the
// final rounds what is left.
func (r *Runner) Run(ctx context.Context, p Plan) (Outcome, error) {
	t0 := time.Now()
	p, err := p.normalised()
	if err != nil {
		return Outcome{}, err
	}
	s := r.newState(p)
	inc, f, err := s.phases(ctx)
	err = s.ending(ctx, err)
	o := s.o
	o.ElapsedS = time.Since(t0).Seconds()
	o.BudgetSpentS = s.led.Spent().Seconds()
	o.BudgetExhausted = s.cut
	if cerr := s.conclude(f, inc); err == nil {
		err = cerr
	}
	return *o, err
}

// newState starts the sweep of a normalised plan: nothing measured, decisions at the
// asked resolution (firstResolution without one) until the probe says more, the whole
// budget the current phase's.
func (r *Runner) newState(p Plan) *state {
	o := &Outcome{Op: p.Op, Search: p.Search, Objective: p.Objective.String(), Unit: p.Objective.Unit(),
		Repeat: p.Repeat, BudgetS: max(p.Budget.Seconds(), 0), GridPoints: len(gridPoints(p.Grid))}
	s := &state{r: r, p: p, o: o, objs: append([]Objective{p.Objective}, p.Others...),
		runs: map[plan.Point][]run{}, failed: map[plan.Point]string{}, dur: map[plan.Point]float64{},
		share: map[plan.Point]float64{}, unsteady: map[plan.Point]bool{}, beyondCap: map[plan.Point]bool{}, tol: firstResolution}
	if p.Resolution > 0 {
		s.tol = p.Resolution
	}
	s.led.Budget, s.phaseEnd = p.Budget, p.Budget
	s.expected = s.guess()
	return s
}

// phases runs the sweep's phases in turn, each within its share of the budget, until
// one fails: the probe, the search, the final rounds (the search's objective's, then
// the others'), the gains' rounds. It returns the search's point and the final rounds
// (nil where they did not start).
func (s *state) phases(ctx context.Context) (plan.Point, *final, error) {
	err := s.probe(ctx)
	var inc plan.Point
	if err == nil {
		inc, err = s.search(ctx)
	}
	s.phaseEnd = s.p.Budget - s.reserve
	var f *final
	if err == nil {
		f, err = s.final(ctx, inc)
	}
	if err == nil {
		err = s.confirmOthers(ctx, f)
	}
	s.phaseEnd = s.p.Budget
	if err == nil {
		err = s.gains(ctx, f)
	}
	return inc, f, err
}

// ending is the sweep's error once its phases stopped on err: none for a spent budget
// or an interruption (the outcome says so), a mismatch for a resumed stream that holds
// runs this sweep did not ask for.
func (s *state) ending(ctx context.Context, err error) error {
	if errors.Is(err, errBudgetSpent) {
		err = nil
	}
	if ctx.Err() != nil {
		s.o.Interrupted = true
		err = nil
	}
	if n := s.r.prior[s.p.Op].Len(); err == nil && !s.o.Interrupted && n > 0 {
		err = fmt.Errorf("%w: it holds %d more %s runs than this sweep asks for", ErrStreamMismatch, n, s.p.Op) // text: local (this sweep's plan)
	}
	return err
}

type run struct {
	round int
	res   result.Result
	good  []float64 // per objective (state.objs): goodness, and whether the run qualifies
	ok    []bool
}

type state struct {
	r        *Runner
	p        Plan
	o        *Outcome
	objs     []Objective // the search's first
	runs     map[plan.Point][]run
	failed   map[plan.Point]string
	order    []plan.Point // measured points, first measured first (determinism)
	round    int          // the last round's number
	led      plan.Ledger  // the budget and the runs' wall times charged to it
	expected int
	tol      float64                // the resolution decisions are taken at
	dur      map[plan.Point]float64 // a point's run length, where lengthened for its queue
	share    map[plan.Point]float64 // the largest ramp share of a point's runs
	unsteady map[plan.Point]bool    // a point's last run had no steady window (steadyEnough)
	// priorSD, priorDF: the spread of a paired difference pooled when the final rounds
	// were planned (pairedNoise), which moderates every comparison's from then on
	// (moderatedRatio); 0 before.
	priorSD float64
	priorDF int
	// beyondCap: a point whose queues' turnover asks for longer runs than the cap
	// (lengthen): not lengthened, queue-bound.
	beyondCap map[plan.Point]bool
	looks     []int       // the final rounds' looks (planFinal's; finalLooks without one)
	partner   *plan.Point // the probe's partner of the start point
	cut       bool        // a phase stopped for the budget
	// The budget's shares: the current phase ends when spent reaches phaseEnd; reserve
	// is what the gains' rounds are expected to take.
	phaseEnd, reserve time.Duration
}

func (s *state) next() int { s.round++; return s.round }

func (s *state) notice(format string, a ...any) {
	if s.r.Notice != nil {
		s.r.Notice(s.p.Op, fmt.Sprintf(format, a...))
	}
}

func sortedKeys[V any](m map[string]V) []string {
	var k []string
	for n := range m {
		k = append(k, n)
	}
	sort.Strings(k)
	return k
}
