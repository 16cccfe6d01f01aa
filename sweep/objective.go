package sweep

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/rdmabench/rdmabench/result"
)

// Objective is what a sweep maximises.
type Objective struct {
	Name   string // "bw", "rate", "p99" or "bw-p99"
	MaxP99 time.Duration
}

// ParseObjective reads --objective (and --max-p99 for bw-p99).
func ParseObjective(name string, maxP99 time.Duration) (Objective, error) {
	switch name {
	case "bw", "rate", "p99":
		return Objective{Name: name}, nil
	case "bw-p99":
		if maxP99 <= 0 {
			return Objective{}, fmt.Errorf("--objective bw-p99 needs --max-p99 (e.g. 500us)")
		}
		return Objective{Name: name, MaxP99: maxP99}, nil
	}
	return Objective{}, fmt.Errorf("unknown objective %q: want bw (max bandwidth), rate (max message rate), p99 (min p99 latency) or bw-p99 (max bandwidth with p99 under --max-p99)", name)
}

// Objectives lists every objective the report shows an optimum for.
func Objectives(maxP99 time.Duration) []Objective {
	o := []Objective{{Name: "bw"}, {Name: "rate"}, {Name: "p99"}}
	if maxP99 > 0 {
		o = append(o, Objective{Name: "bw-p99", MaxP99: maxP99})
	}
	return o
}

// Score is higher-is-better; ok is false when the result does not qualify.
func (o Objective) Score(r result.Result) (float64, bool) {
	if r.Error != "" || r.Iterations == 0 {
		return 0, false
	}
	switch o.Name {
	case "rate":
		return r.MsgRateMpps, true
	case "p99":
		if r.Lat.Samples == 0 {
			return 0, false
		}
		return -float64(r.Lat.P99), true
	case "bw-p99":
		if r.Lat.Samples == 0 || r.Lat.P99 > o.MaxP99.Nanoseconds() {
			return 0, false
		}
	}
	return r.BWGbps, true
}

func (o Objective) String() string {
	if o.Name == "bw-p99" {
		return fmt.Sprintf("bw-p99<=%s", o.MaxP99)
	}
	return o.Name
}

// Describe is the objective in words, with its unit.
func (o Objective) Describe() string {
	return map[string]string{
		"bw": "max bandwidth (Gb/s)", "rate": "max message rate (Mpps)", "p99": "min p99 completion latency",
		"bw-p99": "max bandwidth with p99 <= " + strings.TrimSpace(o.MaxP99.String()),
	}[o.Name]
}

// Rescore scores stats for another objective from their medians.
func Rescore(stats []Stat, o Objective) []Stat {
	out := make([]Stat, 0, len(stats))
	for _, st := range stats {
		if st.Runs == 0 {
			continue
		}
		r := result.Result{Iterations: 1, BWGbps: st.BWGbps, MsgRateMpps: st.MsgRateMpps, Lat: result.Latency{Samples: 1, P99: st.P99NS}}
		v, ok := o.Score(r)
		st.Feasible = ok && st.Feasible
		st.Score = v
		if !st.Feasible {
			st.Score = math.Inf(-1)
		}
		out = append(out, st)
	}
	return out
}
