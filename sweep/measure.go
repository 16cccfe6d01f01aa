package sweep

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rdmabench/rdmabench/plan"
	"github.com/rdmabench/rdmabench/result"
)

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
	if c.Test == result.BW {
		// floor(iters x qps / mod) >= need  <=>  iters x qps >= need x mod
		mod, qps := uint64(max(c.CQMod, 1)), uint64(max(c.NumQPs, 1))
		need = (need*mod + qps - 1) / qps
	}
	c.Iterations = max(c.Iterations, need)
	return c
}

// errBudgetSpent ends a plan whose budget is spent: no run starts after that.
var errBudgetSpent = errors.New("the budget is spent")

// exhausted: the current phase's share of the budget is spent.
func (s *state) exhausted() bool {
	if s.led.Reached(s.phaseEnd) {
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
	if !s.led.Fits(time.Duration(n)*s.led.Spent()/time.Duration(runs), s.phaseEnd) {
		s.cut = true
		return false
	}
	return true
}

// once measures pt once more, as part of round, or takes it from the resumed stream.
// A failed point is never measured again. A run is counted as measured, tainted or
// not. A timed bandwidth run without a steady window long enough (steadyEnough) is
// measured again, longer (see lengthen), and only the longer run counts.
func (s *state) once(ctx context.Context, pt plan.Point, round int, phase string) error {
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
		if plan.Stops(merr) {
			return merr
		}
		if !again {
			return nil
		}
	}
}

// length is how long pt's runs are: the plan's duration, or longer for its queue.
func (s *state) length(pt plan.Point) float64 {
	if d, ok := s.dur[pt]; ok {
		return d
	}
	return s.p.Base.DurationS
}

// steadyEnough: a bandwidth run res of a point whose runs last lengthS seconds has a
// steady window (result.Result.Steady: every queue full, neither fill nor drain) of at
// least a quarter of that length. The sweep compares steady windows, so the queue's
// fill and drain bias nothing whatever the depth; a run whose queue takes most of its
// length to fill (posting a deep queue is slow on some providers) has too little of
// one to compare, and is measured again, longer.
func steadyEnough(res result.Result, lengthS float64) bool {
	if c := res.Config; c.Test != result.BW || c.Sync == "rounds" || c.MR == "per-io" || c.MR == "cache" {
		return true // no steady window to be had: the whole window is what there is
	}
	if res.Steady == nil {
		return false
	}
	return lengthS <= 0 || float64(res.Steady.DurationNS) >= lengthS*1e9/4
}

// turnover is how long a bandwidth run's queues took to turn over once (all QPs' WRs
// at its whole window's rate), in seconds; 0 where the run does not say.
func turnover(res result.Result) float64 {
	c := res.Config
	if res.Iterations == 0 || res.DurationNS <= 0 || c.SQDepth <= 0 {
		return 0
	}
	wrs := float64(max(c.NumQPs, 1) * c.SQDepth)
	return wrs / (float64(res.Iterations) / (float64(res.DurationNS) / 1e9))
}

