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
// The final rounds then measure the contenders, the article's configuration and
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

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/rdmabench/rdmabench/profiles"
	"github.com/rdmabench/rdmabench/result"
)

// The references a sweep reports gains over, by the names reports show them under.
const (
	RefArticle  = "article"           // the article's configuration (ArticlePoint)
	RefPerftest = "perftest_defaults" // perftest's defaults (bench.Defaults)
)

// Measurer runs one test. An error that has a method StopsSweep() returning true (a
// lost session) ends the sweep; any other error is a failed point.
type Measurer interface {
	Measure(ctx context.Context, cfg result.Config) (result.Result, error)
}

// Plan is one operation's sweep.
type Plan struct {
	Op        string
	Base      result.Config    // everything but the swept dimensions
	Grid      map[string][]int // dimension -> ascending values
	Start     profiles.Point
	Search    string    // "descent" (default) or "grid"
	Objective Objective // what the search and the chosen configuration optimise
	// Others are further objectives whose optima are confirmed too, from the same rounds.
	Others []Objective
	Repeat int // the gains' rounds: the chosen configuration and the references, this many runs (made even)
	// Resolution asked for: comparisons are decided at +-Resolution (a fraction), and the
	// sweep says what that costs. 0: the resolution the budget buys (see Run).
	Resolution float64
	Budget     time.Duration // wall-clock time for the whole plan; <= 0: no limit (see Run)
	// MaxDurationS caps how long a timed point is lengthened for its queue (0: never
	// lengthened; see RampShare).
	MaxDurationS float64
	// References are measured in every final round (RefArticle, RefPerftest),
	// for the gains; those on the grid compete too.
	References map[string]profiles.Point
	// Article is the article's [lo, hi] per dimension, for the verdicts.
	Article map[string][]int
}

// Event is a progress report: one measurement finished.
type Event struct {
	Op string
	// "search", "confirm" (re-measuring before a move), "final" (deciding the
	// chosen point) or "gains" (the chosen points and the references, measured afresh)
	Phase    string
	Point    profiles.Point
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
	prior  map[string][]Recorded // per operation, in the stream's order
}

// Recorded is one line of a sweep's results stream: the result (its fields at the top
// level, as the result schema has them) and the wall time the sweep charged to its
// budget for it, setup included, so that a resumed sweep charges the same.
type Recorded struct {
	result.Result
	WallNS int64 `json:"sweep_wall_ns,omitempty"`
}

// charge is what a recorded run costs the budget: its wall time, or for a stream
// written without one, its duration (a lower bound).
func (r Recorded) charge() time.Duration {
	if r.WallNS > 0 {
		return time.Duration(r.WallNS)
	}
	return time.Duration(r.DurationNS)
}

// ErrStreamMismatch means a resumed stream is not this sweep's: it was written with
// other options (grid, objective, tolerance, repeat, budget) or another version.
var ErrStreamMismatch = errors.New("the resumed stream does not match this sweep")

