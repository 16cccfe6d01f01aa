//go:build linux && cgo

package qmodel

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// Tests of rb_bw_mr (--mr per-io | cache): the bandwidth loop that registers in the
// loop, against the model, whose ibv_reg_mr and ibv_dereg_mr keep a record of every
// registration and check every WR's lkey.

func (c MRCase) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v", c.Mode)
	if c.Mode == MRCache {
		fmt.Fprintf(&b, " cache %d", c.CacheSize)
	}
	fmt.Fprintf(&b, " depth %d cq_mod %d size %d stride %d slots %d/%d", c.Depth, c.CQMod, c.Size, c.Stride, c.LSlots, c.RSlots)
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
	if c.RegFailAt > 0 || c.DeregFailAt > 0 {
		fmt.Fprintf(&b, " reg_fail_at %d dereg_fail_at %d", c.RegFailAt, c.DeregFailAt)
	}
	n := c.Net
	fmt.Fprintf(&b, " net{per_poll %d random %v seed %d on_post %d ack_delay %d fault %+v stop_after %d reg_ns %d dereg_ns %d}",
		n.PerPoll, n.Random, n.Seed, n.OnPost, n.AckDelay, n.Fault, n.StopAfterPolls, c.RegNS, c.DeregNS)
	return b.String()
}

// mrGrid runs every case on all CPUs and reports the failures (the first few in full).
func mrGrid(t *testing.T, name string, cases []MRCase, check func(MRCase, MROutcome) []string) {
	t.Helper()
	gridOf(t, name, cases, func(c MRCase) (string, []string) { c = c.Normal(); return c.String(), check(c, RunBWMR(c)) })
}

// lru is what an LRU of n registrations keyed by address makes of the first `posted`
// WRs (WR i from local slot i % lslots): its hits, misses and the addresses it
// registers, in order. The loop evicts the least recently used entry that no
// outstanding WR uses; with n >= tx_depth that is always the least recently used one
// (were it in use, every entry would be, as all were used since: n WRs outstanding),
// so the outcome does not depend on timing.
func lru(n int, lslots, stride uint32, posted uint64) (hits, misses uint64, regs []uint64) {
	var order []uint64 // least recently used first
	for i := range posted {
		a := (i % uint64(lslots)) * uint64(stride)
		if k := slices.Index(order, a); k >= 0 {
			hits++
			order = append(slices.Delete(order, k, k+1), a)
			continue
		}
		misses++
		regs = append(regs, a)
		if len(order) == n {
			order = order[1:]
		}
		order = append(order, a)
	}
	return hits, misses, regs
}

// checkMRBooks returns what is wrong with the registrations of any run, however it
// ended: every WR posted had its own registration (per-io) or a hit or a miss (cache),
// and nothing is left registered (unless a deregistration failed: leakOK).
func checkMRBooks(c MRCase, o MROutcome, leakOK bool) []string {
	var bad []string
	f := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }
	posted := o.Posted[0]
	if !leakOK && (o.Live != 0 || o.Regs != o.Deregs) {
		f("%d MRs left registered; regs %d, deregs %d", o.Live, o.Regs, o.Deregs)
	}
	if o.Regs != o.ModelRegs || o.Deregs != o.ModelDeregs || o.ModelRegs-o.ModelDeregs != o.Live {
		f("the loop counts %d regs and %d deregs, the model %d and %d (%d live)", o.Regs, o.Deregs, o.ModelRegs, o.ModelDeregs, o.Live)
	}
	if o.DeregsAfter > o.Deregs {
		f("deregs %d, of which after the window %d", o.Deregs, o.DeregsAfter)
	}
	for i, a := range o.RegAccess {
		if a != c.Normal().Access {
			f("registration %d with access %#x, the loop was given %#x", i, a, c.Normal().Access)
			break
		}
	}
	switch c.Mode {
	case PerIO:
		if o.Regs != posted {
			f("per-io: %d registrations for %d WRs posted", o.Regs, posted)
		}
		if o.Hits != 0 || o.Misses != 0 {
			f("per-io: hits %d misses %d", o.Hits, o.Misses)
		}
		if o.MaxMR > uint64(c.Depth) {
			f("per-io: %d MRs at once, tx_depth %d", o.MaxMR, c.Depth)
		}
		for i, a := range o.RegAddrs {
			if want := (uint64(i) % uint64(c.LSlots)) * uint64(c.Stride); a != want {
				f("per-io: registration %d at offset %d, want %d", i, a, want)
				break
			}
		}
	case MRCache:
		if o.Hits+o.Misses != posted {
			f("cache: hits %d + misses %d, %d WRs posted", o.Hits, o.Misses, posted)
		}
		if o.Misses != o.Regs {
			f("cache: %d misses, %d registrations", o.Misses, o.Regs)
		}
		if o.MaxMR > uint64(c.CacheSize) {
			f("cache: %d MRs at once, cache size %d", o.MaxMR, c.CacheSize)
		}
		hits, misses, regs := lru(c.CacheSize, c.LSlots, c.Stride, posted)
		if o.Hits != hits || o.Misses != misses {
			f("cache: hits %d misses %d, an LRU of %d has %d and %d", o.Hits, o.Misses, c.CacheSize, hits, misses)
		}
		if !slices.Equal(o.RegAddrs, regs) && o.Fail.Verb != "ibv_reg_mr" {
			f("cache: registered %v, an LRU registers %v", o.RegAddrs, regs)
		}
	}
	return bad
}

