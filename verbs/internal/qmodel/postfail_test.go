//go:build linux && cgo

package qmodel

import (
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
)

// A post that fails (Net.PostFailAt: the k-th post call returns an errno, as a
// provider's ibv_post_send or ibv_wr_complete does when its queue or a resource is
// exhausted) must end the loop at once: it returns the failure, RB_FAIL_VERB naming the
// verb that failed and its errno, makes no further post, and its done[] counts only
// what the loop saw complete (the WRs posted but never polled for, those the failed
// call posted before its bad WR among them, are not done).

// postFailKs are the post calls that fail, each with its own errno.
var postFailKs = []struct {
	k   uint64
	err syscall.Errno
}{{1, syscall.ENOMEM}, {2, syscall.EINVAL}, {5, syscall.EAGAIN}, {17, syscall.EIO}}

// onWRAPI says whether a run with n posts through the extended QP API.
func onWRAPI(n Net) bool { return n.WRAPI || os.Getenv(wrAPIEnv) == "1" }

// postVerb is the verb a failed post of a run with n must be reported as.
func postVerb(n Net) string {
	if onWRAPI(n) {
		return "ibv_wr_complete"
	}
	return "ibv_post_send"
}

// checkPostFail returns what is wrong with a run whose post call n.PostFailAt failed,
// as far as every loop goes: the failure it returned and the posts it made.
func checkPostFail(n Net, rc int, fail Fail, r Record) []string {
	var bad []string
	f := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }
	if rc != -1 || fail.Kind != FailVerb || fail.Verb != postVerb(n) || fail.Err != int(n.PostFailErr) {
		f("rc %d, fail %+v: want RB_FAIL_VERB, %s, errno %d (%v)", rc, fail, postVerb(n), int(n.PostFailErr), n.PostFailErr)
	}
	if !r.PostFailed || r.PostCalls != n.PostFailAt {
		f("%d post calls (the injected failure happened: %v), want the loop to stop at the failed one, %d",
			r.PostCalls, r.PostFailed, n.PostFailAt)
	}
	// What the failed call posted: ibv_post_send the WRs before the bad one, ibv_wr_complete nothing.
	want := min(n.PostFailWR, max(r.PostFailLen, 1)-1)
	if onWRAPI(n) {
		want = 0
	}
	if r.PostFailed && r.PostFailPosted != want {
		f("the failed call posted %d of its %d WRs, want %d", r.PostFailPosted, r.PostFailLen, want)
	}
	if len(r.Violations) > 0 {
		f("violations %v: %v", r.Violations, r.FirstViolation)
	}
	return bad
}

// checkDone returns what is wrong with done[] after a failed run: QP q's count must be
// exactly the WRs the loop polled a completion for (the model's Freed), no more.
func checkDone(done []uint64, r Record) []string {
	var bad []string
	for q, d := range done {
		if d != r.Freed[q] || d > r.Executed[q] {
			bad = append(bad, fmt.Sprintf("QP %d: done %d, the loop polled completions for %d WRs (posted %d, executed %d)",
				q, d, r.Freed[q], r.Posted[q], r.Executed[q]))
		}
	}
	return bad
}

// postFailNets: networks that complete WRs before the failure (at every poll, late,
// or inside the post itself: then WRs are executed that the loop never polls for).
var postFailNets = []Net{{PerPoll: 1}, {PerPoll: 3, AckDelay: 4}, {PerPoll: 4, Random: true, Seed: 11}, {OnPost: 1 << 20}}

// postFailWRs: for each API, the WR of a failed chain ibv_post_send fails at (the
// first: nothing posted; the last: the WRs before it posted); the extended API posts
// none of a failed batch whatever it is.
func postFailWRs(pl int, wrAPI bool) []uint32 {
	if wrAPI || pl == 1 {
		return []uint32{0}
	}
	return []uint32{0, uint32(pl - 1)}
}

// eachPostFail calls f with every network of postFailNets on both post APIs, failing at
// every post call of postFailKs (k).
func eachPostFail(f func(net Net, k uint64)) {
	for _, wrAPI := range []bool{false, true} {
		for _, kf := range postFailKs {
			for _, net := range postFailNets {
				net.WRAPI = wrAPI
				net.PostFailAt, net.PostFailErr = kf.k, kf.err
				f(net, kf.k)
			}
		}
	}
}

