// Package fake is an in-memory RDMA fabric behind package rdma's provider seam: devices
// register Go memory, QPs of connected sessions move bytes with copy, and completions
// come back through a CQ in order per QP, as RC QPs deliver them. It keeps the rules of
// the verbs that package rdma relies on, and reports breaches of them:
//
//   - a send queue holds SQDepth WRs; a WR's slot is freed when its completion, or a
//     later one of the same QP, is polled (an unsignalled WR completes silently);
//     posting into a full queue takes the WRs that fit and fails with ENOMEM;
//   - a failed WR completes with its error status whether signalled or not, and moves
//     its QP to the error state: every later WR of that QP completes with
//     IBV_WC_WR_FLUSH_ERR, each with a completion, signalled or not; so does every WR
//     outstanding when Fail moves a QP to the error state, and every one posted after;
//   - a WR of length 0 touches no memory (a zero-length WRITE);
//   - local memory must be registered by the QP's device, remote memory by the peer's,
//     with the remote access the WR needs (else IBV_WC_LOC_PROT_ERR or
//     IBV_WC_REM_ACCESS_ERR).
//
// Tests inject failures: FailNth fails a chosen WR, Hold stalls the fabric (WRs are
// taken but neither executed nor completed) until Release.
package fake

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rdmabench/rdmabench/rdma/internal/provider"
	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/verbs"
	"github.com/rdmabench/rdmabench/verbs/qp"
)

// VendorErr is the vendor error of the completions FailNth injects.
const VendorErr = 0xfa4e

// Fabric is a set of devices that can reach each other.
type Fabric struct {
	mu         sync.Mutex
	mems       map[uint32]*Memory
	qps        map[uint32]*queuePair
	nextKey    uint32
	nextQPN    uint32
	posted     uint64 // WRs posted, all QPs
	stats      Stats
	regs       int    // Register calls
	failAt     uint64 // posted count of the WR to fail; 0: none
	failStatus uint32
	held       bool
	stalled    []stalled
	violations []string
}

type stalled struct {
	q    *queuePair
	wr   verbs.WR
	idx  uint64
	fail bool
}

// New returns an empty fabric.
func New() *Fabric {
	return &Fabric{mems: map[uint32]*Memory{}, qps: map[uint32]*queuePair{}, nextKey: 0x100, nextQPN: 0x11}
}

// FailNth makes the nth WR posted from now on (1: the next one) complete with status.
func (f *Fabric) FailNth(n uint64, status uint32) {
	f.mu.Lock()
	f.failAt, f.failStatus = f.posted+n, status
	f.mu.Unlock()
}

// Hold stalls the fabric: WRs posted from now on are taken into their send queues but
// neither executed nor completed until Release (a peer that stopped answering).
func (f *Fabric) Hold() {
	f.mu.Lock()
	f.held = true
	f.mu.Unlock()
}

// Release executes the stalled WRs in order and ends the stall.
func (f *Fabric) Release() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.held = false
	for _, s := range f.stalled {
		if !s.q.s.closed {
			f.exec(s.q, &s.wr, s.idx, s.fail)
		}
	}
	f.stalled = nil
}

// Registrations counts Register calls (session buffers are not counted).
func (f *Fabric) Registrations() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.regs
}

// Stats counts what was posted on the fabric.
type Stats struct {
	WRs       uint64 // WRs posted
	Signalled uint64 // of which signalled
	Lists     uint64 // post lists (ibv_post_send calls)
}

// Stats returns the counts so far.
func (f *Fabric) Stats() Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stats
}

// Violations lists the breaches of the verbs' rules seen so far: a send queue filled
// with unsignalled WRs only (none of them could ever be retired).
func (f *Fabric) Violations() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.violations...)
}

// Device opens a device on the fabric.
func (f *Fabric) Device(name string) *Device {
	host, _ := os.Hostname()
	return &Device{f: f, id: result.Device{
		Name: name, Driver: "fake", Model: "in-memory fabric", Port: 1, LinkLayer: "Ethernet",
		ActiveMTU: 4096, GIDIndex: 1, GIDType: "RoCE v2", Host: host,
	}}
}

// Device is a device on a fabric.
type Device struct {
	f      *Fabric
	id     result.Device
	closed bool
}

var _ provider.Provider = (*Device)(nil)

func (d *Device) Identity() result.Device { return d.id }

func (d *Device) Close() error {
	d.f.mu.Lock()
	d.closed = true
	d.f.mu.Unlock()
	return nil
}

// Register registers size zeroed bytes with access (verbs.Spec.Access).
func (d *Device) Register(size, access int) (provider.Memory, error) {
	d.f.mu.Lock()
	defer d.f.mu.Unlock()
	m, err := d.register(size, access)
	if err != nil {
		return nil, err
	}
	d.f.regs++
	return m, nil
}

func (d *Device) register(size, access int) (*Memory, error) {
	if d.closed {
		return nil, errors.New("fake: the device is closed")
	}
	if size < 1 || size > 1<<32-1 {
		return nil, fmt.Errorf("fake: cannot register %d bytes", size)
	}
	f := d.f
	f.nextKey++
	m := &Memory{f: f, dev: d, key: f.nextKey, addr: uint64(f.nextKey) << 32, buf: make([]byte, size),
		rw: access&verbs.AccessRemoteWrite != 0, rr: access&verbs.AccessRemoteRead != 0}
	f.mems[m.key] = m
	return m, nil
}