// checkMRHealthy returns what is wrong with a run against a healthy peer.
func checkMRHealthy(c MRCase, o MROutcome) []string {
	bad := cleanRun(o.RC, o.Fail, o.Violations, o.FirstViolation)
	bad = append(bad, checkMRBooks(c, o, false)...)
	f := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }
	stopped := c.DeadlineNS > 0 || c.StopAfterPolls > 0
	posted := o.Posted[0]
	if o.Executed[0] != posted || o.Done != posted || o.Completed != posted {
		f("posted %d, executed %d, done %d, completed %d", posted, o.Executed[0], o.Done, o.Completed)
	}
	if !stopped && o.Done != c.Iters {
		f("done %d, want %d", o.Done, c.Iters)
	}
	if c.DeadlineNS > 0 && o.Done == 0 {
		f("nothing done before the deadline")
	}
	if want := min(uint64(c.Depth), posted); uint64(o.MaxSQ[0]) < want {
		f("the send queue held at most %d WRs, want %d", o.MaxSQ[0], want)
	}
	for i, a := range o.Addrs[0] {
		want := Addr{uint64(i%int(c.LSlots)) * uint64(c.Stride), uint64(i%int(c.RSlots)) * uint64(c.Stride)}
		if a != want {
			f("WR %d: addresses %+v, want %+v", i, a, want)
			break
		}
	}
	if bad := rkeysOf(0, o.Executed[0], o.RKeys[0], XferRKey); bad != "" {
		f("%s", bad)
	}
	if o.Hist.N != o.SignalledExecuted || o.SignalledPolled != o.SignalledExecuted || o.Hist.Backwards != 0 {
		f("histogram n %d backwards %d; signalled WRs executed %d, polled %d", o.Hist.N, o.Hist.Backwards,
			o.SignalledExecuted, o.SignalledPolled)
	}
	// Every WR completed in the window: per-io gave every MR back in it; the cache
	// keeps its entries until after it.
	inWindow := o.Deregs - o.DeregsAfter
	switch c.Mode {
	case PerIO:
		if o.DeregsAfter != 0 {
			f("per-io: %d deregistrations after the window of a run that completed every WR", o.DeregsAfter)
		}
	case MRCache:
		if want := min(uint64(c.CacheSize), o.Misses); o.DeregsAfter != want {
			f("cache: %d deregistrations after the window, the cache held %d", o.DeregsAfter, want)
		}
	}
	// Time: each registration costs RegNS of model time and two rb_now() calls
	// around it, each deregistration in the window DeregNS and two.
	now := c.NowNS
	if now == 0 {
		now = defaultNowNS
	}
	if want := int64(o.Regs) * (c.RegNS + now); o.RegNS != want {
		f("reg_ns %d, want %d for %d registrations", o.RegNS, want, o.Regs)
	}
	if want := int64(inWindow) * (c.DeregNS + now); o.DeregNS != want {
		f("dereg_ns %d, want %d for %d deregistrations in the window", o.DeregNS, want, inWindow)
	}
	if o.Completed > 0 {
		// The window: from before the first registration to after the last
		// completion's deregistration; the registrations are inside it.
		if span := o.LastCQENS - o.FirstPostNS; o.DurationNS < span || o.DurationNS > o.EndNS-o.StartNS {
			f("window %d ns: the model saw %d ns from the first post to the last completion, %d in all", o.DurationNS, span, o.EndNS-o.StartNS)
		}
		if o.RegNS+o.DeregNS > o.DurationNS {
			f("reg_ns %d + dereg_ns %d exceed the window, %d ns", o.RegNS, o.DeregNS, o.DurationNS)
		}
		if o.LastNS != o.DurationNS {
			f("qlast_ns %d, window %d", o.LastNS, o.DurationNS)
		}
	} else if o.DurationNS != 0 || o.LastNS != 0 {
		f("nothing completed, window %d ns, qlast %d", o.DurationNS, o.LastNS)
	}
	if c.DeadlineNS > 0 {
		// As for rb_bw: the deadline is looked at every 64 units of work; a turn can
		// post a queue of WRs, each with its registration; past it at most one more WR.
		tick := c.TickNS
		if tick == 0 {
			tick = 200
		}
		spins := int64(65 + 3*(c.CQMod+c.AckDelay+2))
		limit := spins * (tick + 3*now + int64(c.Depth)*(c.PostNS+c.RegNS+c.DeregNS+5*now))
		if late := o.LastPostNS - o.DeadlineNS; late > limit {
			f("last post %d ns after the deadline (limit %d)", late, limit)
		}
		if drain := o.EndNS - max(o.LastPostNS, o.DeadlineNS); drain > 2_000_000+int64(c.CacheSize)*(c.DeregNS+now) {
			f("returned %d ns after the last post", drain)
		}
	}
	return bad
}

