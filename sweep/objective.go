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

// NeedsP99 says whether the objective scores a point by its p99.
func (o Objective) NeedsP99() bool { return o.Name == "p99" || o.Name == "bw-p99" }

// Score is higher-is-better; ok is false when the result does not qualify. A result
// whose p99 its sample count does not support (nil) does not qualify for an objective
// that needs one: a "p99" that is one of a few largest samples would rank points by luck.
func (o Objective) Score(r result.Result) (float64, bool) {
	if r.Error != "" || r.Iterations == 0 {
		return 0, false
	}
	p99 := r.Lat.P99
	bw, rate := Throughput(r)
	switch o.Name {
	case "rate":
		return rate, true
	case "p99":
		if p99 == nil {
			return 0, false
		}
		return -float64(*p99), true
	case "bw-p99":
		if p99 == nil || *p99 > o.MaxP99.Nanoseconds() {
			return 0, false
		}
	}
	return bw, true
}

// Throughput is what a sweep compares of a run: its steady window's bandwidth and
// message rate (result.Result.Steady: the link with every queue full, so that deep and
// shallow queues are compared on the link, not on their fill and drain), else the whole
// window's (a run without one: rounds, registrations in the loop, a queue posted once).
func Throughput(r result.Result) (bwGbps, mpps float64) {
	if r.Steady != nil {
		return r.Steady.BWGbps, r.Steady.MsgRateMpps
	}
	return r.BWGbps, r.MsgRateMpps
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

// Value is the result's objective in its own unit (Unit); ok as for Score.
func (o Objective) Value(r result.Result) (float64, bool) {
	v, ok := o.Score(r)
	if o.Name == "p99" {
		v = -v
	}
	return v, ok && v > 0
}

// Unit names Value's unit, as the result schema names it.
func (o Objective) Unit() string {
	return map[string]string{"bw": "gbit_per_s", "rate": "mpps", "p99": "ns", "bw-p99": "gbit_per_s"}[o.Name]
}

// LowerIsBetter says whether a smaller Value is better (latency).
func (o Objective) LowerIsBetter() bool { return o.Name == "p99" }

// goodness is the log of the value, signed so that higher is better: the scale on
// which points are compared (multiplicative noise becomes additive there).
func (o Objective) goodness(r result.Result) (float64, bool) {
	v, ok := o.Value(r)
	if !ok {
		return 0, false
	}
	if o.LowerIsBetter() {
		return -math.Log(v), true
	}
	return math.Log(v), true
}
