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
	var cases []BWCase
	for _, s := range shapes() {
		for _, nqp := range []int{1, 3} {
			for _, net := range []Net{{PerPoll: 1}, {PerPoll: 3, AckDelay: 2}, {PerPoll: 4, Random: true}, {OnPost: 1, PostNS: 30}} {
				net.Seed = rng.Uint64()
				cases = append(cases, BWCase{Net: net, QPs: nqp, Depth: s.depth, PostList: s.pl, CQMod: s.mod, Iters: 300,
					Read: rng.IntN(2) == 1, Stride: 8, LSlots: 2, RSlots: 2, TimeoutNS: healthyTimeout})
			}
		}
	}
	grid(t, "rb_bw, samples against the model's record", cases, func(c BWCase, o BWOutcome) []string {
		return asRecorded(o.RC, o.Hist, o.ModelLat, o.ModelLat.N)
	})
}

// asRecorded says what is wrong with a loop's histogram h against the model's record m
// (its runs' rc, and n the samples both must hold): it must be the record, one clock
// read (the model's default 50 ns) later per sample, exactly.
func asRecorded(rc int, h Hist, m ModelLat, n uint64) []string {
	const now = 50
	if rc != 0 || n == 0 || h.N != n || m.N != n || h.Min != m.Min+now || h.Max != m.Max+now || h.SumHi != 0 ||
		int64(h.SumLo) != m.Sum+int64(n)*now {
		return []string{fmt.Sprintf("rc %d, loop n %d min %d max %d sum %d; model n %d min %d max %d sum %d (want %d samples, +%d ns each)",
			rc, h.N, h.Min, h.Max, h.SumLo, m.N, m.Min, m.Max, m.Sum, n, now)}
	}
	return nil
}

// TestReadLatSampleValues: the READ latency loop's samples are the model's post-to-poll
// record of each READ, one clock read later, exactly.
func TestReadLatSampleValues(t *testing.T) {
	for _, net := range []Net{{PerPoll: 1}, {PerPoll: 1, AckDelay: 3}, {PerPoll: 2, Random: true, Seed: 5}, {OnPost: 1}} {
		o := RunReadLat(RLCase{Net: net, Iters: 200, TimeoutNS: healthyTimeout})
		for _, b := range asRecorded(o.RC, o.Hist, o.ModelLat, 200) {
			t.Errorf("%+v: %s", net, b)
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
	var cases []PPCase
	for _, init := range []bool{true, false} {
		for _, s := range ppShapes() {
			for _, net := range ppNets {
				for _, delay := range []int{0, 1, 5} {
					cases = append(cases, PPCase{Net: net, Initiator: init, Size: 16, Iters: 300, SQDepth: s[0], CQMod: s[1],
						PeerDelay: delay, TimeoutNS: ppTimeout, Perftest: !init})
				}
			}
		}
	}
	runPP(t, "rb_pingpong, samples against the model's record", cases, func(c PPCase, o PPOutcome) []string {
		n := c.Iters
		if !c.Initiator {
			n-- // the first ping answers no post of the loop's
		}
		if !c.Initiator && c.AckDelay > c.PeerDelay { // see above: never shorter
			m := o.ModelRT
			if o.RC != 0 || o.Hist.N != n || m.N != n || o.Hist.Min < m.Min+50 || int64(o.Hist.SumLo) < m.Sum+int64(n)*50 {
				return []string{fmt.Sprintf("rc %d, loop n %d min %d sum %d; model n %d min %d sum %d", o.RC, o.Hist.N, o.Hist.Min,
					o.Hist.SumLo, m.N, m.Min, m.Sum)}
			}
			return nil
		}
		return asRecorded(o.RC, o.Hist, o.ModelRT, n)
	})
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

// TestBWPerQPSampleValues: the bandwidth loop's per-QP histograms (--per-qp latency)
// hold each QP's own samples: the model's record of that QP's signalled WRs, one clock
// read later, exactly. A sample filed under another QP would show.
func TestBWPerQPSampleValues(t *testing.T) {
	var cases []BWCase
	for i, net := range []Net{{PerPoll: 1}, {PerPoll: 3, Random: true, Seed: 11}, {PerPoll: 2, AckDelay: 3}, {OnPost: 1, PostNS: 20}} {
		cases = append(cases, BWCase{Net: net, QPs: 3, Depth: 16, PostList: 1 + i%3, CQMod: 1 + i%2, Iters: 200, Read: i%2 == 1,
			Stride: 8, LSlots: 2, RSlots: 2, TimeoutNS: healthyTimeout, PerQP: true})
	}
	grid(t, "rb_bw, per-QP samples against the model's record", cases, func(c BWCase, o BWOutcome) []string {
		var bad []string
		for q := range c.QPs {
			for _, b := range asRecorded(o.RC, o.QHist[q], o.ModelLatQP[q], o.ModelLatQP[q].N) {
				bad = append(bad, fmt.Sprintf("QP %d: %s", q, b))
			}
		}
		return bad
	})
}

// TestRoundsSampleValues: the rounds loop (fan-out / fan-in) times each round from
// before its first post: with one QP that is the model's record of each WR, one clock
// read later; with several, each QP's histogram holds the model's record of that QP's
// WRs (posting costs no model time here, so every post of a round is at the round's
// start), one clock read later. A round timed from its last post, or a QP's sample
// filed under another, would show.
func TestRoundsSampleValues(t *testing.T) {
	for i, net := range []Net{{PerPoll: 1}, {PerPoll: 2, AckDelay: 3}, {PerPoll: 3, Random: true, Seed: 1}, {OnPost: 1}} {
		c := RoundsCase{Net: net, QPs: 1, Rounds: 100, Read: i%2 == 1, TimeoutNS: healthyTimeout}
		o := RunRounds(c)
		for _, b := range asRecorded(o.RC, o.Hist, o.ModelLat, 100) {
			t.Errorf("one QP, %+v: %s", net, b)
		}
	}
	for seed := uint64(1); seed <= 3; seed++ {
		c := RoundsCase{Net: Net{PerPoll: 3, Random: true, Seed: seed}, QPs: 3, Rounds: 100, TimeoutNS: healthyTimeout}
		o := RunRounds(c)
		for q := range 3 {
			for _, b := range asRecorded(o.RC, o.QHist[q], o.ModelLatQP[q], 100) {
				t.Errorf("3 QPs, seed %d, QP %d: %s", seed, q, b)
			}
		}
	}
}

// TestBWMRSampleValues: the loop that registers in its window (--mr per-io, cache)
// stamps each signalled WR after its registration, just before its post: its samples
// are the model's post-to-poll record, one clock read later, exactly; a stamp taken
// before the registration would add the registration's cost to every sample.
func TestBWMRSampleValues(t *testing.T) {
	var cases []MRCase
	for _, mode := range []MRMode{PerIO, MRCache} {
		for _, mod := range []int{1, 2} {
			for _, net := range []Net{{PerPoll: 1}, {PerPoll: 3, Random: true, Seed: 4}, {PerPoll: 2, AckDelay: 2}} {
				cases = append(cases, MRCase{Net: net, Mode: mode, CacheSize: 4, Depth: 4, CQMod: mod, Iters: 200, LSlots: 8, RSlots: 8,
					RegNS: 1000, DeregNS: 300, TimeoutNS: healthyTimeout})
			}
		}
	}
	gridOf(t, "rb_bw_mr, samples against the model's record", cases, func(c MRCase) (string, []string) {
		o := RunBWMR(c)
		return fmt.Sprintf("%+v", c), asRecorded(o.RC, o.Hist, o.ModelLat, o.ModelLat.N)
	})
}
