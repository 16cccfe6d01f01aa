package benchtest

import "github.com/rdmabench/rdmabench/verbs"

// mrStats is what a loop that registers in the loop (p.MR per-io or cache) would have
// counted for res: synthetic, like every number of the fake engine. Per-io registers
// and deregisters once per WR completed; the cache is an LRU over the QP's local slots,
// which WRs cycle through: all hits after the first pass when it holds them all, else
// a miss every time. The time inside the verbs is a made-up part of the window.
func mrStats(p verbs.BWParams, res verbs.BWResult) *verbs.MRStats {
	if !verbs.MRInLoop(p.MR) {
		return nil
	}
	n := res.Completed
	m := &verbs.MRStats{RegNS: res.DurationNS / 4, DeregNS: res.DurationNS / 8}
	if p.MR == verbs.MRModePerIO {
		m.Regs, m.Deregs = n, n
		return m
	}
	slots := uint64(p.Layout.LSlots)
	if uint64(p.MRCache) >= slots {
		m.Misses = min(n, slots)
	} else {
		m.Misses = n
	}
	m.Hits = n - m.Misses
	m.Regs, m.Deregs = m.Misses, m.Misses
	m.DeregsAfter = min(m.Regs, uint64(p.MRCache))
	m.DeregNS = 0
	if m.Deregs > m.DeregsAfter { // evictions in the window
		m.DeregNS = res.DurationNS / 8
	}
	return m
}
