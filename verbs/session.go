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
	"crypto/sha256"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/rdmabench/rdmabench/verbs/qp"
)

// The access flags of access.go are libibverbs' (an index out of range fails the
// build). Relaxed ordering is checked where the headers have it.
var _ = [1]struct{}{}[AccessLocalWrite-C.IBV_ACCESS_LOCAL_WRITE+AccessRemoteWrite-C.IBV_ACCESS_REMOTE_WRITE+
	AccessRemoteRead-C.IBV_ACCESS_REMOTE_READ]
var _ = [1]struct{}{}[(AccessRelaxedOrdering-C.RB_ACCESS_RELAXED_ORDERING)*C.RB_ACCESS_RELAXED_ORDERING]

// RelaxedOrderingBuilt says whether the libibverbs headers this rdmabench was built
// against have IBV_ACCESS_RELAXED_ORDERING (rdma-core 28 and later): without it a plan
// that asks for relaxed ordering is refused, not run without it.
const RelaxedOrderingBuilt = C.RB_ACCESS_RELAXED_ORDERING != 0

var errNoRelaxedOrdering = errors.New("this rdmabench was built against libibverbs headers without IBV_ACCESS_RELAXED_ORDERING (rdma-core older than 28): rebuild it against rdma-core 28 or later, or turn relaxed ordering off (--disable-pcie-relaxed, on both sides of a test; Device.DisablePCIeRelaxed in the Go API)")

// Session is one side of one test: a CQ, NumQP RC QPs and one registered buffer.
type Session struct {
	dev     *Device
	spec    Spec
	gids    []GIDEntry         // the source GID of each QP (Spec.GIDs, else the device's)
	cq      *C.struct_ibv_cq   // the first thread's: cqs[0]
	cqs     []*C.struct_ibv_cq // one per loop thread (blocks)
	blocks  []qp.Block         // the QPs of each loop thread
	memNode *int               // the node the buffer was bound to, when the kernel took it
	channel *C.struct_ibv_comp_channel
	qps     []*C.struct_ibv_qp
	qpx     **C.struct_ibv_qp_ex // C array: the QPs as extended QPs (--post-api wr), else nil
	postAPI string               // PostWR or PostLegacy
	qpsMu   sync.Mutex           // Abort (from any goroutine) against Close
	psns    []uint32
	base    unsafe.Pointer
	mapLen  int
	buf     unsafe.Pointer
	mr      *C.struct_ibv_mr
	stop    *C.int
	rdAtom  int
	mtu     int
	inline  int
	// the peers' buffers, from Connect: QP i leads to remotes[i]
	remotes []remote
	onePeer bool // all QPs lead to one peer, each to its own region of the peer's buffer
}

type remote struct {
	addr uint64
	key  uint32
	len  uint64
}

// NewSession allocates the buffer (outside the Go heap), registers it with only the
// access the spec asks for, and creates the CQ and QPs.
func (d *Device) NewSession(spec Spec) (_ *Session, err error) {
	s, err := d.sessionFor(spec)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	s.stop = (*C.int)(C.calloc(1, C.size_t(unsafe.Sizeof(C.int(0)))))
	if s.stop == nil {
		panic("verbs: out of memory for the stop flag") // as the loops' other allocations
	}
	if err := s.mapBuffer(); err != nil {
		return nil, err
	}
	if err := s.registerBuffer(); err != nil {
		return nil, err
	}
	if err := s.createCQs(); err != nil {
		return nil, err
	}
	if err := s.moderateCQs(); err != nil {
		return nil, err
	}
	if err := s.createQPs(); err != nil {
		return nil, err
	}
	return s, nil
}