// mrShapes are the depths, cq_mods and cache sizes of the grids: cq_mod 1 is what
// bench asks for per-io; the loop takes any.
func mrShapes(lslots uint32) []MRCase {
	var out []MRCase
	for _, d := range []int{1, 2, 3, 7, 16, 64} {
		for _, mod := range []int{1, 3, d} {
			if mod > d {
				continue
			}
			out = append(out, MRCase{Mode: PerIO, Depth: d, CQMod: mod})
			sizes := map[int]bool{d: true, d + 1: true, 2 * d: true, max(d, 16): true, max(d, int(lslots)): true, max(d, int(lslots)+3): true}
			for _, n := range slices.Sorted(maps.Keys(sizes)) {
				out = append(out, MRCase{Mode: MRCache, CacheSize: n, Depth: d, CQMod: mod})
			}
		}
	}
	return out
}

func TestBWMRGrid(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	var cases []MRCase
	cover := map[string]int{}
	for _, lslots := range []uint32{1, 3, 17, 64} {
		for _, s := range mrShapes(lslots) {
			for _, iters := range []uint64{1, 7, 100, 1000, math.MaxUint64} {
				sp := speeds[rng.IntN(len(speeds))]
				c := s
				c.Net, c.Iters, c.Read, c.LSlots = sp.net, iters, rng.IntN(2) == 1, lslots
				c.Seed = rng.Uint64()
				c.RSlots = []uint32{1, 2, 5}[rng.IntN(3)]
				c.Size = []uint32{1, 8, 64, 100, 4096}[rng.IntN(5)]
				c.Stride = c.Size
				if rng.IntN(2) == 0 {
					c.Stride = (c.Size + 63) / 64 * 64 // as bench lays slots out
				}
				if rng.IntN(3) == 0 {
					c.RegNS, c.DeregNS = int64(rng.IntN(3000)), int64(rng.IntN(1000))
				}
				if rng.IntN(2) == 0 { // as a test with relaxed ordering registers (verbs.Spec.LoopAccess)
					c.Access = 1 | 1<<20 // IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_RELAXED_ORDERING
				}
				c.TimeoutNS = healthyTimeout
				switch {
				case iters == math.MaxUint64:
					c.DeadlineNS, c.TickNS, c.PostNS = 3e6, 1000, 100
				case iters == 1000 && rng.IntN(4) == 0:
					c.DeadlineNS = int64(rng.IntN(300_000) + 1) // may come before the iterations are done
				}
				cases = append(cases, c)
				cover[fmt.Sprintf("%v %s read %v", c.Mode, sp.name, c.Read)]++
			}
		}
	}
	if len(cover) != 2*2*len(speeds) {
		t.Errorf("the grid covers only %d of the %d mode/network/opcode combinations: %v", len(cover), 4*len(speeds), cover)
	}
	mrGrid(t, "rb_bw_mr grid", cases, checkMRHealthy)
}

