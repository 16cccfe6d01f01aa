package verbs

import (
	"fmt"

	"github.com/rdmabench/rdmabench/plan"
)

// Where a bandwidth loop's WRs get their lkey (BWParams.MR): the plan's --mr modes
// (plan.MRPool and the others; the cache holds BWParams.MRCache registrations).
const (
	MRModePool  = plan.MRPool
	MRModePerIO = plan.MRPerIO
	MRModeCache = plan.MRCache
)

// MRInLoop says whether mode registers inside the loop (per-io or cache).
func MRInLoop(mode string) bool { return plan.MRInLoop(mode) }

// MRStats is what a loop that registers in the loop counted (BWParams.MR per-io or
// cache). Its MRs are registered with IBV_ACCESS_LOCAL_WRITE, exactly a WR's slot
// (address and message size), on the session's PD.
type MRStats struct {
	Regs, Deregs uint64 // successful ibv_reg_mr / ibv_dereg_mr calls; equal unless a deregistration failed
	// DeregsAfter, of Deregs, came after the window closed (not timed): the cache's
	// entries, and after a stop or a failure the MRs of WRs not known complete.
	DeregsAfter  uint64
	Hits, Misses uint64 // cache: look-ups of the WRs posted (a miss registers)
	RegNS        int64  // time inside ibv_reg_mr (every registration is in the window)
	DeregNS      int64  // time inside ibv_dereg_mr in the window
}

// CheckMR says what a loop over nqp QPs cannot do with p.MR: the loops that register
// in the loop run one QP, post one WR at a time and busy-poll; per-io signals every WR
// (its MR goes at its completion); a cache must hold at least a registration per WR
// that can be outstanding.
func (p BWParams) CheckMR(nqp int) error {
	switch {
	case p.MR == "" || p.MR == MRModePool:
		return nil
	case !MRInLoop(p.MR):
		return fmt.Errorf("bandwidth loop: MR mode %q: want pool, per-io or cache", p.MR)
	case nqp != 1 || p.Rounds || p.PostList != 1 || p.Events || p.PerQP:
		return fmt.Errorf("bandwidth loop: MR mode %s runs one QP (the session has %d), one WR per post, busy-polling, no rounds", p.MR, nqp)
	case p.MR == MRModePerIO && p.CQMod != 1:
		return fmt.Errorf("bandwidth loop: MR mode per-io signals every WR: cq-mod %d, want 1", p.CQMod)
	case p.MR == MRModeCache && p.MRCache < p.SQDepth:
		return fmt.Errorf("bandwidth loop: a registration cache of %d entries for %d WRs in flight: want at least one per WR", p.MRCache, p.SQDepth)
	}
	return nil
}
