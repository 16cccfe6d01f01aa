//go:build linux && cgo

package qmodel

/*
#include <stdlib.h>
#include "model.h"
*/
import "C"

import (
	"unsafe"
)

// RoundsCase is one run of rb_rounds against the model.
type RoundsCase struct {
	Net
	QPs            int
	Rounds         uint64 // with DeadlineNS an upper bound
	DeadlineNS     int64  // relative, model time; 0: none
	Read           bool
	Size           uint32 // 0: 8
	LSlots, RSlots uint32 // 0 means 1
	SharedLocal    bool   // every QP uses local region 0
	TimeoutNS      int64
	StopAfterPolls uint64
}

// RoundsOutcome is what rb_rounds returned and the model recorded.
type RoundsOutcome struct {
	RC         int
	Fail       Fail
	Rounds     uint64
	Done       []uint64
	LastNS     []int64
	DurationNS int64
	Hist       Hist   // round times
	QHist      []Hist // per QP
	RStride    uint64
	Record
}

// RunRounds runs rb_rounds once.
func RunRounds(c RoundsCase) RoundsOutcome {
	if c.Size == 0 {
		c.Size = 8
	}
	c.LSlots, c.RSlots = max(c.LSlots, 1), max(c.RSlots, 1)
	lstride := uint64(c.LSlots) * uint64(c.Size)
	rstride := uint64(c.RSlots)*uint64(c.Size) + 64
	var cfg C.qm_config
	md := newModel(&cfg, c.Net, c.QPs, 1, int(lstride)*c.QPs, int(rstride)*c.QPs)
	defer md.free()
	md.pattern(7, 3)
	hist := newHist()
	defer C.free(unsafe.Pointer(hist))
	qhist := (*C.rb_hist)(C.malloc(C.size_t(c.QPs) * C.size_t(unsafe.Sizeof(C.rb_hist{}))))
	defer C.free(unsafe.Pointer(qhist))
	qh := unsafe.Slice(qhist, c.QPs)
	for i := range qh {
		C.rb_hist_reset(&qh[i])
	}
	done := (*C.uint64_t)(C.calloc(C.size_t(c.QPs), 8))
	defer C.free(unsafe.Pointer(done))
	a := (*C.rb_rounds_args)(C.calloc(1, C.size_t(unsafe.Sizeof(C.rb_rounds_args{}))))
	defer C.free(unsafe.Pointer(a))
	md.xfer(&a.x, uintptr(md.lbuf), c.Size, c.TimeoutNS, hist)
	a.qps = md.m.qpp
	a.nqp = C.int(c.QPs)
	a.opcode = opcode(c.Read)
	a.lslots, a.rslots, a.stride = C.uint32_t(c.LSlots), C.uint32_t(c.RSlots), C.uint32_t(c.Size)
	if !c.SharedLocal {
		a.lstride = C.uint64_t(lstride)
	}
	rr := md.regions(c.QPs, rstride)
	defer rr.free()
	a.raddr, a.rkey, a.qlast_ns, a.qhist = rr.addr, rr.key, rr.last, qhist
	a.iters = C.uint64_t(c.Rounds)
	if c.DeadlineNS > 0 {
		a.deadline_ns = C.int64_t(int64(md.m.clock) + c.DeadlineNS)
	}
	a.done = done
	runs.Add(1)
	rc := C.qm_rounds(md.m, a)
	out := RoundsOutcome{RC: int(rc), Fail: goFail(&a.x.fail), Rounds: uint64(a.rounds), Done: make([]uint64, c.QPs),
		LastNS: rr.lastNS(), DurationNS: int64(a.x.duration_ns), Hist: goHist(hist), RStride: rstride, Record: md.record()}
	copy(out.Done, unsafe.Slice((*uint64)(unsafe.Pointer(done)), c.QPs))
	for i := range qh {
		out.QHist = append(out.QHist, goHist(&qh[i]))
	}
	return out
}
