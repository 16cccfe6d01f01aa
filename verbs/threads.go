//go:build linux && cgo

package verbs

/*
#include <stdlib.h>
#include "rb.h"
*/
import "C"

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/rdmabench/rdmabench/verbs/qp"
)

// streamArrays are a bandwidth loop's per-QP C arrays over all the session's QPs; each
// loop thread gets the slice of its block.
type streamArrays struct {
	qps   **C.struct_ibv_qp
	raddr *C.uint64_t
	rkey  *C.uint32_t
	qhist *C.rb_hist // nil without BWParams.PerQP
	done  *C.uint64_t
	last  *C.int64_t
}

// stream runs the streaming bandwidth loop (rb_bw): one C loop per block of QPs
// (Spec.Threads), each on its own OS thread with its own CQ, all started together.
// The run's window is the first post of any loop to the last completion of any
// (qp.Window); every count, each QP's and the latency samples, adds up over the loops.
func (s *Session) stream(p BWParams, arr streamArrays, opcode C.int, lstride, iters C.uint64_t, deadline C.int64_t) (BWResult, error) {
	nqp, nt := len(s.qps), len(s.blocks)
	args := make([]*C.rb_bw_args, nt)
	for t, b := range s.blocks {
		a := (*C.rb_bw_args)(C.calloc(1, C.size_t(unsafe.Sizeof(C.rb_bw_args{}))))
		if a == nil {
			panic("verbs: out of memory for a loop's arguments")
		}
		defer C.free(unsafe.Pointer(a))
		args[t] = a
		x := &a.x
		s.xfer(x, p.Size, uintptr(s.buf)+uintptr(p.LocalOffset)+uintptr(uint64(lstride)*uint64(b.First)), 0, p.Inline && p.Op == Write, p.Timeout)
		defer C.free(unsafe.Pointer(x.hist))
		x.cq = s.cqs[t]
		if s.qpx != nil {
			x.qpx = &unsafe.Slice(s.qpx, nqp)[b.First]
		}
		a.qps, a.nqp, a.opcode = &unsafe.Slice(arr.qps, nqp)[b.First], C.int(b.N), opcode
		a.lslots, a.rslots, a.stride, a.lstride = C.uint32_t(p.Layout.LSlots), C.uint32_t(p.Layout.RSlots), C.uint32_t(p.Layout.Stride), lstride
		a.raddr, a.rkey = &unsafe.Slice(arr.raddr, nqp)[b.First], &unsafe.Slice(arr.rkey, nqp)[b.First]
		if arr.qhist != nil {
			a.qhist = &unsafe.Slice(arr.qhist, nqp)[b.First]
		}
		a.iters, a.deadline_ns = iters, deadline
		a.tx_depth, a.post_list, a.cq_mod = C.uint32_t(p.SQDepth), C.uint32_t(p.PostList), C.uint32_t(p.CQMod)
		a.done, a.qlast_ns = &unsafe.Slice(arr.done, nqp)[b.First], &unsafe.Slice(arr.last, nqp)[b.First]
		if p.Events {
			if s.channel == nil {
				return BWResult{}, fmt.Errorf("completion events need a session created with Spec.Events")
			}
			a.channel = s.channel
		}
	}
	endProgress := progress(p, unsafe.Slice((*uint64)(unsafe.Pointer(arr.done)), nqp))
	rcs := make([]C.int, nt)
	var first atomic.Int32 // the thread that failed first, +1
	gate := (*C.int)(C.calloc(1, C.size_t(unsafe.Sizeof(C.int(0)))))
	if gate == nil {
		panic("verbs: out of memory for the loops' start gate")
	}
	defer C.free(unsafe.Pointer(gate))
	if nt > 1 { // one loop waits for no other
		for _, a := range args {
			a.gate, a.gate_n = gate, C.int(nt)
		}
	}
	places := s.runThreads(nt, func(t int) {
		rcs[t] = C.rb_bw(args[t])
		if rcs[t] != 0 && first.CompareAndSwap(0, int32(t)+1) && nt > 1 {
			s.Stop() // the others finish what is in flight and return
		}
	})
	endProgress() // before done is freed
	// Each loop's counts and samples, then the run's.
	loops := make([]loopRun, nt)
	for t, a := range args {
		x := &a.x
		b := s.blocks[t]
		lr := loopRun{block: b, place: places[t], events: uint64(a.events), steadyWRs: uint64(a.steady_wrs), steadyNS: int64(a.steady_ns),
			span:   qp.Span{Start: int64(x.start_ns), End: int64(x.start_ns) + int64(x.duration_ns)},
			lat:    samples(x.hist, float64(x.ns_per_tick)),
			done:   slices.Clone(unsafe.Slice((*uint64)(unsafe.Pointer(a.done)), b.N)),
			lastNS: slices.Clone(unsafe.Slice((*int64)(unsafe.Pointer(a.qlast_ns)), b.N))}
		if a.qhist != nil {
			for i := range unsafe.Slice(a.qhist, b.N) {
				lr.perQP = append(lr.perQP, samples(&unsafe.Slice(a.qhist, b.N)[i], float64(x.ns_per_tick)))
			}
		}
		if rcs[t] != 0 {
			lr.err = failure(x, "bandwidth loop")
			if nt > 1 {
				lr.err = fmt.Errorf("loop thread %d (QPs %d-%d): %w", t, b.First, b.First+b.N-1, lr.err)
			}
		}
		loops[t] = lr
	}
	res := mergeLoops(loops)
	if err := pinError(places); err != nil {
		return res, err // no loop ran
	}
	if f := first.Load(); f > 0 {
		return res, loops[f-1].err // the others stopped because of it
	}
	return res, nil
}

