package bench_test

// --baseline tcp over real loopback TCP: the control connection is the rig's net.Pipe
// (no IP address, so both sides use 127.0.0.1), the data connection a real socket.

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/bench"
	"github.com/rdmabench/rdmabench/bench/benchtest"
	"github.com/rdmabench/rdmabench/bench/ops"
	"github.com/rdmabench/rdmabench/oob"
	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/verbs"
	"github.com/rdmabench/rdmabench/verbs/qp"
)

func baseline(t *testing.T, c *bench.Client, cfg result.Config, messages uint64) (*result.Baseline, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return c.TCPBaseline(ctx, cfg, messages)
}

// After an RDMA run, the same transfer over TCP, both directions, on the same session:
// exactly messages x size bytes, a positive rate, and the session goes on.
func TestBaselineTCPMovesTheRun(t *testing.T) {
	r := benchtest.NewRig(t, ops.All, nil)
	c := dial(t, r, "")
	for _, cfg := range []result.Config{
		{Op: "write", Test: result.BW, Baseline: "tcp", Iterations: 200, MsgSizeBytes: 4096, NumQPs: 2},
		{Op: "read", Test: result.BW, Baseline: "tcp", Iterations: 300, MsgSizeBytes: 100},
		{Op: "write", Test: result.BW, Baseline: "tcp", Iterations: 3, MsgSizeBytes: 3<<20 + 5}, // written in pieces
		{Op: "read", Test: result.BW, Baseline: "tcp", DurationS: 0.05, MsgSizeBytes: 1},
	} {
		res, err := run(t, c, cfg)
		if err != nil {
			t.Fatalf("%s: RDMA run: %v", cfg.Op, err)
		}
		b, err := baseline(t, c, res.Config, res.Iterations)
		if err != nil || b == nil {
			t.Fatalf("%s %d B: %v", cfg.Op, cfg.MsgSizeBytes, err)
		}
		want := res.Iterations * uint64(cfg.MsgSizeBytes)
		if b.Transport != "tcp" || b.Error != "" || b.Messages != res.Iterations || b.Bytes != want || want != res.Bytes ||
			b.DurationNS <= 0 || b.BWGbps <= 0 || b.MsgRateMpps <= 0 {
			t.Errorf("%s %d B: want %d messages, %d bytes and a rate, got %+v", cfg.Op, cfg.MsgSizeBytes, res.Iterations, want, b)
		}
		if b.Compare(res.BWGbps); b.RDMAOverTCP <= 0 {
			t.Errorf("%s: no ratio from RDMA %v Gb/s over TCP %v Gb/s", cfg.Op, res.BWGbps, b.BWGbps)
		}
	}
	if res, err := run(t, c, result.Config{Op: "write", Test: result.BW, Iterations: 10}); err != nil || res.Iterations != 10 {
		t.Fatalf("a plan after the baselines: %v", err)
	}
	if logs := r.Logs(); !strings.Contains(logs, `TCP baseline write 4096 B x 400 done`) || !strings.Contains(logs, `TCP baseline read 100 B x 300 done`) {
		t.Errorf("the server logs each baseline:\n%s", logs)
	}
}

