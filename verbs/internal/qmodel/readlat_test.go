//go:build linux && cgo

package qmodel

import (
	"bytes"
	"testing"
)

func TestReadLatHealthy(t *testing.T) {
	n := 0
	for _, net := range []Net{{PerPoll: 1}, {PerPoll: 1, AckDelay: 5}, {PerPoll: 2, Random: true, Seed: 3}, {OnPost: 1}} {
		for _, iters := range []uint64{1, 10, 1000} {
			for _, size := range []uint32{1, 64, 4096} {
				n++
				o := RunReadLat(RLCase{Net: net, Size: size, Iters: iters, TimeoutNS: healthyTimeout})
				if o.RC != 0 || o.Fail.Kind != FailNone || o.Done != iters || o.Hist.N != iters || o.Hist.Backwards != 0 ||
					o.Posted[0] != iters || o.Executed[0] != iters || o.MaxSQ[0] != 1 || len(o.Violations) > 0 {
					t.Errorf("net %+v size %d iters %d: rc %d fail %+v done %d hist %+v posted %d executed %d max sq %d violations %v",
						net, size, iters, o.RC, o.Fail, o.Done, o.Hist, o.Posted[0], o.Executed[0], o.MaxSQ[0], o.FirstViolation)
				}
				if !bytes.Equal(o.Local, o.Remote) {
					t.Errorf("net %+v size %d iters %d: the READs did not bring the remote bytes", net, size, iters)
				}
				for i, a := range o.Addrs[0] {
					if a != (Addr{}) {
						t.Errorf("READ %d at %+v, want the buffers' start", i, a)
						break
					}
				}
				// Each sample spans the post and the completion: at least the ticks
				// the completion took to come back.
				if o.Hist.Min < int64(200*(1+net.AckDelay)) {
					t.Errorf("net %+v: a READ took %d ns", net, o.Hist.Min)
				}
			}
		}
	}
	t.Logf("rb_read_lat: %d combinations", n)
}

func TestReadLatStalled(t *testing.T) {
	for _, s := range []uint64{0, 1, 50} {
		o := RunReadLat(RLCase{Net: Net{PerPoll: 1, Fault: Fault{Kind: PeerStalls, After: s}}, Iters: 100, TimeoutNS: 5e6})
		if o.RC != -1 || o.Fail.Kind != FailTimeout || o.Fail.Verb != "the READ's completion" || o.Done != s || len(o.Violations) > 0 {
			t.Errorf("stall after %d: rc %d fail %+v done %d violations %v", s, o.RC, o.Fail, o.Done, o.FirstViolation)
		}
		if silent := o.EndNS - max(o.LastCQENS, o.FirstPostNS); silent < 5e6 || silent > 5e6+3e6 {
			t.Errorf("stall after %d: gave up after %d ns of silence", s, silent)
		}
	}
}

func TestReadLatFailing(t *testing.T) {
	for _, e := range []uint64{0, 1, 50} {
		o := RunReadLat(RLCase{Net: Net{PerPoll: 1, AckDelay: 1, Fault: Fault{Kind: PeerFails, After: e}}, Iters: 100, TimeoutNS: healthyTimeout})
		if o.RC != -1 || o.Fail.Kind != FailWC || o.Fail.Status != WCRetryExcErr || o.Fail.WRID != e || o.Done != e ||
			len(o.Violations) > 0 {
			t.Errorf("fail after %d: rc %d fail %+v done %d violations %v", e, o.RC, o.Fail, o.Done, o.FirstViolation)
		}
	}
}

func TestReadLatStop(t *testing.T) {
	o := RunReadLat(RLCase{Net: Net{PerPoll: 1, AckDelay: 3, StopAfterPolls: 100}, Iters: 1 << 40, TimeoutNS: healthyTimeout})
	if o.RC != 0 || o.Stop != 1 || o.Done == 0 || len(o.Violations) > 0 {
		t.Errorf("rc %d fail %+v done %d violations %v", o.RC, o.Fail, o.Done, o.FirstViolation)
	}
}
