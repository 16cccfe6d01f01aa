//go:build linux && cgo

package qmodel

import (
	"fmt"
	"strings"
	"testing"
)

func (c PPCase) String() string {
	role := "responder"
	if c.Initiator {
		role = "initiator"
	}
	return fmt.Sprintf("%s size %d first %d iters %d sq_depth %d cq_mod %d peer_delay %d peer_rounds %d dead %v net{per_poll %d random %v on_post %d ack_delay %d fault %+v}",
		role, c.Size, c.First, c.Iters, c.SQDepth, c.CQMod, c.PeerDelay, c.PeerRounds, c.DeadPeer,
		c.PerPoll, c.Random, c.OnPost, c.AckDelay, c.Fault)
}

var ppNets = []Net{
	{PerPoll: 1},
	{PerPoll: 1, AckDelay: 2},
	{PerPoll: 3, Random: true, Seed: 9},
	{OnPost: 1},
}

// ppShapes: sq_depth and cq_mod.
func ppShapes() [][2]int {
	var out [][2]int
	for _, d := range []int{1, 2, 3, 4, 16, 128} {
		for _, m := range []int{1, 2, 3, 4, 16, 128} {
			if m <= d {
				out = append(out, [2]int{d, m})
			}
		}
	}
	return out
}

func checkPP(c PPCase, o PPOutcome) []string {
	bad := cleanRun(o.RC, o.Fail, o.Violations, o.FirstViolation)
	f := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }
	if o.Done != c.Iters || o.PeerRounds != c.Iters || o.Posted[0] != c.Iters || o.Executed[0] != c.Iters {
		f("done %d, the model saw %d rounds, %d WRs posted, %d executed; want %d", o.Done, o.PeerRounds,
			o.Posted[0], o.Executed[0], c.Iters)
	}
	if int(o.MaxSQ[0]) > c.SQDepth {
		f("send queue held %d WRs, depth %d", o.MaxSQ[0], c.SQDepth)
	}
	last := byte((c.First+c.Iters-1)%255 + 1)
	if c.Iters > 0 && (o.RxLast != last || o.Remote[c.Size-1] != last) {
		f("last bytes: received %d, sent %d; want %d", o.RxLast, o.Remote[c.Size-1], last)
	}
	// Every WR is complete when the loop returns (its last WR is signalled).
	if o.SignalledPolled != o.SignalledExecuted {
		f("signalled WRs: %d executed, %d polled", o.SignalledExecuted, o.SignalledPolled)
	}
	if c.Initiator {
		if o.Hist.N != c.Iters || o.Hist.Backwards != 0 || o.PeerAnswers != c.Iters {
			f("histogram n %d backwards %d, peer answers %d; want %d", o.Hist.N, o.Hist.Backwards, o.PeerAnswers, c.Iters)
		}
	} else {
		if o.Hist.N != 0 || o.PeerPings != c.Iters {
			f("histogram n %d (want none), pings %d", o.Hist.N, o.PeerPings)
		}
		// The responder answers at once: no poll between a ping's arrival and the
		// pong, unless its send queue is full. It is not when the previous pong's
		// completion comes back before the next ping (ack_delay <= peer_delay), as the
		// ACK of a WRITE precedes the peer's answer on the wire; if it did not, the
		// loop could not post before polling it.
		if o.NeedlessPollsBeforePong != 0 || (c.AckDelay <= c.PeerDelay && o.MaxPollsBeforePong != 0) {
			f("up to %d ibv_poll_cq calls between a ping's arrival and the pong (%d in all, %d with room in the send queue)",
				o.MaxPollsBeforePong, o.PollsBeforePongTotal, o.NeedlessPollsBeforePong)
		}
	}
	return bad
}

func runPP(t *testing.T, name string, cases []PPCase, check func(PPCase, PPOutcome) []string) {
	t.Helper()
	var failed []string
	for _, c := range cases {
		if bad := check(c, RunPingPong(c)); len(bad) > 0 {
			failed = append(failed, fmt.Sprintf("%v:\n\t%s", c, strings.Join(bad, "\n\t")))
		}
	}
	for i, s := range failed {
		if i == 20 {
			t.Errorf("... and %d more", len(failed)-i)
			break
		}
		t.Error(s)
	}
	t.Logf("%s: %d combinations, %d failed", name, len(cases), len(failed))
}

func TestPingPongLive(t *testing.T) {
	var cases []PPCase
	for _, init := range []bool{true, false} {
		for _, s := range ppShapes() {
			for _, n := range ppNets {
				for _, delay := range []int{0, 1, 5} {
					for _, it := range [][2]uint64{{0, 1}, {0, 2}, {254, 3}, {1000, 600}} {
						cases = append(cases, PPCase{Net: n, Initiator: init, Size: 16, First: it[0], Iters: it[1],
							SQDepth: s[0], CQMod: s[1], PeerDelay: delay, TimeoutNS: ppTimeout})
					}
				}
			}
		}
	}
	runPP(t, "rb_pingpong, live peer", cases, checkPP)
}