// A peer that fails after E WRs: the loop reports the failed WR's RETRY_EXC_ERR and
// deregisters, after the window, what the WRs it had outstanding held.
func TestBWMRPeerFails(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	var cases []MRCase
	for _, s := range mrShapes(5) {
		for _, e := range []uint64{0, 1, 5, 37, 250} {
			sp := speeds[rng.IntN(len(speeds))]
			c := s
			c.Net, c.Iters, c.Read, c.LSlots, c.RSlots, c.TimeoutNS = sp.net, 500, rng.IntN(2) == 1, 5, 3, healthyTimeout
			c.Seed = rng.Uint64()
			c.Fault = Fault{Kind: PeerFails, After: e}
			if e <= 5 && rng.IntN(2) == 0 {
				c.Iters, c.DeadlineNS, c.TickNS, c.PostNS = math.MaxUint64, 2e6, 1000, 100
			}
			cases = append(cases, c)
		}
	}
	mrGrid(t, "rb_bw_mr, failing peer", cases, func(c MRCase, o MROutcome) []string {
		var bad []string
		f := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }
		if o.RC != -1 || o.Fail.Kind != FailWC || o.Fail.Status != WCRetryExcErr || o.Fail.WRID != c.Fault.After {
			f("rc %d, fail %+v: want RB_FAIL_WC with IBV_WC_RETRY_EXC_ERR on WR %d", o.RC, o.Fail, c.Fault.After)
		}
		if len(o.Violations) > 0 {
			f("violations %v: %v", o.Violations, o.FirstViolation)
		}
		if o.Done > o.Executed[0] || o.Done > c.Fault.After {
			f("done %d, executed %d, the peer failed WR %d", o.Done, o.Executed[0], c.Fault.After)
		}
		if c.Mode == PerIO && o.DeregsAfter != o.Posted[0]-o.Done {
			f("per-io: %d deregistrations after the window, %d WRs were not known complete", o.DeregsAfter, o.Posted[0]-o.Done)
		}
		return append(bad, checkMRBooks(c, o, false)...)
	})
}

// A peer that vanishes after S WRs: the watchdog ends the loop, which deregisters what
// its outstanding WRs held.
func TestBWMRPeerStalls(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	var cases []MRCase
	for _, s := range mrShapes(4) {
		sp := speeds[rng.IntN(len(speeds))]
		c := s
		c.Net, c.Iters, c.Read, c.LSlots, c.RSlots, c.TimeoutNS = sp.net, 300, rng.IntN(2) == 1, 4, 2, 2e6
		c.Seed = rng.Uint64()
		c.Fault = Fault{Kind: PeerStalls, After: []uint64{0, 1, 10, 99}[rng.IntN(4)]}
		if rng.IntN(3) == 0 {
			c.Iters, c.DeadlineNS, c.TickNS, c.PostNS = math.MaxUint64, 2e6, 1000, 100
		}
		cases = append(cases, c)
	}
	mrGrid(t, "rb_bw_mr, stalled peer", cases, func(c MRCase, o MROutcome) []string {
		var bad []string
		f := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }
		if o.RC != -1 || o.Fail.Kind != FailTimeout || o.Fail.Verb != "completions" {
			f("rc %d, fail %+v: want RB_FAIL_TIMEOUT", o.RC, o.Fail)
		}
		if len(o.Violations) > 0 {
			f("violations %v: %v", o.Violations, o.FirstViolation)
		}
		silent := o.EndNS - max(o.LastCQENS, o.FirstPostNS)
		tick := c.TickNS
		if tick == 0 {
			tick = 200
		}
		if slack := 2 * 4100 * (tick + 2*defaultNowNS); silent < c.TimeoutNS || silent > c.TimeoutNS+slack {
			f("gave up after %d ns of silence, timeout %d", silent, c.TimeoutNS)
		}
		if o.Posted[0] < o.Done || o.Posted[0]-o.Done > uint64(c.Depth) {
			f("posted %d, done %d, depth %d", o.Posted[0], o.Done, c.Depth)
		}
		return append(bad, checkMRBooks(c, o, false)...)
	})
}

