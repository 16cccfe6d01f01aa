package plan

import (
	"fmt"

	"github.com/rdmabench/rdmabench/internal/text"
	"github.com/rdmabench/rdmabench/result"
)

// --mr: where a bandwidth test's WRs get their lkeys. Per-io and cache register inside
// the timed loop, which runs one QP, posts one WR at a time and busy-polls
// (verbs.BWParams.CheckMR).
const (
	// MRPool: the session's buffer, registered once when the session is made (the
	// default; a plan says it as no --mr, "").
	MRPool = "pool"
	// MRPerIO: the loop registers each WR's slot just before posting it and
	// deregisters that MR when the WR is known complete, inside the timed window.
	MRPerIO = "per-io"
	// MRCache: an LRU of at most --mr-cache registrations keyed by (address, length),
	// as UCX's registration cache: a miss registers (evicting the least recently used
	// entry no outstanding WR uses), a hit reuses.
	MRCache = "cache"
)

// MRModes are the --mr modes, the default first.
var MRModes = []string{MRPool, MRPerIO, MRCache}

// MRInLoop says whether mode registers inside the loop (per-io or cache).
func MRInLoop(mode string) bool { return mode == MRPerIO || mode == MRCache }

// DefaultMRCache is --mr-cache's default where --tx-depth is smaller: a cache holds
// max(DefaultMRCache, --tx-depth) registrations, one for every WR in flight.
const DefaultMRCache = 16

// MaxMRCache bounds --mr-cache, as MaxSQDepth bounds --tx-depth (the cache need never
// hold more registrations than the WRs that can be outstanding plus the slots they
// cycle over).
const MaxMRCache = MaxSQDepth

// validateMR checks --mr and --mr-cache against the rest of the plan.
func validateMR(c Config) error {
	mode := c.MR
	switch {
	case c.MRCache != 0 && mode != MRCache:
		return fmt.Errorf("--mr-cache applies to --mr cache")
	case mode == "" || mode == MRPool:
		return nil
	case !MRInLoop(mode):
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
	case mode == MRPerIO && c.CQMod != 1:
		return fmt.Errorf("--mr per-io deregisters each WR's MR at its completion, so every WR is signalled: --cq-mod %d, want 1", c.CQMod)
	case mode == MRCache && (c.MRCache < 1 || c.MRCache > MaxMRCache):
		return fmt.Errorf("--mr-cache %d: want 1 to %d registrations", c.MRCache, MaxMRCache)
	case mode == MRCache && c.MRCache < c.SQDepth:
		return fmt.Errorf("--mr-cache %d is less than --tx-depth %d: the cache must hold a registration for every WR that can be outstanding (each pins its entry, and a miss must find one to evict); raise --mr-cache or lower --tx-depth", c.MRCache, c.SQDepth)
	}
	return nil
}
