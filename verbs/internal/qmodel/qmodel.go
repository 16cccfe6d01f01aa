//go:build linux && cgo

package qmodel

/*
#cgo CFLAGS: -DRB_MODEL -O2
#include <stdlib.h>
#include "model.h"
*/
import "C"

import (
	"math"
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

// Violation names, indexed like model.h's QM_V_*.
var violationNames = [...]string{
	"sq overflow", "cq overflow", "bad wr", "sleep unarmed", "sleep with cqes", "get event without event",
	"ack too many", "wrong fd", "runaway", "ping-pong byte", "poll args", "peer queue",
	"mr lkey", "mr invalid at execution", "mr reg", "mr dereg", "mr leak", "wr api",
}

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

// Fail is rb_fail.
type Fail struct {
	Kind, Status, Opcode int
	WRID                 uint64
	QPNum                uint32
	Err                  int
	Verb                 string
}

// Addr is one WR's local and remote address, as offsets into the local and remote buffer.
type Addr struct{ L, R uint64 }

// Record is what the model saw.
type Record struct {
	Posted, Executed []uint64   // per QP: WRs posted, WRs executed successfully
	MaxSQ            []uint32   // per QP: the most WRs the send queue held
	Leads            []uint64   // per QP: its posts that came first after an ibv_poll_cq call
	Addrs            [][]Addr   // per QP: every successfully executed WR, in order
	RKeys            [][]uint32 // per QP: the rkey each WR of Addrs carried
	Freed            []uint64   // per QP: WRs whose completion the loop polled (each CQE frees its WR and the earlier ones)
	// PostCalls counts ibv_post_send and ibv_wr_complete calls, failed ones too.
	PostCalls uint64
	// PostFailed: the injected post failure (Net.PostFailAt) happened, on QP
	// PostFailQP, to a call with PostFailLen WRs of which PostFailPosted were posted.
	PostFailed                                              bool
	PostFailQP                                              int
	PostFailLen, PostFailPosted                             uint32
	SignalledExecuted, SignalledPolled, CQEsPolled, ErrCQEs uint64
	MaxCQ                                                   uint64
	Polls, Posts, Ticks, Waits, WaitTicks, SleptMS          uint64
	WRBatches                                               uint64 // of Posts: batches posted by ibv_wr_complete
	Arms, EventsRaised, EventsGot, EventsAcked              uint64
	StartNS, FirstPostNS, LastPostNS, LastCQENS, EndNS      int64 // model clock
	// ModelLat is the model's own record of every signalled, successful WR: from its
	// ibv_post_send to the return of the ibv_poll_cq that delivered it, model clock.
	ModelLat ModelLat
	// ModelLatQP is ModelLat per QP.
	ModelLatQP []ModelLat
	// ModelRT is the model's record of each ping-pong round: from the post of the loop's
	// WRITE to the answer's arrival in the loop's buffer.
	ModelRT        ModelLat
	Violations     map[string]uint64
	FirstViolation map[string]string
	// Ping-pong.
	PeerRounds, PeerAnswers, PeerPings       uint64
	MaxPollsBeforePong, PollsBeforePongTotal uint64
	NeedlessPollsBeforePong                  uint64 // polls before a pong with room in the send queue
}

// ModelLat sums the model's record of the post-to-poll time of every signalled WR.
type ModelLat struct {
	N             uint64
	Sum, Min, Max int64
}

func modelTimes(t C.qm_times) ModelLat {
	return ModelLat{N: uint64(t.n), Sum: int64(t.sum), Min: int64(t.min), Max: int64(t.max)}
}

// Hist is the part of rb_hist the tests look at.
type Hist struct {
	N, Backwards     uint64
	Min, Max         int64
	SumHi, SumLo     uint64
	SumSqHi, SumSqLo uint64
}

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

func (md *model) record() Record {
	m := md.m
	nqp := int(m.cfg.nqp)
	qps := unsafe.Slice(m.qps, nqp)
	r := Record{
		Posted: make([]uint64, nqp), Executed: make([]uint64, nqp), MaxSQ: make([]uint32, nqp), Leads: make([]uint64, nqp), Addrs: make([][]Addr, nqp),
		RKeys: make([][]uint32, nqp), Freed: make([]uint64, nqp), PostCalls: uint64(m.post_calls),
		PostFailed: m.post_failed != 0, PostFailQP: int(m.post_fail_qp), PostFailLen: uint32(m.post_fail_len), PostFailPosted: uint32(m.post_fail_posted),
		SignalledExecuted: uint64(m.sig_executed), SignalledPolled: uint64(m.sig_polled),
		CQEsPolled: uint64(m.cqes_polled), ErrCQEs: uint64(m.err_cqes), MaxCQ: uint64(m.max_cq),
		Polls: uint64(m.polls), Posts: uint64(m.posts), WRBatches: uint64(m.wr_batches), Ticks: uint64(m.tick), Waits: uint64(m.waits),
		WaitTicks: uint64(m.wait_ticks), SleptMS: uint64(m.sleeps_ms),
		Arms: uint64(m.arms), EventsRaised: uint64(m.ev_raised), EventsGot: uint64(m.ev_got), EventsAcked: uint64(m.ev_acked),
		StartNS: int64(m.start_clock), FirstPostNS: int64(m.first_post_clock), LastPostNS: int64(m.last_post_clock), LastCQENS: int64(m.last_cqe_clock),
		EndNS:      int64(m.end_clock),
		PeerRounds: uint64(m.pp_round), PeerAnswers: uint64(m.pp_answers), PeerPings: uint64(m.pp_pings),
		MaxPollsBeforePong: uint64(m.max_polls_before_pong), PollsBeforePongTotal: uint64(m.polls_before_pong_total),
		NeedlessPollsBeforePong: uint64(m.needless_polls_before_pong),
		ModelLat:                modelTimes(m.lat),
		ModelRT:                 modelTimes(m.rt),
	}
	for q, p := range qps {
		r.Posted[q] = uint64(p.tail)
		r.Executed[q] = uint64(p.executed)
		r.MaxSQ[q] = uint32(p.max_occ)
		r.Leads[q] = uint64(p.leads)
		r.Freed[q] = uint64(p.head)
		r.ModelLatQP = append(r.ModelLatQP, modelTimes(p.lat))
		if p.naddr > 0 {
			for _, a := range unsafe.Slice(p.addrs, int(p.naddr)) {
				r.Addrs[q] = append(r.Addrs[q], Addr{L: uint64(a.l), R: uint64(a.r)})
				r.RKeys[q] = append(r.RKeys[q], uint32(a.rkey))
			}
		}
	}
	for v, name := range violationNames {
		if n := uint64(m.viol[v]); n > 0 {
			if r.Violations == nil {
				r.Violations = map[string]uint64{}
				r.FirstViolation = map[string]string{}
			}
			r.Violations[name] = n
			r.FirstViolation[name] = C.GoString(&m.viol_msg[v][0])
		}
	}
	return r
}

func goFail(f *C.rb_fail) Fail {
	out := Fail{Kind: int(f.kind), Status: int(f.status), Opcode: int(f.opcode), WRID: uint64(f.wr_id),
		QPNum: uint32(f.qp_num), Err: int(f.err)}
	if f.verb != nil {
		out.Verb = C.GoString(f.verb)
	}
	return out
}

func goHist(h *C.rb_hist) Hist {
	return Hist{N: uint64(h.n), Backwards: uint64(h.backwards), Min: int64(h.min), Max: int64(h.max),
		SumHi: uint64(h.sum_hi), SumLo: uint64(h.sum_lo), SumSqHi: uint64(h.sumsq_hi), SumSqLo: uint64(h.sumsq_lo)}
}

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

func newHist() *C.rb_hist {
	h := (*C.rb_hist)(C.malloc(C.size_t(unsafe.Sizeof(C.rb_hist{}))))
	if h == nil {
		panic("qmodel: out of memory")
	}
	C.rb_hist_reset(h)
	return h
}

// ---- bandwidth ----

// BWCase is one run of rb_bw against the model.
type BWCase struct {
	Net
	QPs, Depth, PostList, CQMod int
	Iters                       uint64 // WRs per QP; with DeadlineNS an upper bound (math.MaxUint64: none)
	DeadlineNS                  int64  // posting stops this long (model time) after the start; 0: no deadline
	Read, Events                bool
	Size, Stride                uint32 // message size and slot distance (0: 8 and Size)
	LSlots, RSlots              uint32 // 0 means 1
	TimeoutNS                   int64  // the loop's watchdog (model time)
	PerQP                       bool   // the loop also fills a histogram per QP (BWOutcome.QHist)
	Gate                        *Gate  // loops on several threads start together (rb_bw_args.gate)
}

// Gate is the start gate of loops run at once on several threads (--threads).
type Gate struct {
	p *C.int
	n int
}

// NewGate is a gate for n loops; Free it after them.
func NewGate(n int) *Gate {
	p := (*C.int)(C.calloc(1, C.size_t(unsafe.Sizeof(C.int(0)))))
	if p == nil {
		panic("qmodel: out of memory")
	}
	return &Gate{p: p, n: n}
}

// Arrived is how many loops reached the gate.
func (g *Gate) Arrived() int { return int(atomic.LoadInt32((*int32)(unsafe.Pointer(g.p)))) }

func (g *Gate) Free() { C.free(unsafe.Pointer(g.p)) }

// BWOutcome is what rb_bw returned and the model recorded.
type BWOutcome struct {
	RC          int
	Fail        Fail
	Done        []uint64
	Completed   uint64
	Events      uint64
	DurationNS  int64
	LoopStartNS int64 // the loop's first post, on the model clock (rb_xfer.start_ns)
	NSPerTick   float64
	Hist        Hist
	DeadlineNS  int64 // absolute, model clock (0: none)
	Stop        int   // the stop flag at the end
	LStride     uint64
	RStride     uint64
	LastNS      []int64 // per QP: the first post to its last completion
	QHist       []Hist  // per QP, with PerQP
	SteadyWRs   uint64  // rb_bw_args.steady_wrs: WRs completed in the steady window
	SteadyNS    int64   // and its length
	Record
}

// RunBW runs rb_bw once.
func RunBW(c BWCase) BWOutcome {
	if c.Size == 0 {
		c.Size = 8
	}
	if c.Stride == 0 {
		c.Stride = c.Size
	}
	c.LSlots, c.RSlots = max(c.LSlots, 1), max(c.RSlots, 1)
	lstride := uint64(c.LSlots) * uint64(c.Stride)
	rstride := uint64(c.RSlots)*uint64(c.Stride) + 64 // a gap between the QPs' regions
	var cfg C.qm_config
	md := newModel(&cfg, c.Net, c.QPs, c.Depth, int(lstride)*c.QPs, int(rstride)*c.QPs)
	defer md.free()
	md.pattern(13, 1)
	hist := newHist()
	defer C.free(unsafe.Pointer(hist))
	done := (*C.uint64_t)(C.calloc(C.size_t(c.QPs), 8))
	defer C.free(unsafe.Pointer(done))

	a := (*C.rb_bw_args)(C.calloc(1, C.size_t(unsafe.Sizeof(C.rb_bw_args{}))))
	defer C.free(unsafe.Pointer(a))
	md.xfer(&a.x, uintptr(md.lbuf), c.Size, c.TimeoutNS, hist)
	a.qps = md.m.qpp
	a.nqp = C.int(c.QPs)
	a.opcode = opcode(c.Read)
	a.lslots, a.rslots, a.stride = C.uint32_t(c.LSlots), C.uint32_t(c.RSlots), C.uint32_t(c.Stride)
	a.lstride = C.uint64_t(lstride)
	rr := md.regions(c.QPs, rstride)
	defer rr.free()
	a.raddr, a.rkey, a.qlast_ns = rr.addr, rr.key, rr.last
	a.iters = C.uint64_t(c.Iters)
	a.tx_depth, a.post_list, a.cq_mod = C.uint32_t(c.Depth), C.uint32_t(c.PostList), C.uint32_t(c.CQMod)
	if c.Events {
		a.channel = &md.m.channel
	}
	var deadline int64
	if c.DeadlineNS > 0 {
		deadline = int64(md.m.clock) + c.DeadlineNS
		a.deadline_ns = C.int64_t(deadline)
	}
	a.done = done
	if c.Gate != nil {
		a.gate, a.gate_n = c.Gate.p, C.int(c.Gate.n)
	}
	var qh []C.rb_hist
	if c.PerQP {
		qhist := (*C.rb_hist)(C.malloc(C.size_t(c.QPs) * C.size_t(unsafe.Sizeof(C.rb_hist{}))))
		defer C.free(unsafe.Pointer(qhist))
		qh = unsafe.Slice(qhist, c.QPs)
		for i := range qh {
			C.rb_hist_reset(&qh[i])
		}
		a.qhist = qhist
	}
	runs.Add(1)
	rc := C.qm_bw(md.m, a)
	out := BWOutcome{
		RC: int(rc), Fail: goFail(&a.x.fail), Done: make([]uint64, c.QPs), Completed: uint64(a.completed),
		Events: uint64(a.events), DurationNS: int64(a.x.duration_ns), LoopStartNS: int64(a.x.start_ns), NSPerTick: float64(a.x.ns_per_tick),
		Hist: goHist(hist), DeadlineNS: deadline, Stop: int(md.m.stop), LStride: lstride, RStride: rstride,
		SteadyWRs: uint64(a.steady_wrs), SteadyNS: int64(a.steady_ns), Record: md.record(),
	}
	copy(out.Done, unsafe.Slice((*uint64)(unsafe.Pointer(done)), c.QPs))
	out.LastNS = rr.lastNS()
	for i := range qh {
		out.QHist = append(out.QHist, goHist(&qh[i]))
	}
	return out
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

// ---- rounds ----

// RoundsCase is one run of rb_rounds against the model.
type RoundsCase struct {
	Net
	QPs            int
	Rounds         uint64 // with DeadlineNS an upper bound
	DeadlineNS     int64  // relative, model time; 0: none
	Read           bool
	Size           uint32 // 0: 8
	LSlots, RSlots uint32 // 0 means 1
	SharedLocal    bool   // every QP uses local region 0
	TimeoutNS      int64
	StopAfterPolls uint64
}

// RoundsOutcome is what rb_rounds returned and the model recorded.
type RoundsOutcome struct {
	RC         int
	Fail       Fail
	Rounds     uint64
	Done       []uint64
	LastNS     []int64
	DurationNS int64
	Hist       Hist   // round times
	QHist      []Hist // per QP
	RStride    uint64
	Record
}

// RunRounds runs rb_rounds once.
func RunRounds(c RoundsCase) RoundsOutcome {
	if c.Size == 0 {
		c.Size = 8
	}
	c.LSlots, c.RSlots = max(c.LSlots, 1), max(c.RSlots, 1)
	lstride := uint64(c.LSlots) * uint64(c.Size)
	rstride := uint64(c.RSlots)*uint64(c.Size) + 64
	var cfg C.qm_config
	md := newModel(&cfg, c.Net, c.QPs, 1, int(lstride)*c.QPs, int(rstride)*c.QPs)
	defer md.free()
	md.pattern(7, 3)
	hist := newHist()
	defer C.free(unsafe.Pointer(hist))
	qhist := (*C.rb_hist)(C.malloc(C.size_t(c.QPs) * C.size_t(unsafe.Sizeof(C.rb_hist{}))))
	defer C.free(unsafe.Pointer(qhist))
	qh := unsafe.Slice(qhist, c.QPs)
	for i := range qh {
		C.rb_hist_reset(&qh[i])
	}
	done := (*C.uint64_t)(C.calloc(C.size_t(c.QPs), 8))
	defer C.free(unsafe.Pointer(done))
	a := (*C.rb_rounds_args)(C.calloc(1, C.size_t(unsafe.Sizeof(C.rb_rounds_args{}))))
	defer C.free(unsafe.Pointer(a))
	md.xfer(&a.x, uintptr(md.lbuf), c.Size, c.TimeoutNS, hist)
	a.qps = md.m.qpp
	a.nqp = C.int(c.QPs)
	a.opcode = opcode(c.Read)
	a.lslots, a.rslots, a.stride = C.uint32_t(c.LSlots), C.uint32_t(c.RSlots), C.uint32_t(c.Size)
	if !c.SharedLocal {
		a.lstride = C.uint64_t(lstride)
	}
	rr := md.regions(c.QPs, rstride)
	defer rr.free()
	a.raddr, a.rkey, a.qlast_ns, a.qhist = rr.addr, rr.key, rr.last, qhist
	a.iters = C.uint64_t(c.Rounds)
	if c.DeadlineNS > 0 {
		a.deadline_ns = C.int64_t(int64(md.m.clock) + c.DeadlineNS)
	}
	a.done = done
	runs.Add(1)
	rc := C.qm_rounds(md.m, a)
	out := RoundsOutcome{RC: int(rc), Fail: goFail(&a.x.fail), Rounds: uint64(a.rounds), Done: make([]uint64, c.QPs),
		LastNS: rr.lastNS(), DurationNS: int64(a.x.duration_ns), Hist: goHist(hist), RStride: rstride, Record: md.record()}
	copy(out.Done, unsafe.Slice((*uint64)(unsafe.Pointer(done)), c.QPs))
	for i := range qh {
		out.QHist = append(out.QHist, goHist(&qh[i]))
	}
	return out
}

// ---- WRITE ping-pong ----

// PPCase is one run of rb_pingpong against the model, which plays the other side.
type PPCase struct {
	Net
	Initiator     bool   // the loop is the initiator (the model answers), else the responder
	Size          uint32 // 0: 8
	First, Iters  uint64
	SQDepth       int
	CQMod         int
	PeerDelay     int    // ticks the model peer takes to answer
	PeerRounds    uint64 // rounds the model peer plays; 0: all (math.MaxUint64)
	DeadPeer      bool   // the model peer never answers (PeerRounds 0)
	TimeoutNS     int64
	StopAfterPoll uint64
	// Perftest: the round bytes are perftest's count, and a responder samples from
	// each answer to the next ping (verbs.PingPongParams.Perftest).
	Perftest bool
}

// PPOutcome is what rb_pingpong returned and the model recorded.
type PPOutcome struct {
	RC     int
	Fail   Fail
	Done   uint64
	Hist   Hist
	Stop   int
	RxLast byte // the loop's receive region's last byte at the end
	Remote []byte
	Record
}

// RunPingPong runs rb_pingpong once.
func RunPingPong(c PPCase) PPOutcome {
	if c.Size == 0 {
		c.Size = 8
	}
	var cfg C.qm_config
	cfg.pp = C.QM_PP_PEER_INITIATES
	if c.Initiator {
		cfg.pp = C.QM_PP_PEER_RESPONDS
	}
	cfg.pp_size = C.uint32_t(c.Size)
	cfg.pp_first = C.uint64_t(c.First)
	cfg.pp_iters = C.uint64_t(c.Iters)
	if c.Perftest {
		cfg.pp_perftest = 1
	}
	cfg.peer_delay = C.uint32_t(c.PeerDelay)
	cfg.peer_rounds = C.uint64_t(c.PeerRounds)
	if c.PeerRounds == 0 {
		cfg.peer_rounds = C.uint64_t(math.MaxUint64)
	}
	if c.DeadPeer {
		cfg.peer_rounds = 0
	}
	if c.StopAfterPoll > 0 {
		c.Net.StopAfterPolls = c.StopAfterPoll
	}
	// The local buffer: the receive region, then the send region, as verbs.PingPong lays it out.
	md := newModel(&cfg, c.Net, 1, c.SQDepth, 2*int(c.Size), int(c.Size))
	defer md.free()
	l := md.local()
	for i := range l[c.Size:] {
		l[int(c.Size)+i] = byte(i*5 + 7)
	}
	hist := newHist()
	defer C.free(unsafe.Pointer(hist))
	a := (*C.rb_pp_args)(C.calloc(1, C.size_t(unsafe.Sizeof(C.rb_pp_args{}))))
	defer C.free(unsafe.Pointer(a))
	md.xfer(&a.x, uintptr(md.lbuf)+uintptr(c.Size), c.Size, c.TimeoutNS, hist)
	a.qp = *md.m.qpp
	a.rx_last = (*C.uint8_t)(unsafe.Add(md.lbuf, c.Size-1))
	a.first = C.uint64_t(c.First)
	a.iters = C.uint64_t(c.Iters)
	if c.Initiator {
		a.initiator = 1
	}
	if c.Perftest {
		a.perftest_bytes = 1
		if !c.Initiator {
			a.timed_responder = 1
		}
	}
	a.sq_depth = C.uint32_t(c.SQDepth)
	a.cq_mod = C.uint32_t(c.CQMod)
	runs.Add(1)
	rc := C.qm_pingpong(md.m, a)
	return PPOutcome{
		RC: int(rc), Fail: goFail(&a.x.fail), Done: uint64(a.done), Hist: goHist(hist), Stop: int(md.m.stop),
		RxLast: l[c.Size-1], Remote: append([]byte(nil), md.remote()...), Record: md.record(),
	}
}

// ---- READ latency ----

// RLCase is one run of rb_read_lat against the model.
type RLCase struct {
	Net
	Size      uint32 // 0: 64
	Iters     uint64
	TimeoutNS int64
}

// RLOutcome is what rb_read_lat returned and the model recorded.
type RLOutcome struct {
	RC     int
	Fail   Fail
	Done   uint64
	Hist   Hist
	Stop   int
	Local  []byte
	Remote []byte
	Record
}

// RunReadLat runs rb_read_lat once.
func RunReadLat(c RLCase) RLOutcome {
	if c.Size == 0 {
		c.Size = 64
	}
	var cfg C.qm_config
	md := newModel(&cfg, c.Net, 1, 1, int(c.Size), int(c.Size))
	defer md.free()
	r := md.remote()
	for i := range r {
		r[i] = byte(i*11 + 5)
	}
	hist := newHist()
	defer C.free(unsafe.Pointer(hist))
	a := (*C.rb_rl_args)(C.calloc(1, C.size_t(unsafe.Sizeof(C.rb_rl_args{}))))
	defer C.free(unsafe.Pointer(a))
	md.xfer(&a.x, uintptr(md.lbuf), c.Size, c.TimeoutNS, hist)
	a.qp = *md.m.qpp
	a.iters = C.uint64_t(c.Iters)
	runs.Add(1)
	rc := C.qm_read_lat(md.m, a)
	return RLOutcome{
		RC: int(rc), Fail: goFail(&a.x.fail), Done: uint64(a.done), Hist: goHist(hist), Stop: int(md.m.stop),
		Local: append([]byte(nil), md.local()...), Remote: append([]byte(nil), r...), Record: md.record(),
	}
}

// ---- histogram ----

// HistLen is RB_HIST_LEN.
const HistLen = int(C.RB_HIST_LEN)

// HistLow and HistWidth are rb_hist_low and rb_hist_width.
func HistLow(i int) uint64   { return uint64(C.rb_hist_low(C.uint32_t(i))) }
func HistWidth(i int) uint64 { return uint64(C.rb_hist_width(C.uint32_t(i))) }

// HistIndex is the bucket the loops (rb.c's rb_hist_add) put a sample of v ticks into.
func HistIndex(v uint64) int { return int(C.qm_hist_index(C.uint64_t(v))) }

// HistAdd adds every value of vs to one histogram and returns its counts and the rest.
func HistAdd(vs []int64) (counts []uint64, hist Hist) {
	h := newHist()
	defer C.free(unsafe.Pointer(h))
	for _, v := range vs {
		C.rb_hist_add(h, C.int64_t(v))
	}
	counts = append([]uint64(nil), unsafe.Slice((*uint64)(unsafe.Pointer(&h.counts[0])), HistLen)...)
	return counts, goHist(h)
}