// NewRunner starts from prior runs (a resumed stream). The sweep is deterministic
// given its measurements and their recorded wall times (the budget is charged with
// them), so a resumed sweep asks for the same points in the same order: each request
// takes the operation's next prior run, which must be of the point asked for
// (ErrStreamMismatch otherwise), and only what the stream lacks is measured. Failed
// points stay failed; interrupted runs are dropped.
func NewRunner(m Measurer, record func(Recorded) error, prior []Recorded) *Runner {
	r := &Runner{M: m, Record: record, prior: map[string][]Recorded{}}
	for _, p := range prior {
		if !p.Interrupted {
			r.prior[p.Config.Op] = append(r.prior[p.Config.Op], p)
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

// PointOf reads the swept dimensions out of a config (its QP timeout 0 is the default's
// exponent).
func PointOf(c result.Config) profiles.Point {
	u := c.QPTimeout
	if u == 0 {
		u = profiles.DefaultQPTimeout
	}
	return profiles.Point{MsgSizeBytes: c.MsgSizeBytes, SQDepth: c.SQDepth, BufOffsetBytes: c.BufOffsetBytes, CQMod: c.CQMod, PostList: c.PostList, QPTimeout: u}
}

// Apply sets the swept dimensions of a config (the default QP timeout said as 0, as a
// config says it; a point without one leaves the config's).
func Apply(c result.Config, p profiles.Point) result.Config {
	c.MsgSizeBytes, c.SQDepth, c.BufOffsetBytes, c.CQMod, c.PostList = p.MsgSizeBytes, p.SQDepth, p.BufOffsetBytes, p.CQMod, p.PostList
	if p.QPTimeout != 0 {
		c.QPTimeout = p.QPTimeout
		if c.QPTimeout == profiles.DefaultQPTimeout {
			c.QPTimeout = 0
		}
	}
	return c
}

// WithP99Samples raises a run of fixed iterations to enough samples to support a p99
// (result.Supported): a bandwidth run samples its signalled WRs, at least
// iterations x QPs / cq-mod of them (each QP also signals its last WR), so the
// iterations grow with cq-mod; a latency run samples every iteration. A timed run
// (DurationS > 0) is left alone: how many WRs complete in the time is not known in
// advance, so such a point's p99 may be nil, and the point is then simply no p99
// candidate (a longer --point-duration gives it one).
//
// A sweep raises its points only when its own objective needs the p99. The report
// shows a p99 optimum for every sweep, but for a bw or rate search that optimum comes
// from the points measured anyway; buying it with up to 1000 x cq-mod WRs a point
// would make the search itself many times longer.
func WithP99Samples(c result.Config) result.Config {
	if c.DurationS > 0 {
		return c
	}
	need := result.MinSamples(0.99)
	if c.Test == "bw" {
		// floor(iters x qps / mod) >= need  <=>  iters x qps >= need x mod
		mod, qps := uint64(max(c.CQMod, 1)), uint64(max(c.NumQPs, 1))
		need = (need*mod + qps - 1) / qps
	}
	c.Iterations = max(c.Iterations, need)
	return c
}

// Estimate is what the runs of one point say about one objective.
type Estimate struct {
	Point   profiles.Point `json:"point"`
	Runs    int            `json:"runs"`         // runs counted (the final rounds, where the point was in them)
	Tainted int            `json:"runs_tainted"` // of them, measured while NIC counters moved (counted as measured)
	Median  float64        `json:"median"`       // of the objective's value, in its unit
	CILow   *float64       `json:"ci_low"`       // 95% interval of the geometric mean; null below 2 runs
	CIHigh  *float64       `json:"ci_high"`      // (an interval of the level: it includes drift)
	// Medians of the other metrics over the same runs.
	BWGbps      float64 `json:"bw_gbit_per_s"`
	MsgRateMpps float64 `json:"msg_rate_mpps"`
	P99NS       *int64  `json:"lat_p99_ns"` // null where no run had a supported p99
}

// Gain is how much better a configuration is than a reference, as a fraction (0.1:
// 10% more bandwidth, or a 1.1 times lower p99), from runs paired round by round; null
// where no round paired them.
type Gain struct {
	Pairs      int      `json:"pairs"`
	GainMedian *float64 `json:"gain_median"`
	GainLow    *float64 `json:"gain_ci_low"` // 95% interval; null below 2 pairs
	GainHigh   *float64 `json:"gain_ci_high"`
}

// Reference is a reference configuration, measured in the same rounds as the chosen one.
type Reference struct {
	Estimate
	Gain // of the chosen configuration over this one
}

// Comparison is one point against the best, where it was not decided.
type Comparison struct {
	Point profiles.Point `json:"point"`
	Ratio *Ratio         `json:"ratio"` // this point over the best (>1: better); null: never measured in the same round
}

// comparison is pt against the best, by r (nil ratio where no round paired them).
func comparison(pt profiles.Point, r Ratio) Comparison {
	c := Comparison{Point: pt}
	if r.N > 0 {
		c.Ratio = &r
	}
	return c
}

// Optimum is one objective's optimum. Its estimate and gains are from the gains'
// rounds (measured afresh once the choice was made).
type Optimum struct {
	Objective string `json:"objective"`
	Unit      string `json:"unit"`
	Estimate
	// Basis: "searched" (the search's objective: decided as below) or "best_measured"
	// (a further objective: the best of the Contenders points measured for the search,
	// by their runs; not an optimum the sweep looked for, never decided).
	Basis string `json:"basis"`
	// Contenders: the points it was chosen among; ContendersCut: points within reach
	// left out of the final rounds (then it is not decided).
	Contenders    int `json:"contenders"`
	ContendersCut int `json:"contenders_cut"`
	// Decided: every contender, the chosen point's one-parameter neighbours included,
	// is statistically equal to or worse than the best; the chosen point is the
	// cheapest of the equal ones. Otherwise Unresolved lists the comparisons that the
	// budget left open, and the point is the best estimate.
	Decided    bool            `json:"decided"`
	Noise      float64         `json:"noise"` // run-to-run noise of this metric (relative), from the paired runs
	Gains      map[string]Gain `json:"gains"` // over each reference
	Unresolved []Comparison    `json:"unresolved"`
}

// Verdict compares one parameter of the chosen configuration with the article.
type Verdict struct {
	Article      []int `json:"article"`       // the article's [lo, hi]; null where it gives none
	Chosen       int   `json:"chosen"`        // the chosen value
	ArticleValue *int  `json:"article_value"` // the grid value that stands for the article's range, compared with it; null without a range
	// Nearest: the grid has no value in the article's range; ArticleValue is the one
	// nearest to it (what was measured, not the article's own).
	Nearest bool   `json:"article_value_nearest,omitempty"`
	Verdict string `json:"verdict"` // Agrees, Differs, ArticleBetter, CannotTell, NotApplicable, NoArticle
	Ratio   *Ratio `json:"ratio"`   // chosen over the article's value, where they differ and were measured in the same rounds
	// Decided: every measured alternative for this parameter is decided against the
	// best; otherwise Unresolved is the most threatening open comparison.
	Decided    bool        `json:"decided"`
	Unresolved *Comparison `json:"unresolved"`
}

// Verdicts.
const (
	Agrees        = "agrees"         // ours is in the article's range (and decided), or its value is within the tolerance of ours
	Differs       = "differs"        // ours is significantly better than the article's value
	ArticleBetter = "article_better" // the article's value is significantly better than ours (the choice is not decided then)
	CannotTell    = "cannot_tell"    // the intervals did not decide (noise, budget)
	NotApplicable = "not_applicable" // no other grid value stands for the article's range, or it cannot run with the rest of ours
	NoArticle     = "no_article"     // the article gives no value for this parameter
)

// Bases of an optimum.
const (
	Searched     = "searched"
	BestMeasured = "best_measured"
)

// Step is one decision of the descent: a candidate that looked better, re-measured
// against the current point.
type Step struct {
	From  profiles.Point `json:"from"`
	To    profiles.Point `json:"to"`
	Ratio Ratio          `json:"ratio"` // To over From
	Moved bool           `json:"moved"`
}

// PointSummary is every measured point, all its runs.
type PointSummary struct {
	Point       profiles.Point `json:"point"`
	Runs        int            `json:"runs"`
	Tainted     int            `json:"runs_tainted"` // runs measured while NIC counters moved
	BWGbps      float64        `json:"bw_gbit_per_s"`
	MsgRateMpps float64        `json:"msg_rate_mpps"`
	P99NS       *int64         `json:"lat_p99_ns"`
	// DurationS: how long the point's runs were (the plan's, or longer for its queue);
	// RampShare: the largest of its runs' (result.Result.RampShare); QueueBound: above a
	// quarter of the resolution even at Plan.MaxDurationS: its runs are mostly ramp-up
	// and drain, and its numbers are not to be trusted as the link's.
	DurationS  float64  `json:"duration_s,omitempty"`
	RampShare  *float64 `json:"ramp_share"`
	QueueBound bool     `json:"queue_bound,omitempty"`
	Error      string   `json:"error,omitempty"` // a failed point ("fails here"): not measured again
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

// Projection is what the probe said the budget buys: the noise of one run, the final
// rounds the budget affords, and the resolution they give; and what a resolution half
// as fine would take.
type Projection struct {
	Noise         float64 `json:"noise"`          // relative spread of one run (the probe's pairs)
	Pairs         int     `json:"pairs"`          // the probe's paired rounds
	RunS          float64 `json:"run_s"`          // wall time of a run, setup included (the probe's mean)
	FinalRounds   int     `json:"final_rounds"`   // rounds of planPoints points the final share of the budget affords
	Resolution    float64 `json:"resolution"`     // what those rounds decide at (before the floor)
	Finer         float64 `json:"finer"`          // half of Resolution (at most +-50%) ...
	FinerBudgetS  float64 `json:"finer_budget_s"` // ... would take a budget of about this (0: more rounds than the final looks allow)
	AskedBudgetS  float64 `json:"asked_budget_s,omitempty"`
	AskedReachedS bool    `json:"asked_within_looks,omitempty"`
}

// Outcome is a finished (or interrupted) sweep of one operation: numbers and points
// only; the renderers format them.
type Outcome struct {
	Op        string `json:"op"`
	Search    string `json:"search"`
	Objective string `json:"objective"`
	Unit      string `json:"unit"`
	// Resolution: every comparison of the final rounds, the verdicts and the choice is
	// decided at +-Resolution (a fraction: 0.08 is +-8%); the descent's at the probe's
	// projection. ResolutionBasis: "asked" (Plan.Resolution), "budget" (what the final
	// share of the budget buys at the noise measured, see FinalPlan) or "assumed" (no
	// noise measured to plan with).
	Resolution      float64     `json:"resolution"`
	ResolutionBasis string      `json:"resolution_basis"`
	Projection      *Projection `json:"projection"`
	FinalPlan       *FinalPlan  `json:"final_plan"`
	// FinalLean: the budget bought too few final rounds of every contender, so they
	// measured only the chosen point, its variants with the article's values and the
	// references (the verdicts and the gains); the choice is then not decided.
	FinalLean       bool    `json:"final_lean,omitempty"`
	Repeat          int     `json:"repeat"`
	BudgetS         float64 `json:"budget_s"` // 0: no limit
	BudgetSpentS    float64 `json:"budget_spent_s"`
	BudgetExhausted bool    `json:"budget_exhausted"`
	GridPoints      int     `json:"grid_points"`        // valid points on the grid
	Points          int     `json:"points_measured"`    // distinct grid points measured (or failed)
	Runs            int     `json:"runs"`               // measurements made in this invocation
	Reused          int     `json:"runs_reused"`        // measurements taken from --resume
	Tainted         int     `json:"runs_tainted"`       // runs measured while NIC counters moved (counters_flags), counted as measured
	Lengthened      int     `json:"runs_lengthened"`    // runs measured again, longer, for their queue (not counted)
	QueueBound      int     `json:"points_queue_bound"` // points whose runs stayed mostly ramp-up and drain at the cap
	FinalRounds     int     `json:"final_rounds"`
	ElapsedS        float64 `json:"elapsed_s"`
	Noise           float64 `json:"noise"` // run-to-run noise of the objective (relative)
	// Decided: the chosen point is established as equal to the best, every contender
	// decided. Chosen is the cheapest configuration statistically equal to the best.
	Decided    bool                 `json:"decided"`
	Chosen     Estimate             `json:"chosen"`
	Best       Estimate             `json:"best"` // the highest estimate (Chosen when it is the cheapest)
	References map[string]Reference `json:"references"`
	Verdicts   map[string]Verdict   `json:"verdicts"` // per dimension
	Optima     map[string]Optimum   `json:"optima"`   // per objective, the search's included
	Descent    []Step               `json:"descent_steps"`
	All        []PointSummary       `json:"points"`
	// Interrupted: cancelled before the end; the outcome holds what was measured.
	Interrupted bool `json:"interrupted"`
}

// ErrNoFeasible means no measured point met the objective.
var ErrNoFeasible = errors.New("no measured configuration meets the objective")

const (
	minPairs  = 3  // a descent move needs at least this many paired rounds
	maxPairs  = 20 // and re-measures at most this many
	maxRivals = 6  // contenders of the search's point in the final rounds (more: not decided)
)

// The looks: a descent duel is judged at these numbers of pairs, the final rounds
// after these numbers of rounds (the last: the most final rounds, whatever the
// budget). Each look judges at alpha over the number of looks.
var (
	duelLooks  = []int{3, 5, 8, 12, maxPairs}
	finalLooks = []int{0, 3, 6, 10, 16, 24, 32, 40}
)

// Run runs a plan. The budget bounds the plan's wall-clock time, whatever the
// objective: no run starts once it is spent, so a plan ends within its budget and one
// point's run. After the probe it is shared out: the gains' rounds are set aside, and
// of the rest the search takes at most half (a grid search may not finish it), the
// final rounds what is left.
func (r *Runner) Run(ctx context.Context, p Plan) (Outcome, error) {
	t0 := time.Now()
	p.Repeat = max(p.Repeat, 1)
	if p.Search == "" {
		p.Search = "descent"
	}
	if p.Search != "descent" && p.Search != "grid" {
		return Outcome{}, fmt.Errorf("unknown search %q: want descent or grid", p.Search)
	}
	// A dimension the grid leaves out (the QP timeout) is held at the base config's;
	// points that do not say one (0) have it too.
	u := PointOf(p.Base).QPTimeout
	if len(p.Grid["qp_timeout"]) == 0 {
		p.Grid, p.Start = profiles.Complete(p.Grid, p.Start, map[string]int{"qp_timeout": u})
	}
	refs := map[string]profiles.Point{}
	for name, pt := range p.References {
		if pt.QPTimeout == 0 {
			pt.QPTimeout = u
		}
		refs[name] = pt
	}
	p.References = refs
	if p.Start.QPTimeout == 0 {
		p.Start.QPTimeout = u
	}
	o := Outcome{Op: p.Op, Search: p.Search, Objective: p.Objective.String(), Unit: p.Objective.Unit(),
		Repeat: p.Repeat, BudgetS: max(p.Budget.Seconds(), 0), GridPoints: len(gridPoints(p.Grid))}
	s := &state{r: r, p: p, o: &o, objs: append([]Objective{p.Objective}, p.Others...),
		runs: map[profiles.Point][]run{}, failed: map[profiles.Point]string{}, dur: map[profiles.Point]float64{},
		share: map[profiles.Point]float64{}, tol: firstResolution}
	if p.Resolution > 0 {
		s.tol = p.Resolution
	}
	s.phaseEnd = p.Budget
	s.expected = s.guess()
	err := s.probe(ctx)
	var inc profiles.Point
	if err == nil {
		switch p.Search {
		case "grid":
			for _, pt := range gridPoints(p.Grid) {
				if s.exhausted() {
					break
				}
				if err = s.once(ctx, pt, s.next(), "search"); err != nil {
					break
				}
			}
			inc, _ = s.best(s.objs[0], s.measured())
		case "descent":
			inc, err = s.descent(ctx)
		}
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
	if errors.Is(err, errBudgetSpent) {
		err = nil
	}
	if ctx.Err() != nil {
		o.Interrupted = true
		err = nil
	}
	if n := len(r.prior[p.Op]); err == nil && !o.Interrupted && n > 0 {
		err = fmt.Errorf("%w: it holds %d more %s runs than this sweep asks for", ErrStreamMismatch, n, p.Op)
	}
	o.ElapsedS = time.Since(t0).Seconds()
	o.BudgetSpentS = s.spent.Seconds()
	o.BudgetExhausted = s.cut
	if cerr := s.conclude(f, inc); err == nil {
		err = cerr
	}
	return o, err
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
	runs     map[profiles.Point][]run
	failed   map[profiles.Point]string
	order    []profiles.Point // measured points, first measured first (determinism)
	round    int              // the last round's number
	spent    time.Duration
	expected int
	tol      float64                    // the resolution decisions are taken at
	dur      map[profiles.Point]float64 // a point's run length, where lengthened for its queue
	share    map[profiles.Point]float64 // the largest ramp share of a point's runs
	looks    []int                      // the final rounds' looks (planFinal's; finalLooks without one)
	partner  *profiles.Point            // the probe's partner of the start point
	cut      bool                       // a phase stopped for the budget
	// The budget's shares: the current phase ends when spent reaches phaseEnd; reserve
	// is what the gains' rounds are expected to take.
	phaseEnd, reserve time.Duration
}

func (s *state) next() int { s.round++; return s.round }

// exhausted: the current phase's share of the budget is spent.
func (s *state) exhausted() bool {
	if s.p.Budget > 0 && s.spent >= s.phaseEnd {
		s.cut = true
		return true
	}
	return false
}

// fits: n more runs, at the mean wall time of the runs so far, end within the current
// phase's share (a round is not started that would eat into the next phase's).
func (s *state) fits(n int) bool {
	if s.p.Budget <= 0 {
		return true
	}
	runs := s.o.Runs + s.o.Reused
	if runs == 0 {
		return !s.exhausted()
	}
	if s.spent+time.Duration(n)*s.spent/time.Duration(runs) > s.phaseEnd {
		s.cut = true
		return false
	}
	return true
}

// errBudgetSpent ends a plan whose budget is spent: no run starts after that.
var errBudgetSpent = errors.New("the budget is spent")

// The probe and the planning of the final rounds.
const (
	probeRounds     = 4   // the probe's paired rounds (3 degrees of freedom for the noise)
	planPoints      = 12  // points a final round is planned with: the contenders, the neighbours, the article's values, the references
	firstResolution = 0.1 // the resolution runs are lengthened for before the final rounds fix one
	LeanRounds      = 8   // a final share buying fewer rounds of every contender goes lean (planFinal)
	minResolution   = 0.005
)

// looksUpTo are the final rounds' looks of a plan of n final rounds: finalLooks below
// n, and n itself. The looks are fixed by the probe, before any final round, so the
// error is spent over them only.
func looksUpTo(n int) []int {
	var out []int
	for _, l := range finalLooks {
		if l < n {
			out = append(out, l)
		}
	}
	return append(out, n)
}

// planResolution is the resolution of a plan of n final rounds of m points at the
// noise sd of a paired difference: at the level of one of its looks, with Holm's first
// step over the m-1 comparisons of a round.
func planResolution(sd float64, n, m int) float64 {
	return resolutionFor(sd, n, alpha/float64(len(looksUpTo(n)))/float64(max(m-1, 1)))
}

// planRounds is the fewest final rounds of m points (up to most) that decide at r.
func planRounds(sd, r float64, m, most int) (int, bool) {
	for n := minPairs; n <= most; n++ {
		if planResolution(sd, n, m) <= r {
			return n, true
		}
	}
	return most, false
}

// pairedNoise is the spread of one paired log difference of the search objective
// (bandwidth's where that has too few), pooled over the probe's pairs and the
// descent's duels (their variances, weighted by their degrees of freedom), and the
// degrees of freedom.
func (s *state) pairedNoise() (sd float64, df int) {
	var ss float64
	seen := map[[2]profiles.Point]bool{}
	add := func(a, b profiles.Point) {
		if seen[[2]profiles.Point{a, b}] || seen[[2]profiles.Point{b, a}] {
			return // a pair's differences count once, however many duels it had
		}
		seen[[2]profiles.Point{a, b}] = true
		for _, o := range []Objective{s.objs[0], {Name: "bw"}} {
			if d := s.diffs(a, b, o, 0); len(d) >= 2 {
				_, v := meanSD(d)
				ss += v * v * float64(len(d)-1)
				df += len(d) - 1
				return
			}
		}
	}
	if s.partner != nil {
		add(s.p.Start, *s.partner)
	}
	for _, st := range s.o.Descent {
		add(st.To, st.From)
	}
	if df == 0 {
		return 0, 0
	}
	return math.Sqrt(ss / float64(df)), df
}

// planFinal fixes the resolution of the final rounds (and of everything after them)
// once their contenders are known: with the noise pooled so far, the points a round
// measures and the rounds the final share of the budget affords, the resolution that
// decides every comparison at the last look; asked for one, the rounds it takes. The
// looks are fixed with it.
//
// A final share that buys fewer than LeanRounds rounds of every contender goes lean: it
// measures only the chosen point, the leader, the chosen point's variants with the
// article's values and the references, for the verdicts and the gains; the rivals and
// neighbours it leaves out are counted as cut, so the choice itself is not decided.
func (s *state) planFinal(f *final) {
	most := finalLooks[len(finalLooks)-1]
	sd, df := s.pairedNoise()
	rounds := func() (m, n int) {
		m = max(len(s.active(f)), 2)
		n = most
		if runs := s.o.Runs + s.o.Reused; s.p.Budget > 0 && runs > 0 && s.spent > 0 {
			roundS := float64(m) * s.spent.Seconds() / float64(runs)
			n = min(most, max(minPairs, int((s.phaseEnd-s.spent).Seconds()/roundS)))
		}
		return m, n
	}
	m, n := rounds()
	if s.p.Budget > 0 && n < LeanRounds {
		keep := map[profiles.Point]bool{f.dec.leader: true, f.dec.chosen: true}
		for _, v := range s.variants(f.dec.chosen) {
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
		m, n = rounds()
	}
	s.o.FinalPlan = &FinalPlan{Points: m, Rounds: n, NoiseDF: df, Noise: math.Expm1(sd / math.Sqrt2)}
	switch {
	case s.p.Resolution > 0:
		if s.p.Budget <= 0 && df > 0 { // no noise measured: the looks run to the last
			n, _ = planRounds(sd, s.p.Resolution, m, most)
		}
		s.tol = s.p.Resolution
	case df > 0:
		s.tol = min(max(planResolution(sd, n, m), minResolution), 1)
		s.o.ResolutionBasis = "budget"
	}
	s.o.FinalPlan.Rounds = n
	s.looks = looksUpTo(n)
	s.o.Resolution = s.tol
	s.notice("final rounds: %d points, up to %d rounds, %.1f%% noise per run (%d degrees of freedom): deciding at %s", m, n, 100*s.o.FinalPlan.Noise, df, FmtResolution(s.tol))
}

// probe measures the start point and a partner (perftest's defaults, or the start's
// first neighbour) in probeRounds interleaved rounds, and from the spread of their
// paired differences and the wall time of a run states the resolution: asked for, what
// it costs; otherwise what the budget's final share affords (Projection). The gains'
// rounds' share of the budget is set aside here.
func (s *state) probe(ctx context.Context) error {
	start := s.p.Start
	partner, ok := s.p.References[RefPerftest], false
	if partner != start && s.onGrid(partner) && partner.Valid() {
		ok = true
	}
	if !ok {
		if nb := s.neighbours(start); len(nb) > 0 {
			partner, ok = nb[0], true
		}
	}
	pts := []profiles.Point{start}
	if ok {
		pts = append(pts, partner)
		s.partner = &partner
	}
	for range probeRounds {
		if s.exhausted() {
			break
		}
		if s.round%2 == 1 {
			slices.Reverse(pts)
		}
		if err := s.measureRound(ctx, pts, "probe"); err != nil {
			return err
		}
	}
	var runs int
	for _, pt := range pts {
		runs += len(s.runs[pt])
	}
	runS := 0.0
	if runs > 0 {
		runS = s.spent.Seconds() / float64(runs)
	}
	gainsRuns := (s.p.Repeat + s.p.Repeat%2) * (1 + len(s.p.Others) + len(s.p.References))
	s.reserve = time.Duration(float64(gainsRuns) * runS * float64(time.Second))
	sd, df := s.pairedNoise() // the probe's pair only, so far
	pairs := 0
	if df > 0 {
		pairs = df + 1
	}
	pr := &Projection{Noise: math.Expm1(sd / math.Sqrt2), Pairs: pairs, RunS: runS}
	s.o.Projection = pr
	most := finalLooks[len(finalLooks)-1]
	roundS := float64(planPoints) * runS
	// The budget a final share of n rounds needs: what is spent, the gains, and twice
	// the final rounds (the search may take as much as they do).
	budgetFor := func(n int) float64 {
		return s.spent.Seconds() + s.reserve.Seconds() + 2*float64(n)*roundS
	}
	pr.FinalRounds = most
	if s.p.Budget > 0 && roundS > 0 {
		left := (s.p.Budget - s.spent - s.reserve).Seconds() / 2
		pr.FinalRounds = min(most, max(minPairs, int(left/roundS)))
	}
	pr.Resolution = planResolution(sd, pr.FinalRounds, planPoints)
	pr.Finer = min(pr.Resolution/2, 0.5) // beyond +-100% nothing is decided: what +-50% would take
	if n, reached := planRounds(sd, pr.Finer, planPoints, most); reached {
		pr.FinerBudgetS = budgetFor(n)
	}
	switch {
	case pairs < 2:
		// No noise to plan with (a partner that failed, or a budget spent in the
		// probe): decide at the asked resolution, or at the coarsest the plan allows.
		s.o.ResolutionBasis = "budget"
		if s.p.Resolution > 0 {
			s.o.ResolutionBasis = "asked"
		}
	case s.p.Resolution > 0:
		s.o.ResolutionBasis = "asked"
		n, reached := planRounds(sd, s.p.Resolution, planPoints, most)
		pr.AskedBudgetS, pr.AskedReachedS = budgetFor(n), reached
	default:
		s.o.ResolutionBasis = "budget"
		s.tol = min(max(pr.Resolution, minResolution), 1)
	}
	if s.o.ResolutionBasis == "budget" && pairs < 2 {
		s.o.ResolutionBasis = "assumed" // nothing measured to plan with: firstResolution
	}
	s.o.Resolution = s.tol
	s.phaseEnd = s.spent + (s.p.Budget-s.spent-s.reserve)/2
	switch {
	case pairs < 2:
		s.notice("probe: no noise measured (%d pairs): deciding at %s until the final rounds know more", pairs, FmtResolution(s.tol))
	case s.p.Resolution > 0:
		line := fmt.Sprintf("probe: %.1f%% noise per run, %.1f s a run: the asked %s takes a budget of about %.0f s", 100*pr.Noise, runS, FmtResolution(s.p.Resolution), pr.AskedBudgetS)
		if !pr.AskedReachedS {
			line += " (more rounds than the final looks allow: some comparisons may stay open)"
		}
		s.notice("%s", line)
	default:
		line := fmt.Sprintf("probe: %.1f%% noise per run, %.1f s a run: the budget buys about %s", 100*pr.Noise, runS, FmtResolution(pr.Resolution))
		if pr.Resolution > 1 {
			line = fmt.Sprintf("probe: %.1f%% noise per run, %.1f s a run: the budget buys %s", 100*pr.Noise, runS, FmtResolution(pr.Resolution))
		}
		if pr.FinerBudgetS > 0 {
			line += fmt.Sprintf("; %s would take a budget of about %.0f s", FmtResolution(pr.Finer), pr.FinerBudgetS)
		}
		s.notice("%s", line)
	}
	return nil
}

func (s *state) notice(format string, a ...any) {
	if s.r.Notice != nil {
		s.r.Notice(s.p.Op, fmt.Sprintf(format, a...))
	}
}

// FmtResolution is a resolution in words: "+-8%", "+-2.5%"; beyond +-100% (a
// projection), "nothing finer than +-100%".
func FmtResolution(r float64) string {
	switch {
	case r > 1:
		return "nothing finer than +-100%"
	case r >= 0.1:
		return fmt.Sprintf("+-%.0f%%", 100*r)
	}
	return fmt.Sprintf("+-%.1f%%", 100*r)
}

// stopsSweep says whether a Measurer's error ends the sweep.
func stopsSweep(err error) bool {
	var f interface{ StopsSweep() bool }
	return errors.As(err, &f) && f.StopsSweep()
}

// once measures pt once more, as part of round, or takes it from the resumed stream.
// A failed point is never measured again. A run is counted as measured, tainted or
// not. A timed bandwidth run whose ramp share is above a quarter of the resolution is
// measured again, longer (see lengthen), and only the longer run counts.
func (s *state) once(ctx context.Context, pt profiles.Point, round int, phase string) error {
	if _, bad := s.failed[pt]; bad {
		return nil
	}
	for {
		res, reused, merr, err := s.acquire(ctx, pt)
		if err != nil {
			return err
		}
		again := s.lengthen(pt, res)
		if !again {
			s.record(pt, round, res)
		}
		s.progress(pt, phase, res, reused)
		if merr != nil && stopsSweep(merr) {
			return merr
		}
		if !again {
			return nil
		}
	}
}

// length is how long pt's runs are: the plan's duration, or longer for its queue.
func (s *state) length(pt profiles.Point) float64 {
	if d, ok := s.dur[pt]; ok {
		return d
	}
	return s.p.Base.DurationS
}

// lengthen says whether pt's run res is too short for its queue and is to be measured
// again: its ramp share (result.Result.RampShare) is above a quarter of the resolution
// and the run was shorter than the plan's cap. The next run is as long as the share
// says it needs, at most the cap: a run of D seconds moves the queue's bytes Q and
// r x D more (r the link's rate), so its share is s = Q / (Q + rD), and a share t needs
// D' = D (1-t) s / (t (1-s)); each lengthening at least doubles the length, so a point
// is lengthened a few times at most.
func (s *state) lengthen(pt profiles.Point, res result.Result) bool {
	if res.Error != "" || res.RampShare == nil {
		return false
	}
	sh := *res.RampShare
	s.share[pt] = max(s.share[pt], sh)
	target, cur, most := s.tol/4, s.length(pt), s.p.MaxDurationS
	if cur <= 0 || most <= cur || sh <= target {
		return false
	}
	need := math.Inf(1)
	if sh < 1 {
		need = cur * (1 - target) * sh / (target * (1 - sh))
	}
	s.dur[pt] = min(most, max(2*cur, need))
	s.share[pt] = 0 // the longer runs' share is what counts
	s.o.Lengthened++
	// Runs of pt measured shorter (before a finer resolution asked for more) are no
	// longer compared with the longer ones: a comparison pairs runs of one length.
	if rs, seen := s.runs[pt]; seen && len(rs) > 0 {
		for _, r := range rs {
			if r.res.Tainted {
				s.o.Tainted--
			}
			s.o.Lengthened++
		}
		s.runs[pt] = rs[:0]
	}
	return true
}

func (s *state) progress(pt profiles.Point, phase string, res result.Result, reused bool) {
	if s.r.Progress != nil {
		s.r.Progress(Event{Op: s.p.Op, Phase: phase, Point: pt, Result: res, Measured: s.o.Runs + s.o.Reused, Expected: s.expected, Reused: reused})
	}
}

// acquire measures pt once, or takes its next run from the resumed stream; err is
// set when the sweep cannot go on (interrupted, a stream that does not match).
func (s *state) acquire(ctx context.Context, pt profiles.Point) (res result.Result, reused bool, merr, err error) {
	if ctx.Err() != nil {
		return res, false, nil, ctx.Err()
	}
	if s.p.Budget > 0 && s.spent >= s.p.Budget {
		s.cut = true
		return res, false, nil, errBudgetSpent
	}
	queue := s.r.prior[s.p.Op]
	reused = len(queue) > 0
	if reused {
		if got := PointOf(queue[0].Config); got != pt {
			return res, true, nil, fmt.Errorf("%w: its next %s run is of %v, this sweep asks for %v (%d runs in)", ErrStreamMismatch, s.p.Op, got, pt, s.o.Reused)
		}
		res, s.r.prior[s.p.Op] = queue[0].Result, queue[1:]
		s.spent += queue[0].charge()
		s.o.Reused++
	} else {
		cfg := Apply(s.p.Base, pt)
		cfg.Op = s.p.Op
		if s.p.Base.DurationS > 0 {
			cfg.DurationS = s.length(pt)
		}
		if s.p.Objective.NeedsP99() {
			cfg = WithP99Samples(cfg)
		}
		t0 := s.r.now()
		res, merr = s.r.M.Measure(ctx, cfg)
		wall := s.r.now().Sub(t0)
		s.spent += wall
		if ctx.Err() != nil {
			return res, false, nil, ctx.Err() // an interrupted point is no data point
		}
		if merr != nil && res.Error == "" {
			res.Error = merr.Error()
		}
		if res.Config.Op == "" {
			res.Config = cfg
		}
		if res.SchemaVersion == 0 { // a bare failure: its line must still resume
			res.SchemaVersion = result.SchemaVersion
		}
		if s.r.Record != nil {
			if rerr := s.r.Record(Recorded{Result: res, WallNS: wall.Nanoseconds()}); rerr != nil {
				return res, false, nil, fmt.Errorf("recording a result: %w", rerr)
			}
		}
		s.o.Runs++
	}
	return res, reused, merr, nil
}

// record adds a run of pt (or its failure) to the state.
func (s *state) record(pt profiles.Point, round int, res result.Result) {
	if _, seen := s.runs[pt]; !seen {
		s.order = append(s.order, pt)
		s.runs[pt] = nil
	}
	if res.Error != "" {
		s.failed[pt] = res.Error
	} else {
		rn := run{round: round, res: res}
		if res.Tainted {
			s.o.Tainted++
		}
		for _, o := range s.objs {
			g, ok := o.goodness(res)
			rn.good, rn.ok = append(rn.good, g), append(rn.ok, ok)
		}
		s.runs[pt] = append(s.runs[pt], rn)
	}
}

// round measures pts once each as one round, in the given order.
func (s *state) measureRound(ctx context.Context, pts []profiles.Point, phase string) error {
	id := s.next()
	for _, pt := range pts {
		if err := s.once(ctx, pt, id, phase); err != nil {
			return err
		}
	}
	return nil
}

// goodness is a run's goodness for o (computed once, when the run is taken).
func (s *state) goodness(r run, o Objective) (float64, bool) {
	if i := slices.Index(s.objs, o); i >= 0 {
		return r.good[i], r.ok[i]
	}
	return o.goodness(r.res)
}

// count is how many of pt's runs qualify for o.
func (s *state) count(pt profiles.Point, o Objective) int {
	n := 0
	for _, r := range s.runs[pt] {
		if _, ok := s.goodness(r, o); ok {
			n++
		}
	}
	return n
}

// pair compares a with b on the rounds where both qualified: a over b.
func (s *state) pair(a, b profiles.Point, o Objective) Ratio {
	return pairRatio(s.diffs(a, b, o, 0))
}

// diffs are a's goodness minus b's, per round from round `from` on where both
// qualified (runs are kept in round order: a merge).
func (s *state) diffs(a, b profiles.Point, o Objective, from int) []float64 {
	ra, rb := s.runs[a], s.runs[b]
	var d []float64
	for i, j := 0, 0; i < len(ra) && j < len(rb); {
		switch x, y := ra[i], rb[j]; {
		case x.round < y.round:
			i++
		case x.round > y.round:
			j++
		default:
			ga, oka := s.goodness(x, o)
			gb, okb := s.goodness(y, o)
			if oka && okb && x.round >= from {
				d = append(d, ga-gb)
			}
			i, j = i+1, j+1
		}
	}
	return d
}

// mean is pt's mean goodness over all its runs (unpaired: for screening only), and
// whether pt is a candidate for o: more than half its runs qualify.
func (s *state) mean(pt profiles.Point, o Objective) (float64, bool) {
	var sum float64
	n := 0
	for _, r := range s.runs[pt] {
		if g, ok := s.goodness(r, o); ok {
			sum, n = sum+g, n+1
		}
	}
	if n == 0 || 2*n <= len(s.runs[pt]) {
		return math.Inf(-1), false
	}
	return sum / float64(n), true
}

func (s *state) measured() []profiles.Point {
	var out []profiles.Point
	for _, pt := range s.order {
		if len(s.runs[pt]) > 0 && s.onGrid(pt) {
			out = append(out, pt)
		}
	}
	return out
}

// best is the candidate with the highest mean goodness.
func (s *state) best(o Objective, pts []profiles.Point) (profiles.Point, bool) {
	var b profiles.Point
	bv, found := math.Inf(-1), false
	for _, pt := range pts {
		if v, ok := s.mean(pt, o); ok && (!found || v > bv) {
			b, bv, found = pt, v, true
		}
	}
	return b, found
}

// descent: coordinate descent from the start point. Each dimension's values are
// measured once with the others fixed; the most promising one, if it looks better than
// the current point, is re-measured against it in interleaved pairs, and the descent
// moves only when the pairs say it is significantly better. Then a local refinement
// over pairs of neighbouring values of interacting dimensions, by the same rule.
func (s *state) descent(ctx context.Context) (profiles.Point, error) {
	cur := s.p.Start
	if err := s.once(ctx, cur, s.next(), "search"); err != nil {
		return cur, err
	}
	for pass := 0; pass < 3 && !s.exhausted(); pass++ {
		moved := false
		for _, d := range profiles.Dims {
			var line []profiles.Point
			for _, v := range s.p.Grid[d] {
				if c := cur.With(d, v); c != cur && c.Valid() {
					line = append(line, c)
				}
			}
			m, err := s.tryMove(ctx, &cur, line)
			if err != nil {
				return cur, err
			}
			moved = moved || m
		}
		if !moved {
			break
		}
	}
	for _, pr := range [][2]string{{"msg_size_bytes", "sq_depth"}, {"sq_depth", "cq_mod"}, {"cq_mod", "post_list"}} {
		var cands []profiles.Point
		for _, da := range []int{-1, 1} {
			for _, db := range []int{-1, 1} {
				c, ok := s.step(cur, pr[0], da)
				if ok {
					c, ok = s.step(c, pr[1], db)
				}
				if ok && c.Valid() {
					cands = append(cands, c)
				}
			}
		}
		if _, err := s.tryMove(ctx, &cur, cands); err != nil {
			return cur, err
		}
	}
	return cur, nil
}

// tryMove measures the candidates not yet measured, and moves cur to the most
// promising one if re-measuring says it is significantly better. The most promising
// one is re-measured whenever it is within reach of the current point (a single run
// can be unlucky, and so can the current point's first run): within the tolerance or
// two standard deviations of a single-run difference, or always while the noise is
// not known yet.
func (s *state) tryMove(ctx context.Context, cur *profiles.Point, cands []profiles.Point) (bool, error) {
	for _, c := range cands {
		if s.exhausted() {
			return false, nil
		}
		if _, seen := s.runs[c]; !seen {
			if err := s.once(ctx, c, s.next(), "search"); err != nil {
				return false, err
			}
		}
	}
	o := s.objs[0]
	b, ok := s.best(o, cands)
	if !ok {
		return false, nil
	}
	cv, curOK := s.mean(*cur, o)
	if !curOK { // the current point failed or does not qualify: any candidate is better
		*cur = b
		return true, nil
	}
	if bv, _ := s.mean(b, o); bv < cv-s.reach(o, 2) || s.exhausted() {
		return false, nil
	}
	r, moved, err := s.duel(ctx, b, *cur)
	if err != nil {
		return false, err
	}
	s.o.Descent = append(s.o.Descent, Step{From: *cur, To: b, Ratio: r, Moved: moved})
	if moved {
		*cur = b
	}
	return moved, nil
}

// reach is how far below a point's mean another point's runs may lie and still be
// plausibly as good: k standard deviations of a single-run difference (from the
// duels so far; unbounded before there is one), at least the tolerance.
func (s *state) reach(o Objective, k float64) float64 {
	sd, ok := s.searchNoise(o)
	if !ok {
		return math.Inf(1)
	}
	return max(math.Log1p(s.tol), k*sd)
}

// duel re-measures challenger a against incumbent b in interleaved rounds (a b, b a,
// ...), judging at duelLooks pairs only, each look at alpha / len(duelLooks): a
// moves when it is significantly better; the duel ends when a cannot be better by
// more than the resolution, or after maxPairs rounds, or when the budget runs out.
// The rounds are counted, not the pairs: a round in which one side's statistic is
// missing (a p99 without the samples) still counts, so noise or a missing statistic
// cannot keep a duel going. It returns a over b.
func (s *state) duel(ctx context.Context, a, b profiles.Point) (Ratio, bool, error) {
	o := s.objs[0]
	start := s.spent
	lvl := alpha / float64(len(duelLooks))
	for rounds := 0; ; rounds++ {
		// One duel takes at most a sixth of the search's share beyond its minimum: a
		// near tie under heavy noise must not eat what the rest of the search needs.
		share := s.p.Budget > 0 && s.spent-start >= s.p.Budget/12
		r := s.pair(a, b, o)
		last := rounds >= maxPairs || !s.fits(2) || (r.N >= minPairs && share) || s.failed[a] != "" || s.failed[b] != ""
		if slices.Contains(duelLooks, r.N) || last {
			lo, hi := r.bounds(lvl)
			if lo > 1 {
				return r, true, nil
			}
			if hi < 1+s.tol || last {
				return r, false, nil
			}
		}
		order := []profiles.Point{a, b}
		if s.round%2 == 1 {
			order = []profiles.Point{b, a}
		}
		if err := s.measureRound(ctx, order, "confirm"); err != nil {
			return r, false, err
		}
	}
}

func (s *state) step(p profiles.Point, d string, delta int) (profiles.Point, bool) {
	vals := s.p.Grid[d]
	i := slices.Index(vals, p.Get(d)) + delta
	if i < 0 || i >= len(vals) {
		return p, false
	}
	return p.With(d, vals[i]), true
}

func (s *state) onGrid(p profiles.Point) bool {
	for _, d := range profiles.Dims {
		if !slices.Contains(s.p.Grid[d], p.Get(d)) {
			return false
		}
	}
	return true
}

// cheaper orders statistically equal configurations: a smaller SQ depth (fewer WRs
// in flight, less memory), then a smaller moderation and a shorter post list (the
// simpler loop), then the smaller message and offset, then the shorter QP timeout
// (a lost packet is sent again sooner).
func cheaper(a, b profiles.Point) int {
	for _, d := range []string{"sq_depth", "cq_mod", "post_list", "msg_size_bytes", "buf_offset_bytes", "qp_timeout"} {
		if a.Get(d) != b.Get(d) {
			return a.Get(d) - b.Get(d)
		}
	}
	return 0
}

// member is a point in the final rounds.
type member struct {
	pt      profiles.Point
	compete bool // a contender for the chosen point (not only a reference)
}

// final holds the final rounds and what they decided.
type final struct {
	obj     Objective // what these final rounds decide
	rounds  int       // final rounds measured
	members []*member
	first   int  // the first final round
	cut     int  // contenders of the search's point left out (maxRivals, lean): not decided
	lean    bool // measures only what the verdicts and gains need (planFinal)
	lvl     float64
	dec     decision
	// The gains' rounds: the chosen points (per objective) and the references,
	// measured afresh once the choice is made.
	gains  int              // the first of them (0: none)
	others []profiles.Point // per further objective, its chosen point (confirmed, or best measured)
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
	leader, chosen profiles.Point
	rel            map[profiles.Point]Ratio    // each contender over the leader (95% interval)
	judged         map[profiles.Point]Relation // what the look decided (Holm, at the look's level)
	contenders     int
	decided, ok    bool
}

func (f *final) add(pt profiles.Point, compete bool) {
	for _, m := range f.members {
		if m.pt == pt {
			m.compete = m.compete || compete
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
// choice is at least a local optimum) and its variants with the article's values,
// and the references on the grid.
func (s *state) final(ctx context.Context, inc profiles.Point) (*final, error) {
	return s.finalFor(ctx, inc, s.objs[0])
}

// finalFor runs final rounds that decide objective main, from its point inc.
func (s *state) finalFor(ctx context.Context, inc profiles.Point, main Objective) (*final, error) {
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
	f.add(inc, true)
	rivals, cut := s.rivals(inc, main)
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
	expand := func() bool { // a new chosen point brings new neighbours: judge them in the same look
		for {
			f.dec = s.decide(f)
			if !f.dec.ok {
				return false
			}
			n := len(f.members)
			add := s.variants(f.dec.chosen)
			if !f.lean {
				add = append(add, s.neighbours(f.dec.chosen)...)
			}
			for _, v := range add {
				f.add(v, true)
			}
			if len(f.members) == n {
				return true
			}
		}
	}
	if main == s.objs[0] { // the search's final rounds fix the resolution and the looks
		if !expand() {
			return f, nil
		}
		s.planFinal(f)
		looks = s.looks
		f.lvl = alpha / float64(len(looks))
	}
	for look := 0; ; look++ {
		if !expand() {
			return f, nil
		}
		if look == len(looks)-1 || s.settled(f) || !s.fits(len(s.active(f))) || ctx.Err() != nil {
			return f, nil
		}
		pts := s.active(f)
		for f.rounds < looks[look+1] && s.fits(len(pts)) {
			if s.round%2 == 1 {
				slices.Reverse(pts)
			}
			if err := s.measureRound(ctx, pts, "final"); err != nil {
				return f, err
			}
			f.rounds++
			s.o.FinalRounds++
		}
	}
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

// gains measures, once the choice is made, every objective's chosen point and the
// references afresh: Repeat interleaved rounds (made even), from the budget's share set
// aside for them (and no run once the budget is spent). The estimates and
// gains are computed from these rounds only, so that the luck that made a point win
// does not inflate its gain.
func (s *state) gains(ctx context.Context, f *final) error {
	if !f.dec.ok {
		return nil
	}
	pts := []profiles.Point{f.dec.chosen}
	for i, o := range s.objs[1:] {
		b, _ := s.best(o, s.measured())
		if fo := f.other(i); fo != nil {
			b = fo.dec.chosen
		}
		f.others = append(f.others, b)
		pts = append(pts, b)
	}
	for _, name := range sortedKeys(s.p.References) {
		pts = append(pts, s.p.References[name])
	}
	var uniq []profiles.Point
	for _, pt := range pts {
		if pt != (profiles.Point{}) && !slices.Contains(uniq, pt) && s.failed[pt] == "" {
			uniq = append(uniq, pt)
		}
	}
	f.gains = s.round + 1
	for range s.p.Repeat + s.p.Repeat%2 { // even: the alternating order cancels a linear drift
		if s.round%2 == 1 {
			slices.Reverse(uniq)
		}
		if err := s.measureRound(ctx, uniq, "gains"); err != nil {
			return err
		}
	}
	return nil
}

// rivals are the search point's contenders: the best points measured that looked
// within reach of it (three standard deviations of a single-run difference), best
// first, at most maxRivals; cut is how many within reach were left out.
func (s *state) rivals(inc profiles.Point, o Objective) (rivals []profiles.Point, cut int) {
	iv, _ := s.mean(inc, o)
	margin := s.reach(o, 3)
	var cands []profiles.Point
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

// neighbours are pt's one-parameter neighbours on the grid (one step either way)
// that can run.
func (s *state) neighbours(pt profiles.Point) []profiles.Point {
	var out []profiles.Point
	for _, d := range profiles.Dims {
		for _, delta := range []int{-1, 1} {
			if n, ok := s.step(pt, d, delta); ok && n.Valid() {
				out = append(out, n)
			}
		}
	}
	return out
}

// searchNoise is the spread of paired differences seen while re-measuring in the
// search (standard deviation of a difference), where there were any.
func (s *state) searchNoise(o Objective) (float64, bool) {
	var sds []float64
	for _, st := range s.o.Descent {
		if d := s.diffs(st.To, st.From, o, 0); len(d) >= minPairs {
			_, sd := meanSD(d)
			sds = append(sds, sd)
		}
	}
	if len(sds) == 0 {
		return 0, false
	}
	return median(sds), true
}

// decide finds the best contender (the highest mean difference to a common anchor,
// over paired rounds), judges every contender against it (Holm at the look's level),
// and chooses the cheapest of those equal to it. It is decided when every contender
// is equal or worse, every contender has been measured, and none was left out.
func (s *state) decide(f *final) decision {
	o := f.obj
	var comp []profiles.Point
	measuredAll := true
	for _, m := range f.members {
		if !m.compete || s.failed[m.pt] != "" {
			continue
		}
		if _, ok := s.mean(m.pt, o); ok {
			comp = append(comp, m.pt)
		} else if len(s.runs[m.pt]) == 0 {
			measuredAll = false
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
	d := decision{leader: anchor, rel: map[profiles.Point]Ratio{}, judged: map[profiles.Point]Relation{}, ok: true, contenders: len(comp)}
	bestV := 0.0
	for _, pt := range comp {
		if diff := s.diffs(pt, anchor, o, 0); len(diff) > 0 && pt != anchor {
			if m, _ := meanSD(diff); m > bestV {
				d.leader, bestV = pt, m
			}
		}
	}
	d.chosen = d.leader
	var rs []Ratio
	var others []profiles.Point
	for _, pt := range comp {
		if pt != d.leader {
			others = append(others, pt)
			rs = append(rs, s.pair(pt, d.leader, o))
		}
	}
	d.decided = measuredAll && f.cut == 0 && (len(comp) > 1 || s.count(comp[0], o) >= 2)
	for i, rel := range holm(rs, s.tol, f.lvl) {
		pt := others[i]
		d.rel[pt], d.judged[pt] = rs[i], rel
		switch rel {
		case Equal:
			if cheaper(pt, d.chosen) < 0 {
				d.chosen = pt
			}
		case Worse:
		default:
			d.decided = false
		}
	}
	return d
}

// settled: the choice is decided and so is every comparison with the article's values.
func (s *state) settled(f *final) bool {
	if !f.dec.decided {
		return false
	}
	for _, v := range s.variants(f.dec.chosen) {
		if s.failed[v] == "" && s.pair(f.dec.chosen, v, f.obj).JudgeAt(s.tol, f.lvl) == Undecided {
			return false
		}
	}
	return true
}

// active are the members that the next rounds measure: the leader and the chosen
// point, contenders not yet decided or not measured, and the article's values not yet
// decided against the chosen point.
func (s *state) active(f *final) []profiles.Point {
	var out []profiles.Point
	d, o := f.dec, f.obj
	vars := s.variants(d.chosen)
	for _, m := range f.members {
		if s.failed[m.pt] != "" {
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

// ArticleValue is the grid value for dimension d that the article's range [lo, hi]
// stands for, nearest to near: a value in the range if the grid has one, else the
// value nearest to the range. The article's offsets are from a 4 KiB boundary.
func ArticleValue(d string, grid []int, r []int, near int) int {
	in := func(v int) bool { return inRange(d, r, v) }
	dist := func(v int) int {
		switch {
		case in(v):
			return abs(v - near)
		case v < r[0]:
			return 1<<40 + r[0] - v
		}
		return 1<<40 + v - r[1]
	}
	best := grid[0]
	for _, v := range grid[1:] {
		if dist(v) < dist(best) {
			best = v
		}
	}
	return best
}

func inRange(d string, r []int, v int) bool {
	if d == "buf_offset_bytes" {
		v %= 4096
	}
	return v >= r[0] && v <= r[1]
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

// ArticlePoint is the article's recommended configuration on a grid: per dimension the
// value that stands for its range (nearest to the range's geometric middle), and the
// start point's value where the article gives none.
func ArticlePoint(grid map[string][]int, article map[string][]int, start profiles.Point) profiles.Point {
	p := start
	for _, d := range profiles.Dims {
		if r, ok := article[d]; ok && len(grid[d]) > 0 {
			p = p.With(d, ArticleValue(d, grid[d], r, int(math.Sqrt(float64(r[0])*float64(r[1])))))
		}
	}
	return p
}

// variants are the chosen point with one parameter set to the article's value, where
// it differs and can run: what the verdicts compare.
func (s *state) variants(chosen profiles.Point) []profiles.Point {
	var out []profiles.Point
	for _, d := range profiles.Dims {
		r, ok := s.p.Article[d]
		if !ok || inRange(d, r, chosen.Get(d)) {
			continue
		}
		v := chosen.With(d, ArticleValue(d, s.p.Grid[d], r, chosen.Get(d)))
		if v != chosen && v.Valid() {
			out = append(out, v)
		}
	}
	return out
}

// conclude fills the outcome from what was measured.
func (s *state) conclude(f *final, inc profiles.Point) error {
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
			// Queue-bound: above a quarter of the resolution at the longest a point may
			// run (a point the search left shorter could still have been lengthened).
			ps.QueueBound = sh > s.tol/4 && (s.p.MaxDurationS <= s.length(pt) || s.p.Base.DurationS <= 0)
		}
		if ps.QueueBound {
			o.QueueBound++
		}
		o.All = append(o.All, ps)
	}
	o.Points = len(o.All)
	if f == nil || !f.dec.ok {
		// No final rounds (interrupted, or nothing met the objective): the search's point.
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
			for _, q := range s.measured() {
				if _, ok := s.mean(q, obj); ok {
					op.Contenders++
				}
			}
			o.Optima[obj.String()] = op
		}
		return nil
	}
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
		op := Optimum{Objective: obj.String(), Unit: obj.Unit(), Gains: map[string]Gain{}, Unresolved: []Comparison{}}
		if i == 0 {
			op.Basis, op.Decided, op.Contenders, op.ContendersCut = Searched, d.decided, d.contenders, f.cut
			op.Estimate = s.estimate(d.chosen, obj, gainsFrom)
			op.Noise = o.Noise
			for _, m := range f.members {
				if j, ok := d.judged[m.pt]; ok && j != Equal && j != Worse {
					op.Unresolved = append(op.Unresolved, comparison(m.pt, d.rel[m.pt]))
				}
			}
		} else {
			if i > len(f.others) {
				continue
			}
			pt := f.others[i-1]
			if _, ok := s.mean(pt, obj); !ok {
				continue // no measured point qualifies
			}
			if fo := f.other(i - 1); fo != nil { // confirmed in final rounds of its own
				od := fo.dec
				op.Basis, op.Decided, op.Contenders, op.ContendersCut = Searched, od.decided, od.contenders, fo.cut
				op.Estimate = s.estimate(pt, obj, gainsFrom)
				op.Noise = s.noise(od.leader, fo.members, obj, 0)
				for _, m := range fo.members {
					if j, ok := od.judged[m.pt]; ok && j != Equal && j != Worse {
						op.Unresolved = append(op.Unresolved, comparison(m.pt, od.rel[m.pt]))
					}
				}
				for name, ref := range s.p.References {
					op.Gains[name] = gain(pairRatio(s.diffs(op.Point, ref, obj, gainsFrom)))
				}
				o.Optima[obj.String()] = op
				continue
			}
			op.Basis, op.Estimate = BestMeasured, s.estimate(pt, obj, gainsFrom)
			for _, q := range s.measured() {
				if _, ok := s.mean(q, obj); ok {
					op.Contenders++
				}
			}
			var refs []*member
			for _, name := range sortedKeys(s.p.References) {
				refs = append(refs, &member{pt: s.p.References[name]})
			}
			op.Noise = s.noise(pt, refs, obj, gainsFrom)
		}
		for name, ref := range s.p.References {
			op.Gains[name] = gain(pairRatio(s.diffs(op.Point, ref, obj, gainsFrom)))
		}
		o.Optima[obj.String()] = op
	}
	o.Verdicts = map[string]Verdict{}
	for _, dim := range profiles.Dims {
		o.Verdicts[dim] = s.verdict(f, dim)
	}
	return nil
}

// verdict compares the chosen value of d with the article's.
func (s *state) verdict(f *final, d string) Verdict {
	main := f.dec
	c := main.chosen
	v := Verdict{Chosen: c.Get(d), Decided: true}
	// Open comparisons of points with another value of d: the parameter is undecided.
	for _, m := range f.members {
		j, ok := main.judged[m.pt]
		if ok && m.pt.Get(d) != c.Get(d) && j != Equal && j != Worse {
			r := main.rel[m.pt]
			if v.Unresolved == nil || high(&r) > high(v.Unresolved.Ratio) {
				c := comparison(m.pt, r)
				v.Unresolved = &c
			}
			v.Decided = false
		}
	}
	if !main.decided && main.leader != c && main.leader.Get(d) != c.Get(d) {
		v.Decided = false
	}
	for _, m := range f.members {
		if m.compete && len(s.runs[m.pt]) == 0 && s.failed[m.pt] == "" && m.pt.Get(d) != c.Get(d) {
			v.Decided = false // a contender never measured (the budget)
		}
	}
	if f.cut > 0 {
		v.Decided = false // contenders left out: any parameter may be wrong
	}
	r, ok := s.p.Article[d]
	if !ok {
		v.Verdict = NoArticle
		return v
	}
	v.Article = slices.Clone(r)
	av := ArticleValue(d, s.p.Grid[d], r, c.Get(d))
	if inRange(d, r, c.Get(d)) {
		av = c.Get(d)
		v.Verdict = map[bool]string{true: Agrees, false: CannotTell}[v.Decided]
	}
	v.ArticleValue, v.Nearest = &av, !inRange(d, r, av)
	if v.Verdict != "" {
		return v
	}
	alt := c.With(d, av)
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

func high(r *Ratio) float64 {
	if r == nil || r.High == nil {
		return math.Inf(1)
	}
	return *r.High
}

func gain(r Ratio) Gain {
	g := Gain{Pairs: r.N}
	if r.N == 0 {
		return g
	}
	med := r.Median - 1
	g.GainMedian = &med
	if r.Low != nil {
		lo, hi := *r.Low-1, *r.High-1
		g.GainLow, g.GainHigh = &lo, &hi
	}
	return g
}

// noise is an objective's run-to-run noise: the median, over the points paired with
// pt in at least 3 rounds from round `from` on, of the standard deviation of a paired
// log difference over sqrt 2 (one run's share), as a relative spread.
func (s *state) noise(pt profiles.Point, with []*member, o Objective, from int) float64 {
	var sds []float64
	for _, m := range with {
		if diff := s.diffs(m.pt, pt, o, from); m.pt != pt && len(diff) >= 3 {
			_, sd := meanSD(diff)
			sds = append(sds, sd/math.Sqrt2)
		}
	}
	if len(sds) == 0 {
		return 0
	}
	return math.Exp(median(sds)) - 1
}

// estimate summarises pt's runs from round `from` on (all runs where it has none there).
func (s *state) estimate(pt profiles.Point, o Objective, from int) Estimate {
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
		bw, rate = append(bw, r.BWGbps), append(rate, r.MsgRateMpps)
		if r.Lat.P99 != nil {
			p99 = append(p99, float64(*r.Lat.P99))
		}
	}
	if len(rs) == 0 {
		return e
	}
	e.Median, e.CILow, e.CIHigh = level(vals)
	e.BWGbps, e.MsgRateMpps = median(bw), median(rate)
	if len(p99) > 0 {
		m := int64(median(p99))
		e.P99NS = &m
	}
	return e
}

func sortedKeys[V any](m map[string]V) []string {
	var k []string
	for n := range m {
		k = append(k, n)
	}
	sort.Strings(k)
	return k
}

// gridPoints lists the valid points of a grid in a fixed order.
func gridPoints(g map[string][]int) []profiles.Point {
	out := []profiles.Point{{}}
	for _, d := range profiles.Dims {
		var next []profiles.Point
		for _, p := range out {
			for _, v := range g[d] {
				next = append(next, p.With(d, v))
			}
		}
		out = next
	}
	valid := out[:0]
	for _, p := range out {
		if p.Valid() {
			valid = append(valid, p)
		}
	}
	return valid
}

// guess is the number of measurements to expect, for the progress bar.
func (s *state) guess() int {
	final := 3*(1+maxRivals+10)*s.p.Repeat + (1+len(s.p.Others)+len(s.p.References))*s.p.Repeat
	if s.p.Search == "grid" {
		return 2*probeRounds + len(gridPoints(s.p.Grid)) + final
	}
	n := 0
	for _, d := range profiles.Dims {
		n += len(s.p.Grid[d]) - 1
	}
	return 2*probeRounds + 2*n + 1 + 6 + 4*2*minPairs + final
}
