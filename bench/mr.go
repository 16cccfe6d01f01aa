package bench

import (
	"github.com/rdmabench/rdmabench/plan"
	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/verbs"
)

// mrRun is what a measured loop's registrations go into the result as (nil for pool).
func mrRun(c result.Config, res verbs.BWResult) *result.MRRun {
	m := res.MR
	if m == nil || !plan.MRInLoop(c.MR) {
		return nil
	}
	r := &result.MRRun{Mode: c.MR, Regs: m.Regs, Deregs: m.Deregs, DeregsAfterWindow: m.DeregsAfter, Hits: m.Hits,
		Misses: m.Misses, RegNSTotal: m.RegNS, DeregNSTotal: m.DeregNS}
	r.SetShare(res.DurationNS)
	return r
}
