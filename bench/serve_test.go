package bench

import (
	"bytes"
	"context"
	"log"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// flaky is a listener whose Accept fails the way a process out of file descriptors does.
type flaky struct {
	net.Listener
	mu    sync.Mutex
	fails int
}

func (l *flaky) Accept() (net.Conn, error) {
	l.mu.Lock()
	if l.fails > 0 {
		l.fails--
		l.mu.Unlock()
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: syscall.EMFILE}
	}
	l.mu.Unlock()
	return l.Listener.Accept()
}

// EMFILE from Accept is backed off and survived; the server still answers afterwards,
// and a cancelled context ends Serve.
func TestServeSurvivesAcceptErrors(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	var mu sync.Mutex
	sv := &Server{Timeout: time.Second, Log: log.New(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return logs.Write(p)
	}), "", 0)}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- sv.Serve(ctx, &flaky{Listener: inner, fails: 5}) }()
	c, err := net.Dial("tcp", inner.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c.Write([]byte("junk that is not a hello"))
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	reply := make([]byte, 512)
	n, _ := c.Read(reply)
	c.Close()
	if !bytes.Contains(reply[:n], []byte("expected an rdmabench hello")) {
		t.Fatalf("after accept errors the server must still answer, got %q", reply[:n])
	}
	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("Serve after cancel: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after its context was cancelled")
	}
	mu.Lock()
	defer mu.Unlock()
	if got := strings.Count(logs.String(), "too many open files"); got != 5 {
		t.Fatalf("want 5 logged accept errors, got %d:\n%s", got, logs.String())
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
