// Package sweep searches the parameters that decide RDMA performance (message size,
// SQ depth, buffer offset, completion moderation, post-list length) for the best
// configuration of one operation, measuring through a Measurer. It is pure Go: the
// real measurer is a bench.Client, tests use a fake.
package sweep

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/rdmabench/rdmabench/profiles"
	"github.com/rdmabench/rdmabench/result"
)

// Measurer runs one test.
type Measurer interface {
	Measure(ctx context.Context, cfg result.Config) (result.Result, error)
}

// Plan is one operation's sweep.
type Plan struct {
	Op        string
	Base      result.Config    // everything but the swept dimensions
	Grid      map[string][]int // dimension -> ascending values
	Start     profiles.Point
	Search    string // "descent" (default) or "grid"
	Objective Objective
	Repeat    int     // runs of each top candidate, to know the noise
	Tolerance float64 // configurations this close to the best count as equal
	// Baselines are measured too, for the gains in the report (not part of the search).
	Baselines map[string]profiles.Point
}

// Event is a progress report: one measurement finished.
type Event struct {
	Op       string
	Point    profiles.Point
	Result   result.Result
	Measured int // measurements so far in this plan
	Expected int // a best guess of the total
	Reused   bool
}

// Runner measures points once and remembers them (resume).
type Runner struct {
	M        Measurer
	Record   func(result.Result) error // called with every new measurement, before anything else
	Progress func(Event)
	runs     map[string][]result.Result
}

// NewRunner starts from prior results (a resumed stream): their points are not re-measured.
func NewRunner(m Measurer, record func(result.Result) error, prior []result.Result) *Runner {
	r := &Runner{M: m, Record: record, runs: map[string][]result.Result{}}
	for _, p := range prior {
		if p.Error == "" && !p.Interrupted {
			k := Key(p.Config.Op, PointOf(p.Config))
			r.runs[k] = append(r.runs[k], p)
		}
	}
	return r
}

// Key identifies a point of an operation.
func Key(op string, p profiles.Point) string {
	var b strings.Builder
	b.WriteString(op)
	for _, d := range profiles.Dims {
		fmt.Fprintf(&b, " %s=%d", d, p[d])
	}
	return b.String()
}

// PointOf reads the swept dimensions out of a config.
func PointOf(c result.Config) profiles.Point {
	return profiles.Point{"msg_size_bytes": c.MsgSizeBytes, "sq_depth": c.SQDepth,
		"buf_offset_bytes": c.BufOffsetBytes, "cq_mod": c.CQMod, "post_list": c.PostList}
}

