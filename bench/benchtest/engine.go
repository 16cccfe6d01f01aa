// Package benchtest is an RDMA engine for tests, as httptest is a server for them:
// sessions whose QPs "connect" through an in-process fabric and whose loops move real
// bytes between Go buffers, so that the client, the server and the protocol between
// them (bench) run without a NIC or cgo.
//
// Nothing it returns is a measurement: every duration and latency is synthetic (a
// fixed cost per WR), and results carry the clock "fake".
package benchtest

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rdmabench/rdmabench/bench"
	"github.com/rdmabench/rdmabench/counters"
	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/verbs"
	"github.com/rdmabench/rdmabench/verbs/qp"
)

var (
	_ bench.Engine  = (*Engine)(nil)
	_ bench.Device  = (*Device)(nil)
	_ bench.Session = (*Session)(nil)
)

// Fabric joins engines: a session connects to the session that owns the remote QPs.
type Fabric struct {
	mu   sync.Mutex
	qps  map[uint32]*Session
	next uint32
}

// NewFabric returns an empty fabric.
func NewFabric() *Fabric { return &Fabric{qps: map[uint32]*Session{}, next: 0x100} }

// Engine is one side's device provider. Its fields inject faults; set them before use
// (or between tests: they are read when a call starts).
type Engine struct {
	Fabric *Fabric
	Name   string        // the device name (default "fake0")
	Cost   time.Duration // synthetic time per WR (default 1 µs)

	FailOpen    error // Open returns it
	FailSession error // NewSession returns it
	FailConnect error // Connect returns it
	// FailLoop makes every loop fail after half its work with this error (for example
	// a *verbs.CompletionError).
	FailLoop error
	// Stall makes every loop wait, as for a peer that stopped answering, until Stop or
	// the loop's timeout (then a *verbs.TimeoutError). It may change while loops run.
	Stall atomic.Bool
	// Corrupt flips a byte of the last message each bandwidth loop delivers.
	Corrupt atomic.Bool
	// Retries is added to the device's retry_exceeded_err counter by every loop (an
	// error counter in the rxe profile); Lose drops that many of every loop's packets
	// on their way to the peer (its rcvd_pkts falls short of this side's sent_pkts).
	Retries, Lose atomic.Uint64
	// NoCounters makes Counters fail, as on a device without sysfs counters.
	NoCounters atomic.Bool

	sent, rcvd, retries atomic.Uint64 // the device's counters

	mu       sync.Mutex
	sessions []*Session
}

// Open returns a device; l.Device "" or the engine's name opens it.
func (e *Engine) Open(l bench.Local) (bench.Device, error) {
	if e.FailOpen != nil {
		return nil, e.FailOpen
	}
	if l.Device != "" && l.Device != e.name() {
		return nil, fmt.Errorf("RDMA device %q not found; available: %s", l.Device, e.name())
	}
	port := l.Port
	if port == 0 {
		port = 1
	}
	return &Device{e: e, port: port}, nil
}

func (e *Engine) name() string {
	if e.Name == "" {
		return "fake0"
	}
	return e.Name
}

// Sessions returns the sessions created so far (open or closed).
func (e *Engine) Sessions() []*Session {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]*Session(nil), e.sessions...)
}

// Device is an opened fake device.
type Device struct {
	e      *Engine
	port   int
	closed atomic.Bool
}

// Identity: the fake counts packets as Soft-RoCE does (sent_pkts, rcvd_pkts), so it
// says it is rxe: the rxe profile classifies its counters.
func (d *Device) Identity() result.Device {
	host, _ := os.Hostname()
	return result.Device{Name: d.e.name(), Driver: "rxe", Model: "fake engine", VendorID: 0xffffff, Port: d.port,
		LinkLayer: "Ethernet", ActiveMTU: 1024, GIDType: "RoCE v2", Host: host}
}

// Counters is a snapshot of the device's packet counters, as sysfs would show rxe's.
func (d *Device) Counters() (counters.Snapshot, error) {
	if d.e.NoCounters.Load() {
		return counters.Snapshot{}, errors.New("no counters under /sys/class/infiniband/" + d.e.name())
	}
	s := counters.Snapshot{Device: d.e.name(), Port: d.port, Time: time.Now(), State: "ACTIVE"}
	for _, c := range []struct {
		name string
		v    uint64
	}{{"sent_pkts", d.e.sent.Load()}, {"rcvd_pkts", d.e.rcvd.Load()}, {"retry_exceeded_err", d.e.retries.Load()}} {
		v := c.v
		s.Counters = append(s.Counters, counters.Counter{Name: c.name, Scope: counters.HWPort, Unit: counters.Count, Status: counters.OK, Value: &v})
	}
	return s, nil
}