// lengthen says whether pt's run res is too short for its queue and is to be measured
// again: it has no steady window of a quarter of its length (steadyEnough) and the run
// was shorter than the plan's cap. The next run is twice as long, or as long as the
// run's turnover says it needs (1.5 turnovers) when that is longer, at most the cap; a
// point that cannot get a steady quarter even at the cap is not lengthened at all
// (queue-bound).
func (s *state) lengthen(pt plan.Point, res result.Result) bool {
	if res.Error != "" {
		return false
	}
	if res.RampShare != nil {
		s.share[pt] = max(s.share[pt], *res.RampShare)
	}
	cur, most := s.length(pt), s.p.MaxDurationS
	s.unsteady[pt] = !steadyEnough(res, cur)
	if !s.unsteady[pt] || cur <= 0 || most <= cur {
		return false
	}
	need := 2 * cur
	if t := turnover(res); t > 0 {
		// The window opens after one turnover of the queues and closes when posting
		// stops, at the run's length D: it holds about D - t, a quarter of D from
		// D = 4t/3 on (1.5t, for a margin). Where even the cap cannot give a quarter
		// (t > 3/4 of it), the point stays as it is, queue-bound, rather than paying for
		// runs that cannot help.
		if most-t < most/4 {
			s.beyondCap[pt] = true
			return false
		}
		need = max(need, 1.5*t)
	}
	s.dur[pt] = min(most, need)
	s.share[pt] = 0 // the longer runs' share is what counts
	s.o.Lengthened++
	// Runs of pt measured shorter are no longer compared with the longer ones: a
	// comparison pairs runs of one length.
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

func (s *state) progress(pt plan.Point, phase string, res result.Result, reused bool) {
	if s.r.Progress != nil {
		s.r.Progress(Event{Op: s.p.Op, Phase: phase, Point: pt, Result: res, Measured: s.o.Runs + s.o.Reused, Expected: s.expected, Reused: reused})
	}
}

// acquire measures pt once, or takes its next run from the resumed stream; err is
// set when the sweep cannot go on (interrupted, a stream that does not match).
func (s *state) acquire(ctx context.Context, pt plan.Point) (res result.Result, reused bool, merr, err error) {
	if ctx.Err() != nil {
		return res, false, nil, ctx.Err()
	}
	if s.led.Reached(s.p.Budget) {
		s.cut = true
		return res, false, nil, errBudgetSpent
	}
	if s.r.prior[s.p.Op].Len() > 0 {
		res, err = s.reuse(pt)
		return res, true, nil, err
	}
	res, merr, err = s.measure(ctx, pt)
	return res, false, merr, err
}

// reuse takes the operation's next run of the resumed stream, which must be of pt, with
// the settings this sweep asks for (plan.SameSettings: the common ones, its length among
// them, and plan.Fixed), and charges the budget its recorded wall time.
func (s *state) reuse(pt plan.Point) (result.Result, error) {
	prior := s.r.prior[s.p.Op]
	if got, _ := prior.Next(); got != pt {
		return result.Result{}, fmt.Errorf("%w: its next %s run is of %v, this sweep asks for %v (%d runs in)", ErrStreamMismatch, s.p.Op, got, pt, s.o.Reused) // text: local (this sweep's plan)
	}
	rec, _ := prior.Take(pt)
	if err := plan.SameSettings(rec.Config, s.config(pt), plan.Fixed...); err != nil {
		return result.Result{}, fmt.Errorf("%w: its next %s run, of %v, has %w (%d runs in): resume with the settings it was begun with", ErrStreamMismatch, s.p.Op, pt, err, s.o.Reused) // text: local (this sweep's plan)
	}
	s.led.Charge(rec.charge())
	s.o.Reused++
	return rec.Result, nil
}

// measure runs pt with the Measurer (as long as its queue needs, with the samples a p99
// objective needs), charges the budget its wall time and records it; merr is the
// Measurer's error (the run's Error too), err one that ends the sweep.
func (s *state) measure(ctx context.Context, pt plan.Point) (res result.Result, merr, err error) {
	res, wall, merr, err := s.led.Measure(ctx, s.r.M, s.config(pt), s.r.now)
	if err != nil {
		return res, nil, err // an interrupted point is no data point
	}
	if s.r.Record != nil {
		if rerr := s.r.Record(Recorded{Result: res, WallNS: wall.Nanoseconds()}); rerr != nil {
			return res, nil, fmt.Errorf("recording a result: %w", rerr)
		}
	}
	s.o.Runs++
	return res, merr, nil
}

// config is the plan of a run of pt: the base with pt's values, as long as pt's queue
// needs (length), with the samples a p99 objective needs.
func (s *state) config(pt plan.Point) result.Config {
	cfg := Apply(s.p.Base, pt)
	cfg.Op = s.p.Op
	if s.p.Base.DurationS > 0 {
		cfg.DurationS = s.length(pt)
	}
	if s.p.Objective.NeedsP99() {
		cfg = WithP99Samples(cfg)
	}
	return cfg
}

// record adds a run of pt (or its failure) to the state.
func (s *state) record(pt plan.Point, round int, res result.Result) {
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
func (s *state) measureRound(ctx context.Context, pts []plan.Point, phase string) error {
	id := s.next()
	for _, pt := range pts {
		if err := s.once(ctx, pt, id, phase); err != nil {
			return err
		}
	}
	return nil
}
