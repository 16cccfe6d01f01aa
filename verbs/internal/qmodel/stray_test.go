//go:build linux && cgo

package qmodel

import (
	"fmt"
	"testing"
)

// TestStrayCompletionRefused: a successful completion for a WR the loop never posted
// (a leftover on a shared CQ, a provider's bug) makes every loop stop with "unexpected
// completion", naming its wr_id, rather than count it as one of its own. (Issue 24's
// mutants: the READ-latency wr_id check removed; a stray completion accepted.)
func TestStrayCompletionRefused(t *testing.T) {
	want := func(what string, rc int, f Fail) []string {
		if rc != -1 || f.Verb != "unexpected completion" || f.WRID != StrayWRID {
			return []string{fmt.Sprintf("%s: rc %d, fail %+v: want -1, \"unexpected completion\", wr_id %#x", what, rc, f, StrayWRID)}
		}
		return nil
	}
	var bad []string
	n := 0
	for _, s := range shapes() {
		for _, nqp := range []int{1, 3} {
			for _, after := range []uint64{0, 7} {
				for _, read := range []bool{false, true} {
					c := BWCase{Net: Net{PerPoll: 2, Fault: Fault{Kind: Stray, After: after}}, QPs: nqp, Depth: s.depth,
						PostList: s.pl, CQMod: s.mod, Iters: 200, Read: read, Stride: 8, LSlots: 2, RSlots: 2, TimeoutNS: healthyTimeout}
					o := RunBW(c)
					bad = append(bad, want(fmt.Sprintf("rb_bw %+v", c), o.RC, o.Fail)...)
					n++
				}
			}
		}
	}
	for _, read := range []bool{false, true} {
		o := RunRounds(RoundsCase{Net: Net{PerPoll: 1, Fault: Fault{Kind: Stray, After: 3}}, QPs: 2, Rounds: 50, Read: read, TimeoutNS: healthyTimeout})
		bad = append(bad, want(fmt.Sprintf("rb_rounds read=%v", read), o.RC, o.Fail)...)
		n++
	}
	for _, init := range []bool{true, false} {
		o := RunPingPong(PPCase{Net: Net{PerPoll: 1, Fault: Fault{Kind: Stray, After: 3}}, Initiator: init, Size: 16, Iters: 50,
			SQDepth: 4, CQMod: 1, TimeoutNS: ppTimeout})
		bad = append(bad, want(fmt.Sprintf("rb_pingpong initiator=%v", init), o.RC, o.Fail)...)
		n++
	}
	o := RunReadLat(RLCase{Net: Net{PerPoll: 1, Fault: Fault{Kind: Stray, After: 3}}, Iters: 50, TimeoutNS: healthyTimeout})
	bad = append(bad, want("rb_read_lat", o.RC, o.Fail)...)
	n++
	report(t, bad, "%d loops with a stray completion, %d did not refuse it", n)
}