// traffic counts packets from s's device to the peer's (and the peer's answers).
func traffic(from, to *Engine, pkts, answers uint64) {
	lost := min(from.Lose.Load(), pkts)
	from.sent.Add(pkts)
	to.rcvd.Add(pkts - lost)
	to.sent.Add(answers)
	from.rcvd.Add(answers)
	from.retries.Add(from.Retries.Load())
}

// pkts is how many MTU-sized packets a message of size bytes takes (at least one).
func pkts(size int) uint64 { return uint64(max(1, (size+1023)/1024)) }

func (d *Device) Clock() (string, string) { return "fake", "synthetic times from a test engine" }

func (d *Device) Close() error { d.closed.Store(true); return nil }

// Closed says whether Close was called.
func (d *Device) Closed() bool { return d.closed.Load() }

func (d *Device) NewSession(spec verbs.Spec) (bench.Session, error) {
	e := d.e
	if e.FailSession != nil {
		return nil, e.FailSession
	}
	if spec.NumQP < 1 || spec.SQDepth < 1 || spec.BufSize < 1 {
		return nil, fmt.Errorf("fake: bad spec %+v", spec)
	}
	if _, err := qp.Split(spec.NumQP, max(spec.Threads, 1)); err != nil {
		return nil, err
	}
	if spec.Threads > 1 && spec.Events { // as verbs refuses it
		return nil, fmt.Errorf("fake: completion events with %d loop threads", spec.Threads)
	}
	f := e.Fabric
	s := &Session{e: e, Spec: spec, buf: make([]byte, spec.BufSize)}
	f.mu.Lock()
	for range spec.NumQP {
		f.next++
		s.qpns = append(s.qpns, f.next)
		f.qps[f.next] = s
	}
	f.mu.Unlock()
	e.mu.Lock()
	e.sessions = append(e.sessions, s)
	e.mu.Unlock()
	return s, nil
}

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

func (s *Session) cost() time.Duration {
	if s.e.Cost > 0 {
		return s.e.Cost
	}
	return time.Microsecond
}

// stall waits as a loop whose peer went silent does: until Stop, or timeout.
func (s *Session) stall(phase, wait string, timeout time.Duration) error {
	start := time.Now()
	for !s.stop.Load() {
		if timeout > 0 && time.Since(start) >= timeout {
			return &verbs.TimeoutError{Phase: phase, Wait: wait, After: timeout}
		}
		time.Sleep(time.Millisecond)
	}
	return nil
}

// sleep waits d of real time, or until Stop; it returns the time waited.
// every, when not nil, is called at each tick of tick with the time waited so far.
func (s *Session) sleep(d, tick time.Duration, every func(time.Duration)) time.Duration {
	start, next := time.Now(), tick
	for time.Since(start) < d && !s.stop.Load() {
		time.Sleep(min(time.Millisecond, d-time.Since(start)))
		if every != nil && tick > 0 && time.Since(start) >= next {
			every(time.Since(start))
			next += tick
		}
	}
	return time.Since(start)
}

// maxSamples bounds the synthetic latency samples a loop records.
const maxSamples = 1 << 16

func (s *Session) samples(n uint64, v time.Duration) verbs.Samples {
	xs := make([]int64, min(n, maxSamples))
	for i := range xs {
		xs[i] = v.Nanoseconds() + int64(i%7) // a little spread, for the statistics
	}
	h, m := result.FromSamples(xs)
	return verbs.Samples{Hist: h, Moments: m}
}

