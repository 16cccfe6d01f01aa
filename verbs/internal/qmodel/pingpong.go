//go:build linux && cgo

package qmodel

/*
#include <stdlib.h>
#include "model.h"
*/
import "C"

import (
	"math"
	"unsafe"
)

// PPCase is one run of rb_pingpong against the model, which plays the other side.
type PPCase struct {
	Net
	Initiator     bool   // the loop is the initiator (the model answers), else the responder
	Size          uint32 // 0: 8
	First, Iters  uint64
	SQDepth       int
	CQMod         int
	PeerDelay     int    // ticks the model peer takes to answer
	PeerRounds    uint64 // rounds the model peer plays; 0: all (math.MaxUint64)
	DeadPeer      bool   // the model peer never answers (PeerRounds 0)
	TimeoutNS     int64
	StopAfterPoll uint64
	// Perftest: the round bytes are perftest's count, and a responder samples from
	// each answer to the next ping (verbs.PingPongParams.Perftest).
	Perftest bool
}

// PPOutcome is what rb_pingpong returned and the model recorded.
type PPOutcome struct {
	RC     int
	Fail   Fail
	Done   uint64
	Hist   Hist
	Stop   int
	RxLast byte // the loop's receive region's last byte at the end
	Remote []byte
	Record
}

// RunPingPong runs rb_pingpong once.
func RunPingPong(c PPCase) PPOutcome {
	if c.Size == 0 {
		c.Size = 8
	}
	var cfg C.qm_config
	cfg.pp = C.QM_PP_PEER_INITIATES
	if c.Initiator {
		cfg.pp = C.QM_PP_PEER_RESPONDS
	}
	cfg.pp_size = C.uint32_t(c.Size)
	cfg.pp_first = C.uint64_t(c.First)
	cfg.pp_iters = C.uint64_t(c.Iters)
	if c.Perftest {
		cfg.pp_perftest = 1
	}
	cfg.peer_delay = C.uint32_t(c.PeerDelay)
	cfg.peer_rounds = C.uint64_t(c.PeerRounds)
	if c.PeerRounds == 0 {
		cfg.peer_rounds = C.uint64_t(math.MaxUint64)
	}
	if c.DeadPeer {
		cfg.peer_rounds = 0
	}
	if c.StopAfterPoll > 0 {
		c.Net.StopAfterPolls = c.StopAfterPoll
	}
	// The local buffer: the receive region, then the send region, as verbs.PingPong lays it out.
	md := newModel(&cfg, c.Net, 1, c.SQDepth, 2*int(c.Size), int(c.Size))
	defer md.free()
	l := md.local()
	for i := range l[c.Size:] {
		l[int(c.Size)+i] = byte(i*5 + 7)
	}
	hist := newHist()
	defer C.free(unsafe.Pointer(hist))
	a := (*C.rb_pp_args)(C.calloc(1, C.size_t(unsafe.Sizeof(C.rb_pp_args{}))))
	defer C.free(unsafe.Pointer(a))
	md.xfer(&a.x, uintptr(md.lbuf)+uintptr(c.Size), c.Size, c.TimeoutNS, hist)
	a.qp = *md.m.qpp
	a.rx_last = (*C.uint8_t)(unsafe.Add(md.lbuf, c.Size-1))
	a.first = C.uint64_t(c.First)
	a.iters = C.uint64_t(c.Iters)
	if c.Initiator {
		a.initiator = 1
	}
	if c.Perftest {
		a.perftest_bytes = 1
		if !c.Initiator {
			a.timed_responder = 1
		}
	}
	a.sq_depth = C.uint32_t(c.SQDepth)
	a.cq_mod = C.uint32_t(c.CQMod)
	runs.Add(1)
	rc := C.qm_pingpong(md.m, a)
	return PPOutcome{
		RC: int(rc), Fail: goFail(&a.x.fail), Done: uint64(a.done), Hist: goHist(hist), Stop: int(md.m.stop),
		RxLast: l[c.Size-1], Remote: append([]byte(nil), md.remote()...), Record: md.record(),
	}
}
