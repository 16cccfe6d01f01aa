//go:build linux && cgo

package qmodel

/*
#include <stdlib.h>
#include "model.h"

// qm_mr_misuse does one thing with registrations that the model must flag (see
// ModelMRMisuse), on a model of one QP over an 8-byte local buffer; the CQE statuses it
// polls go to status[0..3], -1 for none.
static void qm_mr_misuse(qm_model *m, int which, int *status) {
	struct ibv_mr *mr = NULL;
	struct ibv_pd other = m->pd;
	void *l = m->cfg.lbase, *r = m->cfg.rbase;
	struct ibv_sge sge = {.addr = (uint64_t)(uintptr_t)l, .length = 8, .lkey = 0x11};
	struct ibv_send_wr wr = {.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
	                         .wr.rdma.remote_addr = (uint64_t)(uintptr_t)r, .wr.rdma.rkey = 0x22};
	struct ibv_send_wr *bad;
	int post = 1, dereg_before = 0, dereg_after = 1;
	qm_enter(m);
	switch (which) {
	case 0: // a WR with an lkey the model never issued
		dereg_after = 0;
		break;
	case 1: // deregistered twice
		mr = ibv_reg_mr(&m->pd, l, 8, IBV_ACCESS_LOCAL_WRITE);
		ibv_dereg_mr(mr);
		post = 0;
		break;
	case 2: // outside the local buffer
		mr = ibv_reg_mr(&m->pd, (char *)l + 4, 8, IBV_ACCESS_LOCAL_WRITE);
		post = dereg_after = 0;
		break;
	case 3: // on a PD of no model's
		mr = ibv_reg_mr(&other, l, 8, IBV_ACCESS_LOCAL_WRITE);
		post = dereg_after = 0;
		break;
	case 4: // deregistered while its WR is in flight
		mr = ibv_reg_mr(&m->pd, l, 8, IBV_ACCESS_LOCAL_WRITE);
		dereg_before = 1;
		dereg_after = 0;
		break;
	case 5: // left registered
		mr = ibv_reg_mr(&m->pd, l, 8, IBV_ACCESS_LOCAL_WRITE);
		dereg_after = 0;
		break;
	case 6: // a READ landing in an MR without local write access
		mr = ibv_reg_mr(&m->pd, l, 8, 0);
		wr.opcode = IBV_WR_RDMA_READ;
		break;
	case 7: // an MR smaller than the SGE
		mr = ibv_reg_mr(&m->pd, l, 4, IBV_ACCESS_LOCAL_WRITE);
		break;
	case 8: // all well: registered, posted, completed, deregistered
		mr = ibv_reg_mr(&m->pd, l, 8, IBV_ACCESS_LOCAL_WRITE);
		break;
	}
	if (mr)
		sge.lkey = mr->lkey;
	if (post)
		ibv_post_send(m->qpp[0], &wr, &bad);
	if (dereg_before)
		ibv_dereg_mr(mr);
	for (int i = 0; i < 4; i++) {
		struct ibv_wc wc;
		status[i] = ibv_poll_cq(&m->cq, 1, &wc) == 1 ? (int)wc.status : -1;
	}
	if (mr && dereg_after)
		ibv_dereg_mr(mr);
	qm_leave(m);
}
*/
import "C"

import (
	"unsafe"
)

// MRMode is rb_bw_mr's mode.
type MRMode int

const (
	PerIO   MRMode = C.RB_MRMODE_PER_IO
	MRCache MRMode = C.RB_MRMODE_CACHE
)

func (m MRMode) String() string {
	switch m {
	case PerIO:
		return "per-io"
	case MRCache:
		return "cache"
	}
	return "mode?"
}

// MRCase is one run of rb_bw_mr against the model: one QP.
type MRCase struct {
	Net
	Mode         MRMode
	CacheSize    int
	Depth, CQMod int
	Iters        uint64 // with DeadlineNS an upper bound (math.MaxUint64: none)
	DeadlineNS   int64  // relative, model time; 0: none
	Read         bool
	Size, Stride uint32 // 0: 8 and Size
	LSlots       uint32 // 0 means 1
	RSlots       uint32
	TimeoutNS    int64
	// The model's registrations: the RegFailAt-th ibv_reg_mr fails (ENOMEM), the
	// DeregFailAt-th ibv_dereg_mr fails once (EBUSY); each costs RegNS / DeregNS of
	// model time.
	RegFailAt, DeregFailAt uint64
	RegNS, DeregNS         int64
	// Access is what the loop is told to register with (rb_bw_mr_args.access); 0
	// means IBV_ACCESS_LOCAL_WRITE.
	Access int
}

// MROutcome is what rb_bw_mr returned and the model recorded.
type MROutcome struct {
	RC                                  int
	Fail                                Fail
	Done, Completed                     uint64
	DurationNS, LastNS                  int64
	Hist                                Hist
	Stop                                int
	DeadlineNS                          int64 // absolute, model clock (0: none)
	Regs, Deregs, DeregsAfter           uint64
	Hits, Misses                        uint64
	RegNS, DeregNS                      int64
	RegCalls, DeregCalls                uint64   // the model's count of calls (failed ones too)
	ModelRegs, ModelDeregs, Live, MaxMR uint64   // the model's successful ones, left registered, most at once
	RegAddrs                            []uint64 // every successful registration's offset into the local buffer, in order
	RegAccess                           []int    // and its access flags, as ibv_reg_mr was given them
	RStride                             uint64
	Record
}

