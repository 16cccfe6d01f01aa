//go:build linux && cgo

package verbs

/*
#include "rb.h"
*/
import "C"

import (
	"unsafe"
)

// bandwidthMR runs rb_bw_mr (p.MR per-io or cache, checked by CheckMR) on QP 0, to
// raddr/rkey, into res.MR. The session's own MR stays registered: the session keeps it
// for its life, and the warm-up and pool runs use it; this loop's WRs use only the MRs
// it registers itself. It returns the loop's rb_xfer (its histogram is the caller's to
// free) and its outcome.
func (s *Session) bandwidthMR(p BWParams, laddr uintptr, raddr uint64, rkey uint32, opcode C.int, iters C.uint64_t,
	deadline C.int64_t, done *C.uint64_t, last *C.int64_t, res *BWResult) (*C.rb_xfer, C.int, place) {
	a := new(C.rb_bw_mr_args)
	l := p.Layout
	s.xfer(&a.x, p.Size, laddr, 0, p.Inline && p.Op == Write, p.Timeout)
	a.x.lkey = 0 // not the session's: only the loop's own registrations
	a.x.raddr, a.x.rkey = C.uint64_t(raddr), C.uint32_t(rkey)
	a.qp, a.pd, a.opcode = s.qps[0], s.dev.pd, opcode
	a.mode = C.RB_MRMODE_PER_IO
	a.access = C.int(s.spec.LoopAccess())
	if p.MR == MRModeCache {
		a.mode, a.cache_size = C.RB_MRMODE_CACHE, C.uint32_t(p.MRCache)
	}
	a.lslots, a.rslots, a.stride = C.uint32_t(l.LSlots), C.uint32_t(l.RSlots), C.uint32_t(l.Stride)
	a.iters, a.deadline_ns = iters, deadline
	a.tx_depth, a.cq_mod = C.uint32_t(p.SQDepth), C.uint32_t(p.CQMod)
	a.done, a.qlast_ns = done, last
	endProgress := progress(p, unsafe.Slice((*uint64)(unsafe.Pointer(done)), 1))
	var rc C.int
	pl := s.onLoopThread(func() { rc = C.rb_bw_mr(a) })
	endProgress() // before done is freed
	res.MR = &MRStats{Regs: uint64(a.regs), Deregs: uint64(a.deregs), DeregsAfter: uint64(a.deregs_after),
		Hits: uint64(a.hits), Misses: uint64(a.misses), RegNS: int64(a.reg_ns), DeregNS: int64(a.dereg_ns)}
	return &a.x, rc, pl
}
