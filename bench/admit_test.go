package bench

import (
	"context"
	"log"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/oob"
	"github.com/rdmabench/rdmabench/result"
)

func TestHandshakesCutTheOldestNotTheNewest(t *testing.T) {
	var a admission
	var conns []net.Conn
	for i := 0; i < maxPreAuth+3; i++ {
		c, peer := net.Pipe()
		defer peer.Close()
		conns = append(conns, c)
		a.handshake(c)
	}
	// The three oldest were closed to make room; the newest are pending.
	for i, c := range conns {
		c.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
		_, err := c.Read(make([]byte, 1))
		closed := err != nil && !isTimeout(err)
		if closed != (i < 3) {
			t.Fatalf("connection %d: closed %v (%v)", i, closed, err)
		}
	}
	if len(a.pending) != maxPreAuth {
		t.Fatalf("%d pending, want %d", len(a.pending), maxPreAuth)
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

func TestSessionsAreCappedPerSourceAndInAll(t *testing.T) {
	var a admission
	var releases []func()
	for i := 0; i < maxSessionsPerSource; i++ {
		r, ok := a.session("192.0.2.1")
		if !ok {
			t.Fatalf("session %d refused", i)
		}
		releases = append(releases, r)
	}
	if _, ok := a.session("192.0.2.1"); ok {
		t.Fatal("one source got more than its share")
	}
	releases[0]()
	if _, ok := a.session("192.0.2.1"); !ok {
		t.Fatal("a released session must make room")
	}
	for i := 0; a.sessions < maxSessions; i++ {
		if _, ok := a.session(net.IPv4(198, 51, 100, byte(i)).String()); !ok {
			t.Fatalf("refused below the total cap at %d", a.sessions)
		}
	}
	if _, ok := a.session("203.0.113.9"); ok {
		t.Fatal("the total cap must hold")
	}
	v6a := &net.TCPAddr{IP: net.ParseIP("2001:db8:1:2::1")}
	v6b := &net.TCPAddr{IP: net.ParseIP("2001:db8:1:2:ffff::7")}
	if sourceOf(v6a) != sourceOf(v6b) || sourceOf(&net.TCPAddr{IP: net.ParseIP("10.0.0.2")}) != "10.0.0.2" {
		t.Fatalf("sources: %s %s", sourceOf(v6a), sourceOf(v6b))
	}
}

func TestLogLinesFromUnauthenticatedPeersAreBounded(t *testing.T) {
	var l logLimit
	n := 0
	for i := 0; i < 1000; i++ {
		if ok, _ := l.allow(); ok {
			n++
		}
	}
	if n != logBurst {
		t.Fatalf("%d lines let through in a burst, want %d", n, logBurst)
	}
	l.window = time.Now().Add(-2 * time.Second)
	if ok, dropped := l.allow(); !ok || dropped != 1000-logBurst {
		t.Fatalf("the next second: ok %v, dropped %d", ok, dropped)
	}
}

// A shutdown does not wait for a client sitting at the token challenge, and does not
// count against it.
func TestShutdownDuringTheChallenge(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sv := &Server{Token: "s3cret", Timeout: 20 * time.Second, Log: log.New(&testWriter{t}, "", 0)}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- sv.Serve(ctx, l) }()
	nc, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	c := oob.NewConn(nc, 5*time.Second)
	c.Send(oob.Msg{Type: oob.THello, Hello: &oob.Hello{Proto: oob.Version, Device: result.Device{Name: "x"}}})
	if m, err := c.Recv(5 * time.Second); err != nil || m.Type != oob.TChallenge {
		t.Fatalf("want a challenge, got %+v %v", m, err)
	}
	start := time.Now()
	cancel()
	select {
	case <-served:
	case <-time.After(5 * time.Second):
		t.Fatal("Serve waited for a silent handshake")
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("shutdown took %v", d)
	}
	if w := sv.auth.wait("127.0.0.1"); w != 0 {
		t.Fatalf("a shutdown counted as a failed attempt: wait %v", w)
	}
}

type testWriter struct{ t *testing.T }

func (w *testWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }

func TestPreAuthFramesAreSmall(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	c := oob.NewConn(a, time.Second)
	c.Limit = preAuthLimit
	go b.Write([]byte{'R', 'D', 'M', 'B', 0, oob.Version, 0, 1, 0, 0}) // claims 64 KiB
	if _, err := c.Recv(time.Second); err == nil || !strings.Contains(err.Error(), "16384-byte limit") {
		t.Fatalf("a 64 KiB frame before authentication: %v", err)
	}
}