// sessionFor checks spec against the device and lays out the session it asks for (its
// post API, the loop threads' blocks of QPs, each QP's GID), holding no resource yet.
func (d *Device) sessionFor(spec Spec) (*Session, error) {
	if spec.NumQP < 1 || spec.SQDepth < 1 || spec.BufSize < 1 {
		return nil, fmt.Errorf("invalid session spec: %d QPs, SQ depth %d, buffer %d bytes", spec.NumQP, spec.SQDepth, spec.BufSize)
	}
	if spec.SQDepth > d.Info.MaxQPWR {
		return nil, fmt.Errorf("SQ depth %d exceeds %s's max_qp_wr %d", spec.SQDepth, d.Info.Name, d.Info.MaxQPWR)
	}
	if err := CheckMsgSize(d.Info, d.Port, spec.MsgSize); err != nil {
		return nil, err
	}
	api, err := ResolvePostAPI(spec.PostAPI, d.Info.Driver)
	if err != nil {
		return nil, err
	}
	threads := max(spec.Threads, 1)
	blocks, err := qp.Split(spec.NumQP, threads)
	if err != nil {
		return nil, err
	}
	if threads > 1 && spec.Events {
		return nil, fmt.Errorf("completion events (--events) with %d loop threads: the threads would share one completion channel; use one thread", threads)
	}
	gids, err := d.sessionGIDs(spec)
	if err != nil {
		return nil, err
	}
	return &Session{dev: d, spec: spec, postAPI: api, blocks: blocks, gids: gids}, nil
}

// mapBuffer maps the buffer (whole pages, or 2 MiB hugepages with Spec.Huge), bound to
// Spec.MemNode when the kernel takes it; the test region starts at Spec.Offset.
func (s *Session) mapBuffer() error {
	spec := s.spec
	page := os.Getpagesize()
	if spec.Huge {
		page = 2 << 20
	}
	s.mapLen = (spec.Offset + spec.BufSize + page - 1) / page * page
	node, bound := C.int(-1), C.int(0)
	if spec.MemNode != nil {
		node = C.int(*spec.MemNode)
	}
	p, cerr := C.rb_mmap(C.size_t(s.mapLen), boolInt(spec.Huge), node, &bound)
	if bound != 0 {
		n := int(node)
		s.memNode = &n
	}
	if p == nil {
		hint := ""
		if spec.Huge {
			hint = " (no free hugepages? see /proc/sys/vm/nr_hugepages)"
		}
		err := fmt.Errorf("mmap of %d bytes: %v%s", s.mapLen, errnoOr(cerr), hint)
		s.mapLen = 0
		return err
	}
	s.base = p
	s.buf = unsafe.Add(p, spec.Offset)
	return nil
}

// registerBuffer registers the test region with only the access the spec asks for,
// refusing relaxed ordering where the headers lack it.
func (s *Session) registerBuffer() error {
	spec := s.spec
	if spec.RelaxedOrdering && !RelaxedOrderingBuilt {
		return errNoRelaxedOrdering
	}
	mr, cerr := C.rb_reg_mr(s.dev.pd, s.buf, C.size_t(spec.BufSize), C.int(spec.Access()))
	if mr == nil {
		return &VerbError{Verb: "ibv_reg_mr", Phase: fmt.Sprintf("%d bytes, access %s", spec.BufSize, AccessString(spec.Access())), Err: regMRError(errnoOr(cerr), uint64(s.mapLen))}
	}
	s.mr = mr
	return nil
}

// createCQs creates one CQ per loop thread, sized for its block of QPs, and with
// Spec.Events the completion channel they share.
func (s *Session) createCQs() error {
	d, spec, blocks := s.dev, s.spec, s.blocks
	// A CQ cut to the device's limit could overflow, which fails the QPs mid-run.
	// Each thread's CQ serves its block of QPs; the first block is the largest.
	cqe := qp.CQEntries(blocks[0].N, spec.SQDepth)
	if cqe > d.Info.MaxCQE {
		return fmt.Errorf("%d QPs x SQ depth %d need a %d-entry CQ, above %s's max_cqe %d: lower --tx-depth or --qps (or raise --threads)", blocks[0].N, spec.SQDepth, cqe, d.Info.Name, d.Info.MaxCQE)
	}
	if spec.Events {
		ch, cerr := C.ibv_create_comp_channel(d.ctx)
		if ch == nil {
			return &VerbError{Verb: "ibv_create_comp_channel", Err: errnoOr(cerr)}
		}
		s.channel = ch
	}
	for _, b := range blocks {
		cqe := qp.CQEntries(b.N, spec.SQDepth)
		cq, cerr := C.ibv_create_cq(d.ctx, C.int(cqe), nil, s.channel, 0)
		if cq == nil {
			return &VerbError{Verb: "ibv_create_cq", Phase: fmt.Sprintf("%d entries", cqe), Err: errnoOr(cerr)}
		}
		s.cqs = append(s.cqs, cq)
	}
	s.cq = s.cqs[0]
	return nil
}

