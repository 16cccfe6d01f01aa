//go:build linux && cgo

package verbs

/*
#include <stdlib.h>
#include "rb.h"
*/
import "C"

import (
	"fmt"
	"math"
	"math/big"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/rdmabench/rdmabench/plan"
	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/verbs/qp"
)

// The loops run on a locked OS thread so that the Go scheduler stays out of them.

var theClockNote string

// SetClock picks the loops' tick source, the TSC (x86-64 only) or CLOCK_MONOTONIC_RAW,
// and the note that results carry about the choice (see ClockVerdict).
func SetClock(tsc bool, note string) {
	C.rb_set_clock(boolInt(tsc))
	theClockNote = note
}

// Clock names the tick source the loops use.
func Clock() string {
	if C.rb_clock_is_tsc() != 0 {
		return "tsc"
	}
	return "clock_monotonic_raw"
}

// ClockNote is the evidence for the clock the loops use (see ClockVerdict).
func ClockNote() string { return theClockNote }

// QShift is where a bandwidth loop's wr_id keeps the QP index.
const QShift = C.RB_QSHIFT

// The plan bounds --iters by plan.QShift: it must be rb.h's (a compile-time check).
var _ = [1]struct{}{}[QShift-plan.QShift]

// xfer fills the fields every loop shares; the remote address is roff into the first
// peer's buffer. The histogram is C memory, freed by the caller.
func (s *Session) xfer(x *C.rb_xfer, size int, laddr uintptr, roff int, inline bool, timeout time.Duration) {
	x.cq = s.cq
	x.laddr = C.uint64_t(laddr)
	x.lkey = s.mr.lkey
	if len(s.remotes) > 0 {
		x.raddr = C.uint64_t(s.remotes[0].addr + uint64(roff))
		x.rkey = C.uint32_t(s.remotes[0].key)
	}
	x.size = C.uint32_t(size)
	if inline {
		x.send_flags = C.IBV_SEND_INLINE
	}
	x.qpx = s.qpx
	x.stop = s.stop
	x.timeout_ns = C.int64_t(timeout.Nanoseconds())
	x.hist = (*C.rb_hist)(C.malloc(C.size_t(unsafe.Sizeof(C.rb_hist{}))))
	if x.hist == nil {
		panic("verbs: out of memory for a latency histogram")
	}
	C.rb_hist_reset(x.hist)
}

// Bandwidth runs the bandwidth loop over all QPs of the session (the client side), or,
// with p.Rounds, the rounds loop, or, with p.MR per-io or cache, the loop that
// registers in its window (rb_bw_mr, one QP: see bandwidthMR).
func (s *Session) Bandwidth(p BWParams) (BWResult, error) {
	if err := s.checkBandwidth(p); err != nil {
		return BWResult{}, err
	}
	arr := s.loopArrays(p)
	defer arr.free()
	opcode, lstride, iters, deadline := loopArgs(p)
	if (p.Rounds || MRInLoop(p.MR)) && len(s.blocks) > 1 {
		return BWResult{}, fmt.Errorf("bandwidth loop: rounds and --mr per-io/cache run on one thread; the session has %d", len(s.blocks))
	}
	var x *C.rb_xfer
	var rc C.int
	var res BWResult
	var pl place // where the loop ran (rounds, registrations in the loop)
	if p.Rounds {
		x, rc, pl = s.rounds(p, arr, opcode, lstride, iters, deadline, &res)
	} else if MRInLoop(p.MR) { // registrations in the loop: one QP, see bandwidthMR
		x, rc, pl = s.bandwidthMR(p, uintptr(s.buf)+uintptr(p.LocalOffset), uint64(*arr.raddr), uint32(*arr.rkey), opcode, iters, deadline, arr.done, arr.last, &res)
	} else {
		return s.stream(p, arr, opcode, lstride, iters, deadline)
	}
	defer C.free(unsafe.Pointer(x.hist))
	return s.oneLoopResult(p, x, rc, pl, arr, res)
}