func TestBWPostFails(t *testing.T) {
	var cases []BWCase
	for _, wrAPI := range []bool{false, true} {
		for _, pl := range []int{1, 3} {
			for _, kf := range postFailKs {
				for _, failWR := range postFailWRs(pl, wrAPI) {
					for i, net := range postFailNets {
						for _, nqp := range []int{1, 3} {
							for _, events := range []bool{false, true} {
								net.WRAPI = wrAPI
								net.PostFailAt, net.PostFailErr, net.PostFailWR = kf.k, kf.err, failWR
								cases = append(cases, BWCase{Net: net, QPs: nqp, Depth: 4, PostList: pl, CQMod: 2, Iters: 100,
									Read: i%2 == 1, Events: events, LSlots: 2, RSlots: 3, TimeoutNS: healthyTimeout})
							}
						}
					}
				}
			}
		}
	}
	var unpolled, partial atomic.Int64 // runs with WRs executed but not polled for; with a failed chain half posted
	grid(t, "rb_bw, failed post", cases, func(c BWCase, o BWOutcome) []string {
		bad := checkPostFail(c.Net, o.RC, o.Fail, o.Record)
		for q := range c.QPs {
			if o.Executed[q] > o.Freed[q] {
				unpolled.Add(1)
				break
			}
		}
		if o.PostFailPosted > 0 {
			partial.Add(1)
		}
		f := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }
		bad = append(bad, checkDone(o.Done, o.Record)...)
		var sum uint64
		for _, d := range o.Done {
			sum += d
		}
		if o.Completed != sum {
			f("completed %d, the QPs' done add up to %d", o.Completed, sum)
		}
		if o.PostFailLen < 1 || o.PostFailLen > uint32(c.PostList) {
			f("the failed call had %d WRs, post list %d", o.PostFailLen, c.PostList)
		}
		// Each completion polled is sampled once; the WRs never polled for are not.
		if o.Hist.N != o.SignalledPolled {
			f("%d samples, %d signalled completions polled", o.Hist.N, o.SignalledPolled)
		}
		return bad
	})
	// The cases the checks of done[] and of a half-posted chain are for do occur.
	if unpolled.Load() == 0 || (!onWRAPI(Net{}) && partial.Load() == 0) {
		t.Errorf("%d runs had WRs executed that the loop never polled for, %d a half-posted chain", unpolled.Load(), partial.Load())
	}
}

func TestBWMRPostFails(t *testing.T) {
	for _, mode := range []MRMode{PerIO, MRCache} {
		eachPostFail(func(net Net, k uint64) {
			c := MRCase{Net: net, Mode: mode, CacheSize: 4, Depth: 4, CQMod: 2, Iters: 100, LSlots: 3, RSlots: 2,
				TimeoutNS: healthyTimeout}
			o := RunBWMR(c)
			bad := checkPostFail(c.Net, o.RC, o.Fail, o.Record)
			bad = append(bad, checkDone([]uint64{o.Done}, o.Record)...)
			if o.Completed != o.Done || o.Live != 0 {
				bad = append(bad, fmt.Sprintf("completed %d, done %d; %d MRs left registered", o.Completed, o.Done, o.Live))
			}
			if len(bad) > 0 {
				t.Errorf("%s k %d: %v", c.Normal(), k, bad)
			}
		})
	}
}

func TestRoundsPostFails(t *testing.T) {
	for _, nqp := range []int{1, 3} {
		eachPostFail(func(net Net, k uint64) {
			c := RoundsCase{Net: net, QPs: nqp, Rounds: 100, LSlots: 2, RSlots: 2, TimeoutNS: healthyTimeout}
			o := RunRounds(c)
			bad := checkPostFail(c.Net, o.RC, o.Fail, o.Record)
			bad = append(bad, checkDone(o.Done, o.Record)...)
			// Round r makes post calls r*nqp+1 .. (r+1)*nqp: the failed one's round
			// is not done on any QP.
			rounds := (k - 1) / uint64(nqp)
			if o.Rounds != rounds || o.Hist.N != rounds {
				bad = append(bad, fmt.Sprintf("rounds %d, samples %d, want %d", o.Rounds, o.Hist.N, rounds))
			}
			for q, d := range o.Done {
				if d != rounds {
					bad = append(bad, fmt.Sprintf("QP %d: done %d, want %d", q, d, rounds))
				}
			}
			if len(bad) > 0 {
				t.Errorf("qps %d net %+v k %d: %v", nqp, net, k, bad)
			}
		})
	}
}

func TestReadLatPostFails(t *testing.T) {
	eachPostFail(func(net Net, k uint64) {
		o := RunReadLat(RLCase{Net: net, Iters: 100, TimeoutNS: healthyTimeout})
		bad := checkPostFail(net, o.RC, o.Fail, o.Record)
		bad = append(bad, checkDone([]uint64{o.Done}, o.Record)...)
		if o.Done != k-1 || o.Hist.N != k-1 {
			bad = append(bad, fmt.Sprintf("done %d, samples %d, want %d", o.Done, o.Hist.N, k-1))
		}
		if len(bad) > 0 {
			t.Errorf("net %+v k %d: %v", net, k, bad)
		}
	})
}

func TestPingPongPostFails(t *testing.T) {
	for _, initiator := range []bool{true, false} {
		eachPostFail(func(net Net, k uint64) {
			c := PPCase{Net: net, Initiator: initiator, Iters: 100, SQDepth: 4, CQMod: 2, TimeoutNS: healthyTimeout}
			o := RunPingPong(c)
			bad := checkPostFail(net, o.RC, o.Fail, o.Record)
			// Round i is post call i+1: the rounds before the failed one are done.
			if o.Done != k-1 {
				bad = append(bad, fmt.Sprintf("done %d rounds, want %d", o.Done, k-1))
			}
			if initiator && o.Hist.N != k-1 {
				bad = append(bad, fmt.Sprintf("%d samples, want %d", o.Hist.N, k-1))
			}
			if len(bad) > 0 {
				t.Errorf("%s k %d: %v", c, k, bad)
			}
		})
	}
}
