package bench

import (
	"bytes"
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/oob"
	"github.com/rdmabench/rdmabench/result"
)

// tap records every byte that crosses a connection.
type tap struct {
	net.Conn
	mu  *sync.Mutex
	buf *bytes.Buffer
}

func (t tap) Write(p []byte) (int, error) {
	t.mu.Lock()
	t.buf.Write(p)
	t.mu.Unlock()
	return t.Conn.Write(p)
}

// shake runs the server's and the client's handshakes against each other over a pipe.
func shake(t *testing.T, serverToken, clientToken string) (srvErr, cliErr error, wire string) {
	t.Helper()
	a, b := net.Pipe()
	var mu sync.Mutex
	var buf bytes.Buffer
	sv := &Server{Token: serverToken, me: result.Device{Name: "rxe0"}}
	done := make(chan error, 1)
	go func() {
		_, err := sv.handshake(context.Background(), oob.NewConn(tap{a, &mu, &buf}, 2*time.Second), a.RemoteAddr(), nil)
		a.Close()
		done <- err
	}()
	h, err := oob.Handshake(oob.NewConn(tap{b, &mu, &buf}, 2*time.Second), result.Device{Name: "rxe1", Host: "client"}, clientToken)
	if err == nil && h.Device.Name != "rxe0" {
		t.Errorf("the client got the server's hello wrong: %+v", h)
	}
	b.Close()
	srvErr = <-done
	mu.Lock()
	defer mu.Unlock()
	return srvErr, err, buf.String()
}

func TestHandshakeProvesTheTokenWithoutSendingIt(t *testing.T) {
	const tok = "correct horse battery staple"
	srv, cli, wire := shake(t, tok, tok)
	if srv != nil || cli != nil {
		t.Fatalf("same token: server %v, client %v", srv, cli)
	}
	if strings.Contains(wire, tok) || strings.Contains(wire, "horse") {
		t.Fatalf("the token crossed the wire: %q", wire)
	}
	if srv, cli, _ := shake(t, "", ""); srv != nil || cli != nil {
		t.Fatalf("no token on either side: server %v, client %v", srv, cli)
	}
}

func TestHandshakeRefusals(t *testing.T) {
	for _, tc := range []struct {
		name, server, client string
		cliWants             string
	}{
		{"wrong token", "s3cret", "guess", "authentication failed"},
		{"client without a token", "s3cret", "", "requires a token"},
		{"server without a token", "", "s3cret", "requires no token"},
	} {
		srv, cli, wire := shake(t, tc.server, tc.client)
		if cli == nil || !strings.Contains(cli.Error(), tc.cliWants) {
			t.Errorf("%s: client error %v, want %q", tc.name, cli, tc.cliWants)
		}
		if tc.server != "" && srv == nil {
			t.Errorf("%s: the server accepted", tc.name)
		}
		if tc.client != "" && strings.Contains(wire, tc.client) {
			t.Errorf("%s: the client's token crossed the wire", tc.name)
		}
	}
}

// Before authentication nothing the peer sent is echoed back: no reflected text, no
// forged log lines.
func TestPreAuthEchoesNothing(t *testing.T) {
	for name, m := range map[string]oob.Msg{
		"error frame":  {Type: oob.TError, Error: "evil\nrdmabench server: forged line"},
		"unknown type": {Type: "evil\ntype"},
	} {
		a, b := net.Pipe()
		sv := &Server{}
		go func() {
			sv.handshake(context.Background(), oob.NewConn(a, time.Second), a.RemoteAddr(), nil)
			a.Close()
		}()
		cc := oob.NewConn(b, time.Second)
		if err := cc.Send(m); err != nil {
			t.Fatal(err)
		}
		_, err := cc.Recv(time.Second)
		b.Close()
		if err == nil || strings.Contains(err.Error(), "evil") || !strings.Contains(err.Error(), "expected an rdmabench hello") {
			t.Errorf("%s: the server answered %v", name, err)
		}
	}
}

func TestFailedAuthenticationSlowsTheSourceDown(t *testing.T) {
	var f failures
	var last time.Duration
	for i := 1; i <= 12; i++ {
		d := f.failed("192.0.2.7")
		if d < last || d > 10*time.Second {
			t.Fatalf("failure %d: delay %v after %v", i, d, last)
		}
		last = d
	}
	if last != 10*time.Second || failDelay(1) != 100*time.Millisecond || failDelay(2) != 200*time.Millisecond {
		t.Fatalf("delays: first %v, second %v, last %v", failDelay(1), failDelay(2), last)
	}
	if d := f.failed("192.0.2.8"); d != 100*time.Millisecond {
		t.Fatalf("another source starts afresh, got %v", d)
	}
	f.succeeded("192.0.2.7")
	if d := f.failed("192.0.2.7"); d != 100*time.Millisecond {
		t.Fatalf("a success forgives, got %v", d)
	}
}
