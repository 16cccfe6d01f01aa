package verbs

import (
	"math"
	"testing"

	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/verbs/qp"
)

// samplesOf is the Samples of xs, moments computed directly.
func samplesOf(xs []int64) Samples {
	s := Samples{Hist: result.NewHistogram()}
	var sum float64
	for i, x := range xs {
		s.Hist.RecordValue(x)
		if i == 0 || x < s.Moments.Min {
			s.Moments.Min = x
		}
		s.Moments.Max = max(s.Moments.Max, x)
		sum += float64(x)
	}
	s.Moments.Count = uint64(len(xs))
	if len(xs) > 0 {
		s.Moments.Mean = sum / float64(len(xs))
		var v float64
		for _, x := range xs {
			d := float64(x) - s.Moments.Mean
			v += d * d
		}
		s.Moments.Stdev = math.Sqrt(v / float64(len(xs)))
	}
	return s
}

// Pooling the loops' samples gives what one histogram of all of them would.
func TestMergeSamples(t *testing.T) {
	a, b, c := []int64{1000000, 1000010, 1000030}, []int64{2000, 2500}, []int64{}
	got := mergeSamples([]Samples{samplesOf(a), samplesOf(b), samplesOf(c)})
	want := samplesOf(append(append([]int64{}, a...), b...))
	g, w := got.Moments, want.Moments
	if g.Count != w.Count || g.Min != w.Min || g.Max != w.Max || math.Abs(g.Mean-w.Mean) > 1e-6*w.Mean || math.Abs(g.Stdev-w.Stdev) > 1e-9*w.Stdev {
		t.Fatalf("pooled %+v, want %+v", g, w)
	}
	if got.Hist.TotalCount() != 5 || got.Hist.ValueAtQuantile(50) != want.Hist.ValueAtQuantile(50) {
		t.Fatalf("histogram: %d samples, p50 %d", got.Hist.TotalCount(), got.Hist.ValueAtQuantile(50))
	}
}

// Loops that started apart add up to one window that holds each of theirs; each QP's
// last completion is moved onto it; counts add up.
func TestMergeLoops(t *testing.T) {
	loops := []loopRun{
		{block: qp.Block{First: 0, N: 2}, span: qp.Span{Start: 1000, End: 9000}, done: []uint64{10, 12}, lastNS: []int64{7000, 8000}, lat: samplesOf([]int64{5, 6})},
		{block: qp.Block{First: 2, N: 1}, span: qp.Span{Start: 1500, End: 10000}, done: []uint64{11}, lastNS: []int64{8500}, lat: samplesOf([]int64{7})},
		{block: qp.Block{First: 3, N: 1}, done: []uint64{0}, lastNS: []int64{0}}, // never posted
	}
	r := mergeLoops(loops)
	if r.Completed != 33 || len(r.PerQP) != 4 || r.PerQP[2] != 11 {
		t.Fatalf("counts: %d %v", r.Completed, r.PerQP)
	}
	if r.DurationNS != 9000 {
		t.Fatalf("window %d, want 9000 (1000 .. 10000)", r.DurationNS)
	}
	if r.PerQPLastNS[0] != 7000 || r.PerQPLastNS[2] != 9000 || r.PerQPLastNS[3] != 0 {
		t.Fatalf("last completions %v", r.PerQPLastNS)
	}
	for i, tr := range r.Threads {
		if tr.StartNS < 0 || tr.StartNS+tr.DurationNS > r.DurationNS {
			t.Errorf("thread %d's window %d+%d outside the run's %d", i, tr.StartNS, tr.DurationNS, r.DurationNS)
		}
	}
	if r.Threads[1].StartNS != 500 || r.Threads[1].Completed != 11 || r.Lat.Moments.Count != 3 {
		t.Fatalf("thread 1 %+v, samples %d", r.Threads[1], r.Lat.Moments.Count)
	}
}