// moderateCQs sets the CQ moderation the spec asks for (Spec.ModCount, ModPeriodUS)
// on every CQ; without any it leaves them as created.
func (s *Session) moderateCQs() error {
	spec := s.spec
	if spec.ModCount == 0 && spec.ModPeriodUS == 0 {
		return nil
	}
	for _, cq := range s.cqs {
		var ma C.struct_ibv_modify_cq_attr
		ma.attr_mask = C.IBV_CQ_ATTR_MODERATE
		ma.moderate.cq_count = C.uint16_t(spec.ModCount)
		ma.moderate.cq_period = C.uint16_t(spec.ModPeriodUS)
		if rc := C.ibv_modify_cq(cq, &ma); rc != 0 {
			err := error(syscall.Errno(rc))
			if rc == C.EOPNOTSUPP || rc == C.ENOSYS {
				err = fmt.Errorf("%w: %s does not support CQ moderation; drop --cq-moderation", syscall.Errno(rc), s.dev.Info.Name)
			}
			return &VerbError{Verb: "ibv_modify_cq", Phase: fmt.Sprintf("moderation %d completions / %d us", spec.ModCount, spec.ModPeriodUS), Err: err}
		}
	}
	return nil
}

// createQPs creates the spec's RC QPs, each on its loop thread's CQ with a random
// initial PSN, and takes each to INIT with the remote access the buffer was registered
// with.
func (s *Session) createQPs() error {
	spec := s.spec
	access := C.int(spec.Access())
	for i := 0; i < spec.NumQP; i++ {
		cq := s.cqs[s.thread(i)]
		var ia C.struct_ibv_qp_init_attr
		ia.send_cq = cq
		ia.recv_cq = cq
		ia.qp_type = C.IBV_QPT_RC
		ia.sq_sig_all = 0
		ia.cap.max_send_wr = C.uint32_t(spec.SQDepth)
		ia.cap.max_recv_wr = 1
		ia.cap.max_send_sge = 1
		ia.cap.max_recv_sge = 1
		ia.cap.max_inline_data = C.uint32_t(spec.InlineSize)
		qp, inline, err := s.createQP(&ia)
		if err != nil {
			return err
		}
		s.qps = append(s.qps, qp)
		s.psns = append(s.psns, rand.Uint32()&0xffffff)
		s.inline = inline
		if err := s.modify(qp, "INIT", func(a *C.struct_ibv_qp_attr) C.int {
			a.qp_state = C.IBV_QPS_INIT
			a.pkey_index = 0
			a.port_num = C.uint8_t(s.dev.Port.Port)
			a.qp_access_flags = C.uint(access & (C.IBV_ACCESS_REMOTE_WRITE | C.IBV_ACCESS_REMOTE_READ))
			return C.IBV_QP_STATE | C.IBV_QP_PKEY_INDEX | C.IBV_QP_PORT | C.IBV_QP_ACCESS_FLAGS
		}); err != nil {
			return err
		}
	}
	return nil
}

// sessionGIDs is the source GID of each of the spec's QPs: Spec.GIDs (one for all, or
// one per QP), each an entry of the device's port, else the device's GID.
func (d *Device) sessionGIDs(spec Spec) ([]GIDEntry, error) {
	in := spec.GIDs
	switch len(in) {
	case 0:
		in = []GIDEntry{d.GID}
	case 1, spec.NumQP:
	default:
		return nil, fmt.Errorf("invalid session spec: %d GIDs for %d QPs", len(in), spec.NumQP)
	}
	out := make([]GIDEntry, spec.NumQP)
	for i := range out {
		g := in[min(i, len(in)-1)]
		if _, err := pickGID(d.Port, g.Index); err != nil {
			return nil, fmt.Errorf("%s port %d: %w", d.Info.Name, d.Port.Port, err)
		}
		out[i] = g
	}
	return out, nil
}

