//go:build linux && cgo

package qmodel

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

// TestRoundsHealthy: every round reaches every QP once, in order, into that QP's own
// remote region; the round histogram has one sample per round and each QP's one per
// round; the window is the first post to the last completion.
func TestRoundsHealthy(t *testing.T) {
	for _, sp := range speeds {
		for _, nqp := range []int{1, 2, 3, 8} {
			for _, read := range []bool{false, true} {
				for _, shared := range []bool{false, true} {
					c := RoundsCase{Net: sp.net, QPs: nqp, Rounds: 37, Size: 8, Read: read, LSlots: 3, RSlots: 5, SharedLocal: shared, TimeoutNS: healthyTimeout}
					name := fmt.Sprintf("%s/qps%d/read=%v/shared=%v", sp.name, nqp, read, shared)
					o := RunRounds(c)
					for _, b := range checkRounds(c, o) {
						t.Errorf("%s: %s", name, b)
					}
				}
			}
		}
	}
}

func checkRounds(c RoundsCase, o RoundsOutcome) []string {
	bad := cleanRun(o.RC, o.Fail, o.Violations, o.FirstViolation)
	f := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }
	if o.Rounds != c.Rounds || o.Hist.N != c.Rounds {
		f("rounds %d, round samples %d, want %d", o.Rounds, o.Hist.N, c.Rounds)
	}
	if o.DurationNS <= 0 || o.DurationNS > o.EndNS-o.StartNS {
		f("window %d ns, the loop ran %d ns", o.DurationNS, o.EndNS-o.StartNS)
	}
	var maxLast int64
	for q := range c.QPs {
		if o.Done[q] != c.Rounds || o.Posted[q] != c.Rounds || o.Executed[q] != c.Rounds {
			f("QP %d: done %d posted %d executed %d, want %d", q, o.Done[q], o.Posted[q], o.Executed[q], c.Rounds)
		}
		if o.MaxSQ[q] > 1 {
			f("QP %d: %d WRs outstanding at once, a round has one per QP", q, o.MaxSQ[q])
		}
		if o.QHist[q].N != c.Rounds || o.QHist[q].Max > o.Hist.Max {
			f("QP %d: %d samples (max %d), round max %d", q, o.QHist[q].N, o.QHist[q].Max, o.Hist.Max)
		}
		if o.LastNS[q] <= 0 || o.LastNS[q] > o.DurationNS {
			f("QP %d: last completion at %d ns, window %d ns", q, o.LastNS[q], o.DurationNS)
		}
		maxLast = max(maxLast, o.LastNS[q])
		for r, a := range o.Addrs[q] {
			lq := uint64(q)
			if c.SharedLocal {
				lq = 0
			}
			wantL := lq*uint64(c.LSlots)*uint64(c.Size) + uint64(r%int(c.LSlots))*uint64(c.Size)
			wantR := uint64(q)*o.RStride + uint64(r%int(c.RSlots))*uint64(c.Size)
			if a.L != wantL || a.R != wantR {
				f("QP %d WR %d: local %d remote %d, want %d %d", q, r, a.L, a.R, wantL, wantR)
				break
			}
		}
		if bad := rkeysOf(q, o.Executed[q], o.RKeys[q], RKey(q)); bad != "" {
			f("%s", bad)
		}
	}
	if maxLast != o.DurationNS {
		f("the last QP's completion (%d ns) is not the end of the window (%d ns)", maxLast, o.DurationNS)
	}
	return bad
}

// TestRoundsStops: the stop flag and the deadline end the loop between rounds; the
// round in progress finishes, so nothing is left outstanding.
func TestRoundsStops(t *testing.T) {
	for _, nqp := range []int{1, 3} {
		o := RunRounds(RoundsCase{Net: Net{PerPoll: 1, StopAfterPolls: 20}, QPs: nqp, Rounds: math.MaxUint64, TimeoutNS: healthyTimeout})
		if b := cleanRun(o.RC, o.Fail, o.Violations, o.FirstViolation); len(b) > 0 || o.Rounds == 0 || o.Rounds == math.MaxUint64 {
			t.Fatalf("stop: %v, %d rounds", b, o.Rounds)
		}
		for q := range nqp {
			if o.Done[q] != o.Rounds || o.Posted[q] != o.Rounds {
				t.Errorf("stop, QP %d: posted %d done %d after %d rounds", q, o.Posted[q], o.Done[q], o.Rounds)
			}
		}
		o = RunRounds(RoundsCase{Net: Net{PerPoll: 1}, QPs: nqp, Rounds: math.MaxUint64, DeadlineNS: 2e6, TimeoutNS: healthyTimeout})
		if b := cleanRun(o.RC, o.Fail, o.Violations, o.FirstViolation); len(b) > 0 || o.Rounds == 0 || o.Rounds == math.MaxUint64 {
			t.Fatalf("deadline: %v, %d rounds", b, o.Rounds)
		}
		if o.LastPostNS > o.StartNS+3e6 {
			t.Errorf("deadline 2 ms: posting went on until %d ns after the start", o.LastPostNS-o.StartNS)
		}
	}
}

