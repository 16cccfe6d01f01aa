package result

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
)

func TestSupportedBoundaries(t *testing.T) {
	for _, c := range []struct {
		p    float64
		need uint64
	}{{0.5, 20}, {0.9, 100}, {0.99, 1000}, {0.999, 10000}, {0.9999, 100000}} {
		if got := MinSamples(c.p); got != c.need {
			t.Errorf("MinSamples(%v) = %d, want %d", c.p, got, c.need)
		}
		if Supported(c.p, c.need-1) || !Supported(c.p, c.need) {
			t.Errorf("p%v: want unsupported at %d samples and supported at %d", 100*c.p, c.need-1, c.need)
		}
	}
	if Supported(1, math.MaxUint64) || Supported(-0.1, 1000) {
		t.Error("the max and a negative p are no percentiles")
	}
}

func TestNewLatencyExactMoments(t *testing.T) {
	samples := []int64{1000, 2000, 3000, 4000, 100000}
	l, enc, err := NewLatency(FromSamples(samples))
	if err != nil {
		t.Fatal(err)
	}
	if l.Samples != 5 || l.Min != 1000 || l.Max != 100000 {
		t.Fatalf("count/min/max: %+v", l)
	}
	if l.Mean != 22000 {
		t.Fatalf("mean = %v, want 22000", l.Mean)
	}
	// population stdev of the samples, computed by hand
	want := math.Sqrt((21000.0*21000 + 20000.0*20000 + 19000.0*19000 + 18000.0*18000 + 78000.0*78000) / 5)
	if math.Abs(l.Stdev-want) > 1e-6 {
		t.Fatalf("stdev = %v, want %v", l.Stdev, want)
	}
	// Five samples support no percentile, not even the median.
	if l.P50 != nil || l.P90 != nil || l.P99 != nil || l.P99_9 != nil || l.P99_99 != nil {
		t.Fatalf("5 samples support no percentile: %+v", l)
	}
	h, err := DecodeHistogram(enc)
	if err != nil {
		t.Fatal(err)
	}
	if h.TotalCount() != 5 || h.Max() < 100000 {
		t.Fatalf("decoded histogram: count %d max %d", h.TotalCount(), h.Max())
	}
}

// ramp returns n samples 1..n µs.
func ramp(n int) []int64 {
	s := make([]int64, n)
	for i := range s {
		s[i] = int64(i+1) * 1000
	}
	return s
}

func TestNewLatencyP99NeedsAThousandSamples(t *testing.T) {
	l, _, err := NewLatency(FromSamples(ramp(999)))
	if err != nil {
		t.Fatal(err)
	}
	if l.P50 == nil || l.P90 == nil || l.P99 != nil || l.P99_9 != nil {
		t.Fatalf("999 samples: want p50 and p90, no p99: %+v", l)
	}
	l, _, err = NewLatency(FromSamples(ramp(1000)))
	if err != nil {
		t.Fatal(err)
	}
	if l.P99 == nil || l.P99_9 != nil || l.P99_99 != nil {
		t.Fatalf("1000 samples: want p99, no p99.9: %+v", l)
	}
	if *l.P99 < 989_000 || *l.P99 > 991_000 {
		t.Fatalf("p99 of 1..1000 us = %d ns, want ~990 us", *l.P99)
	}
	if *l.P50 < 499_000 || *l.P50 > 501_000 || *l.P99 > l.Max {
		t.Fatalf("p50 %d, p99 %d, max %d", *l.P50, *l.P99, l.Max)
	}
}

func TestNewLatencyCapsAtTheMax(t *testing.T) {
	// 1000 equal samples: the bucket's upper bound lies above them, the true max does not.
	s := make([]int64, 1000)
	for i := range s {
		s[i] = 123_456
	}
	l, _, err := NewLatency(FromSamples(s))
	if err != nil || *l.P99 != 123_456 || *l.P50 != 123_456 {
		t.Fatalf("p50/p99 must not exceed the max: %+v %v", l, err)
	}
}

