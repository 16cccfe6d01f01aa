//go:build linux && cgo

package verbs

/*
#include <stdlib.h>
#include <errno.h>
#include "rb.h"
#include "rb_post.h"
*/
import "C"

import (
	"fmt"
	"os"
	"syscall"
	"time"
	"unsafe"
)

// The Go twins of rb_pwr and rb_pwc must match the C layout exactly (rb_post.c pins the
// same numbers). Each index below is 0 when they do; anything else fails the build
// (out of range, or a negative uintptr constant).
var (
	_ = [1]struct{}{}[unsafe.Sizeof(WR{})-C.sizeof_rb_pwr]
	_ = [1]struct{}{}[unsafe.Sizeof(WR{})-40]
	_ = [1]struct{}{}[unsafe.Offsetof(WR{}.RAddr)-16]
	_ = [1]struct{}{}[unsafe.Offsetof(WR{}.Len)-24]
	_ = [1]struct{}{}[unsafe.Offsetof(WR{}.LKey)-28]
	_ = [1]struct{}{}[unsafe.Offsetof(WR{}.RKey)-32]
	_ = [1]struct{}{}[unsafe.Offsetof(WR{}.Opcode)-36]
	_ = [1]struct{}{}[unsafe.Offsetof(WR{}.Flags)-37]
	_ = [1]struct{}{}[unsafe.Sizeof(WC{})-C.sizeof_rb_pwc]
	_ = [1]struct{}{}[unsafe.Sizeof(WC{})-32]
	_ = [1]struct{}{}[unsafe.Offsetof(WC{}.Status)-8]
	_ = [1]struct{}{}[unsafe.Offsetof(WC{}.Opcode)-12]
	_ = [1]struct{}{}[unsafe.Offsetof(WC{}.VendorErr)-16]
	_ = [1]struct{}{}[unsafe.Offsetof(WC{}.QPNum)-20]
	_ = [1]struct{}{}[unsafe.Offsetof(WC{}.ByteLen)-24]
)

// The constants of post_types.go are libibverbs' (an index out of range fails the build).
var _ = [1]struct{}{}[WRWrite-C.RB_PWR_WRITE+WRRead-C.RB_PWR_READ+WRSignaled-C.RB_PWR_SIGNALED]
var _ = [1]struct{}{}[WCSuccess-C.IBV_WC_SUCCESS+WCLocLenErr-C.IBV_WC_LOC_LEN_ERR+WCLocProtErr-C.IBV_WC_LOC_PROT_ERR+
	WCWRFlushErr-C.IBV_WC_WR_FLUSH_ERR+WCRemAccessErr-C.IBV_WC_REM_ACCESS_ERR+WCRemOpErr-C.IBV_WC_REM_OP_ERR+
	WCRetryExcErr-C.IBV_WC_RETRY_EXC_ERR]
var _ = [1]struct{}{}[WCOpRDMAWrite-C.IBV_WC_RDMA_WRITE+WCOpRDMARead-C.IBV_WC_RDMA_READ]

func wcStatusText(s int) (string, string) {
	return wcStatusName(s), C.GoString(C.ibv_wc_status_str(C.enum_ibv_wc_status(s)))
}

// MR is memory registered with the device's protection domain: mmap'ed outside the Go
// heap, so that C and the NIC may keep its address for as long as it lives.
type MR struct {
	Addr   uint64 // the address WRs name it by
	LKey   uint32
	RKey   uint32
	base   unsafe.Pointer
	size   int
	mapLen int
	mr     *C.struct_ibv_mr
}

// RegisterMR maps size bytes (page-aligned, zeroed) and registers them with access
// (Spec.Access: local write, the remote access asked for, relaxed ordering). Close
// releases both; the device's PD cannot be deallocated while an MR lives.
func (d *Device) RegisterMR(size, access int) (_ *MR, err error) {
	switch {
	case size < 1:
		return nil, fmt.Errorf("register memory: %d bytes", size)
	case d.pd == nil:
		return nil, fmt.Errorf("register memory: the device is closed")
	case access&AccessRelaxedOrdering != 0 && !RelaxedOrderingBuilt:
		return nil, errNoRelaxedOrdering
	}
	page := os.Getpagesize()
	m := &MR{size: size, mapLen: (size + page - 1) / page * page}
	var bound C.int
	p, cerr := C.rb_mmap(C.size_t(m.mapLen), 0, -1, &bound)
	if p == nil {
		return nil, fmt.Errorf("mmap of %d bytes: %v", m.mapLen, errnoOr(cerr))
	}
	m.base = p
	mr, cerr := C.rb_reg_mr(d.pd, p, C.size_t(size), C.int(access))
	if mr == nil {
		C.rb_munmap(p, C.size_t(m.mapLen))
		return nil, &VerbError{Verb: "ibv_reg_mr", Phase: fmt.Sprintf("%d bytes, access %s", size, AccessString(access)), Err: regMRError(errnoOr(cerr), uint64(size))}
	}
	m.mr = mr
	m.Addr, m.LKey, m.RKey = uint64(uintptr(p)), uint32(mr.lkey), uint32(mr.rkey)
	return m, nil
}