// The plan's --baseline is checked on both sides; a request the server cannot serve is
// refused with its reason and the session goes on.
func TestBaselineRefusals(t *testing.T) {
	r := benchtest.NewRig(t, ops.All, func(s *bench.Server) { s.MaxBuffer = 1 << 20 })
	c := dial(t, r, "")
	for _, tc := range []struct {
		cfg  result.Config
		want string
	}{
		{result.Config{Op: "write", Test: result.BW, Baseline: "udp"}, `--baseline "udp": want tcp`},
		{result.Config{Op: "write", Test: result.Lat, Baseline: "tcp"}, "--baseline applies to bandwidth tests"},
		{result.Config{Op: "read", Test: result.BW, Baseline: "tcp", Bidirectional: true}, "without -b/--bidirectional"},
	} {
		if _, err := run(t, c, tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: want %q, got %v", tc.cfg, tc.want, err)
		}
	}
	// The server refuses such a plan too, whatever the client checked.
	conn := rawSession(t, r)
	plan := result.Config{Op: "write", Test: result.BW, Baseline: "ib", MsgSizeBytes: 64, Iterations: 10, SQDepth: 1, PostList: 1, CQMod: 1, NumQPs: 1}
	conn.Send(oob.Msg{Type: oob.TPlan, Plan: &plan})
	if _, err := conn.Expect(oob.TEndpoint); err == nil || !strings.Contains(err.Error(), `--baseline "ib": want tcp`) {
		t.Errorf("the server must refuse an unknown baseline: %v", err)
	}
	for _, tc := range []struct {
		req  oob.TCPBaseline
		want string
	}{
		{oob.TCPBaseline{Op: "send", Size: 64, Messages: 1}, "unknown operation"},
		{oob.TCPBaseline{Op: "write", Size: 0, Messages: 1}, "message size 0"},
		{oob.TCPBaseline{Op: "read", Size: 64, Messages: 0}, "no messages"},
		{oob.TCPBaseline{Op: "read", Size: 2 << 20, Messages: 1}, "--max-buffer"},
		{oob.TCPBaseline{Op: "write", Size: 1 << 20, Messages: 1 << 50}, "overflows"},
	} {
		conn.Send(oob.Msg{Type: oob.TTCPBaseline, TCPBaseline: &tc.req})
		var pe *oob.PeerError
		if _, err := conn.Expect(oob.TTCPPort); !errors.As(err, &pe) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: want the server's refusal naming %q, got %v", tc.req, tc.want, err)
		}
	}
	byHand(t, conn, "write", 64, 10) // the session went on
	b, err := baseline(t, c, result.Config{Op: "write", MsgSizeBytes: 2 << 20}, 1)
	if err == nil || !strings.Contains(err.Error(), "TCP baseline: the server refused it") || b.Error != err.Error() {
		t.Errorf("the client reports the refusal: %v, %+v", err, b)
	}
	if b, err := baseline(t, c, result.Config{Op: "read", MsgSizeBytes: 64}, 0); err == nil || !strings.Contains(err.Error(), "no message") || b.Error == "" {
		t.Errorf("a run that completed nothing has no baseline: %v", err)
	}
	if _, err := run(t, c, result.Config{Op: "read", Test: result.BW, Iterations: 10}); err != nil {
		t.Fatalf("a plan after the refusals: %v", err)
	}
}

// A data connection with the wrong cookie is closed and reported; the server keeps
// serving: the same session's next baseline and plan work, and so does another client.
func TestBaselineWrongCookie(t *testing.T) {
	r := benchtest.NewRig(t, ops.All, nil)
	conn := rawSession(t, r)
	port := askBaseline(t, conn, oob.TCPBaseline{Op: "write", Size: 1024, Messages: 10})
	nc, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port.Port)))
	if err != nil {
		t.Fatal(err)
	}
	wrong := bytes.Repeat([]byte{0x5a}, oob.CookieBytes)
	if bytes.Equal(wrong, port.Cookie) {
		wrong[0]++
	}
	nc.Write(wrong)
	nc.Write(make([]byte, 10240))
	nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := nc.Read(make([]byte, 1)); err == nil || errors.Is(err, net.ErrClosed) {
		t.Errorf("the server must close a connection with the wrong cookie: read %d, %v", n, err)
	}
	nc.Close()
	done := expectDone(t, conn, 5*time.Second)
	if !strings.Contains(done.Error, "did not start with the cookie") || done.Bytes != 0 {
		t.Fatalf("want the wrong cookie reported, got %+v", done)
	}
	if c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port.Port)), time.Second); err == nil {
		c.Close()
		t.Error("the listener must be closed after its one connection")
	}
	byHand(t, conn, "read", 100, 5)
	regionByHand(t, r, conn, result.Config{Op: "write", Test: result.Region, MsgSizeBytes: 4096, NumQPs: 1})
	c := dial(t, r, "")
	res, err := run(t, c, result.Config{Op: "write", Test: result.BW, Iterations: 20, MsgSizeBytes: 512})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := baseline(t, c, res.Config, res.Iterations); err != nil {
		t.Fatalf("another client's baseline: %v", err)
	}
}