// The stop flag, set at poll K: the loop returns 0 with everything it posted complete
// and every registration given back.
func TestBWMRStop(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	var cases []MRCase
	for _, s := range mrShapes(3) {
		for _, k := range []uint64{1, 2, 5, 63, 64, 65, 300} {
			sp := speeds[rng.IntN(len(speeds))]
			c := s
			c.Net, c.Iters, c.Read, c.LSlots, c.RSlots, c.TimeoutNS = sp.net, math.MaxUint64, rng.IntN(2) == 1, 3, 2, healthyTimeout
			c.Size, c.Stride = 8, 8
			c.Seed = rng.Uint64()
			c.StopAfterPolls = k
			if rng.IntN(3) == 0 {
				c.Iters = uint64(rng.IntN(500) + 1) // may finish before the stop
			}
			cases = append(cases, c)
		}
	}
	mrGrid(t, "rb_bw_mr, stop flag", cases, func(c MRCase, o MROutcome) []string {
		bad := checkMRHealthy(c, o)
		if c.Iters == math.MaxUint64 && o.Stop == 0 {
			bad = append(bad, "the stop flag was never set")
		}
		return bad
	})
}

// A registration that fails: the loop fails with ibv_reg_mr's errno, having posted
// the WRs before, and gives back every registration it holds.
func TestBWMRRegFails(t *testing.T) {
	var cases []MRCase
	for _, s := range mrShapes(9) {
		for _, at := range []uint64{1, 2, 3, 8, 17, 60} {
			c := s
			c.Net, c.Iters, c.LSlots, c.RSlots, c.TimeoutNS = Net{PerPoll: 2}, 200, 9, 1, healthyTimeout
			c.RegFailAt = at
			cases = append(cases, c)
		}
	}
	mrGrid(t, "rb_bw_mr, failing ibv_reg_mr", cases, func(c MRCase, o MROutcome) []string {
		if o.RegCalls < c.RegFailAt { // the cache had everything: no call failed
			return checkMRHealthy(c, o)
		}
		var bad []string
		f := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }
		if o.RC != -1 || o.Fail.Kind != FailVerb || o.Fail.Verb != "ibv_reg_mr" || o.Fail.Err != int(syscall.ENOMEM) {
			f("rc %d, fail %+v: want RB_FAIL_VERB ibv_reg_mr ENOMEM", o.RC, o.Fail)
		}
		if o.RegCalls != c.RegFailAt || o.Regs != c.RegFailAt-1 {
			f("%d ibv_reg_mr calls, %d registrations: the %d-th failed", o.RegCalls, o.Regs, c.RegFailAt)
		}
		if len(o.Violations) > 0 {
			f("violations %v: %v", o.Violations, o.FirstViolation)
		}
		return append(bad, checkMRBooks(c, o, false)...)
	})
}