// checkBandwidth refuses p before anything is allocated: on a session that is not
// connected, with parameters BWParams.Check refuses, or where a QP's remote region
// would end past its peer's buffer.
func (s *Session) checkBandwidth(p BWParams) error {
	l := p.Layout
	nqp := len(s.qps)
	if len(s.remotes) != nqp {
		return fmt.Errorf("bandwidth loop: the session is not connected")
	}
	if err := p.Check(nqp, s.spec.BufSize, s.spec.SQDepth); err != nil {
		return err
	}
	for q, r := range s.remotes { // refused here rather than failing mid-run with REM_ACCESS_ERR
		end := uint64(p.RemoteOffset) + uint64(l.RSlots*l.Stride)
		if s.onePeer {
			end += uint64(q * l.RSlots * l.Stride)
		}
		if end > r.len {
			return fmt.Errorf("bandwidth loop: QP %d's remote region ends at byte %d of the peer's %d-byte buffer", q, end, r.len)
		}
	}
	return nil
}

// loopArrays allocates a bandwidth loop's per-QP C arrays over all the session's QPs
// (the caller frees them with free) and fills in the QPs and their remote regions and
// keys; with p.PerQP it adds a latency histogram per QP.
func (s *Session) loopArrays(p BWParams) streamArrays {
	l := p.Layout
	nqp := len(s.qps)
	// The remote regions: QP q's at q*rstride of the one peer's buffer, or at the
	// start of its own peer's.
	arr := streamArrays{
		raddr: (*C.uint64_t)(C.calloc(C.size_t(nqp), 8)),
		rkey:  (*C.uint32_t)(C.calloc(C.size_t(nqp), 4)),
		last:  (*C.int64_t)(C.calloc(C.size_t(nqp), 8)),
		done:  (*C.uint64_t)(C.calloc(C.size_t(nqp), 8)),
		qps:   (**C.struct_ibv_qp)(C.calloc(C.size_t(nqp), C.size_t(unsafe.Sizeof(uintptr(0))))),
	}
	if arr.raddr == nil || arr.rkey == nil || arr.last == nil || arr.done == nil || arr.qps == nil {
		arr.free()
		panic("verbs: out of memory for a loop's arrays")
	}
	ra, rk := unsafe.Slice((*uint64)(unsafe.Pointer(arr.raddr)), nqp), unsafe.Slice((*uint32)(unsafe.Pointer(arr.rkey)), nqp)
	for q, r := range s.remotes {
		ra[q], rk[q] = r.addr+uint64(p.RemoteOffset), r.key
		if s.onePeer {
			ra[q] += uint64(q * l.RSlots * l.Stride)
		}
	}
	copy(unsafe.Slice(arr.qps, nqp), s.qps)
	if p.PerQP {
		arr.qhist = (*C.rb_hist)(C.malloc(C.size_t(nqp) * C.size_t(unsafe.Sizeof(C.rb_hist{}))))
		if arr.qhist == nil {
			arr.free()
			panic("verbs: out of memory for latency histograms")
		}
		for i := range unsafe.Slice(arr.qhist, nqp) {
			C.rb_hist_reset(&unsafe.Slice(arr.qhist, nqp)[i])
		}
	}
	return arr
}

// free frees what loopArrays allocated.
func (arr streamArrays) free() {
	for _, p := range []unsafe.Pointer{unsafe.Pointer(arr.raddr), unsafe.Pointer(arr.rkey), unsafe.Pointer(arr.last), unsafe.Pointer(arr.done), unsafe.Pointer(arr.qps)} {
		C.free(p)
	}
	if arr.qhist != nil {
		C.free(unsafe.Pointer(arr.qhist))
	}
}

// loopArgs are what p sets for every bandwidth loop: the WR opcode, the distance
// between the QPs' local regions (0 when they share one), and when to stop: after
// p.Iters WRs per QP, or with p.Duration at a deadline on the loops' clock.
func loopArgs(p BWParams) (opcode C.int, lstride, iters C.uint64_t, deadline C.int64_t) {
	l := p.Layout
	opcode = C.IBV_WR_RDMA_WRITE
	if p.Op == Read {
		opcode = C.IBV_WR_RDMA_READ
	}
	lstride = C.uint64_t(l.LSlots * l.Stride)
	if l.SharedLocal {
		lstride = 0
	}
	iters = C.uint64_t(p.Iters)
	if p.Duration > 0 {
		iters = C.uint64_t(math.MaxUint64)
		deadline = C.rb_now() + C.int64_t(p.Duration.Nanoseconds())
	}
	return opcode, lstride, iters, deadline
}

