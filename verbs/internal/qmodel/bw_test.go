//go:build linux && cgo

package qmodel

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

const seqMask = 1<<QShift - 1

// speeds are the networks the grid runs on.
var speeds = []struct {
	name string
	net  Net
}{
	{"1/poll", Net{PerPoll: 1}},
	{"64/poll", Net{PerPoll: 64}},
	{"random0-4", Net{PerPoll: 4, Random: true}},
	{"on-post", Net{OnPost: 1 << 20}},
	{"ack-delay", Net{PerPoll: 3, AckDelay: 7}},
}

func (c BWCase) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "qps %d depth %d post_list %d cq_mod %d", c.QPs, c.Depth, c.PostList, c.CQMod)
	if c.DeadlineNS > 0 {
		fmt.Fprintf(&b, " duration %dns", c.DeadlineNS)
	}
	if c.Iters != math.MaxUint64 {
		fmt.Fprintf(&b, " iters %d", c.Iters)
	}
	if c.Read {
		b.WriteString(" READ")
	} else {
		b.WriteString(" WRITE")
	}
	if c.Events {
		b.WriteString(" events")
	}
	fmt.Fprintf(&b, " slots %d/%d", c.LSlots, c.RSlots)
	n := c.Net
	fmt.Fprintf(&b, " net{per_poll %d random %v seed %d on_post %d ack_delay %d fault %+v stop_after %d}",
		n.PerPoll, n.Random, n.Seed, n.OnPost, n.AckDelay, n.Fault, n.StopAfterPolls)
	return b.String()
}

// cleanRun returns what is wrong with a run that should have ended well: a failure or a
// violation of the queue model.
func cleanRun(rc int, fail Fail, violations map[string]uint64, first map[string]string) []string {
	var bad []string
	if rc != 0 || fail.Kind != FailNone {
		bad = append(bad, fmt.Sprintf("rc %d, fail %+v", rc, fail))
	}
	if len(violations) > 0 {
		bad = append(bad, fmt.Sprintf("violations %v: %v", violations, first))
	}
	return bad
}