// runThreads runs loop(t) for t in 0..n-1 at once, each on an OS thread of its own
// pinned to its CPUs (Spec.CPUs, qp.CPUSets), and waits for all. The loops start once
// every thread is in place, and none starts where one of them could not be pinned (its
// place says why). A pinned thread is not handed back to the Go scheduler: it ends with
// its goroutine, so no other goroutine inherits its mask.
func (s *Session) runThreads(n int, loop func(t int)) []place {
	sets := qp.CPUSets(s.spec.CPUs, n, s.spec.SplitCPUs)
	places := make([]place, n)
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	skip := false // written before start is closed, read after
	ready.Add(n)
	done.Add(n)
	for t := range n {
		go func() {
			defer done.Done()
			runtime.LockOSThread()
			pl := &places[t]
			if pl.cpus = sets[t]; pl.cpus != nil {
				if rc, err := C.rb_pin((*C.int)(unsafe.Pointer(unsafe.SliceData(toCInts(pl.cpus)))), C.int(len(pl.cpus))); rc != 0 {
					pl.err = fmt.Errorf("pinning the loop thread to CPUs %s: %w (a CPU offline or outside this process's set? see taskset -p)", qp.FormatCPUList(pl.cpus), errnoOr(err))
				}
			} else {
				defer runtime.UnlockOSThread()
			}
			ready.Done()
			<-start
			if skip {
				return
			}
			c0 := int(C.rb_getcpu())
			loop(t)
			c1 := int(C.rb_getcpu())
			for _, c := range []int{c0, c1} {
				if c >= 0 && !slices.Contains(pl.ranOn, c) {
					pl.ranOn = append(pl.ranOn, c)
				}
			}
		}()
	}
	ready.Wait()
	for _, pl := range places {
		skip = skip || pl.err != nil
	}
	close(start)
	done.Wait()
	return places
}

// onLoopThread runs one loop (latency, rounds, registrations in the loop) as
// runThreads runs the first of several.
func (s *Session) onLoopThread(loop func()) place {
	return s.runThreads(1, func(int) { loop() })[0]
}

// pinError is the first thread's that could not be pinned, if any.
func pinError(places []place) error {
	for t, pl := range places {
		if pl.err != nil {
			if len(places) > 1 {
				return fmt.Errorf("loop thread %d: %w", t, pl.err)
			}
			return pl.err
		}
	}
	return nil
}

func toCInts(xs []int) []C.int {
	out := make([]C.int, len(xs))
	for i, x := range xs {
		out[i] = C.int(x)
	}
	return out
}

// AllowedCPUs are the CPUs this process may run on (its affinity mask).
func AllowedCPUs() ([]int, error) {
	buf := make([]C.int, 8192)
	n, err := C.rb_allowed_cpus(&buf[0], C.int(len(buf)))
	if n < 0 {
		return nil, fmt.Errorf("sched_getaffinity: %w", errnoOr(err))
	}
	out := make([]int, n)
	for i := range out {
		out[i] = int(buf[i])
	}
	return out, nil
}
