//go:build linux && cgo

package qmodel

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestBWSampleValues: the model keeps its own record of every signalled WR, from the
// ibv_post_send that posted it to the return of the ibv_poll_cq that delivered its
// completion, on its own clock. The loop's histogram must hold exactly those times,
// each one clock read later (the loop stamps with rb_now, which advances the model
// clock by NowNS): the same count, and min, max and sum offset by exactly NowNS per
// sample. A sample taken from the loop's start, a post stamp taken after the post,
// samples scaled or one lost would all show. (Issue 24: the model checks values.)
func TestBWSampleValues(t *testing.T) {
	rng := rand.New(rand.NewPCG(24, 1))
	var bad []string
	n := 0
	for _, s := range shapes() {
		for _, nqp := range []int{1, 3} {
			for _, net := range []Net{{PerPoll: 1}, {PerPoll: 3, AckDelay: 2}, {PerPoll: 4, Random: true}, {OnPost: 1, PostNS: 30}} {
				net.Seed = rng.Uint64()
				c := BWCase{Net: net, QPs: nqp, Depth: s.depth, PostList: s.pl, CQMod: s.mod, Iters: 300,
					Read: rng.IntN(2) == 1, Stride: 8, LSlots: 2, RSlots: 2, TimeoutNS: healthyTimeout}
				o := RunBW(c)
				n++
				now := int64(50) // the model's NowNS default
				m := o.ModelLat
				if o.RC != 0 || o.Hist.N != m.N || m.N == 0 || o.Hist.Min != m.Min+now || o.Hist.Max != m.Max+now ||
					o.Hist.SumHi != 0 || int64(o.Hist.SumLo) != m.Sum+int64(m.N)*now {
					bad = append(bad, fmt.Sprintf("%+v: rc %d, loop n %d min %d max %d sum %d; model n %d min %d max %d sum %d (+%d ns each)",
						c, o.RC, o.Hist.N, o.Hist.Min, o.Hist.Max, o.Hist.SumLo, m.N, m.Min, m.Max, m.Sum, now))
				}
			}
		}
	}
	report(t, bad, "%d bandwidth runs, %d with samples other than the model's record", n)
}

// TestReadLatSampleValues: the READ latency loop's samples are the model's post-to-poll
// record of each READ, one clock read later, exactly.
func TestReadLatSampleValues(t *testing.T) {
	for _, net := range []Net{{PerPoll: 1}, {PerPoll: 1, AckDelay: 3}, {PerPoll: 2, Random: true, Seed: 5}, {OnPost: 1}} {
		o := RunReadLat(RLCase{Net: net, Iters: 200, TimeoutNS: healthyTimeout})
		m, now := o.ModelLat, int64(50)
		if o.RC != 0 || o.Hist.N != 200 || m.N != 200 || o.Hist.Min != m.Min+now || o.Hist.Max != m.Max+now ||
			int64(o.Hist.SumLo) != m.Sum+int64(m.N)*now {
			t.Errorf("%+v: rc %d, loop n %d min %d max %d sum %d; model n %d min %d max %d sum %d", net, o.RC,
				o.Hist.N, o.Hist.Min, o.Hist.Max, o.Hist.SumLo, m.N, m.Min, m.Max, m.Sum)
		}
	}
}

// TestBWSampleValuesOnATSC: with the model's TSC at 2.7 ticks per nanosecond, the loop
// calibrates its rate against rb_now (as on a CPU: 20 ms of model time after the run)
// and its samples, in ticks, converted at that rate, are the model's record: the rate
// within 1e-4 of 1/2.7 ns per tick, every converted statistic within one clock read
// (50 ns) per sample of the model's. A rate inverted, or ticks taken for nanoseconds,
// is off by a factor of 2.7 or 7.3.
func TestBWSampleValuesOnATSC(t *testing.T) {
	const ghz, now = 2.7, 50.0
	for _, c := range []BWCase{
		{Net: Net{PerPoll: 1, TSCPerNS: ghz}, QPs: 1, Depth: 16, PostList: 1, CQMod: 1, Iters: 300, Stride: 8, LSlots: 2, RSlots: 2, TimeoutNS: healthyTimeout},
		{Net: Net{PerPoll: 3, AckDelay: 2, TSCPerNS: ghz}, QPs: 3, Depth: 64, PostList: 4, CQMod: 8, Iters: 500, Read: true, Stride: 8, LSlots: 2, RSlots: 2, TimeoutNS: healthyTimeout},
	} {
		o := RunBW(c)
		m := o.ModelLat
		if o.RC != 0 || m.N == 0 || o.Hist.N != m.N {
			t.Fatalf("%+v: rc %d fail %+v, loop n %d, model n %d", c, o.RC, o.Fail, o.Hist.N, m.N)
		}
		if r := o.NSPerTick * ghz; r < 1-1e-4 || r > 1+1e-4 {
			t.Errorf("calibrated %.6f ns per tick; want %.6f", o.NSPerTick, 1/ghz)
		}
		ns := func(ticks float64) float64 { return ticks * o.NSPerTick }
		sum := ns(float64(o.Hist.SumLo))
		want := float64(m.Sum) + float64(m.N)*now
		if d := sum - want; d < -float64(m.N)*now || d > float64(m.N)*now {
			t.Errorf("sum of samples %.0f ns converted; the model's record %.0f ns (+%.0f per sample)", sum, float64(m.Sum), now)
		}
		for _, p := range [][2]float64{{ns(float64(o.Hist.Min)), float64(m.Min)}, {ns(float64(o.Hist.Max)), float64(m.Max)}} {
			if d := p[0] - p[1]; d < 0 || d > 2*now {
				t.Errorf("a sample converts to %.1f ns, the model recorded %.0f ns", p[0], p[1])
			}
		}
	}
}