// A client that never connects, or connects and stalls: the server gives up within its
// --timeout, says why in tcp_done, and goes on.
func TestBaselineClientNeverConnectsOrStalls(t *testing.T) {
	r := benchtest.NewRig(t, ops.All, func(s *bench.Server) { s.Timeout = time.Second })
	conn := rawSession(t, r)
	start := time.Now()
	port := askBaseline(t, conn, oob.TCPBaseline{Op: "write", Size: 4096, Messages: 100})
	done := expectDone(t, conn, 5*time.Second)
	if took := time.Since(start); !strings.Contains(done.Error, "did not connect to the TCP port within 1s") || took < 900*time.Millisecond || took > 3*time.Second {
		t.Fatalf("want the server to give up after its 1 s timeout, got %+v after %v", done, took)
	}
	if c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port.Port)), time.Second); err == nil {
		c.Close()
		t.Error("the listener must be closed after the timeout")
	}

	for _, op := range []string{"write", "read"} {
		port = askBaseline(t, conn, oob.TCPBaseline{Op: op, Size: 4096, Messages: 100})
		nc, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port.Port)))
		if err != nil {
			t.Fatal(err)
		}
		nc.Write(port.Cookie)
		if op == "write" {
			nc.Write(make([]byte, 4096*10+7)) // then nothing more
		} // read: no go
		start = time.Now()
		done = expectDone(t, conn, 5*time.Second)
		nc.Close()
		want := map[string]string{"write": "receiving, after 40967 of 409600 bytes: no progress for 1s", "read": "waiting for the client's go: no progress for 1s"}[op]
		if took := time.Since(start); !strings.Contains(done.Error, want) || took > 3*time.Second {
			t.Fatalf("%s: a stalled client: want %q within the timeout, got %+v after %v", op, want, done, took)
		}
	}
	byHand(t, conn, "write", 4096, 100)
}

// The data connection dropped mid-stream: an error on both sides, no hang, the
// session goes on.
func TestBaselineDroppedMidStream(t *testing.T) {
	r := benchtest.NewRig(t, ops.All, nil)
	c := dial(t, r, "")
	for _, op := range []string{"write", "read"} {
		// The client stops (Ctrl-C): its side says interrupted, the server's that the
		// client went away.
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(300*time.Millisecond, cancel)
		start := time.Now()
		b, err := c.TCPBaseline(ctx, result.Config{Op: op, MsgSizeBytes: 1 << 20}, 1<<20) // 1 TiB: far more than 300 ms
		cancel()
		if err == nil || !strings.Contains(err.Error(), "interrupted after") || !strings.Contains(err.Error(), "the server's side:") || time.Since(start) > 10*time.Second {
			t.Fatalf("%s: want both sides' errors within seconds, got %v after %v", op, err, time.Since(start))
		}
		if oob.Lost(err) {
			t.Errorf("%s: a dropped data connection is not a lost session: %v", op, err)
		}
		t.Logf("%s: %v", op, err)
		if b.Error != err.Error() || b.Bytes == 0 || b.BWGbps != 0 || b.RDMAOverTCP != 0 {
			t.Errorf("%s: a failed baseline keeps what moved and no rate: %+v", op, b)
		}
		if _, err := run(t, c, result.Config{Op: op, Test: result.BW, Iterations: 10}); err != nil {
			t.Fatalf("%s: a plan after the dropped baseline: %v", op, err)
		}
	}
	if _, err := baseline(t, c, result.Config{Op: "read", MsgSizeBytes: 8192}, 50); err != nil {
		t.Fatalf("a baseline after the dropped ones: %v", err)
	}

	// The server goes away (a shutdown) while it sends: the client says so.
	time.AfterFunc(300*time.Millisecond, r.Shutdown)
	start := time.Now()
	_, err := baseline(t, c, result.Config{Op: "read", MsgSizeBytes: 1 << 20}, 1<<20)
	t.Logf("shutdown: %v", err)
	if err == nil || !strings.Contains(err.Error(), "the server closed the connection") || !strings.Contains(err.Error(), "shutting down") || time.Since(start) > 10*time.Second {
		t.Fatalf("want the server's shutdown on both connections within seconds, got %v after %v", err, time.Since(start))
	}
}

// A transfer longer than the server's --max-test-time is stopped there, and both
// sides say so.
func TestBaselineMaxTestTime(t *testing.T) {
	r := benchtest.NewRig(t, ops.All, func(s *bench.Server) { s.MaxTestTime = 300 * time.Millisecond })
	c := dial(t, r, "")
	for _, op := range []string{"write", "read"} {
		start := time.Now()
		_, err := baseline(t, c, result.Config{Op: op, MsgSizeBytes: 1 << 20}, 1<<20)
		t.Logf("%s: %v", op, err)
		if err == nil || !strings.Contains(err.Error(), "ran past this server's --max-test-time 300ms") || time.Since(start) > 10*time.Second {
			t.Fatalf("%s: want the server's --max-test-time, got %v after %v", op, err, time.Since(start))
		}
	}
	if _, err := baseline(t, c, result.Config{Op: "write", MsgSizeBytes: 64}, 10); err != nil {
		t.Fatalf("a baseline within the limit: %v", err)
	}
}

