package result

// MRRun is what a bandwidth run that registered memory in its timed loop (config mr
// per-io or cache) counted: its registrations and deregistrations, the cache's hits
// and misses, and the time inside ibv_reg_mr and ibv_dereg_mr. Registrations are all
// inside the run's window (duration_ns), and so are the deregistrations at completions
// (per-io) and evictions (cache); the cache's leftovers, and after a stop or a failure
// the MRs of WRs not known complete, are deregistered after it (DeregsAfterWindow, not
// timed).
type MRRun struct {
	Mode              string `json:"mode"` // "per-io" or "cache"
	Regs              uint64 `json:"regs"`
	Deregs            uint64 `json:"deregs"`
	DeregsAfterWindow uint64 `json:"deregs_after_window"`
	Hits              uint64 `json:"hits"`
	Misses            uint64 `json:"misses"`
	RegNSTotal        int64  `json:"reg_ns_total"`
	DeregNSTotal      int64  `json:"dereg_ns_total"` // in the window
	// WindowShare is (RegNSTotal + DeregNSTotal) / duration_ns: the part of the window
	// spent registering and deregistering (0 when nothing was measured).
	WindowShare float64 `json:"window_share"`
}

// SetShare sets WindowShare for a window of durationNS.
func (m *MRRun) SetShare(durationNS int64) {
	m.WindowShare = 0
	if durationNS > 0 {
		m.WindowShare = float64(m.RegNSTotal+m.DeregNSTotal) / float64(durationNS)
	}
}
