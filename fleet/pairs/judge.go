package pairs

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rdmabench/rdmabench/internal/stat"
)

// PairResult is what one test of a fleet measured: A the client, B the server, its
// bandwidth (Gb/s; 0 for a latency test), its median latency (ns; 0 when not a latency
// test) and its error ("" when it ran).
type PairResult struct {
	A, B     int
	Gbps     float64
	LatP50NS int64
	Err      string
}

// latency tells a latency test from a bandwidth test.
func (r PairResult) latency() bool { return r.LatP50NS > 0 }

// value is what the pair measured in its metric's unit: Gb/s, or p50 in microseconds.
func (r PairResult) value() float64 {
	if r.latency() {
		return float64(r.LatP50NS) / 1e3
	}
	return r.Gbps
}

// The metrics of a fleet's results (Verdict.Metric, Matrix).
const (
	MetricBW  = "bw"  // bandwidth, Gb/s; less is worse
	MetricLat = "lat" // p50 latency, microseconds; more is worse
)

// OutlierOpts are the thresholds of Judge; zero values take the defaults.
type OutlierOpts struct {
	// MinBWFraction: a pair is bad below this fraction of the fleet's median
	// bandwidth (default 0.93).
	MinBWFraction float64
	// MaxLatFactor: a pair is bad above this multiple of the fleet's median p50
	// latency (default 2.1).
	MaxLatFactor float64
}

// Default thresholds, as ClusterKit judges a fleet.
const (
	DefaultMinBWFraction = 0.93
	DefaultMaxLatFactor  = 2.1
)

func (o OutlierOpts) withDefaults() OutlierOpts {
	if o.MinBWFraction <= 0 {
		o.MinBWFraction = DefaultMinBWFraction
	}
	if o.MaxLatFactor <= 0 {
		o.MaxLatFactor = DefaultMaxLatFactor
	}
	return o
}

// MinMeasured is the fewest measured pairs of a metric that make a fleet median.
const MinMeasured = 3

// Verdict is Judge's word on one pair. Exactly one of good (none set), Bad, CannotTell
// and, after retests, Flaky holds.
type Verdict struct {
	A, B int
	// Bad: the pair failed, measured nothing, or was an outlier against the fleet.
	Bad bool
	// CannotTell: the pair measured, but fewer than MinMeasured pairs of its metric
	// did, so there is no fleet median to judge it against. It is not good.
	CannotTell bool
	// Flaky: bad in the first pass, not bad in a retest in isolation (Retests).
	Flaky bool
	// Retests is how many times the pair was run again, and BadRetests in how many of
	// those it was bad (Retests.Final).
	Retests, BadRetests int
	// Why says what the verdict rests on, for people.
	Why string
	// Metric is MetricBW or MetricLat ("" for a pair that measured nothing); Value is
	// what the pair measured and Median the fleet's median, in that metric's unit
	// (Gb/s, or microseconds); Median is 0 when there is none.
	Metric        string
	Value, Median float64
}

// Good is a pair that measured and was no outlier: neither bad, flaky nor unjudged.
func (v Verdict) Good() bool { return !v.Bad && !v.CannotTell && !v.Flaky }

// Judge gives a verdict on each result, in the same order. The fleet's median is taken
// per metric over the pairs that measured (no error, a value above 0): bandwidth tests
// against the bandwidth median, latency tests (LatP50NS > 0) against the latency
// median. A pair is bad when it failed, when it ran but measured nothing, when its
// bandwidth is below MinBWFraction x the median, or when its latency is above
// MaxLatFactor x the median; exactly at the threshold is not bad. With fewer than
// MinMeasured measured pairs of its metric a pair that measured cannot be told (a
// failure is bad all the same).
func Judge(results []PairResult, opts OutlierOpts) []Verdict {
	opts = opts.withDefaults()
	var bws, lats []float64
	for _, r := range results {
		switch {
		case r.Err != "":
		case r.latency():
			lats = append(lats, r.value())
		case r.Gbps > 0:
			bws = append(bws, r.Gbps)
		}
	}
	out := make([]Verdict, len(results))
	for i, r := range results {
		v := Verdict{A: r.A, B: r.B}
		switch {
		case r.Err != "":
			v.Bad, v.Why = true, "failed: "+strings.ReplaceAll(r.Err, "\n", "; ")
		case r.latency():
			v.Metric, v.Value = MetricLat, r.value()
			judge(&v, lats, func(med float64) (bool, string) {
				if v.Value > opts.MaxLatFactor*med {
					return true, fmt.Sprintf("p50 %.2f us is above %g x the fleet median %.2f us", v.Value, opts.MaxLatFactor, med)
				}
				return false, fmt.Sprintf("p50 %.2f us, within %g x the fleet median %.2f us", v.Value, opts.MaxLatFactor, med)
			})
		case r.Gbps > 0:
			v.Metric, v.Value = MetricBW, r.Gbps
			judge(&v, bws, func(med float64) (bool, string) {
				if v.Value < opts.MinBWFraction*med {
					return true, fmt.Sprintf("%.3f Gb/s is below %g x the fleet median %.3f Gb/s", v.Value, opts.MinBWFraction, med)
				}
				return false, fmt.Sprintf("%.3f Gb/s, within %g x the fleet median %.3f Gb/s", v.Value, opts.MinBWFraction, med)
			})
		default:
			v.Bad, v.Why = true, "ran but measured nothing"
		}
		out[i] = v
	}
	return out
}