// Normal is c with its defaults filled in, as RunBWMR runs it.
func (c MRCase) Normal() MRCase {
	if c.Size == 0 {
		c.Size = 8
	}
	if c.Stride == 0 {
		c.Stride = c.Size
	}
	c.LSlots, c.RSlots = max(c.LSlots, 1), max(c.RSlots, 1)
	if c.Access == 0 {
		c.Access = C.IBV_ACCESS_LOCAL_WRITE
	}
	return c
}

// RunBWMR runs rb_bw_mr once.
func RunBWMR(c MRCase) MROutcome {
	c = c.Normal()
	llen := int(c.LSlots) * int(c.Stride)
	rlen := int(c.RSlots) * int(c.Stride)
	var cfg C.qm_config
	cfg.mr_check = 1
	cfg.reg_fail_at, cfg.dereg_fail_at = C.uint64_t(c.RegFailAt), C.uint64_t(c.DeregFailAt)
	cfg.reg_ns, cfg.dereg_ns = C.int64_t(c.RegNS), C.int64_t(c.DeregNS)
	md := newModel(&cfg, c.Net, 1, c.Depth, llen, rlen)
	defer md.free()
	md.pattern(13, 1)
	hist := newHist()
	defer C.free(unsafe.Pointer(hist))
	out := (*C.uint64_t)(C.calloc(2, 8)) // done, qlast_ns
	defer C.free(unsafe.Pointer(out))
	a := (*C.rb_bw_mr_args)(C.calloc(1, C.size_t(unsafe.Sizeof(C.rb_bw_mr_args{}))))
	defer C.free(unsafe.Pointer(a))
	md.xfer(&a.x, uintptr(md.lbuf), c.Size, c.TimeoutNS, hist)
	a.x.lkey = 0 // the loop must not use it: only its own registrations
	a.qp = *md.m.qpp
	a.pd = &md.m.pd
	a.opcode = opcode(c.Read)
	a.mode = C.int(c.Mode)
	a.access = C.int(c.Access)
	a.cache_size = C.uint32_t(c.CacheSize)
	a.lslots, a.rslots, a.stride = C.uint32_t(c.LSlots), C.uint32_t(c.RSlots), C.uint32_t(c.Stride)
	a.iters = C.uint64_t(c.Iters)
	a.tx_depth, a.cq_mod = C.uint32_t(c.Depth), C.uint32_t(c.CQMod)
	var deadline int64
	if c.DeadlineNS > 0 {
		deadline = int64(md.m.clock) + c.DeadlineNS
		a.deadline_ns = C.int64_t(deadline)
	}
	a.done = out
	a.qlast_ns = (*C.int64_t)(unsafe.Add(unsafe.Pointer(out), 8))
	runs.Add(1)
	rc := C.qm_bw_mr(md.m, a)
	o := MROutcome{
		RC: int(rc), Fail: goFail(&a.x.fail), Done: uint64(*a.done), Completed: uint64(a.completed),
		DurationNS: int64(a.x.duration_ns), LastNS: int64(*a.qlast_ns), Hist: goHist(hist), Stop: int(md.m.stop),
		DeadlineNS: deadline, Regs: uint64(a.regs), Deregs: uint64(a.deregs), DeregsAfter: uint64(a.deregs_after),
		Hits: uint64(a.hits), Misses: uint64(a.misses), RegNS: int64(a.reg_ns), DeregNS: int64(a.dereg_ns),
		RegCalls: uint64(md.m.reg_calls), DeregCalls: uint64(md.m.dereg_calls), ModelRegs: uint64(md.m.mr_regs),
		ModelDeregs: uint64(md.m.mr_deregs), Live: uint64(md.m.mr_live), MaxMR: uint64(md.m.mr_max_live),
		RStride: uint64(rlen), Record: md.record(),
	}
	for _, r := range unsafe.Slice(md.m.regs, int(md.m.nreg)) {
		o.RegAddrs = append(o.RegAddrs, uint64(uintptr(r.mr.addr)-uintptr(md.lbuf)))
		o.RegAccess = append(o.RegAccess, int(r.access))
	}
	return o
}

// ModelMRMisuse runs misuse number which (0..8, 8: none) of registrations against a
// fresh model and returns what it recorded and the statuses of the CQEs polled after.
func ModelMRMisuse(which int) (Record, []int) {
	var cfg C.qm_config
	cfg.mr_check = 1
	md := newModel(&cfg, Net{PerPoll: 1}, 1, 4, 8, 8)
	defer md.free()
	var st [4]C.int
	C.qm_mr_misuse(md.m, C.int(which), &st[0])
	out := make([]int, 0, 4)
	for _, s := range st {
		if s >= 0 {
			out = append(out, int(s))
		}
	}
	return md.record(), out
}

// WCLocProtErr is IBV_WC_LOC_PROT_ERR.
const WCLocProtErr = int(C.IBV_WC_LOC_PROT_ERR)

// CacheFuzz runs qm_cache_fuzz: ops random operations on rb_bw_mr's cache table of
// capacity cap; the first that went wrong, or -1.
func CacheFuzz(cap int, ops, seed uint64) int64 {
	return int64(C.qm_cache_fuzz(C.uint32_t(cap), C.uint64_t(ops), C.uint64_t(seed)))
}