// thread is the loop thread that drives QP q.
func (s *Session) thread(q int) int {
	for t, b := range s.blocks {
		if q < b.First+b.N {
			return t
		}
	}
	return len(s.blocks) - 1
}

// MemNode is the NUMA node the buffer's pages were bound to; nil when they were not.
func (s *Session) MemNode() *int { return s.memNode }

// Threads is how many loop threads the session's bandwidth loops run on.
func (s *Session) Threads() int { return len(s.blocks) }

// createQP creates one RC QP: with ibv_create_qp, or, for --post-api wr, with
// ibv_create_qp_ex for RDMA WRITE and READ through the extended QP API, keeping its
// ibv_qp_ex in s.qpx. It returns the inline size the provider granted.
func (s *Session) createQP(ia *C.struct_ibv_qp_init_attr) (*C.struct_ibv_qp, int, error) {
	d := s.dev
	phase := fmt.Sprintf("RC, SQ depth %d, inline %d", s.spec.SQDepth, s.spec.InlineSize)
	if s.postAPI != PostWR {
		qp, cerr := C.ibv_create_qp(d.pd, ia)
		if qp == nil {
			return nil, 0, &VerbError{Verb: "ibv_create_qp", Phase: phase, Err: errnoOr(cerr)}
		}
		return qp, int(ia.cap.max_inline_data), nil
	}
	var ix C.struct_ibv_qp_init_attr_ex
	ix.send_cq, ix.recv_cq, ix.qp_type, ix.sq_sig_all, ix.cap = ia.send_cq, ia.recv_cq, ia.qp_type, ia.sq_sig_all, ia.cap
	ix.comp_mask = C.IBV_QP_INIT_ATTR_PD | C.IBV_QP_INIT_ATTR_SEND_OPS_FLAGS
	ix.pd = d.pd
	ix.send_ops_flags = C.IBV_QP_EX_WITH_RDMA_WRITE | C.IBV_QP_EX_WITH_RDMA_READ
	qp, cerr := C.ibv_create_qp_ex(d.ctx, &ix)
	if qp == nil {
		err := errnoOr(cerr)
		if errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENOSYS) {
			err = fmt.Errorf("%w: %s's provider does not offer the extended QP API (ibv_wr_*) for RDMA WRITE and READ; use --post-api legacy", err, d.Info.Name)
		}
		return nil, 0, &VerbError{Verb: "ibv_create_qp_ex", Phase: phase + ", --post-api wr", Err: err}
	}
	qpx := C.ibv_qp_to_qp_ex(qp)
	if qpx == nil {
		C.ibv_destroy_qp(qp)
		return nil, 0, &VerbError{Verb: "ibv_qp_to_qp_ex", Phase: phase, Err: fmt.Errorf("%s's provider gave a QP without the extended API; use --post-api legacy", d.Info.Name)}
	}
	if s.qpx == nil {
		s.qpx = (**C.struct_ibv_qp_ex)(C.calloc(C.size_t(s.spec.NumQP), C.size_t(unsafe.Sizeof(uintptr(0)))))
		if s.qpx == nil {
			panic("verbs: out of memory for the extended QPs")
		}
	}
	unsafe.Slice(s.qpx, s.spec.NumQP)[len(s.qps)] = qpx
	return qp, int(ix.cap.max_inline_data), nil
}

// PostAPI is how this session's loops post: PostWR or PostLegacy.
func (s *Session) PostAPI() string { return s.postAPI }

