package benchtest

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/rdmabench/rdmabench/verbs"
	"github.com/rdmabench/rdmabench/verbs/qp"
)

// Session is a fake test session: a Go buffer and QP numbers in the fabric.
type Session struct {
	e    *Engine
	Spec verbs.Spec
	buf  []byte
	qpns []uint32

	mu     sync.Mutex
	peers  []*Session // one for all QPs, or one per QP
	rtr    []verbs.RTRAddress
	closed bool
	stop   atomic.Bool
	rounds atomic.Uint64 // ping-pong rounds this side has completed
	Loops  atomic.Int32  // loops run
}

// Bytes is the session's buffer.
func (s *Session) Bytes() []byte { return s.buf }

func (s *Session) Local() qp.Endpoint {
	return qp.Endpoint{QPNs: append([]uint32(nil), s.qpns...), PSNs: make([]uint32, len(s.qpns)),
		GID: "fe80::1", GIDType: "RoCE v2", LinkLayer: "Ethernet", MTU: 1024, RdAtom: 16,
		Addr: uint64(s.qpns[0]) << 32, RKey: s.qpns[0], Len: uint64(len(s.buf))}
}

// Connect connects every QP to the peer session behind remote.
func (s *Session) Connect(remote qp.Endpoint, mtu int) error {
	return s.ConnectPeers([]qp.Endpoint{remote}, mtu)
}

// ConnectPeers connects every QP to one peer session (one endpoint offering as many
// QPs), or QP i to the session behind endpoint i (one QP each).
func (s *Session) ConnectPeers(rs []qp.Endpoint, mtu int) error {
	if s.e.FailConnect != nil {
		return s.e.FailConnect
	}
	rtr := func(format string, args ...any) error {
		return &verbs.VerbError{Verb: "ibv_modify_qp", Phase: "RTR", Err: fmt.Errorf(format, args...)}
	}
	switch {
	case len(rs) == 1 && len(rs[0].QPNs) != len(s.qpns):
		return rtr("the peer has %d QPs, this side %d", len(rs[0].QPNs), len(s.qpns))
	case len(rs) > 1 && len(rs) != len(s.qpns):
		return rtr("%d peers for %d QPs", len(rs), len(s.qpns))
	}
	// The address vector verbs would give every QP at RTR (Spec.RTRAddress), on the
	// fake's link, Ethernet: what tests read back with RTR.
	av, err := s.Spec.RTRAddress("Ethernet", false)
	if err != nil {
		return &verbs.VerbError{Verb: "ibv_modify_qp", Phase: "RTR", Err: err}
	}
	f := s.e.Fabric
	var peers []*Session
	for _, r := range rs {
		if len(rs) > 1 && len(r.QPNs) != 1 {
			return rtr("a peer of several offers %d QPs", len(r.QPNs))
		}
		f.mu.Lock()
		p := f.qps[r.QPNs[0]]
		f.mu.Unlock()
		if p == nil || p.Local().RKey != r.RKey {
			return rtr("no such remote QP")
		}
		peers = append(peers, p)
	}
	s.mu.Lock()
	s.peers = peers
	s.rtr = nil
	for range s.qpns {
		s.rtr = append(s.rtr, av)
	}
	s.mu.Unlock()
	return nil
}

// RTR is the address vector each QP got when ConnectPeers took it to RTR (nil before).
func (s *Session) RTR() []verbs.RTRAddress {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]verbs.RTRAddress(nil), s.rtr...)
}

// Connected says whether ConnectPeers connected the session's QPs.
func (s *Session) Connected() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peers != nil
}

func (s *Session) PathMTU() int   { return 1024 }
func (s *Session) RdAtom() int    { return 16 }
func (s *Session) MaxInline() int { return s.Spec.InlineSize }

func (s *Session) Fill(seed uint32, off, n int) {
	for i := range n {
		s.buf[off+i] = pattern(i, seed)
	}
}

func (s *Session) Check(seed uint32, off, n int) int64 {
	for i := range n {
		if s.buf[off+i] != pattern(i, seed) {
			return int64(off + i)
		}
	}
	return -1
}

// pattern is the fake's verification pattern: byte 0 is the seed's low byte, as in the
// verbs layer's, so that slot seeds tell even 1-byte messages apart.
func pattern(i int, seed uint32) byte {
	if i == 0 {
		return byte(seed)
	}
	x := uint32(i)*2654435761 + seed*0x9E3779B9
	x ^= x >> 15
	x *= 0x85EBCA6B
	return byte(x ^ x>>13 ^ x>>24)
}

func (s *Session) Digest(off, n int) [32]byte { return sha256.Sum256(s.buf[off : off+n]) }

// Stop after Close is a use after free in the verbs layer: the fake panics on it.
// Abort is Stop: the fabric has nothing in flight to flush.
func (s *Session) Abort() { s.Stop() }

func (s *Session) Stop() {
	if s.Closed() {
		panic("fake: Stop on a closed session (the verbs layer would write freed memory)")
	}
	s.stop.Store(true)
}

func (s *Session) Close() error {
	f := s.e.Fabric
	f.mu.Lock()
	for _, q := range s.qpns {
		delete(f.qps, q)
	}
	f.mu.Unlock()
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	return nil
}

// Closed says whether Close was called.
func (s *Session) Closed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// connected returns the peer of QP 0 (connected's per-QP form is peerOf).
func (s *Session) connected(op verbs.Op, remoteEnd int) (*Session, error) {
	return s.peerOf(0, op, remoteEnd)
}

// peerOf returns QP q's peer, or the completion error an RC QP would see: without a
// live peer, or when the peer's buffer does not give access for op, or is smaller
// than remoteEnd.
func (s *Session) peerOf(q int, op verbs.Op, remoteEnd int) (*Session, error) {
	if s.Closed() {
		panic("fake: a loop on a closed session")
	}
	s.mu.Lock()
	var p *Session
	switch len(s.peers) {
	case 0:
	case 1:
		p = s.peers[0]
	default:
		p = s.peers[q]
	}
	s.mu.Unlock()
	opcode := map[verbs.Op]string{verbs.Write: "RDMA_WRITE", verbs.Read: "RDMA_READ"}[op]
	switch {
	case p == nil:
		return nil, &verbs.VerbError{Verb: "ibv_post_send", Err: errors.New("QP not connected")}
	case p.Closed():
		return nil, &verbs.CompletionError{Status: "IBV_WC_RETRY_EXC_ERR", Detail: "transport retry counter exceeded", Opcode: opcode, QPNum: s.qpns[q]}
	case op == verbs.Write && !p.Spec.RemoteWrite, op == verbs.Read && !p.Spec.RemoteRead, remoteEnd > len(p.buf):
		return nil, &verbs.CompletionError{Status: "IBV_WC_REM_ACCESS_ERR", Detail: "remote access error", Opcode: opcode, QPNum: s.qpns[q]}
	}
	return p, nil
}

// MemNode is the node the spec asked for: the fake has no NUMA to refuse it.
func (s *Session) MemNode() *int { return s.Spec.MemNode }
