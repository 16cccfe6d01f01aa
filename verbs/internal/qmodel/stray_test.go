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
	refused := func(rc int, f Fail) []string {
		if rc != -1 || f.Verb != "unexpected completion" || f.WRID != StrayWRID {
			return []string{fmt.Sprintf("rc %d, fail %+v: want -1, \"unexpected completion\", wr_id %#x", rc, f, StrayWRID)}
		}
		return nil
	}
	stray := Net{PerPoll: 1, Fault: Fault{Kind: Stray, After: 3}}
	var runs []func() (string, []string)
	for _, s := range shapes() {
		for _, nqp := range []int{1, 3} {
			for _, after := range []uint64{0, 7} {
				for _, read := range []bool{false, true} {
					c := BWCase{Net: Net{PerPoll: 2, Fault: Fault{Kind: Stray, After: after}}, QPs: nqp, Depth: s.depth,
						PostList: s.pl, CQMod: s.mod, Iters: 200, Read: read, Stride: 8, LSlots: 2, RSlots: 2, TimeoutNS: healthyTimeout}
					runs = append(runs, func() (string, []string) { o := RunBW(c); return "rb_bw " + c.String(), refused(o.RC, o.Fail) })
				}
			}
		}
	}
	// A stray that names one of the loop's QPs and a sequence number it never posted
	// (what a completion left by an earlier loop on the same CQ looks like).
	ours := uint64(1)<<QShift | (uint64(1)<<QShift - 1)
	for _, s := range shapes() {
		c := BWCase{Net: Net{PerPoll: 2, Fault: Fault{Kind: Stray, After: 5, WRID: ours}}, QPs: 3, Depth: s.depth,
			PostList: s.pl, CQMod: s.mod, Iters: 200, Stride: 8, LSlots: 2, RSlots: 2, TimeoutNS: healthyTimeout}
		runs = append(runs, func() (string, []string) {
			o := RunBW(c)
			if o.RC != -1 || o.Fail.Verb != "unexpected completion" || o.Fail.WRID != ours {
				return "rb_bw, a stray on QP 1 " + c.String(), []string{fmt.Sprintf("rc %d, fail %+v: want -1, \"unexpected completion\", wr_id %#x", o.RC, o.Fail, ours)}
			}
			return "", nil
		})
	}
	for _, mode := range []MRMode{PerIO, MRCache} {
		c := MRCase{Net: stray, Mode: mode, CacheSize: 4, Depth: 4, CQMod: 1, Iters: 100, LSlots: 8, RSlots: 8, TimeoutNS: healthyTimeout}
		runs = append(runs, func() (string, []string) {
			o := RunBWMR(c)
			return fmt.Sprintf("rb_bw_mr %+v", c), refused(o.RC, o.Fail)
		})
	}
	for _, read := range []bool{false, true} {
		c := RoundsCase{Net: stray, QPs: 2, Rounds: 50, Read: read, TimeoutNS: healthyTimeout}
		runs = append(runs, func() (string, []string) {
			o := RunRounds(c)
			return fmt.Sprintf("rb_rounds %+v", c), refused(o.RC, o.Fail)
		})
	}
	for _, init := range []bool{true, false} {
		c := PPCase{Net: stray, Initiator: init, Size: 16, Iters: 50, SQDepth: 4, CQMod: 1, TimeoutNS: ppTimeout}
		runs = append(runs, func() (string, []string) {
			o := RunPingPong(c)
			return "rb_pingpong " + c.String(), refused(o.RC, o.Fail)
		})
	}
	runs = append(runs, func() (string, []string) {
		o := RunReadLat(RLCase{Net: stray, Iters: 50, TimeoutNS: healthyTimeout})
		return "rb_read_lat", refused(o.RC, o.Fail)
	})
	gridOf(t, "every loop, a stray completion", runs, func(run func() (string, []string)) (string, []string) { return run() })
}
