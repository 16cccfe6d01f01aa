package verbs

import (
	"math"

	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/verbs/qp"
)

// place is where a loop thread ran: the CPUs it was pinned to (nil: not pinned) and
// those it was on at its loop's start and end; err, why it could not be pinned.
type place struct {
	cpus, ranOn []int
	err         error
}

// loopRun is what one loop thread's bandwidth loop measured.
type loopRun struct {
	block  qp.Block
	place  place
	span   qp.Span  // its first post and last completion on the shared clock
	done   []uint64 // per QP of its block
	lastNS []int64  // per QP: its first post to the QP's last completion
	lat    Samples
	perQP  []Samples
	events uint64
	// steadyWRs, steadyNS: the loop's steady window (rb_bw_args.steady_*).
	steadyWRs uint64
	steadyNS  int64
	err       error
}

// ThreadRun is one loop thread's part of a bandwidth run.
type ThreadRun struct {
	QPs        qp.Block
	CPUs       []int // pinned to; nil: not pinned
	RanOn      []int // the CPUs it was on at its loop's start and end
	Completed  uint64
	StartNS    int64 // its first post after the run's first post
	DurationNS int64 // its first post to its last completion
	Err        error
}

// mergeLoops adds the loops' runs up to the run's: counts and samples summed, each
// QP's last completion moved to the run's window, which spans every loop's.
func mergeLoops(loops []loopRun) BWResult {
	spans := make([]qp.Span, len(loops))
	for i, l := range loops {
		spans[i] = l.span
	}
	start, end := qp.Window(spans)
	var res BWResult
	var lats []Samples
	for _, l := range loops {
		off := max(l.span.Start-start, 0)
		for i, n := range l.done {
			res.PerQP = append(res.PerQP, n)
			res.Completed += n
			last := int64(0)
			if n > 0 {
				last = l.lastNS[i] + off
			}
			res.PerQPLastNS = append(res.PerQPLastNS, last)
		}
		res.PerQPLat = append(res.PerQPLat, l.perQP...)
		res.Events += l.events
		lats = append(lats, l.lat)
		tr := ThreadRun{QPs: l.block, CPUs: l.place.cpus, RanOn: l.place.ranOn, Err: l.err}
		for _, n := range l.done {
			tr.Completed += n
		}
		if l.span.Start != 0 {
			tr.StartNS, tr.DurationNS = off, l.span.End-l.span.Start
		}
		res.Threads = append(res.Threads, tr)
	}
	res.DurationNS = end - start
	res.Lat = mergeSamples(lats)
	res.SteadyWRs, res.SteadyNS = mergeSteady(loops)
	return res
}

// mergeSteady is the run's steady window from its loops': one loop's as it is; of
// several, the sum of their rates (each loop keeps its own queues full), as all their
// WRs over the time that rate takes for them. None when a loop has none.
func mergeSteady(loops []loopRun) (uint64, int64) {
	var wrs uint64
	var rate float64 // WRs per ns
	for _, l := range loops {
		if l.steadyWRs == 0 || l.steadyNS <= 0 {
			return 0, 0
		}
		wrs += l.steadyWRs
		rate += float64(l.steadyWRs) / float64(l.steadyNS)
	}
	if len(loops) == 1 {
		return loops[0].steadyWRs, loops[0].steadyNS
	}
	if wrs == 0 {
		return 0, 0
	}
	return wrs, int64(math.Round(float64(wrs) / rate))
}

// mergeSamples pools several loops' samples: the histograms added, the moments
// combined (count, min and max exact; mean and standard deviation from each loop's,
// exact up to float rounding).
func mergeSamples(ss []Samples) Samples {
	if len(ss) == 1 {
		return ss[0]
	}
	out := Samples{Hist: result.NewHistogram()}
	var n uint64
	var sum float64
	for _, s := range ss {
		out.Backwards += s.Backwards
		if s.Hist != nil {
			out.Hist.Merge(s.Hist)
		}
		m := s.Moments
		if m.Count == 0 {
			continue
		}
		if n == 0 || m.Min < out.Moments.Min {
			out.Moments.Min = m.Min
		}
		if n == 0 || m.Max > out.Moments.Max {
			out.Moments.Max = m.Max
		}
		n += m.Count
		sum += float64(m.Count) * m.Mean
	}
	if n == 0 {
		return out
	}
	// The pooled variance: each loop's own plus its mean's distance from the pool's.
	mean := sum / float64(n)
	var ss2 float64
	for _, s := range ss {
		m := s.Moments
		d := m.Mean - mean
		ss2 += float64(m.Count) * (m.Stdev*m.Stdev + d*d)
	}
	out.Moments.Count, out.Moments.Mean, out.Moments.Stdev = n, mean, math.Sqrt(ss2/float64(n))
	return out
}
