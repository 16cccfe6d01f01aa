package result

import (
	"fmt"
	"math"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram bounds: 1 ns to 100 s at 3 significant digits.
const (
	histMin = 1
	histMax = 100_000_000_000
	histSig = 3
)

// Supported says whether n samples support reporting percentile p (a fraction: 0.99 for
// p99). This is rdmabench's one rule for tail percentiles:
//
//	n >= 10 / (1 - p)    p50: 20, p90: 100, p99: 1000, p99.9: 10000, p99.99: 100000
//
// that is, at least 10 samples lie above the percentile. The histogram ranks
// round(p*n), so with fewer the "percentile" is one of the few largest samples (with
// 1000 samples, p99.99 is the max and p99.9 the second largest): a number about those
// samples, not about the tail. Below the rule a percentile is not reported (JSON null).
func Supported(p float64, n uint64) bool {
	return p >= 0 && p < 1 && n >= MinSamples(p)
}

// MinSamples is the fewest samples that support percentile p (see Supported).
func MinSamples(p float64) uint64 {
	if p >= 1 {
		return math.MaxUint64 // the max is not a percentile any count supports
	}
	// 10/(1-p) is inexact in binary (10/(1-0.9999) = 100000.0000000011): a relative
	// nudge down keeps the round numbers round.
	return uint64(math.Ceil(10 / (1 - p) * (1 - 1e-9)))
}

// Moments are exact statistics of every sample, computed by the timed loop.
type Moments struct {
	Count       uint64
	Min, Max    int64
	Mean, Stdev float64 // population standard deviation
}

// NewHistogram returns an empty histogram with rdmabench's bounds (1 ns .. 100 s, 3
// significant digits).
func NewHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(histMin, histMax, histSig)
}

// NewLatency summarises a histogram of every sample (ns) with its exact moments and
// returns the encoded histogram. Min, max, mean and stdev are the moments; the
// percentiles come from the histogram, each only where m.Count supports it.
func NewLatency(h *hdrhistogram.Histogram, m Moments) (Latency, string, error) {
	if m.Count == 0 {
		return Latency{}, "", nil
	}
	if h == nil || h.TotalCount() != int64(m.Count) {
		n := int64(0)
		if h != nil {
			n = h.TotalCount()
		}
		// Both come from the same loop: a difference means samples were lost on the way.
		return Latency{}, "", fmt.Errorf("latency histogram holds %d samples, the moments count %d", n, m.Count)
	}
	l := Latency{Samples: m.Count, Min: m.Min, Max: m.Max, Mean: m.Mean, Stdev: m.Stdev}
	at := func(p float64) *int64 {
		if !Supported(p, m.Count) {
			return nil
		}
		// A percentile is its bucket's upper bound, and a histogram converted from
		// another clock's buckets can round either way: keep it within the exact
		// min and max.
		v := min(max(h.ValueAtQuantile(p*100), m.Min), m.Max)
		return &v
	}
	l.P50, l.P90, l.P99, l.P99_9, l.P99_99 = at(0.50), at(0.90), at(0.99), at(0.999), at(0.9999)
	enc, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		return l, "", err
	}
	return l, string(enc), nil
}

// FromSamples builds the histogram and moments from raw samples (ns): for tests and
// small callers. Samples outside the histogram's bounds are recorded at the nearest
// bound; the moments use them as given.
func FromSamples(samples []int64) (*hdrhistogram.Histogram, Moments) {
	h := NewHistogram()
	var m Moments
	if len(samples) == 0 {
		return h, m
	}
	var m2 float64
	m.Min, m.Max = math.MaxInt64, math.MinInt64
	for i, v := range samples {
		h.RecordValue(min(max(v, histMin), histMax)) // in bounds: cannot fail
		m.Min, m.Max = min(m.Min, v), max(m.Max, v)
		d := float64(v) - m.Mean // Welford: stable for long runs
		m.Mean += d / float64(i+1)
		m2 += d * (float64(v) - m.Mean)
	}
	m.Count = uint64(len(samples))
	m.Stdev = math.Sqrt(m2 / float64(len(samples)))
	return h, m
}

// DecodeHistogram turns Result.Histogram back into a histogram, for any percentile.
func DecodeHistogram(s string) (*hdrhistogram.Histogram, error) {
	if s == "" {
		return NewHistogram(), nil
	}
	return hdrhistogram.Decode([]byte(s))
}
