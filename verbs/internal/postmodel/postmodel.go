//go:build linux && cgo

package postmodel

/*
#cgo CFLAGS: -O2
#include <stdlib.h>
#include <errno.h>
#include "model.h"
*/
import "C"

import "unsafe"

// Model is a model device with one QP and one CQ, and an rb_pq over them.
type Model struct {
	m *C.pm_model
	q *C.rb_pq
}

// New makes a model and its queue; withChannel gives the CQ a completion channel.
func New(withChannel bool, maxPost, maxPoll int) *Model {
	m := C.pm_new()
	ch := C.int(0)
	if withChannel {
		ch = 1
	}
	return &Model{m: m, q: C.pm_queue(m, ch, C.int(maxPost), C.int(maxPoll))}
}

func (m *Model) Close() {
	C.rb_pq_free(m.q)
	C.pm_free(m.m)
}

// WR is what Go writes into the post list (verbs.WR's layout).
type WR struct {
	WRID, LAddr, RAddr uint64
	Len, LKey, RKey    uint32
	Opcode, Flags      uint8
	_                  [2]byte
}

// WRs is the post list.
func (m *Model) WRs() []WR { return unsafe.Slice((*WR)(unsafe.Pointer(m.q.wrs)), int(m.q.max_post)) }

// Post posts WRs()[:n] to the QP: rb_pq_post's return and its bad index.
func (m *Model) Post(n int) (rc, bad int) {
	rc = int(C.rb_pq_post(m.q, &m.m.qp, C.int(n)))
	return rc, int(m.q.bad)
}

// FailNext makes the next post list fail at WR i with rc.
func (m *Model) FailNext(i, rc int) { m.m.fail_at, m.m.fail_rc = C.int(i), C.int(rc) }

// Posted is one WR of the last post list as ibv_post_send saw it.
type Posted struct {
	WRID                  uint64
	Opcode, Flags, NumSGE int
	Addr                  uint64
	Length, LKey          uint32
	RemoteAddr            uint64
	RKey                  uint32
}

// Last returns the last post list, the number of post_send calls, and whether the WRs
// were chained in order.
func (m *Model) Last() (wrs []Posted, lists int, chained bool) {
	for i := range int(m.m.last_n) {
		w, g := &m.m.wrs[i], &m.m.sges[i]
		wrs = append(wrs, Posted{
			WRID: uint64(w.wr_id), Opcode: int(w.opcode), Flags: int(w.send_flags), NumSGE: int(w.num_sge),
			Addr: uint64(g.addr), Length: uint32(g.length), LKey: uint32(g.lkey),
			RemoteAddr: uint64(C.pm_remote_addr(w)), RKey: uint32(C.pm_rkey(w)),
		})
	}
	return wrs, int(m.m.lists), m.m.chain_ok != 0
}

// QPError is rb_qp_error on the model's QP: its return.
func (m *Model) QPError() int { return int(C.rb_qp_error(&m.m.qp)) }

// FailModify makes the next ibv_modify_qp return rc.
func (m *Model) FailModify(rc int) { m.m.modify_rc = C.int(rc) }

// Modified says how often ibv_modify_qp was called, and the last state and mask.
func (m *Model) Modified() (calls, state, mask int) {
	return int(m.m.modifies), int(m.m.qp_state), int(m.m.attr_mask)
}

// PushWC queues a completion.
func (m *Model) PushWC(wrID uint64, status, opcode int, vendorErr, qpNum, length uint32) {
	C.pm_push_wc(m.m, C.uint64_t(wrID), C.int(status), C.int(opcode), C.uint32_t(vendorErr), C.uint32_t(qpNum), C.uint32_t(length))
}

// Event raises the CQ's completion event.
func (m *Model) Event() { C.pm_event(m.m) }

// WC is a converted completion (verbs.WC's layout).
type WC struct {
	WRID                                      uint64
	Status, Opcode, VendorErr, QPNum, ByteLen uint32
	_                                         uint32
}

// WCs is the completion array.
func (m *Model) WCs() []WC { return unsafe.Slice((*WC)(unsafe.Pointer(m.q.wcs)), int(m.q.max_poll)) }

func (m *Model) Poll() int              { return int(C.rb_pq_poll(m.q)) }
func (m *Model) Wait(timeoutMS int) int { return int(C.rb_pq_wait(m.q, C.int(timeoutMS))) }

// CQ says whether the CQ is armed, how often it was armed, and the events got and acked.
func (m *Model) CQ() (armed bool, notifies, events, acked int) {
	return m.m.armed != 0, int(m.m.notifies), int(m.m.events), int(m.m.acked)
}

// Constants of libibverbs the tests check against.
const (
	WRRDMAWrite  = int(C.IBV_WR_RDMA_WRITE)
	WRRDMARead   = int(C.IBV_WR_RDMA_READ)
	SendSignaled = int(C.IBV_SEND_SIGNALED)
	WCRemAccess  = int(C.IBV_WC_REM_ACCESS_ERR)
	WCRDMARead   = int(C.IBV_WC_RDMA_READ)
	QPSErr       = int(C.IBV_QPS_ERR)
	QPState      = int(C.IBV_QP_STATE)
	ENOMEM       = int(C.ENOMEM)
	EINVAL       = int(C.EINVAL)
)