// judge fills in v against the measured values of its metric.
func judge(v *Verdict, measured []float64, outlier func(median float64) (bool, string)) {
	if len(measured) < MinMeasured {
		v.CannotTell = true
		v.Why = fmt.Sprintf("cannot tell: %d measured %s pairs, a fleet median needs at least %d", len(measured), metricWords(v.Metric), MinMeasured)
		return
	}
	v.Median = stat.Median(measured)
	v.Bad, v.Why = outlier(v.Median)
}

func metricWords(m string) string {
	if m == MetricLat {
		return "latency"
	}
	return "bandwidth"
}

// Retests keeps the books of --retest N: the pairs bad in the first pass run again in
// isolation, one pair per round, up to N times each; a pair stays bad only while it is
// bad in every retest, and one that is not bad in a retest is flaky (and needs no more
// retests). A retest is judged as the first pass would have judged the pair had it
// measured that: against the first pass's results with the pair's result replaced.
//
// The coordinator's loop:
//
//	rt := NewRetests(results, opts, n)
//	for rounds := rt.Rounds(); len(rounds) > 0; rounds = rt.Rounds() {
//		for _, round := range rounds {
//			rt.Record(run(round[0]))
//		}
//	}
//	final := rt.Final()
type Retests struct {
	// N is how many times each bad pair is run again (--retest N); 0 runs none.
	N int

	opts    OutlierOpts
	results []PairResult
	first   []Verdict
	runs    map[Pair][]Verdict
}

// NewRetests judges the first pass (Judge) and starts the books for n retests.
func NewRetests(results []PairResult, opts OutlierOpts, n int) *Retests {
	return &Retests{
		N:       max(n, 0),
		opts:    opts,
		results: slices.Clone(results),
		first:   Judge(results, opts),
		runs:    map[Pair][]Verdict{},
	}
}

// First is the first pass's verdicts, in the order of its results.
func (rt *Retests) First() []Verdict { return slices.Clone(rt.first) }

// Pending is the pairs that need another retest, in the first pass's order: bad in the
// first pass and in every retest so far, with fewer than N retests.
func (rt *Retests) Pending() []Pair {
	var out []Pair
	seen := map[Pair]bool{}
	for _, v := range rt.first {
		p := Pair{v.A, v.B}
		if !v.Bad || seen[p] {
			continue
		}
		seen[p] = true
		if rt.pending(p) {
			out = append(out, p)
		}
	}
	return out
}

func (rt *Retests) pending(p Pair) bool {
	runs := rt.runs[p]
	if len(runs) >= rt.N {
		return false
	}
	for _, v := range runs {
		if !v.Bad {
			return false
		}
	}
	return true
}

// Rounds is Pending as rounds of one pair each: a retest runs in isolation.
func (rt *Retests) Rounds() []Round {
	var out []Round
	for _, p := range rt.Pending() {
		out = append(out, Round{p})
	}
	return out
}

// Record judges one retest's result and books it; it refuses a pair that is not
// pending.
func (rt *Retests) Record(r PairResult) (Verdict, error) {
	p := Pair{r.A, r.B}
	if !slices.Contains(rt.Pending(), p) {
		return Verdict{}, fmt.Errorf("retest of %d -> %d: the pair is not pending a retest", r.A, r.B)
	}
	fleet := slices.Clone(rt.results)
	for i := range fleet {
		if fleet[i].A == r.A && fleet[i].B == r.B {
			fleet[i] = r
		}
	}
	var v Verdict
	for i, fv := range Judge(fleet, rt.opts) {
		if fleet[i].A == r.A && fleet[i].B == r.B {
			v = fv
		}
	}
	rt.runs[p] = append(rt.runs[p], v)
	return v, nil
}

// Final is each pair's verdict after its retests, in the first pass's order. A pair
// not bad in the first pass keeps its verdict. A pair bad in the first pass is bad
// when it was bad in every retest it had (or had none), and flaky, not bad, when it
// was not bad in one of them; Retests and BadRetests count them and Why says so.
func (rt *Retests) Final() []Verdict {
	out := rt.First()
	for i, v := range out {
		if !v.Bad {
			continue
		}
		runs := rt.runs[Pair{v.A, v.B}]
		v.Retests = len(runs)
		for _, r := range runs {
			if r.Bad {
				v.BadRetests++
			}
		}
		switch {
		case v.Retests == 0:
		case v.BadRetests == v.Retests:
			v.Why = fmt.Sprintf("%s; bad again in %d of %d retests", v.Why, v.BadRetests, v.Retests) // text: cleaned (Why is built from cleaned text)
		default:
			last := runs[len(runs)-1]
			v.Bad, v.Flaky = false, true
			v.Why = fmt.Sprintf("flaky: %s; then in a retest: %s", v.Why, last.Why) // text: cleaned (Why is built from cleaned text)
		}
		out[i] = v
	}
	return out
}
