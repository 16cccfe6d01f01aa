// Package sweep searches the parameters that decide RDMA performance (message size,
// SQ depth, buffer offset, completion moderation, post-list length) for the best
// configuration of one operation, measuring through a Measurer, and says how sure it
// is. It is pure Go: the real measurer is a bench.Client, tests use a fake.
//
// A sweep has two phases. The search (coordinate descent, or the whole grid) measures
// points once to find where the optimum lies; descent moves only when a re-measured,
// interleaved comparison says the new point is significantly better. The final rounds
// then measure the contenders, the article's configuration and perftest's defaults
// together, round after round (the order alternating), until every comparison is
// decided or the budget is spent: the chosen configuration is the cheapest one that is
// statistically equal to the best (stat.go), and what could not be decided is reported
// as such, with its interval.
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
	Others    []Objective
	Repeat    int           // the chosen configuration and the references: at least this many runs
	Tolerance float64       // points whose ratio's interval lies within 1 +- Tolerance are equal
	Budget    time.Duration // wall-clock time for the whole plan; <= 0: no limit (see Run)
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
	Now      func() time.Time      // the budget's clock (time.Now; tests simulate it)
	prior    map[string][]Recorded // per operation, in the stream's order
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

// PointOf reads the swept dimensions out of a config.
func PointOf(c result.Config) profiles.Point {
	return profiles.Point{MsgSizeBytes: c.MsgSizeBytes, SQDepth: c.SQDepth, BufOffsetBytes: c.BufOffsetBytes, CQMod: c.CQMod, PostList: c.PostList}
}

// Apply sets the swept dimensions of a config.
func Apply(c result.Config, p profiles.Point) result.Config {
	c.MsgSizeBytes, c.SQDepth, c.BufOffsetBytes, c.CQMod, c.PostList = p.MsgSizeBytes, p.SQDepth, p.BufOffsetBytes, p.CQMod, p.PostList
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
	Point  profiles.Point `json:"point"`
	Runs   int            `json:"runs"`    // runs counted (the final rounds, where the point was in them)
	Median float64        `json:"median"`  // of the objective's value, in its unit
	CILow  *float64       `json:"ci_low"`  // 95% interval of the geometric mean; null below 2 runs
	CIHigh *float64       `json:"ci_high"` // (an interval of the level: it includes drift)
	// Medians of the other metrics over the same runs.
	BWGbps      float64 `json:"bw_gbit_per_s"`
	MsgRateMpps float64 `json:"msg_rate_mpps"`
	P99NS       *int64  `json:"lat_p99_ns"` // null where no run had a supported p99
}

// Gain is how much better a configuration is than a reference, as a fraction (0.1:
// 10% more bandwidth, or a 1.1 times lower p99), from runs paired round by round.
type Gain struct {
	Pairs      int      `json:"pairs"`
	GainMedian float64  `json:"gain_median"`
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
	Ratio Ratio          `json:"ratio"` // this point over the best (>1: better)
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
	Article      []int  `json:"article"`       // the article's [lo, hi]; null where it gives none
	Chosen       int    `json:"chosen"`        // the chosen value
	ArticleValue int    `json:"article_value"` // the grid value in the article's range compared with it
	Verdict      string `json:"verdict"`       // Agrees, Differs, ArticleBetter, CannotTell, NotApplicable; "" without an article value
	Ratio        *Ratio `json:"ratio"`         // chosen over the article's value, where they differ
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
	BWGbps      float64        `json:"bw_gbit_per_s"`
	MsgRateMpps float64        `json:"msg_rate_mpps"`
	P99NS       *int64         `json:"lat_p99_ns"`
	Error       string         `json:"error,omitempty"` // a failed point: not measured again
}