// The peer plays R rounds (0: none) and then goes silent: the loop times out after R
// rounds, whichever side it plays.
func TestPingPongSilentPeer(t *testing.T) {
	var cases []PPCase
	for _, init := range []bool{true, false} {
		for _, s := range [][2]int{{1, 1}, {4, 2}, {128, 128}} {
			for _, r := range []uint64{0, 1, 7} {
				c := PPCase{Net: Net{PerPoll: 1}, Initiator: init, Size: 8, Iters: 20, SQDepth: s[0], CQMod: s[1],
					PeerDelay: 2, PeerRounds: r, DeadPeer: r == 0, TimeoutNS: 5e6}
				cases = append(cases, c)
			}
		}
	}
	runPP(t, "rb_pingpong, silent peer", cases, func(c PPCase, o PPOutcome) []string {
		var bad []string
		want := "the peer's answer"
		if !c.Initiator {
			want = "the peer's next message"
		}
		if o.RC != -1 || o.Fail.Kind != FailTimeout || o.Fail.Verb != want {
			bad = append(bad, fmt.Sprintf("rc %d, fail %+v: want RB_FAIL_TIMEOUT on %q", o.RC, o.Fail, want))
		}
		if o.Done != c.PeerRounds {
			bad = append(bad, fmt.Sprintf("done %d, want %d", o.Done, c.PeerRounds))
		}
		if len(o.Violations) > 0 {
			bad = append(bad, fmt.Sprintf("violations %v: %v", o.Violations, o.FirstViolation))
		}
		return bad
	})
}

// The peer's QP fails after E WRs of the loop's: the WRITE completes in error and the
// loop reports it, whichever side it plays.
func TestPingPongFailingPeer(t *testing.T) {
	var cases []PPCase
	for _, init := range []bool{true, false} {
		for _, s := range [][2]int{{1, 1}, {4, 2}, {4, 4}, {128, 128}} {
			for _, e := range []uint64{0, 1, 9} {
				cases = append(cases, PPCase{Net: Net{PerPoll: 1, Fault: Fault{Kind: PeerFails, After: e}},
					Initiator: init, Size: 8, Iters: 30, SQDepth: s[0], CQMod: s[1], PeerDelay: 1, TimeoutNS: healthyTimeout})
			}
		}
	}
	runPP(t, "rb_pingpong, failing peer", cases, func(c PPCase, o PPOutcome) []string {
		var bad []string
		if o.RC != -1 || o.Fail.Kind != FailWC || o.Fail.Status != WCRetryExcErr || o.Fail.WRID != c.Fault.After {
			bad = append(bad, fmt.Sprintf("rc %d, fail %+v: want RB_FAIL_WC with IBV_WC_RETRY_EXC_ERR on WR %d",
				o.RC, o.Fail, c.Fault.After))
		}
		// The responder may post its pong before it sees the error; the initiator waits
		// for an answer that cannot come.
		if o.Done > c.Fault.After+1 || (c.Initiator && o.Done != c.Fault.After) {
			bad = append(bad, fmt.Sprintf("done %d rounds, the peer failed after %d", o.Done, c.Fault.After))
		}
		if len(o.Violations) > 0 {
			bad = append(bad, fmt.Sprintf("violations %v: %v", o.Violations, o.FirstViolation))
		}
		return bad
	})
}

// The stop flag ends a ping-pong with rc 0.
func TestPingPongStop(t *testing.T) {
	for _, init := range []bool{true, false} {
		c := PPCase{Net: Net{PerPoll: 1}, Initiator: init, Size: 8, Iters: 1 << 40, SQDepth: 16, CQMod: 4,
			PeerDelay: 1, TimeoutNS: healthyTimeout, StopAfterPoll: 1000}
		o := RunPingPong(c)
		if o.RC != 0 || o.Stop != 1 || o.Done == 0 || o.Done >= c.Iters || len(o.Violations) > 0 {
			t.Errorf("%v: rc %d fail %+v stop %d done %d violations %v", c, o.RC, o.Fail, o.Stop, o.Done, o.Violations)
		}
	}
}

// ppTimeout bounds a live ping-pong's waits: a healthy round takes microseconds of
// model time, and the loop's watchdog looks at the clock only every 2^20 spins.
const ppTimeout = 5e6

// TestPingPongPerftest: against perftest's write_lat the round byte is perftest's
// count, which wraps through 0 at round 256, and a responder (perftest's server sends
// first) samples from each answer to the next ping: one sample fewer than rounds, each
// a round trip, so at least the peer's delay and never backwards.
func TestPingPongPerftest(t *testing.T) {
	var cases []PPCase
	for _, init := range []bool{true, false} {
		for _, n := range ppNets {
			for _, delay := range []int{0, 5} {
				for _, it := range []uint64{1, 2, 255, 256, 600} {
					cases = append(cases, PPCase{Net: n, Initiator: init, Size: 16, Iters: it, SQDepth: 1, CQMod: 1,
						PeerDelay: delay, TimeoutNS: ppTimeout, Perftest: true})
				}
			}
		}
	}
	runPP(t, "rb_pingpong, perftest's count", cases, func(c PPCase, o PPOutcome) []string {
		bad := cleanRun(o.RC, o.Fail, o.Violations, o.FirstViolation)
		f := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }
		if o.Done != c.Iters || o.PeerRounds != c.Iters {
			f("done %d, the model saw %d rounds; want %d", o.Done, o.PeerRounds, c.Iters)
		}
		if last := byte(c.Iters); o.RxLast != last || o.Remote[c.Size-1] != last {
			f("last bytes: received %d, sent %d; want perftest's (char)%d = %d", o.RxLast, o.Remote[c.Size-1], c.Iters, last)
		}
		want := c.Iters
		if !c.Initiator {
			want = c.Iters - 1
		}
		if o.Hist.N != want || o.Hist.Backwards != 0 {
			f("histogram n %d backwards %d; want %d samples", o.Hist.N, o.Hist.Backwards, want)
		}
		if o.Hist.N > 0 && o.Hist.Min < int64(c.PeerDelay) {
			f("shortest round trip %d ticks, under the peer's own delay %d", o.Hist.Min, c.PeerDelay)
		}
		return bad
	})
}
