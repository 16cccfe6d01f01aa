package bench

import (
	"context"
	"fmt"
	"log"
	"net"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/oob"
	"github.com/rdmabench/rdmabench/result"
)

// serveToken starts a server with a token on 127.0.0.1 and returns its address.
func serveToken(t *testing.T, token string, timeout time.Duration) (*Server, string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sv := &Server{Token: token, Timeout: timeout, Log: log.New(&testWriter{t}, "", 0)}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- sv.Serve(ctx, l) }()
	t.Cleanup(func() { cancel(); <-served })
	return sv, l.Addr().String()
}

// dialFrom connects to addr from the loopback address src (127.0.0.0/8 is all this
// host's), so that one test plays several source addresses.
func dialFrom(src, addr string) (net.Conn, error) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 2 * time.Second}
	return d.Dial("tcp", addr)
}

// Finding 1 of the hostile-peers review: four goroutines opening silent connections
// from one address made a third of a real client's handshakes fail, and the cuts were
// counted as failed guesses against the client's address. Now the flood cuts only its
// own connections.
func TestFloodFromOneAddressNeverFailsARealClient(t *testing.T) {
	const tok = "s3cret"
	sv, addr := serveToken(t, tok, 10*time.Second)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var flooded atomic.Int64
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var held []net.Conn // the newest 16, held open (silent) until cut or closed
			defer func() {
				for _, nc := range held {
					nc.Close()
				}
			}()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				nc, err := dialFrom("127.0.0.2", addr)
				if err != nil {
					continue
				}
				flooded.Add(1)
				if (g+i)%2 == 1 { // half of them get as far as the challenge and sit there
					c := oob.NewConn(nc, time.Second)
					c.Send(oob.Msg{Type: oob.THello, Hello: &oob.Hello{Proto: oob.Version}})
				}
				if held = append(held, nc); len(held) > 16 {
					held[0].Close()
					held = held[1:]
				}
			}
		}()
	}
	deadline := time.Now().Add(3 * time.Second)
	var ok, failed int
	var firstErr error
	for time.Now().Before(deadline) || ok < 20 {
		nc, err := dialFrom("127.0.0.1", addr)
		if err != nil {
			t.Fatal(err)
		}
		c := oob.NewConn(nc, 5*time.Second)
		if _, err := oob.Handshake(c, result.Device{Name: "client"}, tok); err != nil {
			failed++
			if firstErr == nil {
				firstErr = err
			}
		} else {
			ok++
			c.Send(oob.Msg{Type: oob.TBye})
		}
		nc.Close()
		if ok+failed > 2000 {
			break
		}
	}
	close(stop)
	wg.Wait()
	t.Logf("%d handshakes of the real client, %d failed; %d flood connections", ok+failed, failed, flooded.Load())
	if failed > 0 {
		t.Fatalf("%d of %d handshakes of a real client failed during a flood from another address; first: %v", failed, ok+failed, firstErr)
	}
	if flooded.Load() < 4*maxPreAuthPerSource {
		t.Fatalf("the flood opened only %d connections: it did not reach the limits it tests", flooded.Load())
	}
	if w := sv.auth.wait("127.0.0.1"); w != 0 {
		t.Fatalf("the real client's address is held back %v", w)
	}
	if w := sv.auth.wait("127.0.0.2"); w != 0 {
		t.Fatalf("cut connections that proved nothing were counted as guesses: 127.0.0.2 held back %v", w)
	}
}

// Finding 2: forty connections from one address each got a challenge and answered
// together, all forty proofs checked in one round. Now one challenge is in flight per
// address, and each proof waits for the address's back-off.
func TestGuessesGoOneAtATime(t *testing.T) {
	_, addr := serveToken(t, "s3cret", 2*time.Second)
	type span struct {
		challenged, answered time.Time
		answer               string
	}
	const n = maxPreAuthPerSource // all pending at once, none cut for the address's share
	spans := make([]span, n)
	// Every hello is read before the first proof goes: then no connection meets the
	// back-off at its hello (told "retry in"), and all wait for their turn.
	proveAfter := time.Now().Add(300 * time.Millisecond)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nc, err := dialFrom("127.0.0.3", addr)
			if err != nil {
				spans[i].answer = err.Error()
				return
			}
			defer nc.Close()
			c := oob.NewConn(nc, 10*time.Second)
			c.Send(oob.Msg{Type: oob.THello, Hello: &oob.Hello{Proto: oob.Version}})
			m, err := c.Recv(10 * time.Second)
			if err != nil || m.Type != oob.TChallenge {
				spans[i].answer = fmt.Sprint(m.Type, " ", err)
				return
			}
			spans[i].challenged = time.Now()
			time.Sleep(time.Until(proveAfter))
			c.Send(oob.Msg{Type: oob.TAuth, Auth: &oob.Auth{Nonce: oob.NewNonce(), Proof: make([]byte, 32)}})
			_, err = c.Recv(10 * time.Second)
			spans[i].answered, spans[i].answer = time.Now(), fmt.Sprint(err)
		}()
	}
	wg.Wait()
	var got []span
	for _, s := range spans {
		switch {
		case !s.challenged.IsZero():
			if !strings.Contains(s.answer, "authentication failed") {
				t.Fatalf("a wrong proof was answered %q", s.answer)
			}
			got = append(got, s)
		case strings.Contains(s.answer, "still proving its token") || strings.Contains(s.answer, "retry in"):
		default:
			t.Fatalf("a connection was neither challenged nor told to wait its turn: %q", s.answer)
		}
	}
	sort.Slice(got, func(i, j int) bool { return got[i].challenged.Before(got[j].challenged) })
	if len(got) < 3 {
		t.Fatalf("only %d of %d connections were challenged in turn", len(got), n)
	}
	for k := 1; k < len(got); k++ {
		// Challenge k waits for proof k-1's answer, itself held back failDelay(k) (half
		// of it is slack for the clients' goroutines noting their times late).
		if got[k].challenged.Sub(got[k-1].challenged) < failDelay(k)/2 {
			t.Fatalf("challenge %d came %v after challenge %d: two guesses from one address in flight", k, got[k].challenged.Sub(got[k-1].challenged), k-1)
		}
		// The answer to the k-th wrong proof waits the k-th back-off (less timer slack).
		if d := got[k].answered.Sub(got[k].challenged); d < failDelay(k+1)-20*time.Millisecond {
			t.Fatalf("wrong proof %d answered after %v, want at least %v", k+1, d, failDelay(k+1))
		}
	}
	t.Logf("%d of %d connections challenged, one after another", len(got), n)
}

// Many real clients from one address at once (incast from one host, the Go API's Dial
// in parallel) all get in: their handshakes spoke, so none is cut for the address's
// share, and they take their turns at the token's challenge.
func TestManyClientsFromOneAddressAtOnce(t *testing.T) {
	const tok, n = "s3cret", 32
	_, addr := serveToken(t, tok, 10*time.Second)
	errs := make(chan error, n)
	for range n {
		go func() {
			nc, err := dialFrom("127.0.0.4", addr)
			if err != nil {
				errs <- err
				return
			}
			defer nc.Close()
			c := oob.NewConn(nc, 10*time.Second)
			_, err = oob.Handshake(c, result.Device{Name: "client"}, tok)
			if err == nil {
				c.Send(oob.Msg{Type: oob.TBye})
			}
			errs <- err
		}()
	}
	failed := 0
	for range n {
		if err := <-errs; err != nil {
			failed++
			t.Log(err)
		}
	}
	if failed > 0 {
		t.Fatalf("%d of %d simultaneous real handshakes from one address failed", failed, n)
	}
}