// rounds runs rb_rounds (p.Rounds) over all QPs on one loop thread, into res.Rounds.
// It returns the loop's rb_xfer (its histogram is the caller's to free) and its
// outcome.
func (s *Session) rounds(p BWParams, arr streamArrays, opcode C.int, lstride, iters C.uint64_t, deadline C.int64_t, res *BWResult) (*C.rb_xfer, C.int, place) {
	l := p.Layout
	nqp := len(s.qps)
	a := new(C.rb_rounds_args)
	s.xfer(&a.x, p.Size, uintptr(s.buf)+uintptr(p.LocalOffset), 0, p.Inline && p.Op == Write, p.Timeout)
	a.qps, a.nqp, a.opcode = arr.qps, C.int(nqp), opcode
	a.lslots, a.rslots, a.stride, a.lstride = C.uint32_t(l.LSlots), C.uint32_t(l.RSlots), C.uint32_t(l.Stride), lstride
	a.raddr, a.rkey, a.qhist, a.iters, a.deadline_ns = arr.raddr, arr.rkey, arr.qhist, iters, deadline
	a.done, a.qlast_ns = arr.done, arr.last
	endProgress := progress(p, unsafe.Slice((*uint64)(unsafe.Pointer(arr.done)), nqp))
	var rc C.int
	pl := s.onLoopThread(func() { rc = C.rb_rounds(a) })
	endProgress()
	res.Rounds = uint64(a.rounds)
	return &a.x, rc, pl
}

// oneLoopResult completes res with what a loop on one thread (rounds, registrations in
// the loop) measured, from its rb_xfer x and the per-QP arrays, and returns it with
// the loop's error: its thread's that could not be pinned, else its failure.
func (s *Session) oneLoopResult(p BWParams, x *C.rb_xfer, rc C.int, pl place, arr streamArrays, res BWResult) (BWResult, error) {
	nqp := len(s.qps)
	scale := float64(x.ns_per_tick)
	res.DurationNS, res.Lat = int64(x.duration_ns), samples(x.hist, scale)
	res.PerQP = append([]uint64(nil), unsafe.Slice((*uint64)(unsafe.Pointer(arr.done)), nqp)...)
	res.PerQPLastNS = append([]int64(nil), unsafe.Slice((*int64)(unsafe.Pointer(arr.last)), nqp)...)
	for _, n := range res.PerQP {
		res.Completed += n
	}
	if arr.qhist != nil {
		for i := range unsafe.Slice(arr.qhist, nqp) {
			res.PerQPLat = append(res.PerQPLat, samples(&unsafe.Slice(arr.qhist, nqp)[i], scale))
		}
	}
	res.Threads = []ThreadRun{{QPs: qp.Block{N: nqp}, CPUs: pl.cpus, RanOn: pl.ranOn, Completed: res.Completed, DurationNS: res.DurationNS}}
	if pl.err != nil {
		return res, pl.err
	}
	if rc != 0 {
		what := "bandwidth loop"
		if MRInLoop(p.MR) {
			what = "bandwidth loop (mr " + p.MR + ")"
		}
		if p.Rounds {
			what = "rounds loop"
		}
		return res, failure(x, what)
	}
	return res, nil
}

// progress calls p.Progress every p.Interval with the sum of done (C memory the loop
// stores to atomically) until the returned function is called; that function returns
// once the goroutine has stopped reading done.
func progress(p BWParams, done []uint64) func() {
	if p.Progress == nil || p.Interval <= 0 {
		return func() {}
	}
	quit, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		t := time.NewTicker(p.Interval)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				var n uint64
				for i := range done {
					n += atomic.LoadUint64(&done[i])
				}
				p.Progress(n)
			}
		}
	}()
	return func() { close(quit); <-exited }
}

