package plan

import "fmt"

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
// hugepages, completion events): nil, or a *SettingError naming the first that differs.
// Both are compared as the run's operation fills them (Defaults), so a plan that left
// a setting to its default matches the run that recorded the default's value.
func SameSettings(prior, want Config) error {
	w := prior
	for _, s := range settings {
		s.set(&w, want)
	}
	Defaults(&prior)
	Defaults(&w)
	for _, s := range settings {
		if a, b := s.get(prior), s.get(w); a != b {
			return &SettingError{Key: s.key, Prior: a, Want: b}
		}
	}
	return nil
}
