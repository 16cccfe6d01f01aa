package benchtest

import (
	"fmt"
	"time"

	"github.com/rdmabench/rdmabench/verbs"
	"github.com/rdmabench/rdmabench/verbs/qp"
)

// Bandwidth moves the bytes the real loop would: WR i of QP q copies local slot
// i % LSlots to remote slot i % RSlots (READ: the other way). Only the last WRs into
// each slot are copied, which leaves the buffers as the whole run would. A QP to a
// peer whose engine is slower (Cost) completes fewer WRs in the same time; rounds go
// at the pace of the slowest.
func (s *Session) Bandwidth(p verbs.BWParams) (verbs.BWResult, error) {
	s.Loops.Add(1)
	nqp := len(s.qpns)
	if err := p.Check(nqp, len(s.buf), s.Spec.SQDepth); err != nil {
		return verbs.BWResult{}, err
	}
	if (p.Rounds || verbs.MRInLoop(p.MR)) && s.Spec.Threads > 1 { // as verbs refuses it
		return verbs.BWResult{}, fmt.Errorf("fake: rounds and --mr per-io/cache run on one thread; the session has %d", s.Spec.Threads)
	}
	b, err := s.newBWRun(p)
	if err != nil {
		return verbs.BWResult{}, err
	}
	if s.e.Stall.Load() {
		return verbs.BWResult{PerQP: make([]uint64, nqp), PerQPLastNS: make([]int64, nqp)}, s.stall("bandwidth loop", "completions", p.Timeout)
	}
	// The loop takes its synthetic time for real (a Stop cuts it short, Progress is
	// called as it goes), so that what runs beside it (beats, the peer's direction of a
	// bidirectional test, --interval) meets it as it would meet the real loop.
	b.want = p.Duration
	if b.want <= 0 {
		b.want = time.Duration(p.Iters) * b.slowest
	}
	b.dur = s.sleep(b.want, p.Interval, b.progress())
	res := verbs.BWResult{DurationNS: b.dur.Nanoseconds(), PerQP: make([]uint64, nqp), PerQPLastNS: make([]int64, nqp)}
	if p.Rounds {
		res.Rounds = b.count(b.slowest)
		if s.e.FailLoop != nil {
			res.Rounds /= 2
		}
	}
	for q := range nqp {
		s.bwQP(b, q, &res)
	}
	s.bwLatency(b, &res)
	res.MR = mrStats(p, res)
	res.Threads = s.threadRuns(res.PerQP, b.dur)
	return res, s.e.FailLoop
}

// bwRun is a bandwidth loop as the fake runs it: each QP's peer and cost (the slower
// engine's of the two), the slowest of those costs (the pace of rounds), and, once the
// loop has slept, the time it wanted and the time it took.
type bwRun struct {
	p         verbs.BWParams
	onePeer   bool // one peer session for all QPs
	peers     []*Session
	costs     []time.Duration
	slowest   time.Duration
	want, dur time.Duration
}

// newBWRun finds each QP's peer, as the loop's WRs would reach it, and its cost.
func (s *Session) newBWRun(p verbs.BWParams) (*bwRun, error) {
	l, nqp := p.Layout, len(s.qpns)
	s.mu.Lock()
	onePeer := len(s.peers) == 1
	s.mu.Unlock()
	b := &bwRun{p: p, onePeer: onePeer, peers: make([]*Session, nqp), costs: make([]time.Duration, nqp), slowest: s.cost()}
	for q := range nqp {
		peer, err := s.peerOf(q, p.Op, b.rregion(q)+l.RSlots*l.Stride)
		if err != nil {
			return nil, err
		}
		b.peers[q], b.costs[q] = peer, max(s.cost(), peer.cost())
		b.slowest = max(b.slowest, b.costs[q])
	}
	return b, nil
}

// rregion is the start of QP q's remote region.
func (b *bwRun) rregion(q int) int {
	if b.onePeer {
		return b.p.RemoteOffset + q*b.p.Layout.RSlots*b.p.Layout.Stride
	}
	return b.p.RemoteOffset
}

// lregion is the start of QP q's local region.
func (b *bwRun) lregion(q int) int {
	if b.p.Layout.SharedLocal {
		return b.p.LocalOffset
	}
	return b.p.LocalOffset + q*b.p.Layout.LSlots*b.p.Layout.Stride
}

