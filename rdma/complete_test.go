package rdma

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/rdma/internal/fake"
	"github.com/rdmabench/rdmabench/verbs"
)

// completionError is the *CompletionError that err is or wraps; without one the test
// fails.
func completionError(t *testing.T, err error) *CompletionError {
	t.Helper()
	var ce *CompletionError
	if !errors.As(err, &ce) {
		t.Fatalf("want a completion error, got %v", err)
	}
	var v *verbs.CompletionError // what errors.As found before rdma had its own type
	if !errors.As(err, &v) || v.Status != ce.Status || v.Error() != ce.Error() {
		t.Fatalf("the completion error must unwrap to the verbs layer's: %v", err)
	}
	return ce
}

// Ops of a QP resolve in the order they were posted.
func TestOrder(t *testing.T) {
	r := newRig(t, Config{SQDepth: 32, SignalEvery: 3})
	r.f.Hold()
	src := r.buf(t, 8, 1)
	var ops []*Op
	for n := range 6 {
		b := r.c.NewBatch()
		for range n + 1 {
			ops = append(ops, b.Write(src, 0))
		}
		b.Post(bg)
	}
	for _, o := range ops {
		select {
		case <-o.Done():
			t.Fatal("an op resolved on a stalled fabric")
		default:
		}
	}
	r.f.Release()
	for i := len(ops) - 1; i >= 0; i-- {
		<-ops[i].Done()
		for j := range i {
			if !ops[j].done.Load() {
				t.Fatalf("op %d resolved before op %d", i, j)
			}
		}
		if err := ops[i].Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// A failed unsignalled WR fails its own op only: the ops before it ran (an RC QP
// executes in order and stops at the first failure, which completes whether signalled
// or not), so they succeed, and the server's region holds their bytes. The ops after
// it are flushed, with the failure wrapped; the connection's one QP is gone, so the
// connection fails.
func TestModerationErrors(t *testing.T) {
	r := newRig(t, Config{Size: 80, SQDepth: 64, SignalEvery: 4})
	r.f.FailNth(6, verbs.WCRemAccessErr) // op 5: unsignalled, after the signalled op 3
	b := r.c.NewBatch()
	var ops []*Op
	want := make([]byte, 80)
	for i := range 10 {
		src := r.buf(t, 8, byte(0x40+i))
		ops = append(ops, b.Write(src, uint64(8*i)))
		if i < 5 {
			copy(want[8*i:], src.Bytes())
		}
	}
	if err := b.Post(bg); err != nil {
		t.Fatal(err)
	}
	WaitAll(bg, ops...)
	for i := range 5 {
		if err := ops[i].Err(); err != nil {
			t.Fatalf("op %d (before the failed op 5; it ran): %v", i, err)
		}
	}
	ce := completionError(t, ops[5].Err())
	if ce.Status != "IBV_WC_REM_ACCESS_ERR" || ce.VendorErr != fake.VendorErr || ce.Opcode != "IBV_WC_RDMA_WRITE" ||
		ce.QPNum != r.c.qps[0].num || ce.WRID&seqMask != 5 {
		t.Fatalf("op 5: %+v", ce)
	}
	for i := 6; i < 10; i++ {
		err := ops[i].Err()
		if ce := completionError(t, err); ce.Status != "IBV_WC_WR_FLUSH_ERR" || !errors.Is(err, ops[5].Err()) {
			t.Fatalf("op %d: %v, want a flush that wraps op 5's error", i, err)
		}
	}
	err := r.c.Write(bg, r.buf(t, 8, 1), 0).Wait(bg)
	if ce := completionError(t, err); ce.Status != "IBV_WC_REM_ACCESS_ERR" || !strings.Contains(err.Error(), "QP 0x") {
		t.Fatalf("a post after the failure: %v", err)
	}
	r.c.Close()
	if sum := sha256.Sum256(want); r.c.Digest() != hex.EncodeToString(sum[:]) {
		t.Fatal("the region does not hold ops 0..4's bytes (and only theirs)")
	}
}

// A failed signalled WR fails its own op; the unsignalled ops it covered ran before it.
func TestSignalledErrorFailsItsOpOnly(t *testing.T) {
	r := newRig(t, Config{SQDepth: 64, SignalEvery: 4})
	src := r.buf(t, 8, 1)
	r.f.FailNth(4, verbs.WCRetryExcErr)
	b := r.c.NewBatch()
	var ops []*Op
	for range 4 {
		ops = append(ops, b.Write(src, 0))
	}
	b.Post(bg)
	WaitAll(bg, ops...)
	for i := range 3 {
		if err := ops[i].Err(); err != nil {
			t.Fatalf("op %d: %v", i, err)
		}
	}
	if ce := completionError(t, ops[3].Err()); ce.Status != "IBV_WC_RETRY_EXC_ERR" || ce.WRID&seqMask != 3 {
		t.Fatalf("op 3: %v", ce)
	}
}

// A failing connection (the server gone) resolves its ops through the QPs' error
// state, not while the QPs may still run them.
func TestFailGoesThroughErrorState(t *testing.T) {
	r := newWrig(t)
	c, err := r.dev.Dial(bg, r.addr, Config{Size: 64})
	if err != nil {
		t.Fatal(err)
	}
	r.lo.f.Hold()
	op := c.Write(bg, r.buf(t, 1), 0)
	r.lo.Close()
	err = op.Wait(bg)
	if ce := completionError(t, err); ce.Status != "IBV_WC_WR_FLUSH_ERR" || r.ws.failed.Load() != 1 {
		t.Fatalf("the op: %v, %d QPs moved to the error state", err, r.ws.failed.Load())
	}
	c.Close()
}
