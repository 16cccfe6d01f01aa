package rdma

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/verbs"
)

// A batch goes out as one post list; only every SignalEvery-th WR and the last are
// signalled; WRs of one QP execute in order (a READ after a WRITE of the same bytes
// in one batch sees them).
func TestBatchIsOnePostList(t *testing.T) {
	r := newRig(t, Config{SQDepth: 64, SignalEvery: 4})
	before := r.f.Stats()
	b := r.c.NewBatch()
	var ops []*Op
	for i := range 9 {
		ops = append(ops, b.Write(r.buf(t, 64, byte(i+1)), uint64(i*64)))
	}
	dst := r.buf(t, 9*64, 0)
	ops = append(ops, b.Read(dst, 0))
	if b.Len() != 10 {
		t.Fatalf("batch of %d", b.Len())
	}
	if err := b.Post(bg); err != nil {
		t.Fatal(err)
	}
	if b.Len() != 0 {
		t.Fatal("Post did not empty the batch")
	}
	if err := WaitAll(bg, ops...); err != nil {
		t.Fatal(err)
	}
	got := r.f.Stats()
	if lists, wrs, sig := got.Lists-before.Lists, got.WRs-before.WRs, got.Signalled-before.Signalled; lists != 1 || wrs != 10 || sig != 3 {
		t.Fatalf("%d post lists, %d WRs, %d signalled; want 1, 10, 3 (WRs 4, 8 and 10)", lists, wrs, sig)
	}
	for i := range 9 {
		if blk := dst.Bytes()[i*64 : i*64+64]; !bytes.Equal(blk, bytes.Repeat([]byte{byte(i + 1)}, 64)) {
			t.Fatalf("the READ did not see WRITE %d of its batch", i)
		}
	}
}