// The client bounds the whole transfer on its side too: a server that keeps it going
// (here one whose --max-test-time is long) cannot hold it past Client.BaselineLimit.
func TestBaselineClientLimit(t *testing.T) {
	r := benchtest.NewRig(t, ops.All, func(s *bench.Server) { s.MaxTestTime = time.Hour })
	c := dial(t, r, "")
	c.BaselineLimit = 300 * time.Millisecond
	for _, op := range []string{"write", "read"} {
		start := time.Now()
		_, err := baseline(t, c, result.Config{Op: op, MsgSizeBytes: 1 << 20}, 1<<20) // 1 TiB
		t.Logf("%s: %v", op, err)
		if err == nil || !strings.Contains(err.Error(), "ran past this client's bound on a TCP baseline (300ms)") || time.Since(start) > 10*time.Second {
			t.Fatalf("%s: want the client's bound, got %v after %v", op, err, time.Since(start))
		}
	}
}

// rawSession is a hand-driven client of r's server, after the handshake.
func rawSession(t *testing.T, r *benchtest.Rig) *oob.Conn {
	t.Helper()
	conn := oob.NewConn(r.DialConn(), 5*time.Second)
	t.Cleanup(func() { conn.Close() })
	if _, err := oob.Handshake(conn, result.Device{Name: "raw"}, ""); err != nil {
		t.Fatal(err)
	}
	return conn
}

func askBaseline(t *testing.T, conn *oob.Conn, req oob.TCPBaseline) *oob.TCPPort {
	t.Helper()
	if err := conn.Send(oob.Msg{Type: oob.TTCPBaseline, TCPBaseline: &req}); err != nil {
		t.Fatal(err)
	}
	m, err := conn.Expect(oob.TTCPPort)
	if err != nil {
		t.Fatalf("%+v: %v", req, err)
	}
	return m.TCPPort
}

func expectDone(t *testing.T, conn *oob.Conn, within time.Duration) *oob.TCPDone {
	t.Helper()
	m, err := conn.ExpectWithin(oob.TTCPDone, within)
	if err != nil {
		t.Fatalf("tcp_done: %v", err)
	}
	return m.TCPDone
}

// byHand runs a baseline as the protocol says, by hand, and checks the server's count.
func byHand(t *testing.T, conn *oob.Conn, op string, size int, n uint64) {
	t.Helper()
	port := askBaseline(t, conn, oob.TCPBaseline{Op: op, Size: size, Messages: n})
	nc, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port.Port)))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	nc.Write(port.Cookie)
	total := n * uint64(size)
	if op == "write" {
		if _, err := nc.Write(make([]byte, total)); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(nc, make([]byte, 1)); err != nil {
			t.Fatalf("the acknowledgement: %v", err)
		}
	} else {
		nc.Write([]byte{'g'})
		if _, err := io.ReadFull(nc, make([]byte, total)); err != nil {
			t.Fatalf("the data: %v", err)
		}
	}
	if done := expectDone(t, conn, 5*time.Second); done.Error != "" || done.Bytes != total {
		t.Fatalf("%s by hand: want %d bytes, got %+v", op, total, done)
	}
}

// regionByHand runs a region plan on a raw session (as TestPipeRegion does): a plan,
// endpoints, ready, done, report.
func regionByHand(t *testing.T, r *benchtest.Rig, conn *oob.Conn, plan result.Config) {
	t.Helper()
	conn.Send(oob.Msg{Type: oob.TPlan, Plan: &plan})
	m, err := conn.Expect(oob.TEndpoint)
	if err != nil {
		t.Fatalf("a plan on the same session: %v", err)
	}
	dev, _ := r.Client.Open(bench.Local{})
	s, err := dev.NewSession(verbs.Spec{NumQP: plan.NumQPs, SQDepth: 4, BufSize: plan.MsgSizeBytes})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.ConnectPeers([]qp.Endpoint{*m.Endpoint}, 0); err != nil {
		t.Fatal(err)
	}
	local := s.Local()
	conn.Send(oob.Msg{Type: oob.TEndpoint, Endpoint: &local})
	if _, err := conn.Expect(oob.TReady); err != nil {
		t.Fatal(err)
	}
	conn.Send(oob.Msg{Type: oob.TDone})
	if rep, err := conn.Expect(oob.TReport); err != nil || rep.Report.Digest == "" {
		t.Fatalf("the plan's report: %v", err)
	}
}
