package rdma

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/rdma/internal/provider"
	"github.com/rdmabench/rdmabench/verbs"
)

// wprov wraps a provider to watch, and to bend, what package rdma does with it.
type wprov struct {
	provider.Provider
	onSess func(*wsess)
	open   *atomic.Int64 // sessions not closed
	early  *atomic.Bool  // the provider closed while a session was open
}

func newWprov(p provider.Provider, onSess func(*wsess)) wprov {
	return wprov{Provider: p, onSess: onSess, open: new(atomic.Int64), early: new(atomic.Bool)}
}

func (p wprov) NewSession(s verbs.Spec) (provider.Session, error) {
	in, err := p.Provider.NewSession(s)
	if err != nil {
		return nil, err
	}
	p.open.Add(1)
	w := &wsess{Session: in, open: p.open}
	if p.onSess != nil {
		p.onSess(w)
	}
	return w, nil
}

func (p wprov) Close() error {
	if p.open.Load() > 0 {
		p.early.Store(true)
	}
	return p.Provider.Close()
}

type wsess struct {
	provider.Session
	open      *atomic.Int64
	closed    atomic.Bool
	failed    atomic.Int64 // Fail calls
	onClose   func()
	partial   atomic.Int64 // the next post list of more than one WR: the QP takes this many, then ENOMEM
	failCover atomic.Bool  // a post of a zero-length WR fails
}

func (s *wsess) Close() error {
	if s.onClose != nil {
		s.onClose()
	}
	if !s.closed.Swap(true) {
		s.open.Add(-1)
	}
	return s.Session.Close()
}

func (s *wsess) Fail(qp int) error {
	s.failed.Add(1)
	return s.Session.Fail(qp)
}

func (s *wsess) Post(qp, n int) (int, error) {
	if n == 1 && s.WRs()[0].Len == 0 && s.failCover.Load() {
		return 0, &verbs.VerbError{Verb: "ibv_post_send", Err: syscall.ENOMEM}
	}
	if k := s.partial.Load(); n > 1 && k > 0 && s.partial.CompareAndSwap(k, 0) {
		got, _ := s.Session.Post(qp, int(k))
		return got, &verbs.VerbError{Verb: "ibv_post_send", Err: syscall.ENOMEM}
	}
	return s.Session.Post(qp, n)
}

// wrig is a loopback server and a device over a wrapped provider.
type wrig struct {
	lo   *Loopback
	addr string
	p    wprov
	dev  *Device
	pool *Pool
	ws   *wsess // the last session made
}

func newWrig(t *testing.T) *wrig {
	t.Helper()
	r := &wrig{lo: NewLoopback()}
	var err error
	if r.addr, err = r.lo.Listen(""); err != nil {
		t.Fatal(err)
	}
	r.p = newWprov(r.lo.f.Device("w"), func(s *wsess) { r.ws = s })
	r.dev = newDevice(r.p)
	if r.pool, err = r.dev.NewPool(8, 16); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		r.lo.f.Release()
		r.dev.Close()
		r.lo.Close()
		if v := r.lo.f.Violations(); len(v) > 0 {
			t.Errorf("verbs rules broken: %v", v)
		}
	})
	return r
}

