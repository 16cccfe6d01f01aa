package plan

import (
	"context"
	"time"

	"github.com/rdmabench/rdmabench/result"
)

// Ledger is a search's budget and what its runs have cost it: the sum of their wall
// times, each timed around its Measurer call (MeasureOnce), and each run taken from a
// resumed stream at the wall time recorded with it. Both searches (the sweep, the hunt)
// keep one, so that a budget means one thing: the time spent running tests. What the
// search itself does between runs, and the pause before a resume, are not charged: a
// resumed search has the budget left it had when it was cut, and one that replays its
// runs (the sweep) stops at the run a straight one would.
type Ledger struct {
	// Budget bounds what may be spent; 0 is no bound.
	Budget time.Duration
	spent  time.Duration
}

// Measure runs cfg once with m (MeasureOnce) and charges its wall time, an interrupted
// run's too.
func (l *Ledger) Measure(ctx context.Context, m Measurer, cfg Config, now func() time.Time) (res result.Result, wall time.Duration, merr, err error) {
	res, wall, merr, err = MeasureOnce(ctx, m, cfg, now)
	l.Charge(wall)
	return res, wall, merr, err
}

// Charge adds the wall time of a run (one measured elsewhere, or resumed) to what is
// spent.
func (l *Ledger) Charge(wall time.Duration) { l.spent += max(wall, 0) }

// Spent is the sum of the runs' wall times charged so far.
func (l *Ledger) Spent() time.Duration { return l.spent }

// Reached says whether what is spent has reached end (the budget, or the end of a
// phase's share of it); never without a budget.
func (l *Ledger) Reached(end time.Duration) bool { return l.Budget > 0 && l.spent >= end }

// Fits says whether runs costing cost more end by end; always without a budget.
func (l *Ledger) Fits(cost, end time.Duration) bool { return l.Budget <= 0 || l.spent+cost <= end }
