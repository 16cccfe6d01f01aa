//go:build linux && cgo

package qmodel

/*
#cgo CFLAGS: -DRB_MODEL -O2
#include <stdlib.h>
#include "model.h"
*/
import "C"

import (
	"os"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/rdmabench/rdmabench/verbs/qp"
)

var runs atomic.Int64

// Runs is how many loops have run against the model so far.
func Runs() int64 { return runs.Load() }

// Failure kinds (rb_fail.kind) and the WC statuses the model produces.
const (
	FailNone    = int(C.RB_FAIL_NONE)
	FailVerb    = int(C.RB_FAIL_VERB)
	FailWC      = int(C.RB_FAIL_WC)
	FailTimeout = int(C.RB_FAIL_TIMEOUT)
	FailClock   = int(C.RB_FAIL_CLOCK)

	WCSuccess     = int(C.IBV_WC_SUCCESS)
	WCRetryExcErr = int(C.IBV_WC_RETRY_EXC_ERR)
	WCFlushErr    = int(C.IBV_WC_WR_FLUSH_ERR)

	QShift = int(C.RB_QSHIFT)
)

// FaultKind is what the peer does wrong.
type FaultKind int

const (
	NoFault    FaultKind = iota
	PeerFails            // after Fault.After WRs the next completes with RETRY_EXC_ERR, later ones flush
	PeerStalls           // after Fault.After WRs nothing more executes or completes
	// Stray: once a faulty QP has executed more than Fault.After WRs, the CQ also holds a
	// successful completion with wr_id StrayWRID, for no WR the loop posted (a leftover
	// on a shared CQ, a provider's bug).
	Stray
)

// StrayWRID is the wr_id of Stray's completion.
const StrayWRID = uint64(C.QM_STRAY_WRID)

// Fault describes a misbehaving peer.
type Fault struct {
	Kind  FaultKind
	After uint64 // WRs of a faulty QP that go well first
	QPs   uint64 // bit q: QP q is faulty; 0: all
	// WRID is Stray's wr_id (0: StrayWRID), e.g. one that names a QP of the loop and a
	// sequence number it never posted.
	WRID uint64
}

// Net is how the model's network behaves.
type Net struct {
	PerPoll  int    // WRs each QP executes per tick (poll_cq call, or tick of a sleep); 0 means 1
	Random   bool   // per tick and QP a uniform 0..PerPoll instead
	Seed     uint64 // for Random
	OnPost   int    // WRs of the QP executed inside ibv_post_send itself
	AckDelay int    // ticks from a WR's execution to its CQE
	Fault    Fault
	// StopAfterPolls sets the stop flag at that ibv_poll_cq call (0: never).
	StopAfterPolls uint64
	CQCap          int   // CQ capacity; 0: qp.CQEntries(QPs, depth), as the session sizes it
	TickNS, NowNS  int64 // model time per tick / per rb_now() call; 0: 200 / 50
	PostNS         int64 // model time per WR posted
	MaxPolls       uint64
	// TSCPerNS, when set, makes the loop stamp with the model's TSC at this rate (ticks
	// per nanosecond of model time), calibrating it against rb_now as on a real CPU. It
	// is the run's own (no global clock switch), so such runs may share a grid.
	TSCPerNS float64
	// LeftoverEvents are completion events pending on the channel when the loop starts,
	// an earlier loop's on the same CQ (the warm-up's last arming).
	LeftoverEvents uint32
	// WRAPI makes the loop post through the extended QP API (ibv_wr_start ..
	// ibv_wr_complete), as a session created with --post-api wr does.
	WRAPI bool
	// Inline sends every WRITE with IBV_SEND_INLINE.
	Inline bool
	// Clock0NS is the model clock when the run starts (0: 10^12 ns): loop threads
	// that started apart (TestThreads).
	Clock0NS int64
	// PostFailAt makes the PostFailAt-th post call (1: the first; ibv_post_send and
	// ibv_wr_complete alike) fail with errno PostFailErr, as a provider's post fails.
	// ibv_post_send posts the WRs of its chain before WR PostFailWR (the chain's last
	// if it is shorter) and names that one in *bad_wr; ibv_wr_complete posts none of
	// its batch. 0: no post fails but for a violation.
	PostFailAt  uint64
	PostFailErr syscall.Errno
	PostFailWR  uint32
}

// wrAPIEnv, set to 1, makes every run post through the extended QP API, whatever its
// Net says: TestEveryTestOnTheWRAPI runs the package's tests again that way.
const wrAPIEnv = "RB_QMODEL_WR_API"

type model struct {
	m          *C.qm_model
	inline     bool
	lbuf, rbuf unsafe.Pointer
	llen, rlen int
}

