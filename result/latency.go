package result

import (
	"math"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram bounds: 1 ns to 100 s at 3 significant digits.
const (
	histMin = 1
	histMax = 100_000_000_000
	histSig = 3
)

// NewLatency summarises samples (ns) and returns the encoded histogram. The mean and
// the (population) standard deviation are computed exactly from the samples; the
// percentiles from the histogram.
func NewLatency(samples []int64) (Latency, string, error) {
	var l Latency
	if len(samples) == 0 {
		return l, "", nil
	}
	h := hdrhistogram.New(histMin, histMax, histSig)
	var mean, m2 float64
	l.Min, l.Max = math.MaxInt64, math.MinInt64
	for i, v := range samples {
		if err := h.RecordValue(min(max(v, histMin), histMax)); err != nil {
			return l, "", err
		}
		l.Min, l.Max = min(l.Min, v), max(l.Max, v)
		d := float64(v) - mean // Welford: stable for long runs
		mean += d / float64(i+1)
		m2 += d * (float64(v) - mean)
	}
	l.Samples = uint64(len(samples))
	l.Mean = mean
	l.Stdev = math.Sqrt(m2 / float64(len(samples)))
	p := h.ValueAtPercentiles([]float64{50, 90, 99, 99.9, 99.99})
	// A percentile is its bucket's upper bound; never report one above the true max.
	l.P50, l.P90, l.P99 = min(p[50], l.Max), min(p[90], l.Max), min(p[99], l.Max)
	l.P99_9, l.P99_99 = min(p[99.9], l.Max), min(p[99.99], l.Max)
	enc, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		return l, "", err
	}
	return l, string(enc), nil
}

// DecodeHistogram turns Result.Histogram back into a histogram, for any percentile.
func DecodeHistogram(s string) (*hdrhistogram.Histogram, error) {
	if s == "" {
		return hdrhistogram.New(histMin, histMax, histSig), nil
	}
	return hdrhistogram.Decode([]byte(s))
}
