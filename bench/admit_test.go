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

// closed says whether c's other end was closed (cut), without waiting long.
func closed(c net.Conn) bool {
	c.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
	_, err := c.Read(make([]byte, 1))
	return err != nil && !isTimeout(err)
}

// A flood from one address cuts only its own handshakes; at the total limit the cut
// falls on the address holding the most, never on a newcomer from a quiet address.
func TestHandshakesCutTheBusiestSource(t *testing.T) {
	var a admission
	open := func(source string) net.Conn {
		c, peer := net.Pipe()
		t.Cleanup(func() { peer.Close(); c.Close() })
		a.handshake(c, source)
		return c
	}
	var flood []net.Conn
	for range maxPreAuthPerSource + 2 {
		flood = append(flood, open("192.0.2.1"))
	}
	for i, c := range flood {
		if closed(c) != (i < 2) {
			t.Fatalf("flood connection %d: closed %v; want only the 2 oldest cut", i, closed(c))
		}
	}
	// Fill the server from eight more addresses, one handshake short of their share.
	var others []net.Conn
	for len(a.pending) < maxPreAuth {
		src := net.IPv4(198, 51, 100, byte(len(others)%8)).String()
		others = append(others, open(src))
	}
	quiet := open("203.0.113.5") // at the limit: the busiest address pays
	if closed(quiet) {
		t.Fatal("a newcomer from a quiet address was cut")
	}
	if closed(flood[2]) == false {
		t.Fatal("at the total limit the cut must fall on the address holding the most (the flood's oldest)")
	}
	for i, c := range others {
		if closed(c) {
			t.Fatalf("connection %d of an address below the flood's count was cut", i)
		}
	}
	if len(a.pending) != maxPreAuth || a.preAuth["192.0.2.1"] != maxPreAuthPerSource-1 {
		t.Fatalf("%d pending (want %d), the flood holds %d", len(a.pending), maxPreAuth, a.preAuth["192.0.2.1"])
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
