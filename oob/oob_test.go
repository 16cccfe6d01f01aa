package oob

import (
	"errors"
	"fmt"
	"io"
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

// hdr is "RDMB" and this version, followed by rest.
func hdr(rest string) []byte { return append([]byte{'R', 'D', 'M', 'B', 0, Version}, rest...) }

func TestRefusesBadFrames(t *testing.T) {
	for name, tc := range map[string]struct {
		frame []byte
		want  string
	}{
		"not rdmabench": {[]byte("GET / HTTP/1.0\r\n"), "not an rdmabench peer"},
		"version":       {[]byte("RDMB\x00\x07\x00\x00\x00\x02{}"), "protocol version 7"},
		"oversized":     {hdr("\x7f\xff\xff\xff"), "exceeds the 1048576-byte limit"},
		"bad json":      {hdr("\x00\x00\x00\x03{x}"), "malformed message"},
		"unknown field": {hdr("\x00\x00\x00\x0c{\"evil\":123}"), "malformed message"},
		"trailing data": {hdr("\x00\x00\x00\x1d{\"type\":\"done\"}{\"type\":\"bye\"}"), "data after the JSON value"},
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

func TestPeerTextCannotForgeALine(t *testing.T) {
	e := &PeerError{Msg: "refused\nrdmabench server: 2026/11/30 client root logged in\x1b[2J" + strings.Repeat("x", 2000)}
	got := e.Error()
	if strings.ContainsAny(got, "\n\r\x1b") || len(got) > 600 || !strings.Contains(got, `refused\nrdmabench`) {
		t.Fatalf("peer text must be escaped and bounded: %q", got)
	}
}

func TestProofsDifferByRoleTokenAndNonce(t *testing.T) {
	s, c := NewNonce(), NewNonce()
	p := Proof("tok", "client", s, c)
	if !Verify(p, "tok", "client", s, c) {
		t.Fatal("a proof must verify")
	}
	for name, ok := range map[string]bool{
		"other token": Verify(p, "tok2", "client", s, c),
		"other role":  Verify(p, "tok", "server", s, c),
		"other nonce": Verify(p, "tok", "client", NewNonce(), c),
		"swapped":     Verify(p, "tok", "client", c, s),
		"empty proof": Verify(nil, "tok", "client", s, c),
	} {
		if ok {
			t.Errorf("%s: verified", name)
		}
	}
}

// AsLost marks a loss the protocol recognises, once, and leaves any other error as it is.
func TestAsLost(t *testing.T) {
	var l *LostError
	if err := AsLost(io.EOF); !errors.As(err, &l) || !errors.Is(err, io.EOF) {
		t.Errorf("a lost connection must come back marked: %#v", err)
	}
	marked := &LostError{Err: io.EOF}
	if err := AsLost(fmt.Errorf("measuring: %w", marked)); !errors.As(err, &l) || l != marked {
		t.Errorf("a marked loss must stay as it is: %#v", err)
	}
	refused := &PeerError{Msg: "--size too large"}
	if err := AsLost(refused); err != refused {
		t.Errorf("a refusal is no loss: %#v", err)
	}
	if AsLost(nil) != nil {
		t.Error("nil stays nil")
	}
}

// Protocol 7's plan carries relaxed ordering, the service level and the traffic class,
// so that both sides register and connect alike; a plan field this version does not
// know (perftest's tos, say) is refused, not ignored.
func TestPlanCarriesRelaxedOrderingSLAndTrafficClass(t *testing.T) {
	a, b := net.Pipe()
	ca, cb := NewConn(a, time.Second), NewConn(b, time.Second)
	sent := result.Config{Op: "write", Test: result.BW, MsgSizeBytes: 65536, PCIeRelaxedOrdering: true, SL: 3, TrafficClass: 96}
	go ca.Send(Msg{Type: TPlan, Plan: &sent})
	m, err := cb.Expect(TPlan)
	if err != nil || *m.Plan != sent {
		t.Fatalf("got %+v, %v; sent %+v", m.Plan, err, sent)
	}
	for _, field := range []string{`"pcie_relaxed_ordering":true`, `"disable_pcie_relaxed":true`, `"sl":3`, `"traffic_class":96`} {
		body := `{"type":"plan","plan":{"op":"write",` + field + `}}`
		c, raw := pair(t)
		go raw.Write(append(hdr(string([]byte{0, 0, 0, byte(len(body))})), body...))
		if m, err := c.Expect(TPlan); err != nil {
			t.Errorf("%s: %v", field, err)
		} else if *m.Plan == (result.Config{Op: "write"}) {
			t.Errorf("%s: the plan came without it", field)
		}
	}
	body := `{"type":"plan","plan":{"op":"write","tos":96}}`
	c, raw := pair(t)
	go raw.Write(append(hdr(string([]byte{0, 0, 0, byte(len(body))})), body...))
	var pe *ProtocolError
	if _, err := c.Expect(TPlan); !errors.As(err, &pe) || !strings.Contains(err.Error(), `unknown field "tos"`) {
		t.Errorf("a plan with an unknown field: %v", err)
	}
}
