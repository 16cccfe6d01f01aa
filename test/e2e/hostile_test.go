//go:build e2e

package e2e

// Hostile peers against a real server in the bed: a flood of silent and half-open
// handshakes from one address beside a real client from another, guesses from one
// address, and a shutdown during a bidirectional warm-up.

import (
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/oob"
	"github.com/rdmabench/rdmabench/result"
)

// otherAddress is an IPv4 address of this host that connections to addr do not leave
// from by default (the bed's routes decide which of its two addresses they do): the
// flood's source, apart from the real client's.
func otherAddress(t *testing.T, addr string) string {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	src := nc.LocalAddr().(*net.TCPAddr).IP
	nc.Close()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.Equal(src) {
			return n.IP.String()
		}
	}
	t.Skipf("no IPv4 address of this host other than %s", src)
	return ""
}

func dialFrom(src, addr string) (net.Conn, error) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	return d.Dial("tcp", addr)
}

// While one address floods the server with silent and half-open handshakes, every
// handshake of a real client from another address succeeds, and so does a measurement;
// then guesses from the flooding address are answered one at a time.
func TestHandshakeFloodAndGuesses(t *testing.T) {
	needPair(t)
	const tok = "s3cret"
	s := spawnServer(t, "--token", tok, "--timeout", "10s")
	addr := net.JoinHostPort(srvIP, fmt.Sprint(s.port))
	flooder := otherAddress(t, addr)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var flooded atomic.Int64
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var held []net.Conn
			defer func() {
				for _, nc := range held {
					nc.Close()
				}
			}()
			for i := 0; i < 100000; i++ { // bounded; stop ends it first
				select {
				case <-stop:
					return
				default:
				}
				nc, err := dialFrom(flooder, addr)
				if err != nil {
					time.Sleep(10 * time.Millisecond)
					continue
				}
				flooded.Add(1)
				if (g+i)%2 == 1 {
					oob.NewConn(nc, time.Second).Send(oob.Msg{Type: oob.THello, Hello: &oob.Hello{Proto: oob.Version}})
				}
				if held = append(held, nc); len(held) > 16 {
					held[0].Close()
					held = held[1:]
				}
				time.Sleep(5 * time.Millisecond) // a steady flood, not one that starves the bed's CPUs
			}
		}()
	}
	var failed []string
	for i := range 10 {
		nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			failed = append(failed, err.Error())
			continue
		}
		c := oob.NewConn(nc, 10*time.Second)
		if _, err := oob.Handshake(c, result.Device{Name: "e2e"}, tok); err != nil {
			failed = append(failed, fmt.Sprintf("handshake %d: %v", i, err))
		} else {
			c.Send(oob.Msg{Type: oob.TBye})
		}
		nc.Close()
	}
	r := measure(t, client("write", "bw", srvDev, s.port, "-s", "4K", "-n", "100", "--token", tok)...)
	close(stop)
	wg.Wait()
	t.Logf("10 handshakes and a %.3f Gb/s run beside %d flood connections from %s", r.BWGbps, flooded.Load(), flooder)
	if len(failed) > 0 {
		t.Fatalf("%d of 10 handshakes of a real client failed during the flood: %s", len(failed), strings.Join(failed, "; "))
	}
	if flooded.Load() < 32 {
		t.Fatalf("the flood opened only %d connections", flooded.Load())
	}

	// Guesses: every hello first, then wrong proofs; the challenges come one at a
	// time, each after the back-off of the failure before it.
	var mu sync.Mutex
	var challenged []time.Time
	proveAfter := time.Now().Add(time.Second)
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nc, err := dialFrom(flooder, addr)
			if err != nil {
				return
			}
			defer nc.Close()
			c := oob.NewConn(nc, 20*time.Second)
			c.Send(oob.Msg{Type: oob.THello, Hello: &oob.Hello{Proto: oob.Version}})
			if m, err := c.Recv(20 * time.Second); err != nil || m.Type != oob.TChallenge {
				return
			}
			mu.Lock()
			challenged = append(challenged, time.Now())
			mu.Unlock()
			time.Sleep(time.Until(proveAfter))
			c.Send(oob.Msg{Type: oob.TAuth, Auth: &oob.Auth{Nonce: oob.NewNonce(), Proof: make([]byte, 32)}})
			c.Recv(20 * time.Second)
		}()
	}
	wg.Wait()
	if len(challenged) < 3 {
		t.Fatalf("%d of 6 guessing connections were challenged: want them in turn", len(challenged))
	}
	for k := 1; k < len(challenged); k++ {
		if gap := challenged[k].Sub(challenged[k-1]); gap < 50*time.Millisecond<<(k-1) {
			t.Fatalf("challenge %d came %v after the one before: two guesses from one address in flight", k, gap)
		}
	}
}

// SIGTERM during the server's warm-up of a bidirectional test ends the server within
// 2 s, and the client is told why (finding 3 of the hostile-peers review).
func TestSIGTERMDuringBidirectionalWarmup(t *testing.T) {
	needDevice(t)
	const tok = "s3cret"
	s := spawnServer(t, "--token", tok, "--timeout", "10s")
	var took time.Duration
	term := func() {
		time.Sleep(3 * time.Second)
		start := time.Now()
		s.cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { s.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
		}
		took = time.Since(start)
	}
	r := runFailing(t, 60*time.Second, term, client("write", "bw", srvDev, s.port, "-b", "-s", "4K", "--warmup", "100000000", "-n", "10", "--token", tok, "--timeout", "10s")...)
	if took > 2*time.Second {
		t.Fatalf("the server took %v to end after SIGTERM during a bidirectional warm-up", took)
	}
	if !strings.Contains(r.Error, "shutting down") {
		t.Fatalf("the client was not told the server is shutting down: %s", r.Error)
	}
	t.Logf("server ended %v after SIGTERM; the client: %s", took.Round(time.Millisecond), r.Error)
}

// --peer-gid-check: the server takes an endpoint whose GID is the address the control
// connection came from, and refuses one that names another. Which of the bed's two
// addresses a connection to the server leaves from depends on the bed's routes (tests
// that take a netdev down and up change them), so the test asks first, with a dial of
// its own, and expects the device of that address to pass and the other to be refused.
func TestPeerGIDCheck(t *testing.T) {
	needPair(t)
	p := startServer(t, "--peer-gid-check")
	nc, err := net.DialTimeout("tcp", net.JoinHostPort(srvIP, fmt.Sprint(p)), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	src := nc.LocalAddr().(*net.TCPAddr).IP.String()
	nc.Close()
	pass, refused := cliDev, srvDev // the two-device shape: rxe1 is 10.0.0.2
	if src == srvIP {
		pass, refused = srvDev, cliDev
	}
	r := measure(t, client("write", "bw", pass, p, "-s", "4K", "-n", "100")...)
	t.Logf("connections leave from %s: %s, whose GID that is, %.3f Gb/s", src, pass, r.BWGbps)
	out, code := run(t, client("write", "bw", refused, p, "-s", "4K", "-n", "100")...)
	if code != 1 || !strings.Contains(out, "--peer-gid-check") {
		t.Fatalf("%s, whose GID is not the connection's address (%s): exit %d\n%s", refused, src, code, out)
	}
}
