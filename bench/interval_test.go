package bench

import (
	"testing"

	"github.com/rdmabench/rdmabench/result"
)

// Intervals that ended before the first completion only filled the queue: they are
// ramp lines, not the run's minimum; a zero interval after the first completion is a
// stall, and is the minimum.
func TestIntervalsRamp(t *testing.T) {
	cfg := result.Config{Test: result.BW, IntervalS: 0.5, MsgSizeBytes: 65536, Counters: "off"}
	var lines []result.Interval
	iv := (&Client{OnInterval: func(l result.Interval) { lines = append(lines, l) }}).intervals(cfg)
	iv.begin()
	for _, done := range []uint64{0, 0, 100, 250, 250, 400} { // cumulative completions
		iv.tick(done)
	}
	s := iv.summary()
	if s == nil || s.Ramp != 2 || s.Count != 4 || s.MinBWGbps != 0 || s.MaxBWGbps <= 0 {
		t.Fatalf("summary %+v: want 2 ramp intervals, 4 measured, the stall as the minimum", s)
	}
	for i, l := range lines {
		if l.Index != i+1 || l.Ramp != (i < 2) {
			t.Errorf("line %d: %+v", i, l)
		}
	}
	iv = (&Client{}).intervals(cfg)
	iv.begin()
	iv.tick(0)
	if s := iv.summary(); s == nil || s.Count != 0 || s.Ramp != 1 {
		t.Fatalf("a run that never left its ramp: %+v", s)
	}
}