// Apply sets the swept dimensions of a config.
func Apply(c result.Config, p profiles.Point) result.Config {
	c.MsgSizeBytes, c.SQDepth, c.BufOffsetBytes = p["msg_size_bytes"], p["sq_depth"], p["buf_offset_bytes"]
	c.CQMod, c.PostList = p["cq_mod"], p["post_list"]
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
// shows a p99 optimum for every sweep (Objectives), but for a bw or rate search that
// optimum is a by-product read from the points measured anyway; buying it with up to
// 1000 x cq-mod WRs a point (64000 of 256 KiB at cq-mod 64) would make the search
// itself many times longer. There, points whose p99 is not supported are not
// candidates for the p99 optimum either, and the report says when none is left.
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

// Valid says whether a point can run: moderation and post list fit in the SQ.
func Valid(p profiles.Point) bool {
	return p["cq_mod"] <= p["sq_depth"] && p["post_list"] <= p["sq_depth"]
}

// Stat is what is known of one point: its runs summarised.
type Stat struct {
	Point       profiles.Point `json:"point"`
	Runs        int            `json:"runs"`
	Score       float64        `json:"score"`  // median of the objective over the runs
	Spread      float64        `json:"spread"` // (max-min)/|median| of the objective
	Feasible    bool           `json:"feasible"`
	BWGbps      float64        `json:"bw_gbit_per_s"` // medians
	MsgRateMpps float64        `json:"msg_rate_mpps"`
	P99NS       *int64         `json:"lat_p99_ns"` // median of the runs with a supported p99; nil (null) if none
}

// Outcome is a finished (or interrupted) sweep of one operation.
type Outcome struct {
	Op          string          `json:"op"`
	Search      string          `json:"search"`
	Objective   string          `json:"objective"`
	GridPoints  int             `json:"grid_points"`     // valid points on the grid
	Points      int             `json:"points_measured"` // distinct points with a result
	Runs        int             `json:"runs"`            // measurements made in this invocation
	Reused      int             `json:"runs_reused"`     // measurements taken from --resume
	ElapsedS    float64         `json:"elapsed_s"`
	Noise       float64         `json:"noise"`            // median spread of the top candidates
	Tolerance   float64         `json:"tolerance"`        // max(requested tolerance, noise)
	Best        Stat            `json:"best"`             // highest score
	Chosen      Stat            `json:"chosen"`           // cheapest within tolerance of the best
	Within      []Stat          `json:"within_tolerance"` // every point within tolerance, best first
	Baselines   map[string]Stat `json:"baselines"`
	All         []Stat          `json:"all"`
	Interrupted bool            `json:"interrupted"`
}

// ErrNoFeasible means no measured point met the objective.
var ErrNoFeasible = errors.New("no measured configuration meets the objective")

// Run runs a plan.
func (r *Runner) Run(ctx context.Context, p Plan) (Outcome, error) {
	t0 := time.Now()
	if p.Repeat < 1 {
		p.Repeat = 1
	}
	o := Outcome{Op: p.Op, Search: p.Search, Objective: p.Objective.String(), GridPoints: len(gridPoints(p.Grid))}
	s := &state{r: r, p: p, o: &o, seen: map[string]profiles.Point{}}
	s.expected = s.estimate()
	var err error
	switch p.Search {
	case "grid":
		for _, pt := range gridPoints(p.Grid) {
			if _, err = s.measure(ctx, pt); err != nil {
				break
			}
		}
	case "descent", "":
		o.Search = "descent"
		err = s.descent(ctx)
	default:
		return o, fmt.Errorf("unknown search %q: want descent or grid", p.Search)
	}
	if err == nil {
		err = s.confirm(ctx)
	}
	if err == nil {
		err = s.settle(ctx)
	}
	if err == nil {
		o.Baselines = map[string]Stat{}
		for name, pt := range p.Baselines {
			if _, err = s.measure(ctx, pt); err != nil {
				break
			}
			o.Baselines[name] = s.stat(pt)
		}
	}
	if ctx.Err() != nil {
		o.Interrupted = true
		err = nil
	}
	o.ElapsedS = time.Since(t0).Seconds()
	if cerr := s.choose(); err == nil {
		err = cerr
	}
	return o, err
}

type state struct {
	r        *Runner
	p        Plan
	o        *Outcome
	seen     map[string]profiles.Point // points of this plan with a result, by Key
	expected int
}

// measure returns the point's stat, measuring it only if nothing is known of it.
func (s *state) measure(ctx context.Context, pt profiles.Point) (Stat, error) {
	k := Key(s.p.Op, pt)
	if len(s.r.runs[k]) > 0 {
		if _, ok := s.seen[k]; !ok {
			s.seen[k] = pt
			s.o.Reused += len(s.r.runs[k])
			if s.r.Progress != nil {
				s.r.Progress(Event{Op: s.p.Op, Point: pt, Result: s.r.runs[k][0], Measured: s.o.Runs, Expected: s.expected, Reused: true})
			}
		}
		return s.stat(pt), nil
	}
	return s.run(ctx, pt)
}

// run measures a point once more.
func (s *state) run(ctx context.Context, pt profiles.Point) (Stat, error) {
	if ctx.Err() != nil {
		return Stat{}, ctx.Err()
	}
	cfg := Apply(s.p.Base, pt)
	cfg.Op = s.p.Op
	if s.p.Objective.NeedsP99() {
		cfg = WithP99Samples(cfg)
	}
	res, err := s.r.M.Measure(ctx, cfg)
	if ctx.Err() != nil {
		return Stat{}, ctx.Err() // an interrupted point is no data point
	}
	if err != nil && res.Error == "" {
		res.Error = err.Error()
	}
	if res.Config.Op == "" {
		res.Config = cfg
	}
	if s.r.Record != nil {
		if rerr := s.r.Record(res); rerr != nil {
			return Stat{}, fmt.Errorf("recording a result: %w", rerr)
		}
	}
	s.o.Runs++
	k := Key(s.p.Op, pt)
	s.seen[k] = pt
	if res.Error == "" {
		s.r.runs[k] = append(s.r.runs[k], res)
	} else if len(s.r.runs[k]) == 0 {
		s.r.runs[k] = nil // failed: known, scored infeasible
	}
	if s.r.Progress != nil {
		s.r.Progress(Event{Op: s.p.Op, Point: pt, Result: res, Measured: s.o.Runs, Expected: s.expected})
	}
	return s.stat(pt), nil
}

func (s *state) stat(pt profiles.Point) Stat {
	runs := s.r.runs[Key(s.p.Op, pt)]
	st := Stat{Point: pt, Runs: len(runs)}
	var scores, bw, rate, p99 []float64
	for _, r := range runs {
		v, ok := s.p.Objective.Score(r)
		if !ok {
			continue
		}
		scores = append(scores, v)
		bw, rate = append(bw, r.BWGbps), append(rate, r.MsgRateMpps)
		if r.Lat.P99 != nil {
			p99 = append(p99, float64(*r.Lat.P99))
		}
	}
	if len(scores) == 0 {
		st.Score = math.Inf(-1)
		return st
	}
	st.Feasible = true
	st.Score = median(scores)
	st.BWGbps, st.MsgRateMpps = median(bw), median(rate)
	if len(p99) > 0 {
		m := int64(median(p99))
		st.P99NS = &m
	}
	lo, hi := slices.Min(scores), slices.Max(scores)
	if st.Score != 0 {
		st.Spread = (hi - lo) / math.Abs(st.Score)
	}
	return st
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// descent: coordinate descent from the start point (every value of one dimension with
// the others fixed, move to the best, next dimension; passes until nothing improves),
// then a local refinement over pairs of neighbouring values of interacting dimensions.
func (s *state) descent(ctx context.Context) error {
	cur := clonePoint(s.p.Start)
	curStat, err := s.measure(ctx, cur)
	if err != nil {
		return err
	}
	for pass := 0; pass < 3; pass++ {
		improved := false
		for _, d := range profiles.Dims {
			for _, v := range s.p.Grid[d] {
				cand := clonePoint(cur)
				cand[d] = v
				if !Valid(cand) {
					continue
				}
				st, err := s.measure(ctx, cand)
				if err != nil {
					return err
				}
				if better(st, curStat) {
					cur, curStat, improved = cand, st, true
				}
			}
		}
		if !improved {
			break
		}
	}
	pairs := [][2]string{{"msg_size_bytes", "sq_depth"}, {"sq_depth", "cq_mod"}, {"cq_mod", "post_list"}}
	for _, pr := range pairs {
		base := clonePoint(cur)
		for _, da := range []int{-1, 1} {
			for _, db := range []int{-1, 1} {
				cand, ok := s.step(base, pr[0], da)
				if ok {
					cand, ok = s.step(cand, pr[1], db)
				}
				if !ok || !Valid(cand) {
					continue
				}
				st, err := s.measure(ctx, cand)
				if err != nil {
					return err
				}
				if better(st, curStat) {
					cur, curStat = cand, st
				}
			}
		}
	}
	return nil
}

func (s *state) step(p profiles.Point, d string, delta int) (profiles.Point, bool) {
	vals := s.p.Grid[d]
	i := slices.Index(vals, p[d]) + delta
	if i < 0 || i >= len(vals) {
		return nil, false
	}
	q := clonePoint(p)
	q[d] = vals[i]
	return q, true
}

func better(a, b Stat) bool { return a.Feasible && (!b.Feasible || a.Score > b.Score) }

func clonePoint(p profiles.Point) profiles.Point {
	q := profiles.Point{}
	for k, v := range p {
		q[k] = v
	}
	return q
}

// confirm measures the top candidates until each has Repeat runs: their spread is
// the noise that the tolerance must not be tighter than. A repeat can reorder the top,
// so this goes on until the top three are all confirmed (a few rounds at most).
func (s *state) confirm(ctx context.Context) error {
	for round := 0; round < 5; round++ {
		done := true
		for _, st := range s.top(3) {
			for n := st.Runs; n < s.p.Repeat; n++ {
				done = false
				if _, err := s.run(ctx, st.Point); err != nil {
					return err
				}
			}
		}
		if done {
			break
		}
	}
	return nil
}

// settle confirms the chosen configuration too: measure it Repeat times and choose
// again, until the choice holds (a few rounds at most).
func (s *state) settle(ctx context.Context) error {
	for round := 0; round < 5; round++ {
		if err := s.choose(); err != nil {
			return nil // nothing feasible: Run reports it
		}
		st := s.o.Chosen
		if st.Runs >= s.p.Repeat {
			return nil
		}
		for n := st.Runs; n < s.p.Repeat; n++ {
			if _, err := s.run(ctx, st.Point); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *state) all() []Stat {
	var out []Stat
	for _, pt := range s.seen {
		out = append(out, s.stat(pt))
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Score != out[j].Score {
			return out[i].Score > out[j].Score
		}
		return Key("", out[i].Point) < Key("", out[j].Point)
	})
	return out
}

func (s *state) top(n int) []Stat {
	var out []Stat
	for _, st := range s.all() {
		if st.Feasible && s.onGrid(st.Point) && len(out) < n {
			out = append(out, st)
		}
	}
	return out
}

func (s *state) onGrid(p profiles.Point) bool {
	for _, d := range profiles.Dims {
		if !slices.Contains(s.p.Grid[d], p[d]) {
			return false
		}
	}
	return true
}

func (s *state) choose() error {
	var grid []Stat
	for _, st := range s.all() {
		if s.onGrid(st.Point) {
			grid = append(grid, st)
		}
	}
	s.o.All, s.o.Points = grid, len(grid)
	var spreads []float64
	for _, st := range s.top(3) {
		if st.Runs > 1 {
			spreads = append(spreads, st.Spread)
		}
	}
	if len(spreads) > 0 {
		s.o.Noise = median(spreads)
	}
	s.o.Tolerance = max(s.p.Tolerance, s.o.Noise)
	best, chosen, within, ok := Choose(grid, s.o.Tolerance, s.p.Repeat)
	if !ok {
		return ErrNoFeasible
	}
	s.o.Best, s.o.Chosen, s.o.Within = best, chosen, within
	return nil
}

// Choose picks, among feasible stats, the best score and the cheapest configuration
// within tol (relative) of it: smaller SQ depth, then smaller moderation, then smaller
// post list, then the higher score. The best is taken among stats with at least
// minRuns runs where there are any: one lucky run does not make an optimum.
func Choose(stats []Stat, tol float64, minRuns int) (best, chosen Stat, within []Stat, ok bool) {
	confirmed := false
	for _, st := range stats {
		confirmed = confirmed || (st.Feasible && st.Runs >= minRuns)
	}
	for _, st := range stats {
		if st.Feasible && (!confirmed || st.Runs >= minRuns) && (!ok || st.Score > best.Score) {
			best, ok = st, true
		}
	}
	if !ok {
		return
	}
	for _, st := range stats {
		if st.Feasible && best.Score-st.Score <= tol*math.Abs(best.Score) {
			within = append(within, st)
		}
	}
	sort.SliceStable(within, func(i, j int) bool { return within[i].Score > within[j].Score })
	cheap := slices.Clone(within)
	sort.SliceStable(cheap, func(i, j int) bool {
		a, b := cheap[i].Point, cheap[j].Point
		for _, d := range []string{"sq_depth", "cq_mod", "post_list"} {
			if a[d] != b[d] {
				return a[d] < b[d]
			}
		}
		return cheap[i].Score > cheap[j].Score
	})
	return best, cheap[0], within, true
}

// gridPoints lists the valid points of a grid in a fixed order.
func gridPoints(g map[string][]int) []profiles.Point {
	out := []profiles.Point{{}}
	for _, d := range profiles.Dims {
		var next []profiles.Point
		for _, p := range out {
			for _, v := range g[d] {
				q := clonePoint(p)
				q[d] = v
				next = append(next, q)
			}
		}
		out = next
	}
	valid := out[:0]
	for _, p := range out {
		if Valid(p) {
			valid = append(valid, p)
		}
	}
	return valid
}

func (s *state) estimate() int {
	if s.p.Search == "grid" {
		return len(gridPoints(s.p.Grid)) + 2*(s.p.Repeat-1) + len(s.p.Baselines)
	}
	n := 0
	for _, d := range profiles.Dims {
		n += len(s.p.Grid[d]) - 1
	}
	return 2*n + 1 + 6 + 3*(s.p.Repeat-1) + len(s.p.Baselines)
}
