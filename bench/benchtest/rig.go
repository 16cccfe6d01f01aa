package benchtest

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/bench"
	"github.com/rdmabench/rdmabench/result"
)

// Rig is an rdmabench server and its clients on one fabric, talking over net.Pipe.
type Rig struct {
	Fabric         *Fabric
	Client, Server *Engine
	Srv            *bench.Server

	tb     testing.TB
	l      *pipeListener
	cancel context.CancelFunc
	served chan error
	once   sync.Once
	logMu  sync.Mutex
	logs   bytes.Buffer
}

// NewRig starts a server that serves ops (the client engine is Rig.Client). configure,
// when not nil, sets the server's fields (Token, limits ...) before it opens. The
// server is shut down when the test ends.
func NewRig(tb testing.TB, ops map[string]bench.Op, configure func(*bench.Server)) *Rig {
	tb.Helper()
	f := NewFabric()
	return newRig(tb, f, &Engine{Fabric: f, Name: "fake0"}, "fake1", ops, configure)
}

// NewRigs starts n servers (engines fake1 .. fakeN) on one fabric, with one client
// engine for all of them: the rig of a fan-out / fan-in test.
func NewRigs(tb testing.TB, n int, ops map[string]bench.Op, configure func(*bench.Server)) []*Rig {
	tb.Helper()
	f := NewFabric()
	client := &Engine{Fabric: f, Name: "fake0"}
	var rs []*Rig
	for i := range n {
		rs = append(rs, newRig(tb, f, client, fmt.Sprintf("fake%d", i+1), ops, configure))
	}
	return rs
}

// DialFan connects one client device to every rig's server.
func DialFan(rs []*Rig, token string) (*bench.Fan, error) {
	dev, err := rs[0].Client.Open(bench.Local{})
	if err != nil {
		return nil, err
	}
	var ncs []net.Conn
	var addrs []string
	for i, r := range rs {
		ncs = append(ncs, r.l.dial())
		addrs = append(addrs, fmt.Sprintf("fake-server-%d:18600", i+1))
	}
	return bench.NewFan(ncs, dev, addrs, token, 2*time.Second)
}

func newRig(tb testing.TB, f *Fabric, client *Engine, name string, ops map[string]bench.Op, configure func(*bench.Server)) *Rig {
	r := &Rig{Fabric: f, Client: client, Server: &Engine{Fabric: f, Name: name},
		tb: tb, l: newPipeListener(), served: make(chan error, 1)}
	r.Srv = &bench.Server{Engine: r.Server, Ops: ops, MaxBuffer: 1 << 30, Timeout: 2 * time.Second,
		Log: log.New(logWriter{r}, "", 0)}
	if configure != nil {
		configure(r.Srv)
	}
	if err := r.Srv.Open(); err != nil {
		tb.Fatalf("fake server: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { r.served <- r.Srv.Serve(ctx, r.l) }()
	tb.Cleanup(func() { r.Shutdown() })
	return r
}

// Dial connects a new client with the rig's client engine.
func (r *Rig) Dial(token string) (*bench.Client, error) { return r.DialWith(token, nil) }

// DialWith is Dial with the client's end of the connection wrapped (to inject faults).
func (r *Rig) DialWith(token string, wrap func(net.Conn) net.Conn) (*bench.Client, error) {
	dev, err := r.Client.Open(bench.Local{})
	if err != nil {
		return nil, err
	}
	nc := r.l.dial()
	if wrap != nil {
		nc = wrap(nc)
	}
	return bench.NewClient(nc, dev, "fake-server:18600", token, 2*time.Second)
}

// DialConn connects a raw connection to the server (a client speaking the protocol
// by hand).
func (r *Rig) DialConn() net.Conn { return r.l.dial() }

// CutServer breaks every connection at the server's end, as a crash would.
func (r *Rig) CutServer() { r.l.cut(true) }

// CutClients breaks every connection at the clients' end.
func (r *Rig) CutClients() { r.l.cut(false) }

// Shutdown stops the server as SIGTERM does and waits for Serve to return.
func (r *Rig) Shutdown() {
	r.once.Do(func() {
		r.cancel()
		select {
		case err := <-r.served:
			if err != nil {
				r.tb.Errorf("Serve: %v", err)
			}
		case <-time.After(10 * time.Second):
			r.tb.Errorf("Serve did not return within 10 s of shutdown")
		}
	})
}

// Logs is what the server logged so far.
func (r *Rig) Logs() string {
	r.logMu.Lock()
	defer r.logMu.Unlock()
	return r.logs.String()
}

type logWriter struct{ r *Rig }

func (w logWriter) Write(p []byte) (int, error) {
	w.r.logMu.Lock()
	defer w.r.logMu.Unlock()
	return w.r.logs.Write(p)
}

// pipeListener hands out the server ends of net.Pipe connections.
type pipeListener struct {
	conns  chan net.Conn
	done   chan struct{}
	once   sync.Once
	mu     sync.Mutex
	client []net.Conn
	server []net.Conn
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *pipeListener) dial() net.Conn {
	c, s := net.Pipe()
	l.mu.Lock()
	l.client, l.server = append(l.client, c), append(l.server, s)
	l.mu.Unlock()
	select {
	case l.conns <- s:
	case <-l.done:
		s.Close()
	}
	return c
}

func (l *pipeListener) cut(server bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	cs := l.client
	if server {
		cs = l.server
	}
	for _, c := range cs {
		c.Close()
	}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error   { l.once.Do(func() { close(l.done) }); return nil }
func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }

// TestOp runs every test of op (bandwidth with --verify over 2 QPs, duration mode,
// latency) through a client and a server on the fake engine, and checks that each
// measured something, that the data landed where op says it goes, and that latency
// results have op's kind. bench/write and bench/read test their ops with it.
func TestOp(t *testing.T, op bench.Op) {
	t.Helper()
	name := string(op.Name)
	r := NewRig(t, map[string]bench.Op{name: op}, nil)
	c, err := r.Dial("")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, cfg := range []result.Config{
		{Test: result.BW, Verify: true, Iterations: 200, MsgSizeBytes: 64, NumQPs: 2},
		{Test: result.BW, DurationS: 0.05},
		{Test: result.Lat, Iterations: 100, MsgSizeBytes: 8},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		res, err := c.Run(ctx, op, cfg)
		cancel()
		if err != nil {
			t.Fatalf("%s %s: %v", name, cfg.Test, err)
		}
		if res.Config.Op != name || res.Iterations == 0 || (cfg.Verify && !res.Verify.OK) {
			t.Errorf("%s %s: op %q, %d iterations, verify %+v", name, cfg.Test, res.Config.Op, res.Iterations, res.Verify)
		}
		if cfg.Test == result.Lat && res.LatKind != op.LatKind {
			t.Errorf("%s latency kind %q, want %q", name, res.LatKind, op.LatKind)
		}
	}
}