func boolInt(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

func (s *Session) modify(qp *C.struct_ibv_qp, phase string, set func(*C.struct_ibv_qp_attr) C.int) error {
	var a C.struct_ibv_qp_attr
	mask := set(&a)
	if rc := C.ibv_modify_qp(qp, &a, mask); rc != 0 {
		return &VerbError{Verb: "ibv_modify_qp", Phase: phase, Err: syscall.Errno(rc)}
	}
	return nil
}

// MaxInline is the inline size the QPs were created with.
func (s *Session) MaxInline() int { return s.inline }

// Bytes is the test region (BufSize bytes at Offset) as a slice over C memory.
func (s *Session) Bytes() []byte { return unsafe.Slice((*byte)(s.buf), s.spec.BufSize) }

// Fill writes the verification pattern for seed into [off, off+n) of the test region.
func (s *Session) Fill(seed uint32, off, n int) {
	C.rb_fill((*C.uint8_t)(unsafe.Add(s.buf, off)), C.size_t(n), C.uint32_t(seed))
}

// Check returns the offset of the first byte in [off, off+n) that differs from the
// pattern for seed, or -1.
func (s *Session) Check(seed uint32, off, n int) int64 {
	bad := int64(C.rb_check((*C.uint8_t)(unsafe.Add(s.buf, off)), C.size_t(n), C.uint32_t(seed)))
	if bad >= 0 {
		bad += int64(off)
	}
	return bad
}

// Digest is the SHA-256 of [off, off+n) of the test region.
func (s *Session) Digest(off, n int) [32]byte { return sha256.Sum256(s.Bytes()[off : off+n]) }

// Stop asks a running loop to finish what is in flight and return; safe from any goroutine.
func (s *Session) Stop() { atomic.StoreInt32((*int32)(unsafe.Pointer(s.stop)), 1) }

// Abort stops a running loop without waiting for what is in flight: for when the peer
// is gone (its control connection lost, or it ended the test), and what is in flight
// would otherwise complete only when the transport's retries run out (up to 7 x the QP
// timeout: 30 s at -u 20). It moves every QP to the error state, so that the NIC stops
// them and each outstanding WR completes at once, flushed (IBV_WC_WR_FLUSH_ERR): the
// loop returns with what completed before and a completion error. Safe from any
// goroutine; a no-op after Close.
func (s *Session) Abort() {
	s.Stop()
	s.qpsMu.Lock()
	defer s.qpsMu.Unlock()
	for _, qp := range s.qps {
		C.rb_qp_error(qp) // an error here leaves the loop to its watchdog, as before
	}
}

// Close tears down QPs, CQ, MR and buffer in reverse order; nil-safe and idempotent.
func (s *Session) Close() error {
	if s == nil {
		return nil
	}
	var errs []error
	s.qpsMu.Lock()
	for _, qp := range s.qps {
		if rc := C.ibv_destroy_qp(qp); rc != 0 {
			errs = append(errs, &VerbError{Verb: "ibv_destroy_qp", Err: syscall.Errno(rc)})
		}
	}
	s.qps = nil
	if s.qpx != nil {
		C.free(unsafe.Pointer(s.qpx))
		s.qpx = nil
	}
	s.qpsMu.Unlock()
	for _, cq := range s.cqs {
		if rc := C.ibv_destroy_cq(cq); rc != 0 {
			errs = append(errs, &VerbError{Verb: "ibv_destroy_cq", Err: syscall.Errno(rc)})
		}
	}
	s.cq, s.cqs = nil, nil
	if s.channel != nil {
		if rc := C.ibv_destroy_comp_channel(s.channel); rc != 0 {
			errs = append(errs, &VerbError{Verb: "ibv_destroy_comp_channel", Err: syscall.Errno(rc)})
		}
		s.channel = nil
	}
	if s.mr != nil {
		if rc := C.ibv_dereg_mr(s.mr); rc != 0 {
			errs = append(errs, &VerbError{Verb: "ibv_dereg_mr", Err: syscall.Errno(rc)})
		}
		s.mr = nil
	}
	if s.base != nil {
		C.rb_munmap(s.base, C.size_t(s.mapLen))
		s.base, s.buf = nil, nil
	}
	if s.stop != nil {
		C.free(unsafe.Pointer(s.stop))
		s.stop = nil
	}
	return errors.Join(errs...)
}
