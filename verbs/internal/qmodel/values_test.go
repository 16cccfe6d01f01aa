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
	for i, b := range bad {
		if i == 10 {
			t.Errorf("... and %d more", len(bad)-i)
			break
		}
		t.Error(b)
	}
	t.Logf("%d bandwidth runs, %d with samples other than the model's record", n, len(bad))
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
