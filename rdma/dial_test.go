package rdma

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/oob"
	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/verbs/qp"
)

// pipeListener is a listener whose connections are net.Pipes made by its dial.
type pipeListener struct {
	ch   chan net.Conn
	done chan struct{}
	once sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{ch: make(chan net.Conn), done: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error   { l.once.Do(func() { close(l.done) }); return nil }
func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

func (l *pipeListener) dial(ctx context.Context, addr string) (net.Conn, error) {
	a, b := net.Pipe()
	select {
	case l.ch <- b:
		return a, nil
	case <-l.done:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }

// The whole protocol over net.Pipe against rdmabench's server, with a token.
func TestDialPipeWithToken(t *testing.T) {
	lo := NewLoopback()
	defer lo.Close()
	pl := newPipeListener()
	if err := lo.Serve(pl, "s3cret"); err != nil {
		t.Fatal(err)
	}
	dev := lo.Device()
	defer dev.Close()
	pool, _ := dev.NewPool(256, 1)
	buf, _ := pool.Get()
	copy(buf.Bytes(), "over a pipe")
	c, err := dev.Dial(bg, "server", Config{Size: 256, Token: "s3cret", Dial: pl.dial, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if c.Addr() != "server:18600" || c.Len() != 256 || c.Server().Driver != "fake" {
		t.Fatalf("addr %q, len %d, server %+v", c.Addr(), c.Len(), c.Server())
	}
	if err := c.Write(bg, buf, 0).Wait(bg); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if c.Digest() == "" {
		t.Fatal("no digest")
	}
	for _, token := range []string{"wrong", ""} {
		_, err := dev.Dial(bg, "server", Config{Size: 256, Token: token, Dial: pl.dial, Timeout: 2 * time.Second})
		if err == nil || !strings.Contains(err.Error(), "authentication failed") {
			t.Fatalf("token %q: %v", token, err)
		}
	}
}

// The server's refusal reaches the caller in its words (the server's own refusals are
// bench's to test).
func TestDialRefused(t *testing.T) {
	dev := NewLoopback().Device()
	defer dev.Close()
	refusal := "the plan needs 8192 bytes of buffer and queues on the server, above its --max-buffer of 4096 bytes"
	_, err := dev.Dial(bg, "server", Config{Size: 8192, Dial: fakeServer(t, func(c *oob.Conn, plan *result.Config) {
		c.SendError(errors.New(refusal))
	})})
	var pe *oob.PeerError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "refused a region of 8192 bytes") || !strings.Contains(err.Error(), refusal) {
		t.Fatalf("want the server's refusal, got %v", err)
	}
}

// fakeServer speaks the protocol by hand: the test checks each message of the contract.
func fakeServer(t *testing.T, answer func(c *oob.Conn, plan *result.Config)) func(ctx context.Context, addr string) (net.Conn, error) {
	return func(ctx context.Context, addr string) (net.Conn, error) {
		a, b := net.Pipe()
		go fakeServe(t, b, func(c *oob.Conn, _ *oob.Hello, plan *result.Config) { answer(c, plan) })
		return a, nil
	}
}

// fakeServe is fakeServer's side of the protocol on b: it takes the client's hello,
// answers it, and hands the hello and the plan to answer.
func fakeServe(t *testing.T, b net.Conn, answer func(c *oob.Conn, hello *oob.Hello, plan *result.Config)) {
	defer b.Close()
	c := oob.NewConn(b, 2*time.Second)
	h, err := c.Expect(oob.THello)
	if err != nil {
		t.Errorf("server: %v", err)
		return
	}
	c.Send(oob.Msg{Type: oob.THello, Hello: &oob.Hello{Proto: oob.Version, Tool: "fake"}})
	m, err := c.Expect(oob.TPlan)
	if err != nil {
		t.Errorf("server: %v", err)
		return
	}
	answer(c, h.Hello, m.Plan)
}

func TestDialPlan(t *testing.T) {
	dev := NewLoopback().Device()
	defer dev.Close()
	var got result.Config
	_, err := dev.Dial(bg, "h", Config{Size: 12345, QPs: 2, SQDepth: 32, Dial: fakeServer(t, func(c *oob.Conn, plan *result.Config) {
		got = *plan
		c.SendError(errors.New("too big for me"))
	})})
	want := result.Config{Op: "write", Test: result.Region, MsgSizeBytes: 12345, NumQPs: 2, SQDepth: 32, PCIeRelaxedOrdering: true}
	if got != want {
		t.Fatalf("plan %+v, want %+v", got, want)
	}
	if err == nil || !strings.Contains(err.Error(), "too big for me") {
		t.Fatalf("want the server's error, got %v", err)
	}
}

// A server that offers less than asked for is refused.
func TestDialShortRegion(t *testing.T) {
	dev := NewLoopback().Device()
	defer dev.Close()
	_, err := dev.Dial(bg, "h", Config{Size: 4096, Dial: fakeServer(t, func(c *oob.Conn, plan *result.Config) {
		c.Send(oob.Msg{Type: oob.TEndpoint, Endpoint: &qp.Endpoint{QPNs: []uint32{1}, PSNs: []uint32{1}, Len: 100}})
		c.Recv(time.Second)
	})})
	if err == nil || !strings.Contains(err.Error(), "not the 1 QPs and 4096 bytes") {
		t.Fatalf("want the short region refused, got %v", err)
	}
}

// Cancelling Dial's context cuts a silent server short.
func TestDialCancel(t *testing.T) {
	dev := NewLoopback().Device()
	defer dev.Close()
	ctx, cancel := context.WithTimeout(bg, 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := dev.Dial(ctx, "h", Config{Size: 1, Dial: func(ctx context.Context, addr string) (net.Conn, error) {
		a, b := net.Pipe()
		go io.Copy(io.Discard, b) // reads the hello, never answers
		return a, nil
	}})
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 2*time.Second {
		t.Fatalf("Dial: %v after %v", err, time.Since(start))
	}
}

func TestDialUnreachable(t *testing.T) {
	dev := NewLoopback().Device()
	defer dev.Close()
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := l.Addr().String()
	l.Close()
	if _, err := dev.Dial(bg, addr, Config{Size: 1}); err == nil || !strings.Contains(err.Error(), "cannot reach") {
		t.Fatalf("want cannot reach, got %v", err)
	}
}

func TestConfigChecked(t *testing.T) {
	dev := NewLoopback().Device()
	defer dev.Close()
	for _, cfg := range []Config{{}, {Size: 1<<31 + 1}, {Size: 1, QPs: -1}, {Size: 1, SQDepth: 4, SignalEvery: 5},
		{Size: 1, SL: 16}, {Size: 1, SL: -1}, {Size: 1, TrafficClass: 256}, {Size: 1, TrafficClass: -1}} {
		if _, err := dev.Dial(bg, "h", cfg); err == nil {
			t.Errorf("%+v: no error", cfg)
		}
	}
}

func TestOpen(t *testing.T) {
	_, err := Open("no-such-device", 1, -1)
	if err == nil {
		t.Fatal("opened a device that does not exist")
	}
	if !cgoVerbs && !errors.Is(err, ErrUnsupported) {
		t.Fatalf("without cgo: %v, want ErrUnsupported", err)
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

// Parallel Dials from one process (one address) with a token all get in: the server
// lets them take turns at its challenge rather than cutting them as a flood.
func TestParallelDialsWithAToken(t *testing.T) {
	lo := NewLoopback()
	defer lo.Close()
	addr, err := lo.Listen("s3cret")
	if err != nil {
		t.Fatal(err)
	}
	dev := lo.Device()
	defer dev.Close()
	const n = 16
	errs := make(chan error, n)
	for range n {
		go func() {
			c, err := dev.Dial(bg, addr, Config{Size: 64, Token: "s3cret"})
			if err == nil {
				err = c.Close()
			}
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Errorf("a parallel Dial: %v", err)
		}
	}
}
