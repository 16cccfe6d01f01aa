package rdma

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/rdma/internal/fake"
	"github.com/rdmabench/rdmabench/verbs"
)

var bg = context.Background()

// rig is a loopback fabric with one server, a device, a pool and a connection.
type rig struct {
	lo   *Loopback
	f    *fake.Fabric
	addr string
	dev  *Device
	pool *Pool
	c    *Conn
}

func newRig(t *testing.T, cfg Config) *rig {
	t.Helper()
	r := &rig{lo: NewLoopback()}
	r.f = r.lo.f
	var err error
	if r.addr, err = r.lo.Listen(""); err != nil {
		t.Fatal(err)
	}
	r.dev = r.lo.Device()
	if r.pool, err = r.dev.NewPool(4096, 16); err != nil {
		t.Fatal(err)
	}
	if cfg.Size == 0 {
		cfg.Size = 64 << 10
	}
	if r.c, err = r.dev.Dial(bg, r.addr, cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		r.f.Release()
		r.dev.Close()
		r.lo.Close()
		if v := r.f.Violations(); len(v) > 0 {
			t.Errorf("verbs rules broken: %v", v)
		}
	})
	return r
}

// buf returns a pool buffer of n bytes filled with the byte fill.
func (r *rig) buf(t *testing.T, n int, fill byte) Buffer {
	t.Helper()
	b, err := r.pool.Get()
	if err != nil {
		t.Fatal(err)
	}
	b = b.Slice(0, n)
	for i := range b.Bytes() {
		b.Bytes()[i] = fill
	}
	return b
}

func TestWriteRead(t *testing.T) {
	for _, qps := range []int{1, 3} {
		t.Run(fmt.Sprintf("%dQPs", qps), func(t *testing.T) {
			r := newRig(t, Config{QPs: qps, SQDepth: 8})
			src := r.buf(t, 4096, 0)
			for i := range src.Bytes() {
				src.Bytes()[i] = byte(i * 7)
			}
			var ops []*Op
			for k := range 8 {
				ops = append(ops, r.c.Write(bg, src, uint64(k*4096)))
			}
			if err := WaitAll(bg, ops...); err != nil {
				t.Fatal(err)
			}
			for k := range 8 {
				dst := r.buf(t, 4096, 0xff)
				if err := r.c.Read(bg, dst, uint64(k*4096)).Wait(bg); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(dst.Bytes(), src.Bytes()) {
					t.Fatalf("READ of slot %d differs from what was written", k)
				}
				r.pool.Put(dst)
			}
			if err := r.c.Close(); err != nil {
				t.Fatal(err)
			}
			region := bytes.Repeat(src.Bytes(), 8)
			region = append(region, make([]byte, 64<<10-len(region))...)
			if sum := sha256.Sum256(region); r.c.Digest() != hex.EncodeToString(sum[:]) {
				t.Fatalf("server digest %s, want %x", r.c.Digest(), sum)
			}
		})
	}
}

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

func completionError(t *testing.T, err error) *verbs.CompletionError {
	t.Helper()
	var ce *verbs.CompletionError
	if !errors.As(err, &ce) {
		t.Fatalf("want a completion error, got %v", err)
	}
	return ce
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

// Wait gives up with the context, the op still resolves.
func TestCancelWait(t *testing.T) {
	r := newRig(t, Config{})
	r.f.Hold()
	op := r.c.Write(bg, r.buf(t, 8, 1), 0)
	ctx, cancel := context.WithTimeout(bg, 20*time.Millisecond)
	defer cancel()
	if err := op.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait: %v, want the deadline", err)
	}
	if op.Err() != nil {
		t.Fatal("Err of an op in flight is not nil")
	}
	r.f.Release()
	if err := op.Wait(bg); err != nil {
		t.Fatalf("the op after the stall: %v", err)
	}
	// A context already done posts nothing.
	cancel()
	if err := r.c.Write(ctx, r.buf(t, 8, 1), 0).Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a post with a done context: %v", err)
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
	ctx, cancel := context.WithTimeout(bg, 30*time.Millisecond)
	defer cancel()
	start := time.Now()
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

// Close resolves what is in flight with ErrClosed, and posts that wait for room too.
func TestCloseFlushes(t *testing.T) {
	r := newRig(t, Config{SQDepth: 4})
	src := r.buf(t, 8, 1)
	done := r.c.Write(bg, src, 0)
	if err := done.Wait(bg); err != nil {
		t.Fatal(err)
	}
	r.f.Hold() // the peer stalls: nothing completes until Close
	var ops []*Op
	for range 4 {
		ops = append(ops, r.c.Write(bg, src, 0))
	}
	waiting := make(chan *Op)
	go func() { waiting <- r.c.Write(bg, src, 0) }()
	time.Sleep(20 * time.Millisecond)
	if err := r.c.Close(); err != nil {
		t.Fatal(err)
	}
	ops = append(ops, <-waiting)
	for i, o := range ops {
		if err := o.Wait(bg); !errors.Is(err, ErrClosed) {
			t.Fatalf("op %d: %v, want ErrClosed", i, err)
		}
	}
	if done.Err() != nil {
		t.Fatal("Close changed a resolved op")
	}
	if err := r.c.Write(bg, src, 0).Err(); !errors.Is(err, ErrClosed) {
		t.Fatalf("a post after Close: %v", err)
	}
	if r.c.Digest() == "" {
		t.Fatal("no digest after Close")
	}
	if err := r.c.Close(); err != nil {
		t.Fatalf("a second Close: %v", err)
	}
}

func TestPoolReuse(t *testing.T) {
	r := newRig(t, Config{})
	p, err := r.dev.NewPool(1024, 2)
	if err != nil {
		t.Fatal(err)
	}
	regs := r.f.Registrations()
	a, _ := p.Get()
	b, _ := p.Get()
	p.Put(a)
	p.Put(b)
	for range 100 {
		x, _ := p.Get()
		y, _ := p.Get()
		if x.Len() != 1024 || &x.Bytes()[0] == &y.Bytes()[0] {
			t.Fatal("two Gets returned one buffer")
		}
		p.Put(y)
		p.Put(x)
	}
	if p.Registrations() != 1 || r.f.Registrations() != regs {
		t.Fatalf("%d pool registrations, %d on the fabric; want no new one", p.Registrations(), r.f.Registrations()-regs)
	}
	var out []Buffer
	for range 3 {
		x, _ := p.Get()
		out = append(out, x)
	}
	if p.Registrations() != 2 || r.f.Registrations() != regs+1 {
		t.Fatalf("a Get with none free: %d registrations, want 2", p.Registrations())
	}
	// Pool buffers work as op buffers.
	copy(out[2].Bytes(), "pooled")
	if err := r.c.Write(bg, out[2], 0).Wait(bg); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []Buffer{out[0].Slice(0, 10), r.buf(t, 4096, 0), {}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Fatal("Put of a foreign buffer did not panic")
				}
			}()
			p.Put(bad)
		}()
	}
	p.Put(out[0])
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("a second Put did not panic")
			}
		}()
		p.Put(out[0])
	}()
	// Close waits for the buffers out.
	if err := p.Close(); !errors.Is(err, ErrPoolBusy) || r.c.Write(bg, out[1], 0).Wait(bg) != nil {
		t.Fatalf("Close with 2 buffers out: %v", err)
	}
	p.Put(out[1])
	p.Put(out[2])
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.c.Write(bg, out[1], 0).Err(); !errors.Is(err, ErrRange) {
		t.Fatalf("a write from a closed pool: %v", err)
	}
	if _, err := p.Get(); err == nil {
		t.Fatal("Get from a closed pool")
	}
}

