//go:build linux && cgo

package verbs

import (
	"math"
	"testing"
)

// TestSamplesConvertTicks: the loops record ticks; samples turns them into
// nanoseconds at the loop's calibrated rate. With a rate other than 1 (a TSC), count,
// min, max, mean and standard deviation are the exact moments scaled, each histogram
// value is its bucket's midpoint scaled, and the one-way halving (write_lat: half the
// round trip, a halved rate) halves every statistic.
func TestSamplesConvertTicks(t *testing.T) {
	const rate = 0.37 // ns per tick: a 2.7 GHz TSC
	ticks := []int64{100, 200, 300, 1000, 3_000_001, -5}
	s := samplesOfTicks(ticks, rate)
	m := s.Moments
	// The five valid samples in ticks: sum 3,001,601, mean 600,320.2.
	n := 5.0
	sum, sq := 0.0, 0.0
	for _, v := range ticks[:5] {
		sum += float64(v)
		sq += float64(v) * float64(v)
	}
	mean := sum / n
	stdev := math.Sqrt(sq/n - mean*mean)
	if m.Count != 5 || s.Backwards != 1 {
		t.Fatalf("count %d, backwards %d; want 5 and 1", m.Count, s.Backwards)
	}
	if m.Min != 37 || m.Max != int64(math.Round(3_000_001*rate)) {
		t.Errorf("min %d max %d ns; want 37 and %d", m.Min, m.Max, int64(math.Round(3_000_001*rate)))
	}
	if math.Abs(m.Mean-mean*rate) > 1e-6*mean*rate {
		t.Errorf("mean %.6f ns; want %.6f (the ticks' mean x %v)", m.Mean, mean*rate, rate)
	}
	if math.Abs(m.Stdev-stdev*rate) > 1e-6*stdev*rate {
		t.Errorf("stdev %.6f ns; want %.6f (the ticks' stdev x %v)", m.Stdev, stdev*rate, rate)
	}
	// The histogram: each sample at its bucket's midpoint, scaled. The largest sample's
	// bucket is wide: its midpoint, not its lower bound, is the value recorded.
	if got := s.Hist.TotalCount(); got != 5 {
		t.Fatalf("histogram holds %d samples; want 5", got)
	}
	low, width := histBucket(3_000_001)
	if width < 64 {
		t.Fatalf("bucket of 3,000,001 ticks is %d wide: the test wants a wide one", width)
	}
	mid := int64(math.Round((float64(low) + float64(width-1)/2) * rate))
	top := s.Hist.Max()
	if !s.Hist.ValuesAreEquivalent(top, mid) {
		t.Errorf("the largest sample is recorded as %d ns; want its bucket's midpoint %d ns (bucket %d..%d ticks), not its lower bound %d",
			top, mid, low, low+width-1, int64(math.Round(float64(low)*rate)))
	}
	if got := s.Hist.ValueAtQuantile(0); !s.Hist.ValuesAreEquivalent(got, 37) {
		t.Errorf("the smallest sample is recorded as %d ns; want 37", got)
	}
	// One way: half the rate, half of everything.
	h := samplesOfTicks(ticks, rate/2)
	if h.Moments.Mean != m.Mean/2 || math.Abs(h.Moments.Stdev-m.Stdev/2) > 1e-9*m.Stdev || h.Moments.Min != int64(math.Round(100*rate/2)) {
		t.Errorf("halved: mean %v stdev %v min %d; want %v, %v, %d", h.Moments.Mean, h.Moments.Stdev, h.Moments.Min,
			m.Mean/2, m.Stdev/2, int64(math.Round(100*rate/2)))
	}
	if !h.Hist.ValuesAreEquivalent(h.Hist.Max(), int64(math.Round((float64(low)+float64(width-1)/2)*rate/2))) {
		t.Errorf("halved: the largest sample is recorded as %d ns", h.Hist.Max())
	}
	// A bucket whose lower bound and midpoint land in different buckets of the result's
	// histogram (at 1.5 ns per tick, 1025<<10 ticks is a bucket 1024 ticks wide, its
	// midpoint 767 ns above its bound): the midpoint, not the bound, is what is recorded.
	const wideRate, wideTick = 1.5, int64(1025 << 10)
	w := samplesOfTicks([]int64{wideTick}, wideRate)
	wl, ww := histBucket(wideTick)
	lowNS, midNS := int64(math.Round(float64(wl)*wideRate)), int64(math.Round((float64(wl)+float64(ww-1)/2)*wideRate))
	if w.Hist.ValuesAreEquivalent(lowNS, midNS) {
		t.Fatalf("the test wants a bucket whose bound (%d ns) and midpoint (%d ns) the result's histogram tells apart", lowNS, midNS)
	}
	if got := w.Hist.Max(); !w.Hist.ValuesAreEquivalent(got, midNS) {
		t.Errorf("a sample of %d ticks at %v ns per tick is recorded as %d ns; want its bucket's midpoint %d ns, not its bound %d ns",
			wideTick, wideRate, got, midNS, lowNS)
	}
	// The one-way halving is the ping-pong's: its scale is half the rate, the round
	// trip's the whole rate.
	if latScale(0.37, true) != 0.185 || latScale(0.37, false) != 0.37 {
		t.Errorf("latScale(0.37): one way %v, round trip %v; want 0.185 and 0.37", latScale(0.37, true), latScale(0.37, false))
	}
	// No rate, no statistics (never a row of zeros taken for a measurement).
	if z := samplesOfTicks(ticks, 0); z.Moments.Count != 0 || z.Hist.TotalCount() != 0 {
		t.Errorf("rate 0: %+v", z.Moments)
	}
}