// A full send queue makes a post wait, as long as its context allows.
func TestFullSendQueue(t *testing.T) {
	r := newRig(t, Config{SQDepth: 4})
	src := r.buf(t, 8, 1)
	r.f.Hold()
	var ops []*Op
	for range 4 {
		ops = append(ops, r.c.Write(bg, src, 0))
	}
	start := time.Now() // before the deadline is set: it is 30 ms from then at the latest
	ctx, cancel := context.WithTimeout(bg, 30*time.Millisecond)
	defer cancel()
	op := r.c.Write(ctx, src, 0)
	if err := op.Err(); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) < 30*time.Millisecond {
		t.Fatalf("a post into a full queue: %v after %v", err, time.Since(start))
	}
	// A batch larger than the room left waits for room, then goes out.
	posted := make(chan error)
	b := r.c.NewBatch()
	for range 6 {
		ops = append(ops, b.Write(src, 0))
	}
	go func() { posted <- b.Post(bg) }()
	select {
	case err := <-posted:
		t.Fatalf("a post into a full queue returned: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	r.f.Release()
	if err := <-posted; err != nil {
		t.Fatal(err)
	}
	if err := WaitAll(bg, ops...); err != nil {
		t.Fatal(err)
	}
}

func TestRange(t *testing.T) {
	r := newRig(t, Config{Size: 1000})
	other := r.lo.Device()
	defer other.Close()
	op, _ := other.NewPool(64, 1)
	foreign, _ := op.Get()
	cases := map[string]*Op{
		"past the end":    r.c.Write(bg, r.buf(t, 100, 0), 901),
		"offset past end": r.c.Read(bg, r.buf(t, 1, 0), 1000),
		"zero buffer":     r.c.Write(bg, Buffer{}, 0),
		"empty":           r.c.Write(bg, r.buf(t, 0, 0), 0),
		"other device":    r.c.Write(bg, foreign, 0),
	}
	for name, o := range cases {
		if err := o.Err(); !errors.Is(err, ErrRange) {
			t.Errorf("%s: %v, want ErrRange", name, err)
		}
	}
	if err := r.c.Write(bg, r.buf(t, 100, 0), 900).Wait(bg); err != nil {
		t.Fatalf("the last 100 bytes: %v", err)
	}
	b := r.c.NewBatch()
	bad := b.Write(Buffer{}, 0)
	good := b.Write(r.buf(t, 10, 0), 0)
	if err := b.Post(bg); !errors.Is(err, ErrRange) || !errors.Is(bad.Err(), ErrRange) || good.Wait(bg) != nil {
		t.Fatalf("a batch with a bad op: %v / %v / %v", err, bad.Err(), good.Err())
	}
}

// Many goroutines post at once into a small send queue.
func TestConcurrentPosts(t *testing.T) {
	r := newRig(t, Config{QPs: 2, SQDepth: 8, SignalEvery: 3})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			src, _ := r.pool.Get()
			src = src.Slice(0, 128)
			for i := range src.Bytes() {
				src.Bytes()[i] = byte(g)
			}
			dst, _ := r.pool.Get()
			dst = dst.Slice(0, 128)
			for i := range 50 {
				b := r.c.NewBatch()
				var ops []*Op
				for range i%5 + 1 {
					ops = append(ops, b.Write(src, uint64(g*128)))
				}
				if err := b.Post(bg); err != nil {
					errs <- err
					return
				}
				if err := WaitAll(bg, ops...); err != nil {
					errs <- err
					return
				}
				if err := r.c.Read(bg, dst, uint64(g*128)).Wait(bg); err != nil {
					errs <- err
					return
				}
				if !bytes.Equal(dst.Bytes(), src.Bytes()) {
					errs <- fmt.Errorf("goroutine %d read back other bytes", g)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// A QP that failed takes no more ops while another is healthy; when none is left the
// connection fails with the first QP's error.
func TestFailedQPIsSkipped(t *testing.T) {
	r := newRig(t, Config{QPs: 2, SQDepth: 8})
	src := r.buf(t, 8, 1)
	r.f.FailNth(1, verbs.WCRemAccessErr)
	first := r.c.Write(bg, src, 0).Wait(bg)
	if ce := completionError(t, first); ce.Status != "IBV_WC_REM_ACCESS_ERR" {
		t.Fatal(first)
	}
	for i := range 20 {
		if err := r.c.Write(bg, src, 0).Wait(bg); err != nil {
			t.Fatalf("write %d after one of two QPs failed: %v", i, err)
		}
	}
	r.f.FailNth(1, verbs.WCRetryExcErr)
	if ce := completionError(t, r.c.Write(bg, src, 0).Wait(bg)); ce.Status != "IBV_WC_RETRY_EXC_ERR" {
		t.Fatal(ce)
	}
	err := r.c.Write(bg, src, 0).Wait(bg)
	if !errors.Is(err, first) || !strings.Contains(err.Error(), "all 2 QPs") {
		t.Fatalf("a write with no QP left: %v, want the first QP's error", err)
	}
}

// A post list the QP takes in part: the posted prefix stays in flight (a signalled
// zero-length WRITE covers it when its last WR is unsignalled), only the WRs not posted
// fail, and the QP, short of room only, stays in use.
func TestPartialPost(t *testing.T) {
	r := newWrig(t)
	c, err := r.dev.Dial(bg, r.addr, Config{Size: 64, SQDepth: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r.lo.f.Hold()
	r.ws.partial.Store(2)
	b := c.NewBatch()
	var ops []*Op
	for i := range 4 {
		ops = append(ops, b.Write(r.buf(t, byte(0x70+i)), uint64(8*i)))
	}
	perr := b.Post(bg)
	if !errors.Is(perr, syscall.ENOMEM) {
		t.Fatalf("Post: %v, want ENOMEM", perr)
	}
	if ops[0].done.Load() || ops[1].done.Load() {
		t.Fatalf("posted ops resolved while in flight: %v, %v", ops[0].Err(), ops[1].Err())
	}
	for i := 2; i < 4; i++ {
		if err := ops[i].Err(); !errors.Is(err, syscall.ENOMEM) {
			t.Fatalf("op %d, not posted: %v", i, err)
		}
	}
	r.lo.f.Release()
	if err := WaitAll(bg, ops[:2]...); err != nil {
		t.Fatal(err)
	}
	for c.inflight.Load() != 0 {
		time.Sleep(time.Millisecond)
	}
	if err := c.Write(bg, r.buf(t, 1), 0).Wait(bg); err != nil {
		t.Fatalf("a write after ENOMEM: %v", err)
	}
}

// With no cover, the QP's error state flushes the posted prefix.
func TestPartialPostNoCover(t *testing.T) {
	r := newWrig(t)
	c, err := r.dev.Dial(bg, r.addr, Config{Size: 64, SQDepth: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r.lo.f.Hold()
	r.ws.partial.Store(2)
	r.ws.failCover.Store(true)
	b := c.NewBatch()
	var ops []*Op
	for i := range 3 {
		ops = append(ops, b.Write(r.buf(t, 1), uint64(8*i)))
	}
	b.Post(bg)
	r.lo.f.Release()
	for i := range 2 {
		err := ops[i].Wait(bg)
		if ce := completionError(t, err); ce.Status != "IBV_WC_WR_FLUSH_ERR" || !errors.Is(err, syscall.ENOMEM) {
			t.Fatalf("op %d: %v, want flushed after the post error", i, err)
		}
	}
	if r.ws.failed.Load() == 0 {
		t.Fatal("the QP was not moved to the error state")
	}
	if c.inflight.Load() != 0 {
		t.Fatalf("%d WRs in flight", c.inflight.Load())
	}
}
