//go:build linux && cgo

package qmodel

import (
	"fmt"
	"sync"
	"testing"

	"github.com/rdmabench/rdmabench/verbs/qp"
)

// --threads: the session's QPs split into blocks (qp.Split), each block its own CQ and
// its own rb_bw on its own thread, all at once. Each loop here drives a model of its
// own (its CQ and QPs; the model is per thread), started at its own clock and speed, as
// threads that did not start together on a real host. What must hold: every loop
// terminates clean, the counts add up to what was asked of every QP, each loop's first
// post (rb_xfer.start_ns) is on its clock where the model saw it, and the run's window
// (qp.Window) holds every loop's.
func TestThreads(t *testing.T) {
	for _, threads := range []int{2, 3} {
		for _, nqp := range []int{threads, 5} {
			for _, read := range []bool{false, true} {
				for _, pl := range []int{1, 4} {
					for _, tsc := range []float64{0, 2.7} {
						name := fmt.Sprintf("threads=%d/qps=%d/read=%v/pl=%d/tsc=%v", threads, nqp, read, pl, tsc)
						t.Run(name, func(t *testing.T) { checkThreads(t, threads, nqp, read, pl, tsc) })
					}
				}
			}
		}
	}
}

// A loop whose companions never reach the gate (they failed before it, or were never
// scheduled) waits a second at most, then runs alone: a gate is no wait without end.
func TestThreadsGateAlone(t *testing.T) {
	g := NewGate(2)
	defer g.Free()
	o := RunBW(BWCase{QPs: 1, Depth: 8, PostList: 1, CQMod: 4, Iters: 100, Gate: g})
	if o.RC != 0 || len(o.Violations) > 0 || o.Completed != 100 || g.Arrived() != 1 {
		t.Fatalf("rc %d (%+v), violations %v, %d completed, %d at the gate", o.RC, o.Fail, o.FirstViolation, o.Completed, g.Arrived())
	}
	if waited := o.FirstPostNS - o.StartNS; waited < 1e9 {
		t.Errorf("the loop posted %d ns after it started: it did not wait at the gate", waited)
	}
}

func checkThreads(t *testing.T, threads, nqp int, read bool, pl int, tsc float64) {
	blocks, err := qp.Split(nqp, threads)
	if err != nil {
		t.Fatal(err)
	}
	const iters = 300
	outs := make([]BWOutcome, threads)
	gate := NewGate(threads)
	defer gate.Free()
	var wg sync.WaitGroup
	for i, b := range blocks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i] = RunBW(BWCase{
				Net: Net{PerPoll: 1 + i, Random: true, Seed: uint64(7 + i), AckDelay: i,
					Clock0NS: 1_000_000_000_000 + int64(i)*37_000, TSCPerNS: tsc},
				QPs: b.N, Depth: 8, PostList: pl, CQMod: 4, Iters: iters, Read: read, Gate: gate,
			})
		}()
	}
	wg.Wait()
	if gate.Arrived() != threads {
		t.Errorf("%d loops at the gate, want %d", gate.Arrived(), threads)
	}
	spans := make([]qp.Span, threads)
	var total uint64
	for i, o := range outs {
		if o.RC != 0 || len(o.Violations) > 0 {
			t.Fatalf("thread %d: rc %d (%+v), violations %v", i, o.RC, o.Fail, o.FirstViolation)
		}
		for q, n := range o.Done {
			if n != iters {
				t.Errorf("thread %d QP %d: %d done, want %d", i, q, n, iters)
			}
		}
		total += o.Completed
		// start_ns is read at most one rb_now() before the first post; on the model's
		// TSC, whose read is a clock read too, converted at the loop's calibration,
		// within a read either way.
		if d := o.FirstPostNS - o.LoopStartNS; d < -defaultNowNS || d > 2*defaultNowNS {
			t.Errorf("thread %d: start_ns %d, the model saw the first post at %d", i, o.LoopStartNS, o.FirstPostNS)
		}
		spans[i] = qp.Span{Start: o.LoopStartNS, End: o.LoopStartNS + o.DurationNS}
		if spans[i].End < o.LastCQENS || spans[i].End > o.EndNS {
			t.Errorf("thread %d: its window ends at %d, the model's last completion was at %d, the loop returned at %d", i, spans[i].End, o.LastCQENS, o.EndNS)
		}
	}
	if total != uint64(nqp)*iters {
		t.Errorf("%d completed in all, want %d", total, uint64(nqp)*iters)
	}
	start, end := qp.Window(spans)
	for i, s := range spans {
		if s.Start < start || s.End > end {
			t.Errorf("thread %d's window %d..%d is not inside the run's %d..%d", i, s.Start, s.End, start, end)
		}
	}
	lo, hi := spans[0].Start, spans[0].End
	for _, sp := range spans {
		lo, hi = min(lo, sp.Start), max(hi, sp.End)
	}
	if start != lo || end != hi {
		t.Errorf("the run's window %d..%d, the loops' first post and last completion %d..%d", start, end, lo, hi)
	}
}
