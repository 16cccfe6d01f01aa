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

// cut says whether the server cut the handshake whose client end is peer: the client
// reads why (an error frame), or the end of the connection, rather than waiting.
func cut(peer net.Conn) bool { return cutWithin(peer, time.Second) }

// kept says the handshake was not cut: nothing comes within a short wait (a cut one's
// error frame is written at once).
func kept(peer net.Conn) bool { return !cutWithin(peer, 20*time.Millisecond) }

func cutWithin(peer net.Conn, d time.Duration) bool {
	peer.SetReadDeadline(time.Now().Add(d))
	_, err := peer.Read(make([]byte, 1))
	return err == nil || !isTimeout(err)
}

// A flood of stalled connections from one address cuts only its own handshakes; at the
// total limit the cut falls on the address holding the most silent ones, never on a
// newcomer from a quiet address, nor on handshakes whose hello came.
func TestHandshakesCutTheBusiestSource(t *testing.T) {
	var a admission
	open := func(source string) (*pendingConn, net.Conn) {
		c, peer := net.Pipe()
		t.Cleanup(func() { peer.Close(); c.Close() })
		return a.handshake(c, source), peer
	}
	var flood []net.Conn
	for range maxPreAuthPerSource + 2 {
		p, peer := open("192.0.2.1")
		p.since = p.since.Add(-stallAfter) // silent for long: stalled
		flood = append(flood, peer)
	}
	for i, peer := range flood[:2] {
		if !cut(peer) {
			t.Fatalf("flood connection %d was not cut: want the 2 oldest cut", i)
		}
	}
	// Fill the server from eight more addresses, one handshake short of their share.
	var others []net.Conn
	for len(a.pending) < maxPreAuth {
		_, peer := open(net.IPv4(198, 51, 100, byte(len(others)%8)).String())
		others = append(others, peer)
	}
	_, quiet := open("203.0.113.5") // at the limit: the busiest address pays
	if !cut(flood[2]) {
		t.Fatal("at the total limit the cut must fall on the address holding the most (the flood's oldest)")
	}
	for i, peer := range append(append([]net.Conn{quiet}, flood[3:]...), others...) {
		if !kept(peer) {
			t.Fatalf("connection %d of the rest was cut", i)
		}
	}
	if n := a.count("192.0.2.1", silent); len(a.pending) != maxPreAuth || n != maxPreAuthPerSource-1 {
		t.Fatalf("%d pending (want %d), the flood holds %d", len(a.pending), maxPreAuth, n)
	}
}

// Handshakes whose hello came do not count against their address's share: a host
// running many clients at once (incast, the Go API's Dial in parallel) is not cut.
func TestHandshakesThatSpokeAreNotCut(t *testing.T) {
	var a admission
	var peers []net.Conn
	for range 3 * maxPreAuthPerSource {
		c, peer := net.Pipe()
		t.Cleanup(func() { peer.Close(); c.Close() })
		a.handshake(c, "192.0.2.9").spokeNow()
		peers = append(peers, peer)
	}
	for i, peer := range peers {
		if !kept(peer) {
			t.Fatalf("handshake %d, which spoke, was cut for its address's share", i)
		}
	}
	if n := a.count("192.0.2.9", silent); len(a.pending) != 3*maxPreAuthPerSource || n != 0 {
		t.Fatalf("%d pending, %d silent", len(a.pending), n)
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