// TestPingPongSampleValues: the initiator's samples, and a timed responder's (against
// perftest's write_lat), are the model's record of each round, from the post of the
// loop's WRITE to the arrival of the peer's message that answers it, one clock read
// later, exactly. (Issue 24: a ping-pong t0 taken after the post.) One exception, on
// a wire no NIC has: when the ACK of the responder's WRITE comes back after the peer's
// next message (ack_delay > peer_delay), the responder waits for room in its send queue
// before it looks for that message, and its sample holds the wait: never shorter than
// the model's, then.
func TestPingPongSampleValues(t *testing.T) {
	var bad []string
	n := 0
	for _, init := range []bool{true, false} {
		for _, s := range ppShapes() {
			for _, net := range ppNets {
				for _, delay := range []int{0, 1, 5} {
					c := PPCase{Net: net, Initiator: init, Size: 16, Iters: 300, SQDepth: s[0], CQMod: s[1], PeerDelay: delay,
						TimeoutNS: ppTimeout, Perftest: !init}
					o := RunPingPong(c)
					n++
					m, now := o.ModelRT, int64(50)
					want := c.Iters
					if !init {
						want-- // the first ping answers no post of the loop's
					}
					exact := o.Hist.Min == m.Min+now && o.Hist.Max == m.Max+now && int64(o.Hist.SumLo) == m.Sum+int64(m.N)*now
					if !init && net.AckDelay > delay { // see above
						exact = o.Hist.Min >= m.Min+now && o.Hist.Max >= m.Max+now && int64(o.Hist.SumLo) >= m.Sum+int64(m.N)*now
					}
					if o.RC != 0 || o.Hist.N != want || m.N != want || !exact {
						bad = append(bad, fmt.Sprintf("%v: rc %d, loop n %d min %d max %d sum %d; model n %d min %d max %d sum %d", c, o.RC,
							o.Hist.N, o.Hist.Min, o.Hist.Max, o.Hist.SumLo, m.N, m.Min, m.Max, m.Sum))
					}
				}
			}
		}
	}
	report(t, bad, "%d ping-pong runs, %d with samples other than the model's record", n)
}

// TestLeftoverEventsNotCounted: events an earlier loop left on a shared CQ's channel
// (the warm-up's last arming) are consumed at the start, acknowledged and not counted
// as this loop's: the loop's cq_events is what it slept on. (Issue 24: the drain of
// leftover events removed.)
func TestLeftoverEventsNotCounted(t *testing.T) {
	for _, left := range []uint32{1, 3} {
		for _, s := range shapes() {
			c := BWCase{Net: Net{PerPoll: 1, AckDelay: 3, LeftoverEvents: left}, QPs: 2, Depth: s.depth, PostList: s.pl, CQMod: s.mod,
				Iters: 200, Events: true, Stride: 8, LSlots: 2, RSlots: 2, TimeoutNS: healthyTimeout}
			o := RunBW(c)
			if o.RC != 0 || o.EventsGot != o.Events+uint64(left) || o.EventsAcked != o.EventsGot || len(o.Violations) > 0 {
				t.Fatalf("%+v: rc %d, the loop counted %d events, took %d (%d left over), acknowledged %d; violations %v",
					c, o.RC, o.Events, o.EventsGot, left, o.EventsAcked, o.FirstViolation)
			}
		}
	}
}

// report fails t with the first ten of bad and logs the tally: summary's first %d is
// n, its second the failures.
func report(t *testing.T, bad []string, summary string, n int) {
	t.Helper()
	for i, b := range bad {
		if i == 10 {
			t.Errorf("... and %d more", len(bad)-i)
			break
		}
		t.Error(b)
	}
	t.Logf(summary, n, len(bad))
}