// PingPong runs rounds p.First .. p.First+p.Iters-1 of the WRITE ping-pong on QP 0.
// The initiator's samples are round-trip times; the responder records none.
func (s *Session) PingPong(p PingPongParams) (LatResult, error) {
	if 2*p.Size > s.spec.BufSize {
		return LatResult{}, fmt.Errorf("ping-pong of %d bytes needs a %d-byte buffer", p.Size, 2*p.Size)
	}
	// The receive region is the buffer's first Size bytes, the send region starts half
	// way: in a buffer of two messages that is right after it; in a larger one (against
	// perftest's -a, one session for every size) no size's send region overlaps a
	// later size's receive region, so no stale byte reads as an answer.
	var a C.rb_pp_args
	s.xfer(&a.x, p.Size, uintptr(s.buf)+uintptr(s.spec.BufSize/2), 0, p.Inline, p.Timeout)
	defer C.free(unsafe.Pointer(a.x.hist))
	a.qp = s.qps[0]
	a.rx_last = (*C.uint8_t)(unsafe.Add(s.buf, p.Size-1))
	a.first = C.uint64_t(p.First)
	a.iters = C.uint64_t(p.Iters)
	a.initiator = boolInt(p.Initiator)
	a.perftest_bytes = boolInt(p.Perftest)
	a.timed_responder = boolInt(p.Perftest && !p.Initiator)
	a.sq_depth = C.uint32_t(max(1, min(p.SQDepth, s.spec.SQDepth)))
	a.cq_mod = C.uint32_t(max(1, min(p.CQMod, int(a.sq_depth))))
	var rc C.int
	pl := s.onLoopThread(func() { rc = C.rb_pingpong(&a) })
	if pl.err != nil {
		return LatResult{}, pl.err
	}
	scale := latScale(float64(a.x.ns_per_tick), p.OneWay)
	res := LatResult{Done: uint64(a.done), DurationNS: int64(a.x.duration_ns), Lat: samples(a.x.hist, scale), CPUs: pl.cpus, RanOn: pl.ranOn}
	if rc != 0 {
		return res, failure(&a.x, "write ping-pong")
	}
	return res, nil
}

// ReadLatency posts one signalled READ at a time on QP 0 and times each completion.
func (s *Session) ReadLatency(p ReadLatParams) (LatResult, error) {
	if p.Size > s.spec.BufSize {
		return LatResult{}, fmt.Errorf("message size %d outside the %d-byte buffer", p.Size, s.spec.BufSize)
	}
	var a C.rb_rl_args
	s.xfer(&a.x, p.Size, uintptr(s.buf), 0, false, p.Timeout)
	defer C.free(unsafe.Pointer(a.x.hist))
	a.qp = s.qps[0]
	a.iters = C.uint64_t(p.Iters)
	var rc C.int
	pl := s.onLoopThread(func() { rc = C.rb_read_lat(&a) })
	if pl.err != nil {
		return LatResult{}, pl.err
	}
	res := LatResult{Done: uint64(a.done), DurationNS: int64(a.x.duration_ns), Lat: samples(a.x.hist, float64(a.x.ns_per_tick)), CPUs: pl.cpus, RanOn: pl.ranOn}
	if rc != 0 {
		return res, failure(&a.x, "read latency loop")
	}
	return res, nil
}

// latScale is the ns per tick a ping-pong's samples convert at: its loop's rate, or for
// one-way latency (perftest's write_lat), half of it, half the round trip: exact on
// every statistic, as the conversion is linear.
func latScale(nsPerTick float64, oneWay bool) float64 {
	if oneWay {
		return nsPerTick / 2
	}
	return nsPerTick
}