// TestRoundsFaults: a peer that fails or stalls fails the loop (with its status, or a
// timeout naming the wait) instead of hanging or counting the round.
func TestRoundsFaults(t *testing.T) {
	for _, after := range []uint64{0, 1, 5} {
		for _, mask := range []uint64{1, 2, 0} {
			o := RunRounds(RoundsCase{Net: Net{PerPoll: 1, Fault: Fault{Kind: PeerFails, After: after, QPs: mask}}, QPs: 3, Rounds: 20, TimeoutNS: healthyTimeout})
			if o.RC == 0 || o.Fail.Kind != FailWC {
				t.Errorf("fail after %d (mask %b): rc %d, fail %+v", after, mask, o.RC, o.Fail)
			}
			if o.Rounds != after {
				t.Errorf("fail after %d (mask %b): %d rounds counted", after, mask, o.Rounds)
			}
			o = RunRounds(RoundsCase{Net: Net{PerPoll: 1, Fault: Fault{Kind: PeerStalls, After: after, QPs: mask}}, QPs: 3, Rounds: 20, TimeoutNS: 5e6})
			if o.RC == 0 || o.Fail.Kind != FailTimeout || o.Fail.Verb != "a round's completions" {
				t.Errorf("stall after %d (mask %b): rc %d, fail %+v", after, mask, o.RC, o.Fail)
			}
			if o.Rounds != after {
				t.Errorf("stall after %d (mask %b): %d rounds counted", after, mask, o.Rounds)
			}
		}
	}
}

// TestBWLastCompletion: each QP's last completion lies in the window, and the latest
// of them is its end.
func TestBWLastCompletion(t *testing.T) {
	c := BWCase{Net: Net{PerPoll: 2, Random: true, Seed: 3}, QPs: 4, Depth: 16, PostList: 4, CQMod: 4, Iters: 300,
		Size: 8, Stride: 8, LSlots: 1, RSlots: 1, TimeoutNS: healthyTimeout}
	o := RunBW(c)
	if b := checkHealthy(c, o); len(b) > 0 {
		t.Fatal(b)
	}
	var latest int64
	for q, l := range o.LastNS {
		if l <= 0 || l > o.DurationNS {
			t.Errorf("QP %d: last completion %d ns, window %d ns", q, l, o.DurationNS)
		}
		latest = max(latest, l)
	}
	if latest != o.DurationNS {
		t.Errorf("latest completion %d ns, window %d ns", latest, o.DurationNS)
	}
}

// TestLoopsRotateFirstQP: neither multi-QP loop always posts to the same QP first. Round
// r starts at QP r mod n; the stream's turns take the QPs in rotating order, so with
// equal QPs each comes first after a poll about as often (where the provider works
// inside ibv_post_send, the QP posted first is served first).
func TestLoopsRotateFirstQP(t *testing.T) {
	for _, nqp := range []int{1, 2, 3, 8} {
		const rounds = 40
		o := RunRounds(RoundsCase{Net: Net{PerPoll: 1}, QPs: nqp, Rounds: rounds, Size: 8, LSlots: 1, RSlots: 1, TimeoutNS: healthyTimeout})
		if b := cleanRun(o.RC, o.Fail, o.Violations, o.FirstViolation); len(b) > 0 {
			t.Fatalf("rounds, %d QPs: %v", nqp, b)
		}
		for q := range nqp {
			if want := uint64((rounds - q + nqp - 1) / nqp); o.Leads[q] != want {
				t.Errorf("rounds, %d QPs: QP %d posted first in %d rounds, want %d (%v)", nqp, q, o.Leads[q], want, o.Leads)
			}
		}
	}
	for _, nqp := range []int{2, 3, 4, 8} {
		for _, sp := range speeds {
			for _, events := range []bool{false, true} {
				c := BWCase{Net: sp.net, QPs: nqp, Depth: 16, PostList: 1, CQMod: 1, Iters: 400, Events: events,
					Size: 8, Stride: 8, LSlots: 1, RSlots: 1, TimeoutNS: healthyTimeout}
				o := RunBW(c)
				if b := checkHealthy(c, o); len(b) > 0 {
					t.Fatalf("bw %s, %d QPs, events %v: %v", sp.name, nqp, events, b)
				}
				// With events a turn that wakes up posts nothing: the rotation must
				// count only the turns that post.
				lo, hi := slices.Min(o.Leads), slices.Max(o.Leads)
				if hi > 2*lo+2 {
					t.Errorf("bw %s, %d QPs, events %v: posts first after a poll per QP %v: some QPs keep coming first", sp.name, nqp, events, o.Leads)
				}
			}
		}
	}
}