// Memory is registered memory; its lkey and rkey are one key.
type Memory struct {
	f      *Fabric
	dev    *Device
	key    uint32
	addr   uint64
	buf    []byte
	rw, rr bool
}

func (m *Memory) Addr() uint64  { return m.addr }
func (m *Memory) LKey() uint32  { return m.key }
func (m *Memory) RKey() uint32  { return m.key }
func (m *Memory) Bytes() []byte { return m.buf }

func (m *Memory) Close() error {
	m.f.mu.Lock()
	delete(m.f.mems, m.key)
	m.f.mu.Unlock()
	return nil
}

// span is [addr, addr+n) of the memory with key, or nil.
func (f *Fabric) span(key uint32, addr uint64, n uint32) (*Memory, []byte) {
	m := f.mems[key]
	if m == nil || addr < m.addr || addr-m.addr+uint64(n) > uint64(len(m.buf)) {
		return m, nil
	}
	off := addr - m.addr
	return m, m.buf[off : off+uint64(n)]
}

// NewSession creates the QPs, their CQ and the session's buffer.
func (d *Device) NewSession(spec verbs.Spec) (provider.Session, error) {
	if spec.NumQP < 1 || spec.SQDepth < 1 || spec.BufSize < 1 {
		return nil, fmt.Errorf("invalid session spec: %d QPs, SQ depth %d, buffer %d bytes", spec.NumQP, spec.SQDepth, spec.BufSize)
	}
	f := d.f
	f.mu.Lock()
	defer f.mu.Unlock()
	buf, err := d.register(spec.BufSize, spec.Access())
	if err != nil {
		return nil, err
	}
	s := &Session{f: f, dev: d, buf: buf, notify: make(chan struct{}, 1), done: make(chan struct{}),
		wrs: make([]verbs.WR, spec.SQDepth), wcs: make([]verbs.WC, 64)}
	for range spec.NumQP {
		f.nextQPN++
		q := &queuePair{s: s, num: f.nextQPN, psn: f.nextQPN * 7919 & 0xffffff, depth: spec.SQDepth}
		f.qps[q.num] = q
		s.qps = append(s.qps, q)
	}
	return s, nil
}

// Session is a fake session.
type Session struct {
	f      *Fabric
	dev    *Device
	buf    *Memory
	qps    []*queuePair
	cq     []cqe // queued completions: cq[head:]
	head   int
	queued atomic.Int64  // len(cq) - head, read without the lock by Poll
	notify chan struct{} // a completion was queued
	done   chan struct{} // closed by Close
	wrs    []verbs.WR
	wcs    []verbs.WC
	closed bool
}

type queuePair struct {
	s       *Session
	num     uint32
	psn     uint32
	depth   int
	remote  *queuePair
	posted  uint64 // WRs posted on this QP
	retired uint64 // WRs whose slot is free again: 1..retired
	lastSig uint64 // the last signalled WR posted
	errored bool
}

type cqe struct {
	wc  verbs.WC
	q   *queuePair
	idx uint64
}

var _ provider.Session = (*Session)(nil)

func (s *Session) Bytes() []byte   { return s.buf.buf }
func (s *Session) WRs() []verbs.WR { return s.wrs }
func (s *Session) WCs() []verbs.WC { return s.wcs }

func (s *Session) Local() qp.Endpoint {
	e := qp.Endpoint{
		LID: 0, GID: "fe80::1", GIDIndex: 1, GIDType: "RoCE v2", LinkLayer: "Ethernet", MTU: 4096, RdAtom: 16,
		Addr: s.buf.addr, RKey: s.buf.key, Len: uint64(len(s.buf.buf)),
	}
	for _, q := range s.qps {
		e.QPNs = append(e.QPNs, q.num)
		e.PSNs = append(e.PSNs, q.psn)
	}
	return e
}

// Connect joins the session's QPs to the peer's; a fabric has no path MTU to set.
func (s *Session) Connect(r qp.Endpoint, mtu int) error {
	if len(r.QPNs) != len(s.qps) || len(r.PSNs) != len(s.qps) {
		return fmt.Errorf("peer offers %d QPs, this side has %d", len(r.QPNs), len(s.qps))
	}
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	for i, q := range s.qps {
		rq := s.f.qps[r.QPNs[i]]
		if rq == nil || rq.psn != r.PSNs[i] {
			return &verbs.VerbError{Verb: "ibv_modify_qp", Phase: "RTR", Err: fmt.Errorf("no QP 0x%x with PSN %d on the fabric", r.QPNs[i], r.PSNs[i])}
		}
		q.remote = rq
	}
	return nil
}