// SetMax bounds a pool's growth; Device.Close releases a pool with buffers out.
func TestPoolMax(t *testing.T) {
	r := newRig(t, Config{})
	p, err := r.dev.NewPool(64, 4)
	if err != nil {
		t.Fatal(err)
	}
	p.SetMax(6)
	var out []Buffer
	for range 6 {
		b, err := p.Get()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	if p.Registrations() != 2 {
		t.Fatalf("%d registrations, want 2 (4 buffers, then the 2 left under the bound)", p.Registrations())
	}
	if _, err := p.Get(); !errors.Is(err, ErrPoolExhausted) {
		t.Fatalf("a Get past the bound: %v", err)
	}
	p.Put(out[5])
	if b, err := p.Get(); err != nil || b != out[5] {
		t.Fatalf("a Get after a Put: %v", err)
	}
	p.SetMax(0)
	if _, err := p.Get(); err != nil || p.Registrations() != 3 {
		t.Fatalf("a Get with no bound: %v, %d registrations", err, p.Registrations())
	}
	if err := r.dev.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.c.Write(bg, out[0], 0).Err(); !errors.Is(err, ErrClosed) {
		t.Fatalf("a write after the device closed: %v", err)
	}
	if !out[0].m.closed.Load() {
		t.Fatal("Device.Close left a pool with buffers out registered")
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

// The server going away fails what is in flight with the server's word.
func TestServerShutdown(t *testing.T) {
	r := newRig(t, Config{})
	r.f.Hold()
	op := r.c.Write(bg, r.buf(t, 8, 1), 0)
	r.lo.Close()
	// The op resolves through its QP's error state: flushed, the NIC done with it.
	err := op.Wait(bg)
	if ce := completionError(t, err); ce.Status != "IBV_WC_WR_FLUSH_ERR" || !strings.Contains(err.Error(), "shutting down") {
		t.Fatalf("an op when the server shut down: %v", err)
	}
	if err := r.c.Write(bg, r.buf(t, 8, 1), 0).Err(); err == nil || !strings.Contains(err.Error(), "shutting down") {
		t.Fatalf("a post after the server left: %v", err)
	}
	if err := r.c.Close(); err == nil {
		t.Fatal("Close after the server left reported no error")
	}
}

func TestDeviceCloseClosesConns(t *testing.T) {
	r := newRig(t, Config{})
	src := r.buf(t, 8, 1)
	r.dev.Close()
	if err := r.c.Write(bg, src, 0).Err(); !errors.Is(err, ErrClosed) {
		t.Fatalf("a post after the device closed: %v", err)
	}
	if _, err := r.dev.NewPool(8, 1); !errors.Is(err, ErrDeviceClosed) {
		t.Fatalf("NewPool on a closed device: %v", err)
	}
	if _, err := r.dev.Dial(bg, r.addr, Config{Size: 8}); !errors.Is(err, ErrDeviceClosed) {
		t.Fatalf("Dial on a closed device: %v", err)
	}
}

// The region is held past the server's silence limit (3 s) because the client beats.
func TestBeatsHoldTheRegion(t *testing.T) {
	if testing.Short() {
		t.Skip("holds a region for 3.5 s")
	}
	r := newRig(t, Config{})
	time.Sleep(3500 * time.Millisecond)
	if err := r.c.Write(bg, r.buf(t, 8, 1), 0).Wait(bg); err != nil {
		t.Fatal(err)
	}
	if err := r.c.Close(); err != nil || r.c.Digest() == "" {
		t.Fatalf("Close: %v, digest %q", err, r.c.Digest())
	}
}
