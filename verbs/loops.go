//go:build cgo

package verbs

/*
#include <stdlib.h>
#include "rb.h"
*/
import "C"

import (
	"fmt"
	"runtime"
	"syscall"
	"unsafe"
)

// The loops run on a locked OS thread so that the Go scheduler stays out of them.

// SetClock picks the loops' tick source: the TSC (x86-64 only) or CLOCK_MONOTONIC_RAW.
func SetClock(tsc bool) { C.rb_set_clock(boolInt(tsc)) }

// Clock names the tick source the loops use.
func Clock() string {
	if C.rb_clock_is_tsc() != 0 {
		return "tsc"
	}
	return "clock_monotonic_raw"
}

// Bandwidth runs the bandwidth loop over all QPs of the session (the client side).
func (s *Session) Bandwidth(p BWParams) (BWResult, error) {
	if p.Size < 1 || p.Size > s.spec.BufSize {
		return BWResult{}, fmt.Errorf("message size %d outside the %d-byte buffer", p.Size, s.spec.BufSize)
	}
	if p.CQMod < 1 || p.CQMod > p.SQDepth || p.PostList < 1 || p.PostList > p.SQDepth || p.SQDepth > s.spec.SQDepth {
		return BWResult{}, fmt.Errorf("need 1 <= cq-mod (%d) <= sq-depth (%d) and 1 <= post-list (%d) <= sq-depth, sq-depth <= %d", p.CQMod, p.SQDepth, p.PostList, s.spec.SQDepth)
	}
	var a C.rb_bw_args
	qps := (**C.struct_ibv_qp)(C.malloc(C.size_t(len(s.qps)) * C.size_t(unsafe.Sizeof(uintptr(0)))))
	defer C.free(unsafe.Pointer(qps))
	copy(unsafe.Slice(qps, len(s.qps)), s.qps)
	a.qps = qps
	a.nqp = C.int(len(s.qps))
	a.cq = s.cq
	a.opcode = C.IBV_WR_RDMA_WRITE
	if p.Op == Read {
		a.opcode = C.IBV_WR_RDMA_READ
	}
	a.laddr = C.uint64_t(uintptr(s.buf))
	a.lkey = s.mr.lkey
	a.raddr = C.uint64_t(s.remoteAddr)
	a.rkey = C.uint32_t(s.remoteKey)
	a.size = C.uint32_t(p.Size)
	a.iters = C.uint64_t(p.Iters)
	a.tx_depth = C.uint32_t(p.SQDepth)
	a.post_list = C.uint32_t(p.PostList)
	a.cq_mod = C.uint32_t(p.CQMod)
	if p.Inline && p.Op == Write {
		a.send_flags = C.IBV_SEND_INLINE
	}
	if p.Events {
		if s.channel == nil {
			return BWResult{}, fmt.Errorf("completion events need a session created with Spec.Events")
		}
		a.channel = s.channel
	}
	a.deadline_ns = C.int64_t(p.DeadlineNS)
	a.stop = s.stop
	a.lat_cap = C.uint64_t(p.MaxSamples)
	if a.lat_cap > 0 {
		a.lat = (*C.int64_t)(C.malloc(C.size_t(a.lat_cap) * 8))
		if a.lat == nil {
			return BWResult{}, fmt.Errorf("cannot allocate %d latency samples", p.MaxSamples)
		}
		defer C.free(unsafe.Pointer(a.lat))
	}
	runtime.LockOSThread()
	rc := C.rb_bw(&a)
	runtime.UnlockOSThread()
	res := BWResult{Completed: uint64(a.completed), Events: uint64(a.events), DurationNS: int64(a.duration_ns)}
	res.Lat = copySamples(a.lat, uint64(a.lat_n))
	if rc != 0 {
		return res, failure(&a.fail, "bandwidth loop")
	}
	return res, nil
}

// PingPong runs rounds first..first+iters-1 of the WRITE ping-pong on QP 0. The
// initiator returns each round's round-trip time; the responder returns none.
func (s *Session) PingPong(initiator bool, size int, first, iters uint64, sqDepth, cqMod int, inline bool) ([]int64, error) {
	if 2*size > s.spec.BufSize {
		return nil, fmt.Errorf("ping-pong of %d bytes needs a %d-byte buffer", size, 2*size)
	}
	var a C.rb_pp_args
	a.qp = s.qps[0]
	a.cq = s.cq
	a.laddr = C.uint64_t(uintptr(s.buf) + uintptr(size))
	a.lkey = s.mr.lkey
	a.raddr = C.uint64_t(s.remoteAddr)
	a.rkey = C.uint32_t(s.remoteKey)
	a.size = C.uint32_t(size)
	a.rx_last = (*C.uint8_t)(unsafe.Add(s.buf, size-1))
	a.first = C.uint64_t(first)
	a.iters = C.uint64_t(iters)
	a.initiator = boolInt(initiator)
	a.sq_depth = C.uint32_t(min(sqDepth, s.spec.SQDepth))
	a.cq_mod = C.uint32_t(max(1, min(cqMod, int(a.sq_depth))))
	if inline {
		a.send_flags = C.IBV_SEND_INLINE
	}
	a.stop = s.stop
	if initiator {
		a.rtt = (*C.int64_t)(C.malloc(C.size_t(max(iters, 1)) * 8))
		defer C.free(unsafe.Pointer(a.rtt))
	}
	runtime.LockOSThread()
	rc := C.rb_pingpong(&a)
	runtime.UnlockOSThread()
	var rtt []int64
	if initiator {
		rtt = copySamples(a.rtt, uint64(a.done))
	}
	if rc != 0 {
		return rtt, failure(&a.fail, "write ping-pong")
	}
	return rtt, nil
}