// Bytes is the registered memory as a slice over C memory; it is invalid after Close.
func (m *MR) Bytes() []byte { return unsafe.Slice((*byte)(m.base), m.size) }

// Len is the registered length.
func (m *MR) Len() int { return m.size }

// Close deregisters and unmaps the memory; nil-safe and idempotent.
func (m *MR) Close() error {
	if m == nil || m.base == nil {
		return nil
	}
	var err error
	if m.mr != nil {
		if rc := C.ibv_dereg_mr(m.mr); rc != 0 {
			err = &VerbError{Verb: "ibv_dereg_mr", Err: syscall.Errno(rc)}
		}
		m.mr = nil
	}
	C.rb_munmap(m.base, C.size_t(m.mapLen))
	m.base = nil
	return err
}

// Queue is a session's post list (WRs) and completion array (WCs), both in C memory:
// fill WRs()[:n] and Post them to a QP in one cgo call; Poll or Wait fills WCs().
// Post may be called from any goroutine, one at a time; Poll and Wait from one
// goroutine (the poller), concurrently with Post.
type Queue struct {
	s *Session
	q *C.rb_pq
}

// NewQueue allocates the arrays: maxPost WRs per post list, maxPoll WCs per poll. Wait
// sleeps on the session's completion channel when it has one (Spec.Events), else polls.
func (s *Session) NewQueue(maxPost, maxPoll int) (*Queue, error) {
	if maxPost < 1 || maxPoll < 1 {
		return nil, fmt.Errorf("queue of %d WRs and %d WCs", maxPost, maxPoll)
	}
	if len(s.cqs) > 1 {
		return nil, fmt.Errorf("a queue polls one CQ: the session has %d (Spec.Threads)", len(s.cqs))
	}
	q := C.rb_pq_new(s.cq, s.channel, C.int(maxPost), C.int(maxPoll))
	if q == nil {
		return nil, fmt.Errorf("out of memory for a queue of %d WRs and %d WCs", maxPost, maxPoll)
	}
	return &Queue{s: s, q: q}, nil
}

// WRs is the post list, a slice over C memory.
func (q *Queue) WRs() []WR { return unsafe.Slice((*WR)(unsafe.Pointer(q.q.wrs)), int(q.q.max_post)) }

// WCs is the completion array, a slice over C memory.
func (q *Queue) WCs() []WC { return unsafe.Slice((*WC)(unsafe.Pointer(q.q.wcs)), int(q.q.max_poll)) }

// Post posts WRs()[:n] to QP qp as one post list. On failure, posted says how many of
// them (a prefix) the QP took.
func (q *Queue) Post(qp, n int) (posted int, err error) {
	if qp < 0 || qp >= len(q.s.qps) {
		return 0, fmt.Errorf("post to QP %d of %d", qp, len(q.s.qps))
	}
	if rc := C.rb_pq_post(q.q, q.s.qps[qp], C.int(n)); rc != 0 {
		return int(q.q.bad), &VerbError{Verb: "ibv_post_send", Phase: fmt.Sprintf("%d WRs", n), Err: syscall.Errno(rc)}
	}
	return n, nil
}

// Fail moves QP qp to the error state: the NIC stops its WRs, and each outstanding one
// (signalled or not) completes with IBV_WC_WR_FLUSH_ERR, as will any posted later. It
// may be called from any goroutine, one at a time with Post.
func (q *Queue) Fail(qp int) error {
	if qp < 0 || qp >= len(q.s.qps) {
		return fmt.Errorf("error state for QP %d of %d", qp, len(q.s.qps))
	}
	if rc := C.rb_qp_error(q.s.qps[qp]); rc != 0 {
		return &VerbError{Verb: "ibv_modify_qp", Phase: "ERR", Err: syscall.Errno(rc)}
	}
	return nil
}

// Poll polls the CQ once into WCs: the number of completions.
func (q *Queue) Poll() (int, error) {
	n := int(C.rb_pq_poll(q.q))
	if n < 0 {
		return 0, &VerbError{Verb: "ibv_poll_cq", Err: syscall.EIO}
	}
	return n, nil
}

// Wait sleeps until completions arrive (polled into WCs; their count) or timeout
// passes (0). It blocks the calling OS thread in C.
func (q *Queue) Wait(timeout time.Duration) (int, error) {
	n := int(C.rb_pq_wait(q.q, C.int(max(timeout.Milliseconds(), 1))))
	if n < 0 {
		return 0, &VerbError{Verb: "wait for completions", Err: syscall.Errno(-n)}
	}
	return n, nil
}

// Close frees the arrays (before the session is closed); nil-safe and idempotent.
func (q *Queue) Close() {
	if q == nil || q.q == nil {
		return
	}
	C.rb_pq_free(q.q)
	q.q = nil
}
