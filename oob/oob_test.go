package oob

import (
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/result"
)

func pair(t *testing.T) (*Conn, net.Conn) {
	a, b := net.Pipe()
	t.Cleanup(func() { a.Close(); b.Close() })
	return NewConn(a, time.Second), b
}

func TestRoundTrip(t *testing.T) {
	a, b := net.Pipe()
	ca, cb := NewConn(a, time.Second), NewConn(b, time.Second)
	go ca.Send(Msg{Type: TPlan, Plan: &result.Config{Op: "read", MsgSizeBytes: 4096}})
	m, err := cb.Expect(TPlan)
	if err != nil || m.Plan.Op != "read" || m.Plan.MsgSizeBytes != 4096 {
		t.Fatalf("got %+v, %v", m, err)
	}
	go ca.SendError(errors.New("no such device"))
	_, err = cb.Expect(TPlan)
	var pe *PeerError
	if !errors.As(err, &pe) || pe.Msg != "no such device" {
		t.Fatalf("peer error not surfaced: %v", err)
	}
}

func TestRefusesBadFrames(t *testing.T) {
	for name, tc := range map[string]struct {
		frame []byte
		want  string
	}{
		"not rdmabench": {[]byte("GET / HTTP/1.0\r\n"), "not an rdmabench peer"},
		"version":       {[]byte("RDMB\x00\x07\x00\x00\x00\x02{}"), "protocol version 7"},
		"oversized":     {[]byte("RDMB\x00\x02\x7f\xff\xff\xff"), "exceeds the 1048576-byte limit"},
		"bad json":      {[]byte("RDMB\x00\x02\x00\x00\x00\x03{x}"), "malformed message"},
		"unknown field": {[]byte("RDMB\x00\x02\x00\x00\x00\x0c{\"evil\":123}"), "malformed message"},
	} {
		t.Run(name, func(t *testing.T) {
			c, raw := pair(t)
			go raw.Write(tc.frame)
			_, err := c.Recv(time.Second)
			var pe *ProtocolError
			if !errors.As(err, &pe) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want a protocol error containing %q, got %v", tc.want, err)
			}
		})
	}
}

func TestExpectWrongTypeAndMissingBody(t *testing.T) {
	a, b := net.Pipe()
	ca, cb := NewConn(a, time.Second), NewConn(b, time.Second)
	go ca.Send(Msg{Type: TReady})
	if _, err := cb.Expect(THello); err == nil || !strings.Contains(err.Error(), `expected a "hello" message, got "ready"`) {
		t.Fatalf("got %v", err)
	}
	go ca.Send(Msg{Type: TEndpoint})
	if _, err := cb.Expect(TEndpoint); err == nil || !strings.Contains(err.Error(), "without its body") {
		t.Fatalf("got %v", err)
	}
}

func TestRecvTimesOutAndSeesPeerGone(t *testing.T) {
	c, raw := pair(t)
	if _, err := c.Recv(50 * time.Millisecond); err == nil {
		t.Fatal("want a timeout")
	}
	raw.Close()
	if _, err := c.Recv(time.Second); err == nil || !strings.Contains(err.Error(), "closed by the peer") {
		t.Fatalf("want 'closed by the peer', got %v", err)
	}
}
