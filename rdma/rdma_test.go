package rdma

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/rdma/internal/fake"
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