// checkHealthy returns what is wrong with the outcome of a run against a healthy peer.
func checkHealthy(c BWCase, o BWOutcome) []string {
	bad := cleanRun(o.RC, o.Fail, o.Violations, o.FirstViolation)
	f := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }
	stopped := c.DeadlineNS > 0 || c.StopAfterPolls > 0
	var sum uint64
	for q := range c.QPs {
		sum += o.Done[q]
		if o.Executed[q] != o.Posted[q] || o.Done[q] != o.Posted[q] {
			f("QP %d: posted %d, executed %d, done %d", q, o.Posted[q], o.Executed[q], o.Done[q])
		}
		if !stopped && o.Done[q] != c.Iters {
			f("QP %d: done %d, want %d", q, o.Done[q], c.Iters)
		}
		if c.DeadlineNS > 0 && o.Done[q] == 0 {
			f("QP %d: nothing done before the deadline", q)
		}
		// The loop keeps the send queue full: its first spin posts tx_depth WRs.
		if want := min(uint64(c.Depth), o.Posted[q]); uint64(o.MaxSQ[q]) < want {
			f("QP %d: the send queue held at most %d WRs, want %d", q, o.MaxSQ[q], want)
		}
		l, r := uint64(q)*o.LStride, uint64(q)*o.RStride
		if uint64(len(o.Addrs[q])) != o.Executed[q] {
			f("QP %d: %d addresses for %d WRs", q, len(o.Addrs[q]), o.Executed[q])
		}
		for i, a := range o.Addrs[q] {
			want := Addr{l + uint64(i%int(c.LSlots))*uint64(c.Stride), r + uint64(i%int(c.RSlots))*uint64(c.Stride)}
			if a != want {
				f("QP %d WR %d: addresses %+v, want %+v", q, i, a, want)
				break
			}
		}
		if bad := rkeysOf(q, o.Executed[q], o.RKeys[q], RKey(q)); bad != "" {
			f("%s", bad)
		}
	}
	if o.Completed != sum {
		f("completed %d, the QPs' done add up to %d", o.Completed, sum)
	}
	if !stopped && o.Completed != uint64(c.QPs)*c.Iters {
		f("completed %d, want %d", o.Completed, uint64(c.QPs)*c.Iters)
	}
	if o.Hist.N != o.SignalledExecuted || o.SignalledPolled != o.SignalledExecuted || o.Hist.Backwards != 0 {
		f("histogram n %d backwards %d; signalled WRs executed %d, polled %d", o.Hist.N, o.Hist.Backwards,
			o.SignalledExecuted, o.SignalledPolled)
	}
	if o.Completed > 0 {
		// t_start is read at most one rb_now() before the first post, t_end one after
		// the last poll that returned completions.
		span := o.LastCQENS - o.FirstPostNS
		if d := o.DurationNS - span; d <= 0 || d > 2*defaultNowNS {
			f("duration %d ns, the model saw %d ns from the first post to the last completion", o.DurationNS, span)
		}
	}
	if c.Events && (o.Events != o.EventsGot || o.EventsAcked != o.EventsGot) {
		f("events %d, model: got %d, acked %d", o.Events, o.EventsGot, o.EventsAcked)
	}
	if !c.Events && (o.Waits != 0 || o.Arms != 0) {
		f("no channel, yet %d sleeps and %d arms", o.Waits, o.Arms)
	}
	if c.DeadlineNS > 0 {
		// The deadline is looked at every 64 spins, or after each sleep, which ends
		// at most a millisecond after it; past it each QP posts at most one more WR,
		// which may have to wait for room: for up to cq_mod WRs to execute and their
		// completion to come back. A spin costs a tick and a few rb_now() calls.
		tick := c.TickNS
		if tick == 0 {
			tick = 200
		}
		late := o.LastPostNS - o.DeadlineNS
		spins := int64(65 + 3*(c.CQMod+c.AckDelay+2))
		limit := spins * (tick + int64(c.QPs+3)*defaultNowNS + int64(c.QPs*c.Depth)*c.PostNS)
		if c.Events {
			limit += 1_000_000
		}
		if late > limit {
			f("last post %d ns after the deadline", late)
		}
		if drain := o.EndNS - max(o.LastPostNS, o.DeadlineNS); drain > 2_000_000 {
			f("returned %d ns after the last post", drain)
		}
	}
	return bad
}

// rkeysOf returns what is wrong with the rkeys QP q's executed WRs carried (every one
// must be want: QP q's own, RKey(q), where each QP has its region), or "".
func rkeysOf(q int, executed uint64, keys []uint32, want uint32) string {
	if uint64(len(keys)) != executed {
		return fmt.Sprintf("QP %d: %d rkeys for %d WRs", q, len(keys), executed)
	}
	for i, k := range keys {
		if k != want {
			return fmt.Sprintf("QP %d WR %d: rkey %#x, want %#x", q, i, k, want)
		}
	}
	return ""
}

const defaultNowNS = 50

// healthyTimeout is the loops' watchdog where the peer is healthy: a healthy run is
// never idle for more than microseconds of model time, and a deadlock then ends in
// RB_FAIL_TIMEOUT after a few thousand polls rather than hanging the test (or taking
// seconds per case, as 1 s of model time would).
const healthyTimeout = 50e6

// grid runs every case on all CPUs and reports the failures (the first few in full).
func grid(t *testing.T, name string, cases []BWCase, check func(BWCase, BWOutcome) []string) {
	t.Helper()
	gridOf(t, name, cases, func(c BWCase) (string, []string) { return c.String(), check(c, RunBW(c)) })
}