// ReadLatency posts one signalled READ at a time on QP 0 and times each completion.
func (s *Session) ReadLatency(size int, iters uint64) ([]int64, error) {
	if size > s.spec.BufSize {
		return nil, fmt.Errorf("message size %d outside the %d-byte buffer", size, s.spec.BufSize)
	}
	var a C.rb_rl_args
	a.qp = s.qps[0]
	a.cq = s.cq
	a.laddr = C.uint64_t(uintptr(s.buf))
	a.lkey = s.mr.lkey
	a.raddr = C.uint64_t(s.remoteAddr)
	a.rkey = C.uint32_t(s.remoteKey)
	a.size = C.uint32_t(size)
	a.iters = C.uint64_t(iters)
	a.stop = s.stop
	a.lat = (*C.int64_t)(C.malloc(C.size_t(max(iters, 1)) * 8))
	defer C.free(unsafe.Pointer(a.lat))
	runtime.LockOSThread()
	rc := C.rb_read_lat(&a)
	runtime.UnlockOSThread()
	lat := copySamples(a.lat, uint64(a.done))
	if rc != 0 {
		return lat, failure(&a.fail, "read latency loop")
	}
	return lat, nil
}

func copySamples(p *C.int64_t, n uint64) []int64 {
	if p == nil || n == 0 {
		return nil
	}
	out := make([]int64, n)
	copy(out, unsafe.Slice((*int64)(unsafe.Pointer(p)), n))
	return out
}

func failure(f *C.rb_fail, phase string) error {
	if f.status >= 0 {
		return &CompletionError{
			Status: wcStatusName(int(f.status)),
			Detail: C.GoString(C.ibv_wc_status_str(C.enum_ibv_wc_status(f.status))),
			Opcode: wcOpcodeName(int(f.opcode)),
			WRID:   uint64(f.wr_id) & (1<<48 - 1),
		}
	}
	return &VerbError{Verb: C.GoString(f.verb), Phase: phase, Err: syscall.Errno(f.err)}
}

var wcStatus = []string{"IBV_WC_SUCCESS", "IBV_WC_LOC_LEN_ERR", "IBV_WC_LOC_QP_OP_ERR", "IBV_WC_LOC_EEC_OP_ERR",
	"IBV_WC_LOC_PROT_ERR", "IBV_WC_WR_FLUSH_ERR", "IBV_WC_MW_BIND_ERR", "IBV_WC_BAD_RESP_ERR",
	"IBV_WC_LOC_ACCESS_ERR", "IBV_WC_REM_INV_REQ_ERR", "IBV_WC_REM_ACCESS_ERR", "IBV_WC_REM_OP_ERR",
	"IBV_WC_RETRY_EXC_ERR", "IBV_WC_RNR_RETRY_EXC_ERR", "IBV_WC_LOC_RDD_VIOL_ERR", "IBV_WC_REM_INV_RD_REQ_ERR",
	"IBV_WC_REM_ABORT_ERR", "IBV_WC_INV_EECN_ERR", "IBV_WC_INV_EEC_STATE_ERR", "IBV_WC_FATAL_ERR",
	"IBV_WC_RESP_TIMEOUT_ERR", "IBV_WC_GENERAL_ERR", "IBV_WC_TM_ERR", "IBV_WC_TM_RNDV_INCOMPLETE"}

func wcStatusName(s int) string {
	if s >= 0 && s < len(wcStatus) {
		return wcStatus[s]
	}
	return fmt.Sprintf("status %d", s)
}

func wcOpcodeName(o int) string {
	switch o {
	case C.IBV_WC_SEND:
		return "IBV_WC_SEND"
	case C.IBV_WC_RDMA_WRITE:
		return "IBV_WC_RDMA_WRITE"
	case C.IBV_WC_RDMA_READ:
		return "IBV_WC_RDMA_READ"
	case C.IBV_WC_RECV:
		return "IBV_WC_RECV"
	}
	return fmt.Sprintf("opcode %d", o)
}
