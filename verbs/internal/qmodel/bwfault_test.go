//go:build linux && cgo

package qmodel

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// A peer that fails after E WRs: the loop reports the first error completion, which is
// the failed WR's RETRY_EXC_ERR, never a flush.
func TestBWPeerFails(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var cases []BWCase
	for _, s := range shapes() {
		for _, nqp := range []int{1, 4} {
			for _, events := range []bool{false, true} {
				for _, e := range []uint64{0, 1, 5, 37, 250} {
					sp := speeds[rng.IntN(len(speeds))]
					c := BWCase{Net: sp.net, QPs: nqp, Depth: s.depth, PostList: s.pl, CQMod: s.mod, Iters: 500,
						Read: rng.IntN(2) == 1, Events: events, Stride: 8, LSlots: 2, RSlots: 3, TimeoutNS: healthyTimeout}
					c.Seed = rng.Uint64()
					c.Fault = Fault{Kind: PeerFails, After: e}
					if nqp > 1 && rng.IntN(2) == 0 {
						c.Fault.QPs = 1 << rng.IntN(nqp) // only one QP's peer fails
					}
					if e <= 5 && rng.IntN(2) == 0 {
						// Duration mode, with few enough WRs before the failure that
						// even the slowest combination gets there.
						c.Iters, c.DeadlineNS, c.TickNS, c.PostNS = math.MaxUint64, 2e6, 1000, 100
					}
					cases = append(cases, c)
				}
			}
		}
	}
	grid(t, "rb_bw, failing peer", cases, func(c BWCase, o BWOutcome) []string {
		var bad []string
		f := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }
		if o.RC != -1 || o.Fail.Kind != FailWC || o.Fail.Status != WCRetryExcErr || o.Fail.Verb != "ibv_poll_cq" {
			f("rc %d, fail %+v: want RB_FAIL_WC with IBV_WC_RETRY_EXC_ERR", o.RC, o.Fail)
			return bad
		}
		q := int(o.Fail.QPNum) - 0x100
		if q < 0 || q >= c.QPs || (c.Fault.QPs != 0 && c.Fault.QPs>>q&1 == 0) {
			f("failed on QP number %#x", o.Fail.QPNum)
		} else if seq := o.Fail.WRID & seqMask; int(o.Fail.WRID>>QShift) != q || seq != c.Fault.After {
			f("failed WR id %#x, want QP %d WR %d", o.Fail.WRID, q, c.Fault.After)
		}
		if len(o.Violations) > 0 {
			f("violations %v: %v", o.Violations, o.FirstViolation)
		}
		for q := range c.QPs {
			if o.Done[q] > o.Executed[q] {
				f("QP %d: done %d, executed %d", q, o.Done[q], o.Executed[q])
			}
		}
		return bad
	})
}

// A peer that vanishes after S WRs: nothing executes or completes; the watchdog ends
// the loop, spinning or sleeping on the completion channel.
func TestBWPeerStalls(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var cases []BWCase
	for _, s := range shapes() {
		for _, nqp := range []int{1, 3} {
			for _, events := range []bool{false, true} {
				sp := speeds[rng.IntN(len(speeds))]
				c := BWCase{Net: sp.net, QPs: nqp, Depth: s.depth, PostList: s.pl, CQMod: s.mod, Iters: 300,
					Read: rng.IntN(2) == 1, Events: events, TimeoutNS: 2e6}
				c.Seed = rng.Uint64()
				c.Fault = Fault{Kind: PeerStalls, After: []uint64{0, 1, 10, 99}[rng.IntN(4)]}
				if nqp > 1 && rng.IntN(2) == 0 {
					c.Fault.QPs = 1 << rng.IntN(nqp)
				}
				if events {
					c.TimeoutNS = 250e6 // the sleeps are 100 ms long
				}
				if rng.IntN(3) == 0 {
					c.Iters, c.DeadlineNS, c.TickNS, c.PostNS = math.MaxUint64, 2e6, 1000, 100
				}
				cases = append(cases, c)
			}
		}
	}
	grid(t, "rb_bw, stalled peer", cases, func(c BWCase, o BWOutcome) []string {
		var bad []string
		f := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }
		if o.RC != -1 || o.Fail.Kind != FailTimeout || o.Fail.Verb != "completions" {
			f("rc %d, fail %+v: want RB_FAIL_TIMEOUT", o.RC, o.Fail)
		}
		if len(o.Violations) > 0 {
			f("violations %v: %v", o.Violations, o.FirstViolation)
		}
		// It gives up once the peer has been silent for the timeout, give or take the
		// watchdog's granularity: it looks at the clock every 4096 idle polls (or after
		// every sleep of up to 100 ms) and starts counting at the first look.
		silent := o.EndNS - max(o.LastCQENS, o.FirstPostNS)
		tick := c.TickNS
		if tick == 0 {
			tick = 200
		}
		slack := 2 * 4100 * (tick + 2*defaultNowNS)
		if c.Events {
			slack = 210e6
		}
		if silent < c.TimeoutNS || silent > c.TimeoutNS+slack {
			f("gave up after %d ns of silence, timeout %d", silent, c.TimeoutNS)
		}
		for q := range c.QPs {
			if o.Done[q] > o.Executed[q] {
				f("QP %d: done %d, executed %d", q, o.Done[q], o.Executed[q])
			}
		}
		return bad
	})
}