// samples converts the loop's tick histogram to nanoseconds. Each bucket's midpoint is
// scaled by the loop's calibration; the buckets are 1/1024 of their value wide or less,
// so the converted histogram keeps three significant digits. Count, min, max, mean and
// standard deviation are exact (the sums are kept exactly in C).
func samples(h *C.rb_hist, nsPerTick float64) Samples {
	out := Samples{Hist: result.NewHistogram(), Backwards: uint64(h.backwards)}
	n := uint64(h.n)
	if n == 0 || nsPerTick <= 0 {
		return out
	}
	ns := func(t float64) int64 { return int64(math.Round(t * nsPerTick)) }
	counts := unsafe.Slice((*uint64)(unsafe.Pointer(&h.counts[0])), C.RB_HIST_LEN)
	for i, c := range counts {
		if c == 0 {
			continue
		}
		low, width := float64(C.rb_hist_low(C.uint32_t(i))), float64(C.rb_hist_width(C.uint32_t(i)))
		out.Hist.RecordValues(min(ns(low+(width-1)/2), out.Hist.HighestTrackableValue()), int64(c))
	}
	// Variance x n^2 = n*sumsq - sum^2, exactly, in big integers.
	sum, sq := u128(h.sum_hi, h.sum_lo), u128(h.sumsq_hi, h.sumsq_lo)
	v := new(big.Int).Mul(sq, new(big.Int).SetUint64(n))
	v.Sub(v, new(big.Int).Mul(sum, sum))
	vf, _ := new(big.Float).SetInt(v).Float64()
	sf, _ := new(big.Float).SetInt(sum).Float64()
	out.Moments = result.Moments{
		Count: n, Min: ns(float64(h.min)), Max: ns(float64(h.max)),
		Mean:  sf / float64(n) * nsPerTick,
		Stdev: math.Sqrt(max(vf, 0)) / float64(n) * nsPerTick,
	}
	return out
}

func u128(hi, lo C.uint64_t) *big.Int {
	v := new(big.Int).Lsh(new(big.Int).SetUint64(uint64(hi)), 64)
	return v.Or(v, new(big.Int).SetUint64(uint64(lo)))
}

func failure(x *C.rb_xfer, phase string) error {
	f := &x.fail
	switch f.kind {
	case C.RB_FAIL_WC:
		e := &CompletionError{
			Status:     wcStatusName(int(f.status)),
			Detail:     C.GoString(C.ibv_wc_status_str(C.enum_ibv_wc_status(f.status))),
			WRID:       uint64(f.wr_id) & (1<<QShift - 1),
			VendorErr:  uint32(f.vendor_err),
			QPNum:      uint32(f.qp_num),
			Unexpected: C.GoString(f.verb) == "unexpected completion",
		}
		if f.status == C.IBV_WC_SUCCESS {
			e.Opcode = wcOpcodeName(int(f.opcode))
		}
		return e
	case C.RB_FAIL_TIMEOUT:
		return &TimeoutError{Phase: phase, Wait: C.GoString(f.verb), After: time.Duration(x.timeout_ns)}
	case C.RB_FAIL_CLOCK:
		return fmt.Errorf("%s: the TSC did not advance at a plausible rate across the loop, so its samples cannot be converted to time: rerun with --clock monotonic", phase)
	}
	return &VerbError{Verb: C.GoString(f.verb), Phase: phase, Err: syscall.Errno(f.err)}
}

func wcOpcodeName(o int) string {
	switch o {
	case C.IBV_WC_SEND:
		return "IBV_WC_SEND"
	case C.IBV_WC_RDMA_WRITE:
		return "IBV_WC_RDMA_WRITE"
	case C.IBV_WC_RDMA_READ:
		return "IBV_WC_RDMA_READ"
	case C.IBV_WC_RECV:
		return "IBV_WC_RECV"
	}
	return fmt.Sprintf("opcode %d", o)
}

// samplesOfTicks is samples over a histogram the loops' own C code filled with ticks:
// the conversion's tests, which cannot use cgo themselves.
func samplesOfTicks(ticks []int64, nsPerTick float64) Samples {
	h := (*C.rb_hist)(C.malloc(C.size_t(unsafe.Sizeof(C.rb_hist{}))))
	if h == nil {
		panic("verbs: out of memory for a latency histogram")
	}
	defer C.free(unsafe.Pointer(h))
	C.rb_hist_reset(h)
	for _, t := range ticks {
		C.rb_hist_add(h, C.int64_t(t))
	}
	return samples(h, nsPerTick)
}

// histBucket is the lowest tick and the width of the loops' histogram bucket that
// holds t (tests).
func histBucket(t int64) (low, width int64) {
	for i := C.uint32_t(0); i < C.RB_HIST_LEN; i++ {
		l, w := int64(C.rb_hist_low(i)), int64(C.rb_hist_width(i))
		if t >= l && t < l+w {
			return l, w
		}
	}
	return -1, 0
}