// Outcome is a finished (or interrupted) sweep of one operation: numbers and points
// only; the renderers format them.
type Outcome struct {
	Op              string  `json:"op"`
	Search          string  `json:"search"`
	Objective       string  `json:"objective"`
	Unit            string  `json:"unit"`
	Tolerance       float64 `json:"tolerance"`
	Repeat          int     `json:"repeat"`
	BudgetS         float64 `json:"budget_s"` // 0: no limit
	BudgetSpentS    float64 `json:"budget_spent_s"`
	BudgetExhausted bool    `json:"budget_exhausted"`
	GridPoints      int     `json:"grid_points"`                 // valid points on the grid
	Points          int     `json:"points_measured"`             // distinct grid points measured (or failed)
	Runs            int     `json:"runs"`                        // measurements made in this invocation
	Reused          int     `json:"runs_reused"`                 // measurements taken from --resume
	Tainted         int     `json:"runs_tainted,omitempty"`      // tainted runs (NIC counters moved: counters_flags), each measured again ...
	TaintedKept     int     `json:"runs_tainted_kept,omitempty"` // ... up to 3 times; these were tainted every time and are used
	TaintCommon     bool    `json:"taint_common,omitempty"`      // most runs were tainted: from then on tainted runs were used as measured
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

// Run runs a plan. The budget bounds the plan's wall-clock time: once it is spent the
// descent stops where it is and the final rounds stop adding rounds, but the chosen
// configuration and the references still get their Repeat runs (so a plan can run a
// little over), and a grid search still measures the whole grid.
func (r *Runner) Run(ctx context.Context, p Plan) (Outcome, error) {
	t0 := time.Now()
	p.Repeat = max(p.Repeat, 1)
	if p.Search == "" {
		p.Search = "descent"
	}
	o := Outcome{Op: p.Op, Search: p.Search, Objective: p.Objective.String(), Unit: p.Objective.Unit(), Tolerance: p.Tolerance,
		Repeat: p.Repeat, BudgetS: max(p.Budget.Seconds(), 0), GridPoints: len(gridPoints(p.Grid))}
	s := &state{r: r, p: p, o: &o, objs: append([]Objective{p.Objective}, p.Others...),
		runs: map[profiles.Point][]run{}, failed: map[profiles.Point]string{}}
	s.expected = s.guess()
	var err error
	var inc profiles.Point
	switch p.Search {
	case "grid":
		for _, pt := range gridPoints(p.Grid) {
			if err = s.once(ctx, pt, s.next(), "search"); err != nil {
				break
			}
		}
		inc, _ = s.best(s.objs[0], s.measured())
	case "descent":
		inc, err = s.descent(ctx)
	default:
		return o, fmt.Errorf("unknown search %q: want descent or grid", p.Search)
	}
	var f *final
	if err == nil {
		f, err = s.final(ctx, inc)
	}
	if err == nil {
		err = s.confirmOthers(ctx, f)
	}
	if err == nil {
		err = s.gains(ctx, f)
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
	o.BudgetExhausted = s.exhausted()
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
}

func (s *state) next() int { s.round++; return s.round }

func (s *state) exhausted() bool { return s.p.Budget > 0 && s.spent >= s.p.Budget }

// stopsSweep says whether a Measurer's error ends the sweep.
func stopsSweep(err error) bool {
	var f interface{ StopsSweep() bool }
	return errors.As(err, &f) && f.StopsSweep()
}

// taintTries is how many times a run is measured while it comes out tainted (the NIC
// retransmitted, dropped or miscounted): the last one is kept, and counted as such.
const taintTries = 3

// once measures pt once more, as part of round, or takes it from the resumed stream.
// A failed point is never measured again. A tainted run is recorded and measured
// again, up to taintTries times, while taint is the exception (at most half of the
// runs so far, or fewer than 10 runs): when every try is tainted, or when most runs
// are (a link that always retransmits, such as Soft-RoCE under emulation, is what it
// is, and measuring again only spends the budget), the run is kept and counted in
// Outcome.TaintedKept.
func (s *state) once(ctx context.Context, pt profiles.Point, round int, phase string) error {
	if _, bad := s.failed[pt]; bad {
		return nil
	}
	for try := 1; ; try++ {
		res, reused, merr, err := s.acquire(ctx, pt)
		if err != nil {
			return err
		}
		if res.Error == "" && res.Tainted {
			s.o.Tainted++
			n := s.o.Runs + s.o.Reused
			if 2*s.o.Tainted > n && n >= 10 {
				s.o.TaintCommon = true
			}
			if try < taintTries && !s.o.TaintCommon {
				s.progress(pt, phase, res, reused)
				if merr != nil && stopsSweep(merr) {
					return merr
				}
				continue
			}
			s.o.TaintedKept++
		}
		s.record(pt, round, res)
		s.progress(pt, phase, res, reused)
		if merr != nil && stopsSweep(merr) {
			return merr
		}
		return nil
	}
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
	return max(math.Log1p(s.p.Tolerance), k*sd)
}

// duel re-measures challenger a against incumbent b in interleaved rounds (a b, b a,
// ...), judging at duelLooks pairs only, each look at alpha / len(duelLooks): a
// moves when it is significantly better; the duel ends when a cannot be better by
// more than the tolerance, or the pairs or the budget run out. It returns a over b.
func (s *state) duel(ctx context.Context, a, b profiles.Point) (Ratio, bool, error) {
	o := s.objs[0]
	start := s.spent
	lvl := alpha / float64(len(duelLooks))
	for {
		// One duel takes at most a sixth of the budget beyond its minimum: a near tie
		// under heavy noise must not eat what the final rounds need.
		share := s.p.Budget > 0 && s.spent-start >= s.p.Budget/6
		r := s.pair(a, b, o)
		last := r.N >= maxPairs || (r.N >= minPairs && (s.exhausted() || share)) || s.failed[a] != "" || s.failed[b] != ""
		if slices.Contains(duelLooks, r.N) || last {
			lo, hi := r.bounds(lvl)
			if lo > 1 {
				return r, true, nil
			}
			if hi < 1+s.p.Tolerance || last {
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
// simpler loop), then the smaller message and offset.
func cheaper(a, b profiles.Point) int {
	for _, d := range []string{"sq_depth", "cq_mod", "post_list", "msg_size_bytes", "buf_offset_bytes"} {
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
	first   int // the first final round
	cut     int // contenders of the search's point left out (maxRivals): not decided
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
	f := &final{obj: main, first: s.round + 1, lvl: alpha / float64(len(finalLooks))}
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
	for look := 0; ; look++ {
		for { // a new chosen point brings new neighbours: judge them in the same look
			f.dec = s.decide(f)
			if !f.dec.ok {
				return f, nil
			}
			n := len(f.members)
			for _, v := range append(s.variants(f.dec.chosen), s.neighbours(f.dec.chosen)...) {
				f.add(v, true)
			}
			if len(f.members) == n {
				break
			}
		}
		if look == len(finalLooks)-1 || s.settled(f) || s.exhausted() || ctx.Err() != nil {
			return f, nil
		}
		pts := s.active(f)
		for f.rounds < finalLooks[look+1] && !s.exhausted() {
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
// references afresh: Repeat interleaved rounds (made even) whatever the budget. The estimates and
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
	for i, rel := range holm(rs, s.p.Tolerance, f.lvl) {
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
		if s.failed[v] == "" && s.pair(f.dec.chosen, v, f.obj).JudgeAt(s.p.Tolerance, f.lvl) == Undecided {
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
		if slices.Contains(vars, m.pt) && s.pair(d.chosen, m.pt, o).JudgeAt(s.p.Tolerance, f.lvl) == Undecided {
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
		ps.BWGbps, ps.MsgRateMpps, ps.P99NS = e.BWGbps, e.MsgRateMpps, e.P99NS
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
					op.Unresolved = append(op.Unresolved, Comparison{Point: m.pt, Ratio: d.rel[m.pt]})
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
						op.Unresolved = append(op.Unresolved, Comparison{Point: m.pt, Ratio: od.rel[m.pt]})
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
			if v.Unresolved == nil || high(r) > high(v.Unresolved.Ratio) {
				v.Unresolved = &Comparison{Point: m.pt, Ratio: r}
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
		return v
	}
	v.Article = slices.Clone(r)
	v.ArticleValue = ArticleValue(d, s.p.Grid[d], r, c.Get(d))
	if inRange(d, r, c.Get(d)) {
		v.ArticleValue = c.Get(d)
		v.Verdict = map[bool]string{true: Agrees, false: CannotTell}[v.Decided]
		return v
	}
	alt := c.With(d, v.ArticleValue)
	if alt == c || !alt.Valid() || s.failed[alt] != "" {
		v.Verdict = NotApplicable
		return v
	}
	ratio := s.pair(c, alt, s.objs[0])
	v.Ratio = &ratio
	v.Verdict = map[Relation]string{Equal: Agrees, Better: Differs, Worse: ArticleBetter, Undecided: CannotTell}[ratio.JudgeAt(s.p.Tolerance, f.lvl)]
	return v
}

func high(r Ratio) float64 {
	if r.High == nil {
		return math.Inf(1)
	}
	return *r.High
}

func gain(r Ratio) Gain {
	g := Gain{Pairs: r.N}
	if r.N == 0 {
		return g
	}
	g.GainMedian = r.Median - 1
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
		return len(gridPoints(s.p.Grid)) + final
	}
	n := 0
	for _, d := range profiles.Dims {
		n += len(s.p.Grid[d]) - 1
	}
	return 2*n + 1 + 6 + 4*2*minPairs + final
}