func (r *wrig) buf(t *testing.T, fill byte) Buffer {
	t.Helper()
	b, err := r.pool.Get()
	if err != nil {
		t.Fatal(err)
	}
	for i := range b.Bytes() {
		b.Bytes()[i] = fill
	}
	return b
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

// Close destroys the QPs before it resolves the ops in flight: until then the NIC may
// still write into their buffers.
func TestCloseDestroysQPsFirst(t *testing.T) {
	r := newWrig(t)
	c, err := r.dev.Dial(bg, r.addr, Config{Size: 64})
	if err != nil {
		t.Fatal(err)
	}
	var op *Op
	var early atomic.Bool
	r.ws.onClose = func() { early.Store(op.done.Load()) }
	r.lo.f.Hold()
	op = c.Read(bg, r.buf(t, 0), 0)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if early.Load() {
		t.Fatalf("the READ resolved (%v) while its QP lived", op.Err())
	}
	if err := op.Err(); !errors.Is(err, ErrClosed) {
		t.Fatalf("the READ: %v, want ErrClosed", err)
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

// cancelAtReady cancels the dial's context as the server's ready arrives.
type cancelAtReady struct {
	net.Conn
	cancel func()
}

func (c *cancelAtReady) Read(p []byte) (int, error) {
	k, err := c.Conn.Read(p)
	if k > 0 && strings.Contains(string(p[:k]), `"ready"`) {
		c.cancel()
		time.Sleep(20 * time.Millisecond) // the AfterFunc runs
	}
	return k, err
}

// A dial cancelled at the last moment returns an error and no connection, and tears
// down what it made; it never returns both.
func TestDialCancelAtReady(t *testing.T) {
	r := newWrig(t)
	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	c, err := r.dev.Dial(ctx, r.addr, Config{Size: 64, Dial: func(ctx context.Context, a string) (net.Conn, error) {
		nc, err := net.Dial("tcp", a)
		if err != nil {
			return nil, err
		}
		return &cancelAtReady{Conn: nc, cancel: cancel}, nil
	}})
	if c != nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("Dial: %v and %v, want only the cancellation", c != nil, err)
	}
	if !r.ws.closed.Load() || len(r.dev.conns) != 0 {
		t.Fatalf("session closed %v, %d conns tracked", r.ws.closed.Load(), len(r.dev.conns))
	}
	// The server is free for the next client.
	c, err = r.dev.Dial(bg, r.addr, Config{Size: 64})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
}

// Device.Close during a Dial waits for it, then closes what it made: the device never
// closes under a live session, and a Dial after Close fails with ErrDeviceClosed
// without making one.
func TestDeviceCloseDuringDial(t *testing.T) {
	lo := NewLoopback()
	defer lo.Close()
	addr, err := lo.Listen("")
	if err != nil {
		t.Fatal(err)
	}
	var dev *Device
	var closed sync.WaitGroup
	p := newWprov(lo.f.Device("w"), func(*wsess) {
		closed.Go(func() { dev.Close() })
		time.Sleep(20 * time.Millisecond) // Close runs, or waits
	})
	dev = newDevice(p)
	c, err := dev.Dial(bg, addr, Config{Size: 64})
	closed.Wait()
	switch {
	case err == nil:
		if !c.shut.Load() {
			t.Fatal("Device.Close left the connection open")
		}
	case !errors.Is(err, ErrDeviceClosed):
		t.Fatalf("Dial: %v", err)
	}
	if p.early.Load() {
		t.Fatal("the device closed under a live session")
	}
	sessions := p.open.Load()
	if _, err := dev.Dial(bg, addr, Config{Size: 64}); !errors.Is(err, ErrDeviceClosed) || p.open.Load() != sessions {
		t.Fatalf("Dial on a closed device: %v", err)
	}
}

// Dial and Device.Close at once, many times: no panic, no half-made connection.
func TestDeviceCloseRacesDial(t *testing.T) {
	lo := NewLoopback()
	defer lo.Close()
	addr, err := lo.Listen("")
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		p := newWprov(lo.f.Device("w"), nil)
		dev := newDevice(p)
		var wg sync.WaitGroup
		wg.Go(func() {
			time.Sleep(time.Duration(time.Now().UnixNano()%2000) * time.Microsecond)
			dev.Close()
		})
		c, err := dev.Dial(bg, addr, Config{Size: 64})
		wg.Wait()
		if err == nil {
			c.Close()
		}
		if p.early.Load() || p.open.Load() != 0 {
			t.Fatalf("the device closed under a live session (%d open)", p.open.Load())
		}
	}
}

// stallConn stops the control connection when told: reads and writes block until it
// is closed (a server that stopped reading and answering, its socket buffer full).
type stallConn struct {
	net.Conn
	stall  atomic.Bool
	closed chan struct{}
	once   sync.Once
}

func (c *stallConn) Read(p []byte) (int, error) {
	if c.stall.Load() {
		<-c.closed
		return 0, net.ErrClosed
	}
	return c.Conn.Read(p)
}

func (c *stallConn) Write(p []byte) (int, error) {
	if c.stall.Load() {
		<-c.closed
		return 0, net.ErrClosed
	}
	return c.Conn.Write(p)
}

func (c *stallConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return c.Conn.Close()
}

// Close takes about Config.Timeout at most, whatever the server does.
func TestCloseBounded(t *testing.T) {
	r := newWrig(t)
	var sc *stallConn
	const timeout = 300 * time.Millisecond
	c, err := r.dev.Dial(bg, r.addr, Config{Size: 64, Timeout: timeout, Dial: func(ctx context.Context, a string) (net.Conn, error) {
		nc, err := net.Dial("tcp", a)
		if err != nil {
			return nil, err
		}
		sc = &stallConn{Conn: nc, closed: make(chan struct{})}
		return sc, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond) // a beat goes out
	sc.stall.Store(true)
	start := time.Now()
	closed := make(chan error, 1)
	go func() { closed <- c.Close() }()
	select {
	case err := <-closed:
		if err == nil {
			t.Fatal("Close reported no error with a silent server")
		}
		if d := time.Since(start); d > timeout+200*time.Millisecond {
			t.Fatalf("Close took %v, Timeout is %v", d, timeout)
		}
	case <-time.After(5 * timeout):
		sc.Close()
		t.Fatalf("Close still running after %v (Timeout %v)", 5*timeout, timeout)
	}
}

// The limits of the device are worded for the API, not for rdmabench's command line.
func TestDeviceLimitsWording(t *testing.T) {
	v := verbsProvider{&verbs.Device{Info: verbs.DeviceInfo{Name: "dev0", MaxQPWR: 64, MaxCQE: 100}}}
	for _, spec := range []verbs.Spec{{NumQP: 1, SQDepth: 128, BufSize: 1}, {NumQP: 4, SQDepth: 64, BufSize: 1}} {
		_, err := v.NewSession(spec)
		if err == nil || strings.Contains(err.Error(), "--") || !strings.Contains(err.Error(), "Config.") {
			t.Fatalf("%+v: %v", spec, err)
		}
	}
}
