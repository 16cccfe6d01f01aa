package hunt

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rdmabench/rdmabench/internal/stat"
	"github.com/rdmabench/rdmabench/plan"
)

// defaultRateGbps: a run's drain is estimated at this rate until a run of its operation
// has shown one (conservative: most NICs run faster).
const defaultRateGbps = 10

// errBudget: no run may start (spent); errTooLong: the next run would end past the
// budget by its estimate (measure).
var (
	errBudget  = errors.New("hunt: the budget is spent")
	errTooLong = fmt.Errorf("%w: the next run would end past it", errBudget)
)

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

// spent: no run may start (the budget's time, its runs' wall times as a sweep's
// (plan.Ledger), or MaxRuns).
func (h *hunter) spent() bool {
	if h.p.MaxRuns > 0 && h.o.PriorRuns+h.o.Runs >= h.p.MaxRuns {
		return true
	}
	return h.led.Reached(h.p.Budget)
}

// fits: a run costing cost more ends within the budget.
func (h *hunter) fits(cost time.Duration) bool { return h.led.Fits(cost, h.p.Budget) }

// measure runs pt once for phase, or takes a prior run of it left for a trial.
func (h *hunter) measure(ctx context.Context, pt Point, phase string) (Measurement, error) {
	if err := ctx.Err(); err != nil {
		return Measurement{}, err
	}
	if m, ok := h.pool.Take(pt); ok {
		h.o.Reused++
		return m, nil
	}
	if h.spent() {
		return Measurement{}, errBudget
	}
	if !h.fits(h.estimate(pt)) {
		h.o.TooLong++
		return Measurement{}, errTooLong
	}
	cfg := pt.Config(h.p.Base)
	res, wall, merr, err := h.led.Measure(ctx, h.m, cfg, h.p.Now)
	if err != nil {
		return Measurement{}, err // an interrupted run is no data
	}
	if plan.Stops(merr) {
		return Measurement{}, merr
	}
	h.seq++
	m := summarise(res, cfg, phase, h.seq, wall.Nanoseconds())
	if h.record != nil {
		if err := h.record(pointRecord(&m)); err != nil {
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
