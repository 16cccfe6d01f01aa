package rdma

import (
	"context"
	"errors"
	"io"
	"log"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/bench"
	"github.com/rdmabench/rdmabench/oob"
	"github.com/rdmabench/rdmabench/result"
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

// The server's refusal reaches the caller in its words.
func TestDialRefused(t *testing.T) {
	f := NewLoopback()
	sv := &bench.Server{Engine: loopEngine{f.f.Device("small")}, MaxBuffer: 4096, Timeout: time.Second, Log: log.New(io.Discard, "", 0)}
	if err := sv.Open(); err != nil {
		t.Fatal(err)
	}
	pl := newPipeListener()
	ctx, cancel := context.WithCancel(bg)
	served := make(chan error)
	go func() { served <- sv.Serve(ctx, pl) }()
	defer func() { cancel(); pl.Close(); <-served }()
	dev := f.Device()
	defer dev.Close()
	_, err := dev.Dial(bg, "server", Config{Size: 8192, Dial: pl.dial})
	var pe *oob.PeerError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "refused a region of 8192 bytes") || !strings.Contains(err.Error(), "--max-buffer") {
		t.Fatalf("want the server's refusal, got %v", err)
	}
}

// fakeServer speaks the protocol by hand: the test checks each message of the contract.
func fakeServer(t *testing.T, answer func(c *oob.Conn, plan *result.Config)) func(ctx context.Context, addr string) (net.Conn, error) {
	return func(ctx context.Context, addr string) (net.Conn, error) {
		a, b := net.Pipe()
		go func() {
			defer b.Close()
			c := oob.NewConn(b, 2*time.Second)
			if _, err := c.Expect(oob.THello); err != nil {
				t.Errorf("server: %v", err)
				return
			}
			c.Send(oob.Msg{Type: oob.THello, Hello: &oob.Hello{Proto: oob.Version, Tool: "fake"}})
			m, err := c.Expect(oob.TPlan)
			if err != nil {
				t.Errorf("server: %v", err)
				return
			}
			answer(c, m.Plan)
		}()
		return a, nil
	}
}

func TestDialPlan(t *testing.T) {
	dev := NewLoopback().Device()
	defer dev.Close()
	var got result.Config
	_, err := dev.Dial(bg, "h", Config{Size: 12345, QPs: 2, SQDepth: 32, Dial: fakeServer(t, func(c *oob.Conn, plan *result.Config) {
		got = *plan
		c.SendError(errors.New("too big for me"))
	})})
	want := result.Config{Op: "write", Test: "region", MsgSizeBytes: 12345, NumQPs: 2, SQDepth: 32}
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
		c.Send(oob.Msg{Type: oob.TEndpoint, Endpoint: &oob.Endpoint{QPNs: []uint32{1}, PSNs: []uint32{1}, Len: 100}})
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
	for _, cfg := range []Config{{}, {Size: 1<<31 + 1}, {Size: 1, QPs: -1}, {Size: 1, SQDepth: 4, SignalEvery: 5}} {
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