// Bandwidth moves the bytes the real loop would: WR i of QP q copies local slot
// i % LSlots to remote slot i % RSlots (READ: the other way). Only the last WRs into
// each slot are copied, which leaves the buffers as the whole run would. A QP to a
// peer whose engine is slower (Cost) completes fewer WRs in the same time; rounds go
// at the pace of the slowest.
func (s *Session) Bandwidth(p verbs.BWParams) (verbs.BWResult, error) {
	s.Loops.Add(1)
	l := p.Layout
	nqp := len(s.qpns)
	if err := p.Check(nqp, len(s.buf), s.Spec.SQDepth); err != nil {
		return verbs.BWResult{}, err
	}
	if (p.Rounds || verbs.MRInLoop(p.MR)) && s.Spec.Threads > 1 { // as verbs refuses it
		return verbs.BWResult{}, fmt.Errorf("fake: rounds and --mr per-io/cache run on one thread; the session has %d", s.Spec.Threads)
	}
	s.mu.Lock()
	onePeer := len(s.peers) == 1
	s.mu.Unlock()
	rregion := func(q int) int { // the start of QP q's remote region
		if onePeer {
			return p.RemoteOffset + q*l.RSlots*l.Stride
		}
		return p.RemoteOffset
	}
	peers, costs := make([]*Session, nqp), make([]time.Duration, nqp)
	slowest := s.cost()
	for q := range nqp {
		peer, err := s.peerOf(q, p.Op, rregion(q)+l.RSlots*l.Stride)
		if err != nil {
			return verbs.BWResult{}, err
		}
		peers[q], costs[q] = peer, max(s.cost(), peer.cost())
		slowest = max(slowest, costs[q])
	}
	if s.e.Stall.Load() {
		return verbs.BWResult{PerQP: make([]uint64, nqp), PerQPLastNS: make([]int64, nqp)}, s.stall("bandwidth loop", "completions", p.Timeout)
	}
	// The loop takes its synthetic time for real (a Stop cuts it short, Progress is
	// called as it goes), so that what runs beside it (beats, the peer's direction of a
	// bidirectional test, --interval) meets it as it would meet the real loop.
	var every func(time.Duration)
	if p.Progress != nil {
		every = func(t time.Duration) {
			var n uint64
			for q := range nqp {
				if k := uint64(t / costs[q]); p.Duration > 0 || k < p.Iters {
					n += k
				} else {
					n += p.Iters
				}
			}
			p.Progress(n)
		}
	}
	want := p.Duration
	if want <= 0 {
		want = time.Duration(p.Iters) * slowest
	}
	dur := s.sleep(want, p.Interval, every)
	count := func(c time.Duration) uint64 { // what a QP of cost c completed
		switch {
		case p.Duration > 0:
			return uint64(dur / c)
		case dur >= want:
			return p.Iters // all of them: the sleep may overshoot, never count more than asked
		}
		return min(uint64(dur/c), p.Iters)
	}
	res := verbs.BWResult{DurationNS: dur.Nanoseconds(), PerQP: make([]uint64, nqp), PerQPLastNS: make([]int64, nqp)}
	if p.Rounds {
		res.Rounds = count(slowest)
		if s.e.FailLoop != nil {
			res.Rounds /= 2
		}
	}
	for q := range nqp {
		n := count(costs[q])
		if p.Rounds {
			n = res.Rounds
		} else if s.e.FailLoop != nil {
			n /= 2
		}
		res.PerQP[q], res.Completed = n, res.Completed+n
		res.PerQPLastNS[q] = min(time.Duration(n)*costs[q], dur).Nanoseconds()
		if p.Rounds {
			res.PerQPLastNS[q] = min(time.Duration(n)*slowest, dur).Nanoseconds()
		}
		lregion := p.LocalOffset + q*l.LSlots*l.Stride
		if l.SharedLocal {
			lregion = p.LocalOffset
		}
		peer := peers[q]
		k := min(n, uint64(max(l.LSlots, l.RSlots)))
		for i := n - k; i < n; i++ {
			lo := lregion + int(i%uint64(l.LSlots))*l.Stride
			ro := rregion(q) + int(i%uint64(l.RSlots))*l.Stride
			if p.Op == verbs.Read {
				copy(s.buf[lo:lo+p.Size], peer.buf[ro:ro+p.Size])
			} else {
				copy(peer.buf[ro:ro+p.Size], s.buf[lo:lo+p.Size])
			}
		}
		if p.Op == verbs.Read {
			traffic(s.e, peer.e, n, n*pkts(p.Size))
		} else {
			traffic(s.e, peer.e, n*pkts(p.Size), n)
		}
		if s.e.Corrupt.Load() && n > 0 {
			dst, at := peer.buf, rregion(q)+(int((n-1)%uint64(l.RSlots)))*l.Stride
			if p.Op == verbs.Read {
				dst, at = s.buf, lregion+(int((n-1)%uint64(l.LSlots)))*l.Stride
			}
			dst[at] ^= 0xff
		}
		if p.PerQP {
			if p.Rounds {
				res.PerQPLat = append(res.PerQPLat, s.samples(n, costs[q]))
			} else {
				res.PerQPLat = append(res.PerQPLat, s.samples(signalled(n, p.CQMod), time.Duration(p.SQDepth)*costs[q]))
			}
		}
	}
	switch {
	case p.Rounds:
		res.Lat = s.samples(res.Rounds, slowest)
	default:
		var sig uint64
		for _, n := range res.PerQP {
			sig += signalled(n, p.CQMod)
		}
		res.Lat = s.samples(sig, time.Duration(p.SQDepth)*s.cost())
		if p.Events {
			res.Events = sig
		}
		if !verbs.MRInLoop(p.MR) && res.Completed > 0 { // the fake's queues neither fill nor drain
			res.SteadyWRs, res.SteadyNS = res.Completed, res.DurationNS
		}
	}
	res.MR = mrStats(p, res)
	{ // the loop threads, as verbs splits them (the rounds loop and --mr run one)
		blocks, _ := qp.Split(nqp, max(s.Spec.Threads, 1))
		sets := qp.CPUSets(s.Spec.CPUs, len(blocks), s.Spec.SplitCPUs)
		for t, b := range blocks {
			tr := verbs.ThreadRun{QPs: b, CPUs: sets[t], DurationNS: dur.Nanoseconds()}
			for _, n := range res.PerQP[b.First : b.First+b.N] {
				tr.Completed += n
			}
			res.Threads = append(res.Threads, tr)
		}
	}
	return res, s.e.FailLoop
}

