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

// signalled is how many of n WRs the real loop signals: every mod-th and the last.
func signalled(n uint64, mod int) uint64 { return (n + uint64(mod) - 1) / uint64(mod) }