// progress is the sleep's callback that reports the WRs completed so far to
// p.Progress (nil without one).
func (b *bwRun) progress() func(time.Duration) {
	p := b.p
	if p.Progress == nil {
		return nil
	}
	return func(t time.Duration) {
		var n uint64
		for q := range b.costs {
			if k := uint64(t / b.costs[q]); p.Duration > 0 || k < p.Iters {
				n += k
			} else {
				n += p.Iters
			}
		}
		p.Progress(n)
	}
}

// count is what a QP of cost c completed in the time the loop took.
func (b *bwRun) count(c time.Duration) uint64 {
	switch {
	case b.p.Duration > 0:
		return uint64(b.dur / c)
	case b.dur >= b.want:
		return b.p.Iters // all of them: the sleep may overshoot, never count more than asked
	}
	return min(uint64(b.dur/c), b.p.Iters)
}

// bwQP is QP q's part of the loop: it counts the WRs the QP completed into res, moves
// the bytes of the last of them (Corrupt flips one), counts their packets, and with
// PerQP records the QP's latency samples.
func (s *Session) bwQP(b *bwRun, q int, res *verbs.BWResult) {
	p, cost := b.p, b.costs[q]
	n := b.count(cost)
	if p.Rounds {
		n = res.Rounds
	} else if s.e.FailLoop != nil {
		n /= 2
	}
	res.PerQP[q], res.Completed = n, res.Completed+n
	res.PerQPLastNS[q] = min(time.Duration(n)*cost, b.dur).Nanoseconds()
	if p.Rounds {
		res.PerQPLastNS[q] = min(time.Duration(n)*b.slowest, b.dur).Nanoseconds()
	}
	s.bwMove(b, q, n)
	if p.PerQP {
		if p.Rounds {
			res.PerQPLat = append(res.PerQPLat, s.samples(n, cost))
		} else {
			res.PerQPLat = append(res.PerQPLat, s.samples(signalled(n, p.CQMod), time.Duration(p.SQDepth)*cost))
		}
	}
}

// bwMove copies what the last of QP q's n WRs wrote (READ: read) into each slot, counts
// the packets of all n on both engines, and with Corrupt flips a byte of the last.
func (s *Session) bwMove(b *bwRun, q int, n uint64) {
	p, l, peer := b.p, b.p.Layout, b.peers[q]
	lregion, rregion := b.lregion(q), b.rregion(q)
	k := min(n, uint64(max(l.LSlots, l.RSlots)))
	for i := n - k; i < n; i++ {
		lo := lregion + int(i%uint64(l.LSlots))*l.Stride
		ro := rregion + int(i%uint64(l.RSlots))*l.Stride
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
		dst, at := peer.buf, rregion+(int((n-1)%uint64(l.RSlots)))*l.Stride
		if p.Op == verbs.Read {
			dst, at = s.buf, lregion+(int((n-1)%uint64(l.LSlots)))*l.Stride
		}
		dst[at] ^= 0xff
	}
}

// bwLatency sets res's latency samples: a rounds loop's, one per round at the pace of
// the slowest QP; a streaming loop's, one per signalled WR, with the completion events
// (Events) and the steady window.
func (s *Session) bwLatency(b *bwRun, res *verbs.BWResult) {
	p := b.p
	switch {
	case p.Rounds:
		res.Lat = s.samples(res.Rounds, b.slowest)
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
}

// threadRuns are the loop threads, as verbs splits them (the rounds loop and --mr run
// one), each with the WRs its QPs completed (perQP) in dur.
func (s *Session) threadRuns(perQP []uint64, dur time.Duration) []verbs.ThreadRun {
	var trs []verbs.ThreadRun
	blocks, _ := qp.Split(len(s.qpns), max(s.Spec.Threads, 1))
	sets := qp.CPUSets(s.Spec.CPUs, len(blocks), s.Spec.SplitCPUs)
	for t, b := range blocks {
		tr := verbs.ThreadRun{QPs: b, CPUs: sets[t], DurationNS: dur.Nanoseconds()}
		for _, n := range perQP[b.First : b.First+b.N] {
			tr.Completed += n
		}
		trs = append(trs, tr)
	}
	return trs
}

// signalled is how many of n WRs the real loop signals: every mod-th and the last.
func signalled(n uint64, mod int) uint64 { return (n + uint64(mod) - 1) / uint64(mod) }