// MemNode is the node the spec asked for: the fake has no NUMA to refuse it.
func (s *Session) MemNode() *int { return s.Spec.MemNode }

// signalled is how many of n WRs the real loop signals: every mod-th and the last.
func signalled(n uint64, mod int) uint64 { return (n + uint64(mod) - 1) / uint64(mod) }

func (s *Session) PingPong(p verbs.PingPongParams) (verbs.LatResult, error) {
	s.Loops.Add(1)
	if 2*p.Size > len(s.buf) {
		return verbs.LatResult{}, fmt.Errorf("ping-pong of %d bytes needs a %d-byte buffer", p.Size, 2*p.Size)
	}
	peer, err := s.connected(verbs.Write, 2*p.Size)
	if err != nil {
		return verbs.LatResult{}, err
	}
	if s.e.Stall.Load() {
		return verbs.LatResult{}, s.stall("write ping-pong", "the peer's answer", p.Timeout)
	}
	if !p.Initiator {
		target := p.First + p.Iters
		last, since := peer.rounds.Load(), time.Now()
		for !s.stop.Load() && peer.rounds.Load() < target {
			if r := peer.rounds.Load(); r != last {
				last, since = r, time.Now()
			}
			if p.Timeout > 0 && time.Since(since) > p.Timeout {
				return verbs.LatResult{}, &verbs.TimeoutError{Phase: "write ping-pong", Wait: "the peer's ping", After: p.Timeout}
			}
			time.Sleep(100 * time.Microsecond)
		}
		return verbs.LatResult{Done: peer.rounds.Load() - min(peer.rounds.Load(), p.First)}, nil
	}
	n := p.Iters
	if s.stop.Load() {
		n = 0
	}
	if s.e.FailLoop != nil {
		n /= 2
	}
	copy(peer.buf[:p.Size], s.buf[p.Size:2*p.Size])
	traffic(s.e, peer.e, n*pkts(p.Size), n*pkts(p.Size))
	s.rounds.Store(p.First + n)
	rtt := 2 * s.cost()
	lat := rtt
	if p.OneWay {
		lat /= 2
	}
	return verbs.LatResult{Done: n, DurationNS: (time.Duration(n) * rtt).Nanoseconds(), Lat: s.samples(n, lat)}, s.e.FailLoop
}

// ReadLatency reads the peer's first Size bytes Iters times.
func (s *Session) ReadLatency(p verbs.ReadLatParams) (verbs.LatResult, error) {
	s.Loops.Add(1)
	peer, err := s.connected(verbs.Read, p.Size)
	if err != nil {
		return verbs.LatResult{}, err
	}
	if s.e.Stall.Load() {
		return verbs.LatResult{}, s.stall("read latency loop", "a READ completion", p.Timeout)
	}
	n := p.Iters
	if s.stop.Load() {
		n = 0
	}
	if s.e.FailLoop != nil {
		n /= 2
	}
	copy(s.buf[:p.Size], peer.buf[:p.Size])
	traffic(s.e, peer.e, n, n*pkts(p.Size))
	return verbs.LatResult{Done: n, DurationNS: (time.Duration(n) * s.cost()).Nanoseconds(), Lat: s.samples(n, s.cost())}, s.e.FailLoop
}
