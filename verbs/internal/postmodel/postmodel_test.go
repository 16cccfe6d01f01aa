//go:build linux && cgo

package postmodel

import (
	"testing"
	"time"
)

// A post list is one ibv_post_send of WRs chained in order, each field where
// libibverbs expects it.
func TestPostList(t *testing.T) {
	m := New(false, 8, 4)
	defer m.Close()
	wrs := m.WRs()
	for i := range 5 {
		wrs[i] = WR{WRID: uint64(100 + i), LAddr: uint64(0x1000 * (i + 1)), Len: uint32(64 + i), LKey: 0x11, RAddr: uint64(0x9000 + i), RKey: 0x22, Opcode: uint8(i % 2), Flags: uint8(i / 4)}
	}
	if rc, _ := m.Post(5); rc != 0 {
		t.Fatalf("post: %d", rc)
	}
	got, lists, chained := m.Last()
	if lists != 1 || len(got) != 5 || !chained {
		t.Fatalf("%d post_send calls, %d WRs, chained %v; want 1, 5, true", lists, len(got), chained)
	}
	for i, w := range got {
		op, flags := WRRDMAWrite, 0
		if i%2 == 1 {
			op = WRRDMARead
		}
		if i == 4 {
			flags = SendSignaled
		}
		want := Posted{WRID: uint64(100 + i), Opcode: op, Flags: flags, NumSGE: 1, Addr: uint64(0x1000 * (i + 1)), Length: uint32(64 + i), LKey: 0x11, RemoteAddr: uint64(0x9000 + i), RKey: 0x22}
		if w != want {
			t.Fatalf("WR %d: %+v, want %+v", i, w, want)
		}
	}
	// A list of one ends the chain at once.
	if rc, _ := m.Post(1); rc != 0 {
		t.Fatal(rc)
	}
	if got, _, chained := m.Last(); len(got) != 1 || !chained {
		t.Fatalf("a list of one: %d WRs, chained %v", len(got), chained)
	}
}

// A WR of length 0 (package rdma's signalled cover) goes out with no scatter/gather
// entry: some providers read a data segment of length 0 as 2 GiB.
func TestZeroLengthWR(t *testing.T) {
	m := New(false, 4, 4)
	defer m.Close()
	m.WRs()[0] = WR{WRID: 1, LAddr: 0x1000, Len: 8, LKey: 0x11, RAddr: 0x9000, RKey: 0x22}
	m.WRs()[1] = WR{WRID: 2, RAddr: 0x9000, RKey: 0x22, Flags: 1}
	if rc, _ := m.Post(2); rc != 0 {
		t.Fatalf("post: %d", rc)
	}
	got, _, _ := m.Last()
	if got[0].NumSGE != 1 || got[1].NumSGE != 0 || got[1].Opcode != WRRDMAWrite || got[1].Flags != SendSignaled || got[1].RKey != 0x22 {
		t.Fatalf("%+v", got)
	}
}

// rb_qp_error asks for the error state, and passes ibv_modify_qp's error on.
func TestQPError(t *testing.T) {
	m := New(false, 1, 1)
	defer m.Close()
	if rc := m.QPError(); rc != 0 {
		t.Fatalf("rb_qp_error: %d", rc)
	}
	if calls, state, mask := m.Modified(); calls != 1 || state != QPSErr || mask != QPState {
		t.Fatalf("%d calls, state %d, mask %#x; want 1, %d, %#x", calls, state, mask, QPSErr, QPState)
	}
	m.FailModify(EINVAL)
	if rc := m.QPError(); rc != EINVAL {
		t.Fatalf("rb_qp_error: %d, want EINVAL", rc)
	}
}

func TestPostErrors(t *testing.T) {
	m := New(false, 8, 4)
	defer m.Close()
	m.FailNext(3, ENOMEM)
	if rc, bad := m.Post(6); rc != ENOMEM || bad != 3 {
		t.Fatalf("post: rc %d, bad %d; want ENOMEM at 3", rc, bad)
	}
	for _, n := range []int{0, 9} {
		_, before, _ := m.Last()
		if rc, _ := m.Post(n); rc != EINVAL {
			t.Fatalf("a list of %d: rc %d, want EINVAL", n, rc)
		}
		if _, after, _ := m.Last(); after != before {
			t.Fatalf("a list of %d reached ibv_post_send", n)
		}
	}
}

func TestPoll(t *testing.T) {
	m := New(false, 1, 2)
	defer m.Close()
	m.PushWC(7, 0, WCRDMARead, 0, 0x33, 4096)
	m.PushWC(8, WCRemAccess, 0, 0x88, 0x33, 0)
	m.PushWC(9, 0, 0, 0, 0x34, 1)
	if n := m.Poll(); n != 2 {
		t.Fatalf("poll: %d, want 2 (max_poll)", n)
	}
	wcs := m.WCs()
	if w := wcs[0]; w.WRID != 7 || w.Status != 0 || int(w.Opcode) != WCRDMARead || w.QPNum != 0x33 || w.ByteLen != 4096 {
		t.Fatalf("%+v", w)
	}
	if w := wcs[1]; w.WRID != 8 || int(w.Status) != WCRemAccess || w.VendorErr != 0x88 {
		t.Fatalf("%+v", w)
	}
	if n := m.Poll(); n != 1 || wcs[0].WRID != 9 {
		t.Fatalf("second poll: %d %+v", n, wcs[0])
	}
	if n := m.Poll(); n != 0 {
		t.Fatalf("empty CQ: %d", n)
	}
	// Without a channel, Wait only polls.
	if n := m.Wait(1000); n != 0 {
		t.Fatalf("wait without a channel: %d", n)
	}
}

// Wait arms the CQ, polls once more, and only then sleeps on the channel; each event
// is consumed and acknowledged.
func TestWait(t *testing.T) {
	m := New(true, 1, 4)
	defer m.Close()
	m.PushWC(1, 0, 0, 0, 1, 1)
	if n := m.Wait(1000); n != 1 {
		t.Fatalf("wait with a completion queued: %d", n)
	}
	if armed, notifies, events, _ := m.CQ(); !armed || notifies != 1 || events != 0 {
		t.Fatalf("armed %v, %d notifies, %d events", armed, notifies, events)
	}
	start := time.Now()
	if n := m.Wait(20); n != 0 || time.Since(start) < 15*time.Millisecond {
		t.Fatalf("wait on an empty CQ: %d after %v", n, time.Since(start))
	}
	if _, notifies, _, _ := m.CQ(); notifies != 1 {
		t.Fatalf("an armed CQ was armed again (%d notifies)", notifies)
	}
	go func() {
		time.Sleep(10 * time.Millisecond)
		m.PushWC(2, 0, 0, 0, 1, 1)
		m.Event()
	}()
	if n := m.Wait(5000); n != 1 || m.WCs()[0].WRID != 2 {
		t.Fatalf("wait for an event: %d", n)
	}
	if armed, notifies, events, acked := m.CQ(); armed || notifies != 1 || events != 1 || acked != 1 {
		t.Fatalf("armed %v, %d notifies, %d events, %d acked; want false, 1, 1, 1", armed, notifies, events, acked)
	}
	// The next wait arms again.
	m.Wait(1)
	if _, notifies, _, _ := m.CQ(); notifies != 2 {
		t.Fatalf("%d notifies, want 2", notifies)
	}
}