func newModel(cfg *C.qm_config, n Net, nqp, depth int, llen, rlen int) *model {
	md := &model{llen: llen, rlen: rlen}
	md.lbuf = C.calloc(C.size_t(llen), 1)
	md.rbuf = C.calloc(C.size_t(rlen), 1)
	if md.lbuf == nil || md.rbuf == nil {
		panic("qmodel: out of memory")
	}
	cfg.nqp = C.int(nqp)
	cfg.depth = C.uint32_t(depth)
	cfg.cq_cap = C.uint32_t(n.CQCap)
	if n.CQCap == 0 { // as the session sizes it
		cfg.cq_cap = C.uint32_t(qp.CQEntries(nqp, depth))
	}
	cfg.per_tick = C.uint32_t(max(n.PerPoll, 1))
	if n.Random {
		cfg.random = 1
	}
	cfg.seed = C.uint64_t(n.Seed)
	cfg.on_post = C.uint32_t(n.OnPost)
	cfg.ack_delay = C.uint32_t(n.AckDelay)
	cfg.fault = C.int(n.Fault.Kind)
	cfg.fault_after = C.uint64_t(n.Fault.After)
	cfg.fault_mask = C.uint64_t(n.Fault.QPs)
	cfg.stray_wrid = C.uint64_t(n.Fault.WRID)
	cfg.stop_after_polls = C.uint64_t(n.StopAfterPolls)
	cfg.tick_ns = C.int64_t(n.TickNS)
	cfg.now_ns = C.int64_t(n.NowNS)
	cfg.post_ns = C.int64_t(n.PostNS)
	cfg.max_polls = C.uint64_t(n.MaxPolls)
	cfg.tsc_per_ns = C.double(n.TSCPerNS)
	cfg.clock0 = C.int64_t(n.Clock0NS)
	cfg.post_fail_at = C.uint64_t(n.PostFailAt)
	cfg.post_fail_err = C.int(n.PostFailErr)
	cfg.post_fail_wr = C.uint32_t(n.PostFailWR)
	cfg.leftover_events = C.uint32_t(n.LeftoverEvents)
	if n.WRAPI || os.Getenv(wrAPIEnv) == "1" {
		cfg.wr_api = 1
	}
	md.inline = n.Inline
	cfg.lbase = (*C.uint8_t)(md.lbuf)
	cfg.llen = C.size_t(llen)
	cfg.rbase = (*C.uint8_t)(md.rbuf)
	cfg.rlen = C.size_t(rlen)
	md.m = C.qm_new(cfg)
	if md.m == nil {
		panic("qmodel: qm_new failed")
	}
	return md
}

func (md *model) free() {
	C.qm_free(md.m)
	C.free(md.lbuf)
	C.free(md.rbuf)
}

func (md *model) local() []byte  { return unsafe.Slice((*byte)(md.lbuf), md.llen) }
func (md *model) remote() []byte { return unsafe.Slice((*byte)(md.rbuf), md.rlen) }

// xfer fills the fields every loop shares, over the model's buffers and CQ.
func (md *model) xfer(x *C.rb_xfer, laddr uintptr, size uint32, timeoutNS int64, hist *C.rb_hist) {
	x.cq = &md.m.cq
	x.laddr = C.uint64_t(laddr)
	x.lkey = 0x11
	x.raddr = C.uint64_t(uintptr(md.rbuf))
	x.rkey = XferRKey
	x.size = C.uint32_t(size)
	x.stop = C.qm_stop(md.m)
	x.timeout_ns = C.int64_t(timeoutNS)
	x.hist = hist
	if md.inline {
		x.send_flags = C.IBV_SEND_INLINE
	}
}

// opcode is the WR opcode of a READ or a WRITE.
func opcode(read bool) C.int {
	if read {
		return C.IBV_WR_RDMA_READ
	}
	return C.IBV_WR_RDMA_WRITE
}

// pattern fills the local buffer with byte i*mul + add at offset i.
func (md *model) pattern(mul, add int) {
	l := md.local()
	for i := range l {
		l[i] = byte(i*mul + add)
	}
}

// RKey is the remote key of QP q's region in the bandwidth and rounds loops: each QP's
// its own, so that a WR carrying another QP's key shows in Record.RKeys. The loops
// that take one remote region (rb_xfer.raddr) get XferRKey.
func RKey(q int) uint32 { return 0x2200 + uint32(q) }

// XferRKey is rb_xfer.rkey as the model's runs set it.
const XferRKey = 0x22

// remotes are the per-QP arrays the bandwidth and rounds loops take: QP q's remote
// region at rbuf + q*rstride (key RKey(q)), and its last completion (out).
type remotes struct {
	n    int
	addr *C.uint64_t
	key  *C.uint32_t
	last *C.int64_t
}

func (md *model) regions(nqp int, rstride uint64) remotes {
	r := remotes{n: nqp, addr: (*C.uint64_t)(C.calloc(C.size_t(nqp), 8)), key: (*C.uint32_t)(C.calloc(C.size_t(nqp), 4)),
		last: (*C.int64_t)(C.calloc(C.size_t(nqp), 8))}
	addr, key := unsafe.Slice((*uint64)(unsafe.Pointer(r.addr)), nqp), unsafe.Slice((*uint32)(unsafe.Pointer(r.key)), nqp)
	for q := range nqp {
		addr[q], key[q] = uint64(uintptr(md.rbuf))+uint64(q)*rstride, RKey(q)
	}
	return r
}

func (r remotes) lastNS() []int64 {
	return append([]int64(nil), unsafe.Slice((*int64)(unsafe.Pointer(r.last)), r.n)...)
}

func (r remotes) free() {
	C.free(unsafe.Pointer(r.addr))
	C.free(unsafe.Pointer(r.key))
	C.free(unsafe.Pointer(r.last))
}
