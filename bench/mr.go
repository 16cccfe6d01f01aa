package bench

import (
	"fmt"
	"github.com/rdmabench/rdmabench/internal/text"

	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/verbs"
)

// --mr: where a bandwidth test's WRs get their lkeys (see verbs.MRModePool and the
// others). Per-io and cache register inside the timed loop, which runs one QP, posts
// one WR at a time and busy-polls (verbs.BWParams.CheckMR).

// DefaultMRCache is --mr-cache's default where --tx-depth is smaller.
const DefaultMRCache = 16

// MaxMRCache bounds --mr-cache, as MaxSQDepth bounds --tx-depth (the cache need never
// hold more registrations than the WRs that can be outstanding plus the slots they
// cycle over).
const MaxMRCache = MaxSQDepth

// validateMR checks --mr and --mr-cache against the rest of the plan.
func validateMR(c result.Config) error {
	mode := c.MR
	switch {
	case c.MRCache != 0 && mode != verbs.MRModeCache:
		return fmt.Errorf("--mr-cache applies to --mr cache")
	case mode == "" || mode == verbs.MRModePool:
		return nil
	case !verbs.MRInLoop(mode):
		return fmt.Errorf("--mr %s: want pool, per-io or cache", text.Quote(mode))
	case c.Test != result.BW:
		return fmt.Errorf("--mr applies to bandwidth tests")
	case c.NumQPs != 1:
		return fmt.Errorf("--mr %s registers in a loop of one QP: drop --qps", mode)
	case c.PostList != 1:
		return fmt.Errorf("--mr %s posts one WR at a time, each with its registration: drop --post-list", mode)
	case c.CompletionEvents:
		return fmt.Errorf("--mr %s busy-polls the CQ: drop --events", mode)
	case c.Peers > 0:
		return fmt.Errorf("--mr %s runs against one server", mode)
	case c.Bidirectional:
		return fmt.Errorf("--mr %s: not with -b/--bidirectional (the server's direction registers once)", mode)
	case Inline(c):
		return fmt.Errorf("--mr %s: an inline WRITE is copied at post time and uses no lkey: drop --inline", mode)
	case mode == verbs.MRModePerIO && c.CQMod != 1:
		return fmt.Errorf("--mr per-io deregisters each WR's MR at its completion, so every WR is signalled: --cq-mod %d, want 1", c.CQMod)
	case mode == verbs.MRModeCache && (c.MRCache < 1 || c.MRCache > MaxMRCache):
		return fmt.Errorf("--mr-cache %d: want 1 to %d registrations", c.MRCache, MaxMRCache)
	case mode == verbs.MRModeCache && c.MRCache < c.SQDepth:
		return fmt.Errorf("--mr-cache %d is less than --tx-depth %d: the cache must hold a registration for every WR that can be outstanding (each pins its entry, and a miss must find one to evict); raise --mr-cache or lower --tx-depth", c.MRCache, c.SQDepth)
	}
	return nil
}

// mrRun is what a measured loop's registrations go into the result as (nil for pool).
func mrRun(c result.Config, res verbs.BWResult) *result.MRRun {
	m := res.MR
	if m == nil || !verbs.MRInLoop(c.MR) {
		return nil
	}
	r := &result.MRRun{Mode: c.MR, Regs: m.Regs, Deregs: m.Deregs, DeregsAfterWindow: m.DeregsAfter, Hits: m.Hits,
		Misses: m.Misses, RegNSTotal: m.RegNS, DeregNSTotal: m.DeregNS}
	r.SetShare(res.DurationNS)
	return r
}