// A deregistration that fails (once): the loop fails with ibv_dereg_mr's errno. One
// that fails in the window is tried again after it, so nothing is left registered;
// one that fails after it (the cache's leftovers) leaves that MR registered.
func TestBWMRDeregFails(t *testing.T) {
	var cases []MRCase
	for _, s := range mrShapes(9) {
		for _, at := range []uint64{1, 2, 3, 8, 17, 60} {
			c := s
			c.Net, c.Iters, c.LSlots, c.RSlots, c.TimeoutNS = Net{PerPoll: 2}, 200, 9, 1, healthyTimeout
			c.DeregFailAt = at
			cases = append(cases, c)
		}
	}
	mrGrid(t, "rb_bw_mr, failing ibv_dereg_mr", cases, func(c MRCase, o MROutcome) []string {
		if o.DeregCalls < c.DeregFailAt {
			return checkMRHealthy(c, o)
		}
		var bad []string
		f := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }
		if o.RC != -1 || o.Fail.Kind != FailVerb || o.Fail.Verb != "ibv_dereg_mr" || o.Fail.Err != int(syscall.EBUSY) {
			f("rc %d, fail %+v: want RB_FAIL_VERB ibv_dereg_mr EBUSY", o.RC, o.Fail)
		}
		// Was the failed call the window's (then retried) or the sweep's after it? One
		// in the window ends the run before its last WR is known complete (per-io:
		// the failed one gives back a completed WR's MR; cache: an eviction for a WR
		// not yet posted).
		inWindow := o.Done < c.Iters
		if c.Mode == PerIO && !inWindow {
			f("per-io: every WR completed, yet a deregistration failed after the window")
		}
		switch {
		case inWindow && (o.Live != 0 || len(o.Violations) > 0):
			f("failed in the window: %d left registered, violations %v", o.Live, o.FirstViolation)
		case !inWindow && (o.Live != 1 || len(o.Violations) != 1 || o.Violations["mr leak"] != 1):
			f("failed after the window: %d left registered, violations %v", o.Live, o.FirstViolation)
		}
		return append(bad, checkMRBooks(c, o, !inWindow)...)
	})
}

// The cache is an LRU: slots cycling through more entries than it holds miss every
// time; as many entries as slots miss once per slot.
func TestBWMRCacheLRU(t *testing.T) {
	for _, tc := range []struct {
		size, depth          int
		lslots               uint32
		wantHits, wantMisses uint64
	}{
		{4, 4, 8, 0, 400},
		{6, 4, 8, 0, 400},
		{8, 4, 8, 392, 8},
		{16, 4, 8, 392, 8},
		{4, 4, 1, 399, 1},
		{4, 1, 5, 0, 400},
		{5, 1, 5, 395, 5},
	} {
		c := MRCase{Net: Net{PerPoll: 3}, Mode: MRCache, CacheSize: tc.size, Depth: tc.depth, CQMod: 1, Iters: 400,
			LSlots: tc.lslots, RSlots: 1, Size: 64, TimeoutNS: healthyTimeout}.Normal()
		o := RunBWMR(c)
		if bad := checkMRHealthy(c, o); len(bad) > 0 {
			t.Errorf("%v: %v", c, bad)
		}
		if o.Hits != tc.wantHits || o.Misses != tc.wantMisses {
			t.Errorf("%v: hits %d misses %d, want %d and %d", c, o.Hits, o.Misses, tc.wantHits, tc.wantMisses)
		}
	}
}

// What a registration costs is what the result says: per-io, with registrations far
// dearer than the transfer, most of the window is registering.
func TestBWMRShare(t *testing.T) {
	c := MRCase{Net: Net{PerPoll: 8}, Mode: PerIO, Depth: 16, CQMod: 1, Iters: 1000, LSlots: 4, RSlots: 4, Size: 64,
		RegNS: 20000, DeregNS: 10000, TimeoutNS: healthyTimeout}.Normal()
	o := RunBWMR(c)
	if bad := checkMRHealthy(c, o); len(bad) > 0 {
		t.Fatalf("%v: %v", c, bad)
	}
	if share := float64(o.RegNS+o.DeregNS) / float64(o.DurationNS); share < 0.9 || share > 1 {
		t.Errorf("registration took %.3f of the window (reg %d dereg %d window %d), want most of it", share, o.RegNS, o.DeregNS, o.DurationNS)
	}
	c.Mode, c.CacheSize = MRCache, 16
	o = RunBWMR(c)
	if bad := checkMRHealthy(c, o); len(bad) > 0 {
		t.Fatalf("%v: %v", c, bad)
	}
	if o.Regs != 4 || o.DeregNS != 0 || o.DeregsAfter != 4 {
		t.Errorf("cache of 16 over 4 slots: %d registrations, dereg_ns %d, %d deregistered after the window", o.Regs, o.DeregNS, o.DeregsAfter)
	}
}

