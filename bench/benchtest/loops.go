package benchtest

import (
	"fmt"
	"time"

	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/verbs"
)

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
