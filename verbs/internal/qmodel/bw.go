//go:build linux && cgo

package qmodel

/*
#include <stdlib.h>
#include "model.h"
*/
import "C"

import (
	"sync/atomic"
	"unsafe"
)

// BWCase is one run of rb_bw against the model.
type BWCase struct {
	Net
	QPs, Depth, PostList, CQMod int
	Iters                       uint64 // WRs per QP; with DeadlineNS an upper bound (math.MaxUint64: none)
	DeadlineNS                  int64  // posting stops this long (model time) after the start; 0: no deadline
	Read, Events                bool
	Size, Stride                uint32 // message size and slot distance (0: 8 and Size)
	LSlots, RSlots              uint32 // 0 means 1
	TimeoutNS                   int64  // the loop's watchdog (model time)
	PerQP                       bool   // the loop also fills a histogram per QP (BWOutcome.QHist)
	Gate                        *Gate  // loops on several threads start together (rb_bw_args.gate)
}

// Gate is the start gate of loops run at once on several threads (--threads).
type Gate struct {
	p *C.int
	n int
}

// NewGate is a gate for n loops; Free it after them.
func NewGate(n int) *Gate {
	p := (*C.int)(C.calloc(1, C.size_t(unsafe.Sizeof(C.int(0)))))
	if p == nil {
		panic("qmodel: out of memory")
	}
	return &Gate{p: p, n: n}
}

// Arrived is how many loops reached the gate.
func (g *Gate) Arrived() int { return int(atomic.LoadInt32((*int32)(unsafe.Pointer(g.p)))) }

func (g *Gate) Free() { C.free(unsafe.Pointer(g.p)) }

// BWOutcome is what rb_bw returned and the model recorded.
type BWOutcome struct {
	RC          int
	Fail        Fail
	Done        []uint64
	Completed   uint64
	Events      uint64
	DurationNS  int64
	LoopStartNS int64 // the loop's first post, on the model clock (rb_xfer.start_ns)
	NSPerTick   float64
	Hist        Hist
	DeadlineNS  int64 // absolute, model clock (0: none)
	Stop        int   // the stop flag at the end
	LStride     uint64
	RStride     uint64
	LastNS      []int64 // per QP: the first post to its last completion
	QHist       []Hist  // per QP, with PerQP
	SteadyWRs   uint64  // rb_bw_args.steady_wrs: WRs completed in the steady window
	SteadyNS    int64   // and its length
	Record
}

// RunBW runs rb_bw once.
func RunBW(c BWCase) BWOutcome {
	if c.Size == 0 {
		c.Size = 8
	}
	if c.Stride == 0 {
		c.Stride = c.Size
	}
	c.LSlots, c.RSlots = max(c.LSlots, 1), max(c.RSlots, 1)
	lstride := uint64(c.LSlots) * uint64(c.Stride)
	rstride := uint64(c.RSlots)*uint64(c.Stride) + 64 // a gap between the QPs' regions
	var cfg C.qm_config
	md := newModel(&cfg, c.Net, c.QPs, c.Depth, int(lstride)*c.QPs, int(rstride)*c.QPs)
	defer md.free()
	md.pattern(13, 1)
	hist := newHist()
	defer C.free(unsafe.Pointer(hist))
	done := (*C.uint64_t)(C.calloc(C.size_t(c.QPs), 8))
	defer C.free(unsafe.Pointer(done))

	a := (*C.rb_bw_args)(C.calloc(1, C.size_t(unsafe.Sizeof(C.rb_bw_args{}))))
	defer C.free(unsafe.Pointer(a))
	md.xfer(&a.x, uintptr(md.lbuf), c.Size, c.TimeoutNS, hist)
	a.qps = md.m.qpp
	a.nqp = C.int(c.QPs)
	a.opcode = opcode(c.Read)
	a.lslots, a.rslots, a.stride = C.uint32_t(c.LSlots), C.uint32_t(c.RSlots), C.uint32_t(c.Stride)
	a.lstride = C.uint64_t(lstride)
	rr := md.regions(c.QPs, rstride)
	defer rr.free()
	a.raddr, a.rkey, a.qlast_ns = rr.addr, rr.key, rr.last
	a.iters = C.uint64_t(c.Iters)
	a.tx_depth, a.post_list, a.cq_mod = C.uint32_t(c.Depth), C.uint32_t(c.PostList), C.uint32_t(c.CQMod)
	if c.Events {
		a.channel = &md.m.channel
	}
	var deadline int64
	if c.DeadlineNS > 0 {
		deadline = int64(md.m.clock) + c.DeadlineNS
		a.deadline_ns = C.int64_t(deadline)
	}
	a.done = done
	if c.Gate != nil {
		a.gate, a.gate_n = c.Gate.p, C.int(c.Gate.n)
	}
	var qh []C.rb_hist
	if c.PerQP {
		qhist := (*C.rb_hist)(C.malloc(C.size_t(c.QPs) * C.size_t(unsafe.Sizeof(C.rb_hist{}))))
		defer C.free(unsafe.Pointer(qhist))
		qh = unsafe.Slice(qhist, c.QPs)
		for i := range qh {
			C.rb_hist_reset(&qh[i])
		}
		a.qhist = qhist
	}
	runs.Add(1)
	rc := C.qm_bw(md.m, a)
	out := BWOutcome{
		RC: int(rc), Fail: goFail(&a.x.fail), Done: make([]uint64, c.QPs), Completed: uint64(a.completed),
		Events: uint64(a.events), DurationNS: int64(a.x.duration_ns), LoopStartNS: int64(a.x.start_ns), NSPerTick: float64(a.x.ns_per_tick),
		Hist: goHist(hist), DeadlineNS: deadline, Stop: int(md.m.stop), LStride: lstride, RStride: rstride,
		SteadyWRs: uint64(a.steady_wrs), SteadyNS: int64(a.steady_ns), Record: md.record(),
	}
	copy(out.Done, unsafe.Slice((*uint64)(unsafe.Pointer(done)), c.QPs))
	out.LastNS = rr.lastNS()
	for i := range qh {
		out.QHist = append(out.QHist, goHist(&qh[i]))
	}
	return out
}