// Post posts wrs[:n] to QP i as one post list.
func (s *Session) Post(i, n int) (int, error) {
	f := s.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if s.closed || i < 0 || i >= len(s.qps) || n < 1 || n > len(s.wrs) || s.qps[i].remote == nil {
		return 0, &verbs.VerbError{Verb: "ibv_post_send", Err: syscall.EINVAL}
	}
	q := s.qps[i]
	f.stats.Lists++
	for k := range n {
		if int(q.posted-q.retired) == q.depth {
			return k, &verbs.VerbError{Verb: "ibv_post_send", Phase: fmt.Sprintf("%d WRs", n), Err: syscall.ENOMEM}
		}
		wr := s.wrs[k]
		q.posted++
		f.posted++
		f.stats.WRs++
		fail := f.posted == f.failAt
		if wr.Flags&verbs.WRSignaled != 0 {
			q.lastSig = q.posted
			f.stats.Signalled++
		}
		if f.held {
			f.stalled = append(f.stalled, stalled{q, wr, q.posted, fail})
		} else {
			f.exec(q, &wr, q.posted, fail)
		}
	}
	if int(q.posted-q.retired) == q.depth && q.lastSig <= q.retired {
		f.violations = append(f.violations, fmt.Sprintf("QP 0x%x: the send queue (%d WRs) holds only unsignalled WRs", q.num, q.depth))
	}
	return n, nil
}

// Fail moves QP i to the error state: its stalled WRs complete now, flushed, and so
// will every WR posted to it later.
func (s *Session) Fail(i int) error {
	f := s.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if s.closed || i < 0 || i >= len(s.qps) {
		return &verbs.VerbError{Verb: "ibv_modify_qp", Phase: "ERR", Err: syscall.EINVAL}
	}
	q := s.qps[i]
	q.errored = true
	kept := f.stalled[:0]
	for _, st := range f.stalled {
		if st.q == q {
			f.exec(q, &st.wr, st.idx, false)
		} else {
			kept = append(kept, st)
		}
	}
	f.stalled = kept
	return nil
}

// exec moves the bytes of one WR and queues its completion (f.mu held).
func (f *Fabric) exec(q *queuePair, wr *verbs.WR, idx uint64, fail bool) {
	wc := verbs.WC{WRID: wr.WRID, Status: verbs.WCSuccess, Opcode: verbs.WCOpRDMAWrite, QPNum: q.num, ByteLen: wr.Len}
	if wr.Opcode == verbs.WRRead {
		wc.Opcode = verbs.WCOpRDMARead
	}
	lm, local := f.span(wr.LKey, wr.LAddr, wr.Len)
	rm, remote := f.span(wr.RKey, wr.RAddr, wr.Len)
	switch {
	case q.errored:
		wc.Status = verbs.WCWRFlushErr
	case fail:
		wc.Status, wc.VendorErr = f.failStatus, VendorErr
	case wr.Len == 0:
	case local == nil || lm.dev != q.s.dev:
		wc.Status, wc.VendorErr = verbs.WCLocProtErr, 0x33
	case remote == nil || rm.dev != q.remote.s.dev || (wr.Opcode == verbs.WRWrite && !rm.rw) || (wr.Opcode == verbs.WRRead && !rm.rr):
		wc.Status, wc.VendorErr = verbs.WCRemAccessErr, 0x88
	case wr.Opcode == verbs.WRRead:
		copy(local, remote)
	default:
		copy(remote, local)
	}
	if wc.Status != verbs.WCSuccess {
		q.errored = true
		wc.ByteLen = 0
	} else if wr.Flags&verbs.WRSignaled == 0 {
		return
	}
	q.s.cq = append(q.s.cq, cqe{wc, q, idx})
	q.s.queued.Add(1)
	select {
	case q.s.notify <- struct{}{}:
	default:
	}
}

// Poll moves queued completions into WCs; each one retires its WR and those before it.
func (s *Session) Poll() (int, error) {
	if s.queued.Load() == 0 { // an empty CQ is polled without the lock, as a NIC's is
		return 0, nil
	}
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	return s.poll(), nil
}

func (s *Session) poll() int {
	n := 0
	for n < len(s.wcs) && s.head < len(s.cq) {
		e := &s.cq[s.head]
		s.head++
		s.wcs[n] = e.wc
		e.q.retired = max(e.q.retired, e.idx)
		n++
	}
	if s.head == len(s.cq) {
		s.cq, s.head = s.cq[:0], 0 // keep the array
	}
	s.queued.Add(-int64(n))
	return n
}

// Wait polls, or sleeps until a completion is queued, the timeout passes or the session closes.
func (s *Session) Wait(timeout time.Duration) (int, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		if n, _ := s.Poll(); n > 0 {
			return n, nil
		}
		select {
		case <-s.notify:
		case <-t.C:
			return s.Poll()
		case <-s.done:
			return 0, nil
		}
	}
}

// Close destroys the QPs (their stalled WRs never execute), the CQ and the buffer.
func (s *Session) Close() error {
	f := s.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	close(s.done)
	for _, q := range s.qps {
		delete(f.qps, q.num)
	}
	kept := f.stalled[:0]
	for _, st := range f.stalled {
		if st.q.s != s {
			kept = append(kept, st)
		}
	}
	f.stalled = kept
	delete(f.mems, s.buf.key)
	return nil
}