// Arguments the loop refuses before it registers or posts anything, and a run of no WRs.
func TestBWMRArguments(t *testing.T) {
	for _, c := range []MRCase{
		{Mode: MRCache, CacheSize: 7, Depth: 8, CQMod: 1, Iters: 10},
		{Mode: MRCache, CacheSize: 0, Depth: 1, CQMod: 1, Iters: 10},
		{Mode: MRCache, CacheSize: 1<<30 + 1, Depth: 1, CQMod: 1, Iters: 10},
		{Mode: 0, Depth: 8, CQMod: 1, Iters: 10},
		{Mode: PerIO, Depth: 8, CQMod: 9, Iters: 10},
		{Mode: PerIO, Depth: 0, CQMod: 0, Iters: 10},
	} {
		c.Net, c.TimeoutNS = Net{PerPoll: 1}, healthyTimeout
		o := RunBWMR(c)
		if o.RC != -1 || o.Fail.Kind != FailVerb || o.Fail.Err != int(syscall.EINVAL) || o.RegCalls != 0 || o.Posts != 0 || len(o.Violations) > 0 {
			t.Errorf("%v: rc %d fail %+v, %d registrations, %d posts, violations %v", c, o.RC, o.Fail, o.RegCalls, o.Posts, o.FirstViolation)
		}
	}
	for _, mode := range []MRMode{PerIO, MRCache} {
		c := MRCase{Net: Net{PerPoll: 1}, Mode: mode, CacheSize: 4, Depth: 4, CQMod: 1, Iters: 0, TimeoutNS: healthyTimeout, LSlots: 2, RSlots: 1}.Normal()
		o := RunBWMR(c)
		if bad := checkMRHealthy(c, o); len(bad) > 0 || o.Posts != 0 || o.RegCalls != 0 || o.DurationNS != 0 {
			t.Errorf("%v: %v; %d posts, %d registrations, window %d", c, bad, o.Posts, o.RegCalls, o.DurationNS)
		}
	}
}

// The model flags what a loop must not do with registrations, and nothing when all is
// well.
func TestModelMRMisuse(t *testing.T) {
	for which, want := range []struct {
		violation, detail string
		statuses          []int
	}{
		{"mr lkey", "never registered", []int{WCLocProtErr}},
		{"mr dereg", "already deregistered", nil},
		{"mr reg", "not inside the local buffer", nil},
		{"mr reg", "a foreign PD", nil},
		{"mr invalid at execution", "deregistered", []int{WCLocProtErr}},
		{"mr leak", "1 MRs still registered", []int{WCSuccess}},
		{"mr lkey", "without IBV_ACCESS_LOCAL_WRITE", []int{WCLocProtErr}},
		{"mr lkey", "does not cover the SGE", []int{WCLocProtErr}},
		{"", "", []int{WCSuccess}},
	} {
		rec, st := ModelMRMisuse(which)
		if want.violation == "" {
			if len(rec.Violations) > 0 || !slices.Equal(st, want.statuses) {
				t.Errorf("misuse %d (none): violations %v, statuses %v", which, rec.FirstViolation, st)
			}
			continue
		}
		if rec.Violations[want.violation] == 0 || !strings.Contains(rec.FirstViolation[want.violation], want.detail) || !slices.Equal(st, want.statuses) {
			t.Errorf("misuse %d: violations %v, statuses %v; want %q (%q), statuses %v", which, rec.FirstViolation, st, want.violation, want.detail, want.statuses)
		}
	}
}

// The cache's table finds what was inserted and not removed, and nothing else, through
// any sequence of inserts and removals (removal moves entries back within a cluster).
func TestBWMRCacheTable(t *testing.T) {
	for _, capacity := range []int{1, 2, 3, 16, 100, 1024} {
		for seed := range uint64(4) {
			if op := CacheFuzz(capacity, 200_000, seed); op >= 0 {
				t.Errorf("cache of %d, seed %d: operation %d found the wrong entry", capacity, seed, op)
			}
		}
	}
}
