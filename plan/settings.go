package plan

import (
	"fmt"
	"slices"
)

// setting is one of a plan's common settings: what every run of a search shares besides
// the dimensions it varies (the point).
type setting struct {
	key string
	get func(c Config) any
	set func(dst *Config, src Config)
}

// settings are the common settings a resumed search's prior runs must share with it
// (SameSettings): a run of another length, warm-up, counters mode, memory or completion
// mode measured something else.
var settings = []setting{
	{"duration_s", func(c Config) any { return c.DurationS }, func(d *Config, s Config) { d.DurationS = s.DurationS }},
	{"iterations", func(c Config) any { return c.Iterations }, func(d *Config, s Config) { d.Iterations = s.Iterations }},
	{"warmup_iterations", func(c Config) any { return c.WarmupIterations }, func(d *Config, s Config) { d.WarmupIterations = s.WarmupIterations }},
	{"counters", func(c Config) any {
		if c.Counters == "" {
			return "auto"
		}
		return c.Counters
	}, func(d *Config, s Config) { d.Counters = s.Counters }},
	{"hugepages", func(c Config) any { return c.Hugepages }, func(d *Config, s Config) { d.Hugepages = s.Hugepages }},
	{"completion_events", func(c Config) any { return c.CompletionEvents }, func(d *Config, s Config) { d.CompletionEvents = s.CompletionEvents }},
}

// Fixed are the settings of a plan that a sweep holds for all its runs besides the
// common ones (the QPs, loop threads and their CPUs, completion-event moderation, the
// path MTU, the service level, the traffic class, PCIe relaxed ordering): a resumed sweep
// checks them too (SameSettings' keys). The hunt varies the QPs, the MTU and the traffic
// class by point, and records its runs with them, so it checks the common ones only.
var Fixed = []string{"num_qps", "threads", "cpu_list", "cq_moderation_count", "cq_moderation_usec", "mtu_bytes", "sl",
	"traffic_class", "disable_pcie_relaxed"}

var fixed = []setting{
	{"num_qps", func(c Config) any { return max(c.NumQPs, 1) }, func(d *Config, s Config) { d.NumQPs = s.NumQPs }},
	{"threads", func(c Config) any { return max(c.Threads, 1) }, func(d *Config, s Config) { d.Threads = s.Threads }},
	{"cpu_list", func(c Config) any { return c.CPUList }, func(d *Config, s Config) { d.CPUList = s.CPUList }},
	{"cq_moderation_count", func(c Config) any { return c.CQModerationCount }, func(d *Config, s Config) { d.CQModerationCount = s.CQModerationCount }},
	{"cq_moderation_usec", func(c Config) any { return c.CQModerationUS }, func(d *Config, s Config) { d.CQModerationUS = s.CQModerationUS }},
	{"mtu_bytes", func(c Config) any { return c.MTUBytes }, func(d *Config, s Config) { d.MTUBytes = s.MTUBytes }},
	{"sl", func(c Config) any { return c.SL }, func(d *Config, s Config) { d.SL = s.SL }},
	{"traffic_class", func(c Config) any { return c.TrafficClass }, func(d *Config, s Config) { d.TrafficClass = s.TrafficClass }},
	{"disable_pcie_relaxed", func(c Config) any { return c.DisablePCIeRelaxed }, func(d *Config, s Config) { d.DisablePCIeRelaxed = s.DisablePCIeRelaxed }},
}

// SettingError is a prior run whose common setting Key was Prior where the search
// resumed with it asks for Want.
type SettingError struct {
	Key         string
	Prior, Want any
}

func (e *SettingError) Error() string {
	return fmt.Sprintf("%s %v, this plan %v", e.Key, e.Prior, e.Want)
}

// SameSettings says whether a prior run's plan (a resumed stream's, the sweep's and
// the hunt's alike) has want's common settings (duration, iterations, warm-up, counters,
// hugepages, completion events), and those of keys (of Fixed): nil, or a *SettingError
// naming the first that differs. Both are compared as the run's operation fills them
// (Defaults), so a plan that left a setting to its default matches the run that
// recorded the default's value.
func SameSettings(prior, want Config, keys ...string) error {
	check := slices.Clone(settings)
	for _, s := range fixed {
		if slices.Contains(keys, s.key) {
			check = append(check, s)
		}
	}
	w := prior
	for _, s := range check {
		s.set(&w, want)
	}
	Defaults(&prior)
	Defaults(&w)
	for _, s := range check {
		if a, b := s.get(prior), s.get(w); a != b {
			return &SettingError{Key: s.key, Prior: a, Want: b}
		}
	}
	return nil
}