// The stop flag, set at poll K: the loop returns 0 with everything it posted complete.
func TestBWStop(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	var cases []BWCase
	for _, s := range shapes() {
		for _, nqp := range []int{1, 2, 8} {
			for _, k := range []uint64{1, 2, 5, 63, 64, 65, 300} {
				sp := speeds[rng.IntN(len(speeds))]
				c := BWCase{Net: sp.net, QPs: nqp, Depth: s.depth, PostList: s.pl, CQMod: s.mod,
					Iters: math.MaxUint64, Read: rng.IntN(2) == 1, Events: rng.IntN(2) == 0, Stride: 8,
					LSlots: 3, RSlots: 2, TimeoutNS: healthyTimeout}
				c.Seed = rng.Uint64()
				c.StopAfterPolls = k
				if rng.IntN(3) == 0 {
					c.Iters = uint64(rng.IntN(500) + 1) // may finish before the stop
				}
				cases = append(cases, c)
			}
		}
	}
	grid(t, "rb_bw, stop flag", cases, func(c BWCase, o BWOutcome) []string {
		bad := checkHealthy(c, o)
		if c.Iters == math.MaxUint64 && o.Stop == 0 {
			bad = append(bad, "the stop flag was never set")
		}
		return bad
	})
}

// The shapes that used to deadlock (a chain posted whole or not at all), spelled out.
func TestBWFormerDeadlocks(t *testing.T) {
	var cases []BWCase
	for _, s := range []shape{{128, 64, 100}, {100, 8, 100}, {64, 32, 50}, {16, 16, 10}} {
		for _, sp := range speeds {
			for _, nqp := range gridQPs {
				for _, events := range []bool{false, true} {
					for _, iters := range []uint64{1000, math.MaxUint64} {
						c := BWCase{Net: sp.net, QPs: nqp, Depth: s.depth, PostList: s.pl, CQMod: s.mod, Iters: iters,
							Events: events, TimeoutNS: healthyTimeout, LSlots: 1, RSlots: 1}
						if iters == math.MaxUint64 {
							c.DeadlineNS, c.TickNS, c.PostNS = 3e6, 1000, 100
						}
						cases = append(cases, c)
					}
				}
			}
		}
	}
	grid(t, "rb_bw, former deadlocks", cases, checkHealthy)
}

// Duration mode with several QPs used to report 0 completions (the count wrapped).
func TestBWDurationCompleted(t *testing.T) {
	for _, nqp := range gridQPs {
		c := BWCase{Net: Net{PerPoll: 2, TickNS: 1000, PostNS: 100}, QPs: nqp, Depth: 16, PostList: 4, CQMod: 4,
			Iters: math.MaxUint64, DeadlineNS: 3e6, TimeoutNS: healthyTimeout, LSlots: 1, RSlots: 1}
		o := RunBW(c)
		if bad := checkHealthy(c, o); len(bad) > 0 {
			t.Errorf("%v: %v", c, bad)
		}
		var want uint64
		for _, d := range o.Done {
			want += d
		}
		if o.Completed == 0 || o.Completed != want {
			t.Errorf("%d QPs: completed %d, done %v", nqp, o.Completed, o.Done)
		}
	}
}

// The watchdog restarts with every completion: a long run whose completions come
// after short silences does not time out, though it lasts many times the timeout.
func TestBWWatchdogRestarts(t *testing.T) {
	for _, events := range []bool{false, true} {
		c := BWCase{Net: Net{PerPoll: 1, AckDelay: 3}, QPs: 1, Depth: 1, PostList: 1, CQMod: 1, Iters: 30000,
			Events: events, TimeoutNS: 1e6, LSlots: 1, RSlots: 1}
		o := RunBW(c)
		if bad := checkHealthy(c, o); len(bad) > 0 {
			t.Errorf("%v: %v", c, bad)
		}
		if o.EndNS-o.StartNS < 10*c.TimeoutNS {
			t.Errorf("%v: the run took %d ns, too short to test the watchdog", c, o.EndNS-o.StartNS)
		}
	}
}

// The stop flag with a peer that has vanished: the loop waits for what it has posted,
// so it ends by its watchdog, not by the flag.
func TestBWStopStalled(t *testing.T) {
	for _, events := range []bool{false, true} {
		c := BWCase{Net: Net{PerPoll: 1, StopAfterPolls: 2, Fault: Fault{Kind: PeerStalls, After: 2}}, QPs: 2,
			Depth: 8, PostList: 2, CQMod: 4, Iters: math.MaxUint64, Events: events, TimeoutNS: 2e6, LSlots: 1, RSlots: 1}
		if events {
			c.TimeoutNS = 250e6
		}
		o := RunBW(c)
		if o.RC != -1 || o.Fail.Kind != FailTimeout || o.Stop != 1 || len(o.Violations) > 0 {
			t.Errorf("%v: rc %d fail %+v stop %d violations %v", c, o.RC, o.Fail, o.Stop, o.FirstViolation)
		}
	}
}