// gridOf runs every case on all CPUs (run returns a case's description and what is
// wrong with its outcome) and reports the failures, the first few in full.
func gridOf[C any](t *testing.T, name string, cases []C, run func(C) (string, []string)) {
	t.Helper()
	start := time.Now()
	var mu sync.Mutex
	var failed []string
	next := make(chan C)
	var wg sync.WaitGroup
	for range runtime.NumCPU() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range next {
				if desc, bad := run(c); len(bad) > 0 {
					mu.Lock()
					failed = append(failed, fmt.Sprintf("%s:\n\t%s", desc, strings.Join(bad, "\n\t")))
					mu.Unlock()
				}
			}
		}()
	}
	for _, c := range cases {
		next <- c
	}
	close(next)
	wg.Wait()
	for i, s := range failed {
		if i == 20 {
			t.Errorf("... and %d more", len(failed)-i)
			break
		}
		t.Error(s)
	}
	t.Logf("%s: %d combinations, %d failed, %v", name, len(cases), len(failed), time.Since(start).Round(time.Millisecond))
}

var (
	gridDepths   = []int{1, 2, 3, 7, 8, 16, 100, 128}
	gridPostList = []int{1, 2, 3, 8, 16, 32, 64, 100, 128}
	gridCQMod    = []int{1, 2, 3, 10, 50, 100, 128}
	gridQPs      = []int{1, 2, 4, 8}
)

type shape struct{ depth, pl, mod int }

// shapes: every depth / post_list / cq_mod of the grid, and the ones that used to deadlock.
func shapes() []shape {
	var out []shape
	for _, d := range gridDepths {
		for _, pl := range gridPostList {
			for _, mod := range gridCQMod {
				if pl <= d && mod <= d {
					out = append(out, shape{d, pl, mod})
				}
			}
		}
	}
	return append(out, shape{128, 64, 100}, shape{100, 8, 100}, shape{64, 32, 50}, shape{16, 16, 10})
}

func TestBWGrid(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var cases []BWCase
	cover := map[string]int{}
	for _, s := range shapes() {
		for _, nqp := range gridQPs {
			for _, iters := range []uint64{1, 7, 100, 1000, math.MaxUint64} {
				for _, events := range []bool{false, true} {
					sp := speeds[rng.IntN(len(speeds))]
					c := BWCase{
						Net: sp.net, QPs: nqp, Depth: s.depth, PostList: s.pl, CQMod: s.mod, Iters: iters,
						Read: rng.IntN(2) == 1, Events: events, Size: 8, Stride: 16, LSlots: 3, RSlots: 2,
						TimeoutNS: healthyTimeout,
					}
					c.Seed = rng.Uint64()
					if rng.IntN(4) == 0 {
						c.LSlots, c.RSlots = 1, 1
					}
					switch {
					case iters == math.MaxUint64:
						// A few model milliseconds; slower ticks and a cost per WR posted
						// bound the WRs a run takes.
						c.DeadlineNS = 3e6
						c.TickNS = 1000
						c.PostNS = 100
					case iters == 1000 && rng.IntN(4) == 0:
						// A deadline that may come before the iterations are done.
						c.DeadlineNS = int64(rng.IntN(300_000) + 1)
					}
					cases = append(cases, c)
					cover[fmt.Sprintf("%s events %v read %v", sp.name, c.Events, c.Read)]++
				}
			}
		}
	}
	// Every network, with and without events, WRITE and READ, gets its share.
	if len(cover) != 2*2*len(speeds) {
		t.Errorf("the grid covers only %d of the %d network/events/opcode combinations: %v", len(cover), 4*len(speeds), cover)
	}
	for k, n := range cover {
		if n < len(cases)/(8*len(speeds)) {
			t.Errorf("the grid has only %d runs of %s", n, k)
		}
	}
	grid(t, "rb_bw grid", cases, checkHealthy)
}

func TestBWNothingToDo(t *testing.T) {
	for _, events := range []bool{false, true} {
		c := BWCase{Net: Net{PerPoll: 1}, QPs: 3, Depth: 4, PostList: 2, CQMod: 2, Iters: 0, Events: events,
			TimeoutNS: healthyTimeout, LSlots: 1, RSlots: 1}
		o := RunBW(c)
		if bad := checkHealthy(c, o); len(bad) > 0 || o.Posts != 0 || o.Completed != 0 || o.DurationNS != 0 {
			t.Errorf("%v: %v; %d posts, completed %d, duration %d", c, bad, o.Posts, o.Completed, o.DurationNS)
		}
	}
}