func TestFromSamplesRoundTrip(t *testing.T) {
	samples := ramp(2000)
	h, m := FromSamples(samples)
	if m.Count != 2000 || m.Min != 1000 || m.Max != 2_000_000 || m.Mean != 1_000_500 {
		t.Fatalf("moments: %+v", m)
	}
	l, enc, err := NewLatency(h, m)
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeHistogram(enc)
	if err != nil {
		t.Fatal(err)
	}
	if back.TotalCount() != 2000 || back.ValueAtQuantile(99) != h.ValueAtQuantile(99) || min(back.ValueAtQuantile(99), m.Max) != *l.P99 {
		t.Fatalf("decoded: count %d p99 %d, want %d", back.TotalCount(), back.ValueAtQuantile(99), *l.P99)
	}
}

func TestNewLatencyEmptyAndMismatched(t *testing.T) {
	l, enc, err := NewLatency(nil, Moments{})
	if err != nil || l.Samples != 0 || enc != "" || l.P50 != nil {
		t.Fatalf("empty: %+v %q %v", l, enc, err)
	}
	h, m := FromSamples(ramp(10))
	m.Count = 11
	if _, _, err := NewLatency(h, m); err == nil {
		t.Fatal("a histogram that lost samples must be refused")
	}
	if _, _, err := NewLatency(nil, m); err == nil {
		t.Fatal("samples without a histogram must be refused")
	}
}

func TestSetThroughputUnits(t *testing.T) {
	var r Result
	r.SetThroughput(1000, 65536, 1e9) // 65.536 MB in one second
	if math.Abs(r.BWGbps-0.524288) > 1e-9 || r.BWMiBps != 62.5 || r.MsgRateMpps != 0.001 {
		t.Fatalf("units: %v Gb/s %v MiB/s %v Mpps", r.BWGbps, r.BWMiBps, r.MsgRateMpps)
	}
}

func TestUnsupportedPercentilesAreNull(t *testing.T) {
	l, h, _ := NewLatency(FromSamples(ramp(50))) // a bandwidth run at defaults: 50 signalled WRs
	var buf bytes.Buffer
	r := fixture(t)[0]
	r.Lat, r.Histogram = l, h
	WriteJSON(&buf, r)
	var doc struct {
		Lat map[string]json.RawMessage `json:"lat_ns"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]bool{"p50": false, "p90": true, "p99": true, "p99_9": true, "p99_99": true} {
		if got := string(doc.Lat[k]) == "null"; got != want {
			t.Errorf("50 samples: %s = %s, want null: %v", k, doc.Lat[k], want)
		}
	}
	back, err := ReadAll(&buf)
	if err != nil || back[0].Lat.P99 != nil || back[0].Lat.P50 == nil || *back[0].Lat.P50 != *l.P50 {
		t.Fatalf("read back: %+v %v", back, err)
	}
}

func TestNewLatencyKeepsPercentilesAboveTheMin(t *testing.T) {
	// A histogram converted from another clock's buckets (the loops' ticks scaled to
	// ns) can put a bucket's upper bound just below the exact min: 30 samples of 2055
	// ticks halved to 1027.5 ns land in a bucket that ends at 1027, the exact min is 1028.
	h := NewHistogram()
	h.RecordValues(1027, 30)
	l, _, err := NewLatency(h, Moments{Count: 30, Min: 1028, Max: 1028, Mean: 1027.5})
	if err != nil || *l.P50 != 1028 {
		t.Fatalf("p50 must not fall below the min: %+v %v", l, err)
	}
}

// SetThroughput's units by hand: 368 messages of 64 KiB in one second are 23 MiB/s
// (perftest's 23.00 MB/sec), 23 x 2^20 x 8 / 10^9 = 0.192937984 Gb/s, 0.000368 Mpps.
func TestSetThroughputPerftestUnits(t *testing.T) {
	var r Result
	r.SetThroughput(368, 65536, 1e9)
	if r.Bytes != 368*65536 || r.BWMiBps != 23 || math.Abs(r.BWGbps-0.192937984) > 1e-12 || math.Abs(r.MsgRateMpps-0.000368) > 1e-15 {
		t.Errorf("368 x 64 KiB in 1 s: %d B, %v MiB/s (want 23), %v Gb/s (want 0.192937984), %v Mpps (want 0.000368)",
			r.Bytes, r.BWMiBps, r.BWGbps, r.MsgRateMpps)
	}
}
