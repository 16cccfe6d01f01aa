package bench_test

// The client and the server over net.Pipe, measuring with the fake engine: the whole
// protocol (hello, token, plan, refusal, endpoints, ready, beats, done, report, errors,
// peer loss) without a NIC, cgo or qemu.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/bench"
	"github.com/rdmabench/rdmabench/bench/benchtest"
	"github.com/rdmabench/rdmabench/bench/ops"
	"github.com/rdmabench/rdmabench/counters"
	"github.com/rdmabench/rdmabench/oob"
	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/verbs"
	"github.com/rdmabench/rdmabench/verbs/qp"
)

func dial(t *testing.T, r *benchtest.Rig, token string) *bench.Client {
	t.Helper()
	c, err := r.Dial(token)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func run(t *testing.T, c *bench.Client, cfg result.Config) (result.Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return c.Run(ctx, ops.All[cfg.Op], cfg)
}

// A session runs several plans, each measured and (with --verify) verified on the
// side the data went to.
func TestPipeRunsEveryTest(t *testing.T) {
	r := benchtest.NewRig(t, ops.All, nil)
	c := dial(t, r, "")
	if c.ServerDevice().Name != "fake1" || c.Device().Name != "fake0" {
		t.Fatalf("hellos: client %q, server %q", c.Device().Name, c.ServerDevice().Name)
	}
	for _, cfg := range []result.Config{
		{Op: "write", Test: result.BW, Verify: true, Iterations: 300, MsgSizeBytes: 4096, SQDepth: 16},
		{Op: "read", Test: result.BW, Verify: true, Iterations: 300, MsgSizeBytes: 100, NumQPs: 3},
		{Op: "write", Test: result.BW, Verify: true, DurationS: 0.05, NumQPs: 2, MsgSizeBytes: 1},
		{Op: "write", Test: result.Lat, Iterations: 200},
		{Op: "read", Test: result.Lat, Iterations: 200},
	} {
		res, err := run(t, c, cfg)
		name := cfg.Op + " " + string(cfg.Test)
		if err != nil || res.Error != "" {
			t.Fatalf("%s: %v (%s)", name, err, res.Error)
		}
		if res.Iterations == 0 || res.DurationNS <= 0 || res.Clock != "fake" {
			t.Errorf("%s: iterations %d, duration %d, clock %q", name, res.Iterations, res.DurationNS, res.Clock)
		}
		if cfg.Verify && (res.Verify == nil || !res.Verify.OK) {
			t.Errorf("%s: verification %+v", name, res.Verify)
		}
		if cfg.Test == result.Lat && (res.Lat.Samples != cfg.Iterations || res.LatKind != ops.All[cfg.Op].LatKind) {
			t.Errorf("%s: %d samples of %q", name, res.Lat.Samples, res.LatKind)
		}
		if cfg.Test == result.BW && cfg.DurationS == 0 && res.Iterations != cfg.Iterations*uint64(max(1, cfg.NumQPs)) {
			t.Errorf("%s: %d messages, want %d", name, res.Iterations, cfg.Iterations*uint64(max(1, cfg.NumQPs)))
		}
	}
	// Every session the server made for a test is gone with the test (it is closed
	// just after the report is sent, so look once the session is over).
	c.Close()
	r.Shutdown()
	for _, s := range r.Server.Sessions() {
		if !s.Closed() {
			t.Errorf("a server session outlived its test: %+v", s.Spec)
		}
	}
}

// Bytes that arrive wrong are caught on the side they arrived at.
func TestPipeVerificationFails(t *testing.T) {
	r := benchtest.NewRig(t, ops.All, nil)
	c := dial(t, r, "")
	r.Client.Corrupt.Store(true)
	for _, op := range []string{"write", "read"} {
		res, err := run(t, c, result.Config{Op: op, Test: result.BW, Verify: true, Iterations: 50})
		side := map[string]string{"write": "server", "read": "client"}[op]
		if err == nil || !strings.Contains(err.Error(), "verification failed at the "+side) || res.Verify == nil || res.Verify.OK {
			t.Errorf("%s: want a verification failure at the %s, got %v, %+v", op, side, err, res.Verify)
		}
	}
}

func TestPipeTokens(t *testing.T) {
	r := benchtest.NewRig(t, ops.All, func(s *bench.Server) { s.Token = "s3cret" })
	if c, err := r.Dial("s3cret"); err != nil {
		t.Fatalf("right token: %v", err)
	} else {
		if _, err := run(t, c, result.Config{Op: "write", Test: result.BW, Iterations: 10}); err != nil {
			t.Errorf("authenticated run: %v", err)
		}
		c.Close()
	}
	for token, want := range map[string]string{
		"":      "requires a token",
		"wrong": "authentication failed",
	} {
		_, err := r.Dial(token)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("token %q: want %q, got %v", token, want, err)
		}
	}
	open := benchtest.NewRig(t, ops.All, nil)
	if _, err := open.Dial("s3cret"); err == nil || !strings.Contains(err.Error(), "cannot prove") {
		t.Errorf("a token against a server without one must be refused, got %v", err)
	}
}

// A plan the server refuses is reported with the server's reason, and the session
// goes on: the next plan runs.
func TestPipeRefusalsKeepTheSession(t *testing.T) {
	r := benchtest.NewRig(t, ops.All, func(s *bench.Server) { s.MaxBuffer = 1 << 20; s.MaxTestTime = time.Second })
	c := dial(t, r, "")
	for _, tc := range []struct {
		cfg  result.Config
		want string
	}{
		{result.Config{Op: "write", Test: result.BW, MsgSizeBytes: 8 << 20, Iterations: 10}, "--max-buffer"},
		{result.Config{Op: "write", Test: result.BW, DurationS: 5}, "--max-test-time"},
	} {
		res, err := run(t, c, tc.cfg)
		var pe *oob.PeerError
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), tc.want) || res.Error == "" {
			t.Errorf("want the server's refusal naming %s, got %v", tc.want, err)
		}
	}
	r.Server.FailSession = errors.New("ibv_reg_mr: cannot allocate memory")
	if _, err := run(t, c, result.Config{Op: "read", Test: result.BW, Iterations: 10}); err == nil || !strings.Contains(err.Error(), "ibv_reg_mr") {
		t.Errorf("the server's session error must reach the client, got %v", err)
	}
	r.Server.FailSession = nil
	if res, err := run(t, c, result.Config{Op: "write", Test: result.BW, Iterations: 10}); err != nil || res.Iterations != 10 {
		t.Fatalf("after refusals the session must still run plans: %v", err)
	}
}

// A client-side failure is the result's error, with what was measured; the server
// hears about it and serves the next plan.
func TestPipeClientLoopFails(t *testing.T) {
	r := benchtest.NewRig(t, ops.All, nil)
	c := dial(t, r, "")
	r.Client.FailLoop = &verbs.CompletionError{Status: "IBV_WC_REM_ACCESS_ERR", Opcode: "RDMA_WRITE", VendorErr: 0x88, QPNum: 0x101}
	res, err := run(t, c, result.Config{Op: "write", Test: result.BW, Iterations: 100, WarmupIterations: 0})
	var ce *verbs.CompletionError
	if !errors.As(err, &ce) || !strings.Contains(res.Error, "vendor error 0x88") {
		t.Fatalf("want the completion error with its syndrome, got %v / %q", err, res.Error)
	}
	r.Client.FailLoop = nil
	if _, err := run(t, c, result.Config{Op: "write", Test: result.BW, Iterations: 10}); err != nil {
		t.Fatalf("the next plan: %v", err)
	}
	if _, err := run(t, c, result.Config{Op: "read", Test: result.BW, Iterations: 0, DurationS: 0}); err != nil {
		t.Fatalf("defaults: %v", err)
	}
}

// A stalled peer is a timeout error, never a hang.
func TestPipeStalledLoopTimesOut(t *testing.T) {
	r := benchtest.NewRig(t, ops.All, nil)
	c := dial(t, r, "")
	r.Client.Stall.Store(true)
	start := time.Now()
	_, err := run(t, c, result.Config{Op: "read", Test: result.Lat, Iterations: 10})
	var te *verbs.TimeoutError
	if !errors.As(err, &te) || time.Since(start) > 10*time.Second {
		t.Fatalf("want a timeout error within the client's timeout, got %v after %v", err, time.Since(start))
	}
}

// Ctrl-C during a run stops it; what was measured is kept and marked interrupted.
func TestPipeInterrupt(t *testing.T) {
	r := benchtest.NewRig(t, ops.All, nil)
	c := dial(t, r, "")
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	start := time.Now()
	res, err := c.Run(ctx, ops.All["write"], result.Config{Op: "write", Test: result.BW, DurationS: 30, WarmupIterations: 0})
	if err != nil || !res.Interrupted || res.Iterations == 0 || time.Since(start) > 5*time.Second {
		t.Fatalf("interrupted run: %v, interrupted %v, %d messages, after %v", err, res.Interrupted, res.Iterations, time.Since(start))
	}
}

// The server crashing during a test: the client's beat fails, its loop stops, the
// result says the server was lost (and keeps what was measured).
func TestPipeServerLost(t *testing.T) {
	r := benchtest.NewRig(t, ops.All, nil)
	c := dial(t, r, "")
	time.AfterFunc(300*time.Millisecond, r.CutServer)
	start := time.Now()
	res, err := run(t, c, result.Config{Op: "write", Test: result.BW, DurationS: 30, WarmupIterations: 0})
	if err == nil || !strings.Contains(err.Error(), "lost the server") || !oob.Lost(err) || time.Since(start) > 10*time.Second {
		t.Fatalf("want 'lost the server' (oob.Lost) within seconds, got %v after %v", err, time.Since(start))
	}
	var marked *oob.LostError // what a sweep, which knows no protocol, recognises
	if !errors.As(err, &marked) {
		t.Errorf("a loss must be an *oob.LostError: %#v", err)
	}
	if res.Error == "" || res.Iterations == 0 {
		t.Errorf("the result must keep what was measured and say what went wrong: %d messages, error %q", res.Iterations, res.Error)
	}
}

// halfDead is the client's end of a connection to a host that crashed: once dead,
// writes fail (the kernel gave up retransmitting) and reads see nothing more until the
// connection is closed.
type halfDead struct {
	net.Conn
	dead   atomic.Bool
	closed chan struct{}
	once   sync.Once
}

func (h *halfDead) Write(p []byte) (int, error) {
	if h.dead.Load() {
		return 0, &net.OpError{Op: "write", Net: "tcp", Err: syscall.ETIMEDOUT}
	}
	return h.Conn.Write(p)
}

func (h *halfDead) Read(p []byte) (int, error) {
	n, err := h.Conn.Read(p)
	if h.dead.Load() {
		<-h.closed
		return 0, net.ErrClosed
	}
	return n, err
}

func (h *halfDead) Close() error {
	h.once.Do(func() { close(h.closed) })
	return h.Conn.Close()
}

// The server's host crashing: beats fail while the read waits. The client stops, says
// the server is lost, never touches the session after closing it (the fake panics on
// that), and refuses further plans on the connection, which oob.Lost recognises.
func TestPipeServerHostCrash(t *testing.T) {
	r := benchtest.NewRig(t, ops.All, nil)
	var h *halfDead
	c, err := r.DialWith("", func(nc net.Conn) net.Conn { h = &halfDead{Conn: nc, closed: make(chan struct{})}; return h })
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	time.AfterFunc(300*time.Millisecond, func() { h.dead.Store(true) })
	start := time.Now()
	res, err := run(t, c, result.Config{Op: "write", Test: result.BW, DurationS: 30, WarmupIterations: 0})
	if err == nil || !strings.Contains(err.Error(), "lost the server") || !oob.Lost(err) || time.Since(start) > 10*time.Second {
		t.Fatalf("want a lost server (oob.Lost) within seconds, got %v after %v", err, time.Since(start))
	}
	if res.Iterations == 0 {
		t.Error("the result must keep what was measured")
	}
	_, err = run(t, c, result.Config{Op: "write", Test: result.BW, Iterations: 10})
	if !oob.Lost(err) {
		t.Fatalf("a plan on a lost connection: want an error oob.Lost recognises, got %v", err)
	}
}

// The client vanishing during a test: the server frees the test's session and serves
// the next client.
func TestPipeClientLost(t *testing.T) {
	r := benchtest.NewRig(t, ops.All, nil)
	c := dial(t, r, "")
	r.Client.Stall.Store(true) // the client's loop waits on the peer, as after a crash
	go c.Run(context.Background(), ops.All["write"], result.Config{Op: "write", Test: result.Lat, Iterations: 100})
	deadline := time.Now().Add(5 * time.Second)
	for len(r.Server.Sessions()) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	r.CutClients()
	for time.Now().Before(deadline) && !r.Server.Sessions()[0].Closed() {
		time.Sleep(10 * time.Millisecond)
	}
	if !r.Server.Sessions()[0].Closed() {
		t.Fatalf("the server kept the lost client's session; log:\n%s", r.Logs())
	}
	r.Client.Stall.Store(false)
	c2 := dial(t, r, "")
	if _, err := run(t, c2, result.Config{Op: "read", Test: result.BW, Iterations: 10}); err != nil {
		t.Fatalf("next client: %v", err)
	}
}

// Shutting the server down during a test tells the client.
func TestPipeShutdownDuringTest(t *testing.T) {
	r := benchtest.NewRig(t, ops.All, nil)
	c := dial(t, r, "")
	time.AfterFunc(200*time.Millisecond, r.Shutdown)
	_, err := run(t, c, result.Config{Op: "write", Test: result.BW, DurationS: 0.6, WarmupIterations: 0})
	if err == nil || !strings.Contains(err.Error(), "shutting down") || !oob.Lost(err) {
		t.Fatalf("want the server's shutdown notice, recognised as the end of the session, got %v", err)
	}
}

// A region plan (the public API's): the server exposes zeros for WRITE and READ and
// reports the SHA-256 of what its region holds when the client is done.
func TestPipeRegion(t *testing.T) {
	r := benchtest.NewRig(t, ops.All, nil)
	conn := oob.NewConn(r.DialConn(), 2*time.Second)
	if _, err := oob.Handshake(conn, result.Device{Name: "api"}, ""); err != nil {
		t.Fatal(err)
	}
	const size = 4096
	if err := conn.Send(oob.Msg{Type: oob.TPlan, Plan: &result.Config{Op: "write", Test: result.Region, MsgSizeBytes: size, NumQPs: 1}}); err != nil {
		t.Fatal(err)
	}
	m, err := conn.Expect(oob.TEndpoint)
	if err != nil {
		t.Fatal(err)
	}
	if m.Endpoint.Len != size {
		t.Fatalf("region of %d bytes, want %d", m.Endpoint.Len, size)
	}
	dev, _ := r.Client.Open(bench.Local{})
	s, err := dev.NewSession(verbs.Spec{NumQP: 1, SQDepth: 4, BufSize: size})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ConnectPeers([]qp.Endpoint{*m.Endpoint}, 0); err != nil {
		t.Fatal(err)
	}
	local := s.Local()
	conn.Send(oob.Msg{Type: oob.TEndpoint, Endpoint: &local})
	if _, err := conn.Expect(oob.TReady); err != nil {
		t.Fatal(err)
	}
	s.Fill(7, 0, size)
	if _, err := s.Bandwidth(verbs.BWParams{Op: verbs.Write, Size: size, Layout: verbs.Layout{LSlots: 1, RSlots: 1, Stride: size}, Iters: 1, SQDepth: 1, PostList: 1, CQMod: 1}); err != nil {
		t.Fatal(err)
	}
	conn.Send(oob.Msg{Type: oob.TBeat})
	conn.Send(oob.Msg{Type: oob.TDone})
	rep, err := conn.Expect(oob.TReport)
	if err != nil {
		t.Fatal(err)
	}
	want := sha256.Sum256(s.(*benchtest.Session).Bytes())
	if rep.Report.Digest != hex.EncodeToString(want[:]) {
		t.Fatalf("digest %q, want %x", rep.Report.Digest, want)
	}
	// A region plan takes a size, QPs, an MTU and what it asks of the fabric only: any
	// other field is refused by its name, not ignored (finding 8 of the hostile-peers
	// review).
	for _, bad := range []struct {
		plan result.Config
		name string
	}{
		{result.Config{Verify: true}, "verify"},
		{result.Config{Iterations: 1 << 60}, "iterations"},
		{result.Config{WarmupIterations: 1e9}, "warmup_iterations"},
		{result.Config{Bidirectional: true}, "bidirectional"},
		{result.Config{Counters: "all"}, "counters"},
		{result.Config{InlineBytes: 64}, "inline_bytes"},
		{result.Config{MR: "per-io"}, "mr"},
		{result.Config{DisablePCIeRelaxed: true}, "disable_pcie_relaxed"},
	} {
		p := bad.plan
		p.Op, p.Test, p.MsgSizeBytes, p.NumQPs = "write", result.Region, size, 1
		conn.Send(oob.Msg{Type: oob.TPlan, Plan: &p})
		if _, err := conn.Expect(oob.TEndpoint); err == nil || !strings.Contains(err.Error(), "and a traffic class only, not "+bad.name) {
			t.Fatalf("want the region plan with %s refused, got %v", bad.name, err)
		}
	}
}

// Counters around the measured phase: both sides' deltas in the result, error and
// congestion counters flagged, sanity checks across the two sides, taint.
func TestPipeCounters(t *testing.T) {
	r := benchtest.NewRig(t, ops.All, nil)
	c := dial(t, r, "")
	cfg := result.Config{Op: "write", Test: result.BW, Iterations: 300, MsgSizeBytes: 4096, WarmupIterations: 50}
	res, err := run(t, c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Counters == nil || res.Counters.Local == nil || res.Counters.Remote == nil || res.Tainted {
		t.Fatalf("want both sides' counters and a clean result, got %+v tainted=%v", res.Counters, res.Tainted)
	}
	sent, _ := res.Counters.Local.Get(counters.HWPort, "sent_pkts")
	rcvd, _ := res.Counters.Remote.Get(counters.HWPort, "rcvd_pkts")
	if sent.Delta == nil || *sent.Delta != 300*4 || rcvd.Delta == nil || *rcvd.Delta != 300*4 {
		t.Fatalf("the measured phase is 300 messages of 4 packets (warm-up excluded): sent %+v rcvd %+v", sent, rcvd)
	}

	r.Client.Retries.Store(2)
	res, err = run(t, c, cfg)
	r.Client.Retries.Store(0)
	if err != nil || !res.Tainted || len(res.CountersFlags) != 1 || res.CountersFlags[0].Counter != "retry_exceeded_err" ||
		res.CountersFlags[0].Side != "local" || res.CountersFlags[0].Class != counters.Error {
		t.Fatalf("a retry during the run must taint it, flagged on the client: %v %+v", err, res.CountersFlags)
	}

	r.Client.Lose.Store(30) // 2.5% of 1200: above the 1% the check allows
	res, err = run(t, c, cfg)
	r.Client.Lose.Store(0)
	if err != nil || !res.Tainted || len(res.CountersFlags) != 1 || res.CountersFlags[0].Class != counters.Sanity {
		t.Fatalf("packets the server never counted must fail the sanity check: %v %+v", err, res.CountersFlags)
	}

	r.Server.NoCounters.Store(true)
	res, err = run(t, c, cfg)
	r.Server.NoCounters.Store(false)
	if err != nil || res.Counters.Remote != nil || res.Tainted || !strings.Contains(strings.Join(res.Counters.Notes, "\n"), "server: no counters") {
		t.Fatalf("a server without counters: the notes say so, the result is not tainted: %v %+v", err, res.Counters)
	}

	off := cfg
	off.Counters = "off"
	if res, err = run(t, c, off); err != nil || res.Counters != nil || res.Tainted {
		t.Fatalf("--counters off: %v %+v", err, res.Counters)
	}
	list := cfg
	list.Counters = "sent_pkts"
	if res, err = run(t, c, list); err != nil || len(res.Counters.Local.Counters) != 1 || res.Counters.Local.Counters[0].Name != "sent_pkts" {
		t.Fatalf("--counters sent_pkts keeps that counter only: %v %+v", err, res.Counters.Local)
	}
	lat := result.Config{Op: "read", Test: result.Lat, Iterations: 100}
	if res, err = run(t, c, lat); err != nil || res.Counters == nil || res.Counters.Local == nil {
		t.Fatalf("latency tests read the counters too: %v %+v", err, res.Counters)
	}
}

// --interval: lines while the measured loop runs, the extremes in the result.
func TestPipeIntervals(t *testing.T) {
	r := benchtest.NewRig(t, ops.All, nil)
	c := dial(t, r, "")
	var lines []result.Interval
	var mu sync.Mutex
	c.OnInterval = func(l result.Interval) { mu.Lock(); lines = append(lines, l); mu.Unlock() }
	res, err := run(t, c, result.Config{Op: "write", Test: result.BW, DurationS: 0.45, IntervalS: 0.1, WarmupIterations: 10})
	mu.Lock()
	defer mu.Unlock()
	if err != nil || len(lines) < 3 || res.Intervals == nil || res.Intervals.Count != len(lines) {
		t.Fatalf("want 3 or more lines and their summary: %v, %d lines, %+v", err, len(lines), res.Intervals)
	}
	for i, l := range lines {
		if l.Index != i+1 || l.Messages == 0 || l.BWGbps <= 0 || l.Counters == nil {
			t.Errorf("line %d: %+v", i, l)
		}
		if l.BWGbps < res.Intervals.MinBWGbps || l.BWGbps > res.Intervals.MaxBWGbps {
			t.Errorf("line %d outside the summary's extremes: %v not in [%v, %v]", i, l.BWGbps, res.Intervals.MinBWGbps, res.Intervals.MaxBWGbps)
		}
	}
	if _, err := run(t, c, result.Config{Op: "read", Test: result.Lat, IntervalS: 1}); err == nil || !strings.Contains(err.Error(), "--interval") {
		t.Fatalf("--interval on a latency test: %v", err)
	}
}

// -b: both directions at once, each side's numbers and the sum.
func TestPipeBidirectional(t *testing.T) {
	r := benchtest.NewRig(t, ops.All, withToken)
	c := dial(t, r, "s3cret")
	for _, op := range []string{"write", "read"} {
		for _, cfg := range []result.Config{
			{Op: op, Test: result.BW, Bidirectional: true, Iterations: 200, MsgSizeBytes: 4096, NumQPs: 2},
			{Op: op, Test: result.BW, Bidirectional: true, DurationS: 0.2},
		} {
			res, err := run(t, c, cfg)
			if err != nil || res.Reverse == nil || res.Reverse.Messages == 0 || res.Reverse.Error != "" || res.BWSumGbps <= res.BWGbps {
				t.Fatalf("%s -b: %v, reverse %+v, sum %v, ours %v", op, err, res.Reverse, res.BWSumGbps, res.BWGbps)
			}
			if cfg.Iterations > 0 && res.Reverse.Messages != res.Iterations {
				t.Errorf("%s -b: the server moved %d messages, the client %d: same plan, same count", op, res.Reverse.Messages, res.Iterations)
			}
		}
	}
	if _, err := run(t, c, result.Config{Op: "write", Test: result.BW, Bidirectional: true, Verify: true}); err == nil || !strings.Contains(err.Error(), "--bidirectional") {
		t.Fatalf("-b with --verify: %v", err)
	}
}

// --concurrent: several clients' tests at once (incast), their memory bounded in total,
// and the server's counters withheld when other tests shared them.
func TestPipeConcurrentClients(t *testing.T) {
	r := benchtest.NewRig(t, ops.All, func(s *bench.Server) { s.Concurrent = 3 })
	type out struct {
		res        result.Result
		err        error
		start, end time.Time
	}
	outs := make(chan out, 3)
	for range 3 {
		c := dial(t, r, "")
		go func() {
			start := time.Now()
			res, err := c.Run(context.Background(), ops.All["write"], result.Config{Op: "write", Test: result.BW, DurationS: 0.5, WarmupIterations: 0})
			outs <- out{res, err, start, time.Now()}
		}()
	}
	var all []out
	for range 3 {
		all = append(all, <-outs)
	}
	for i, o := range all {
		if o.err != nil || o.res.Iterations == 0 {
			t.Fatalf("client %d: %v", i, o.err)
		}
		if o.res.Counters == nil || o.res.Counters.Remote != nil || !strings.Contains(strings.Join(o.res.Counters.Notes, "\n"), "at the same time") {
			t.Errorf("client %d: the server's counters were shared: they must be withheld, with the reason: %+v", i, o.res.Counters)
		}
		for j, p := range all {
			if i != j && (o.end.Before(p.start) || p.end.Before(o.start)) {
				t.Errorf("clients %d and %d did not overlap", i, j)
			}
		}
	}

	small := benchtest.NewRig(t, ops.All, func(s *bench.Server) { s.Concurrent = 2; s.MaxBuffer = 3 << 19 }) // 1.5 MiB: one 1 MiB plan fits, two do not
	first, second := dial(t, small, ""), dial(t, small, "")
	cfg := result.Config{Op: "write", Test: result.BW, DurationS: 0.5, MsgSizeBytes: 1 << 20, SQDepth: 4, WarmupIterations: 0}
	busy := make(chan error, 1)
	go func() { _, err := first.Run(context.Background(), ops.All["write"], cfg); busy <- err }()
	time.Sleep(100 * time.Millisecond)
	if _, err := run(t, second, cfg); err == nil || !strings.Contains(err.Error(), "tests running there hold") {
		t.Errorf("the second plan exceeds --max-buffer in total: %v", err)
	}
	if err := <-busy; err != nil {
		t.Fatal(err)
	}
}

// -b without counters: the start still starts the server's direction.
func TestPipeBidirectionalWithoutCounters(t *testing.T) {
	r := benchtest.NewRig(t, ops.All, withToken)
	c := dial(t, r, "s3cret")
	for _, op := range []string{"write", "read"} {
		res, err := run(t, c, result.Config{Op: op, Test: result.BW, Bidirectional: true, Iterations: 100, Counters: "off"})
		if err != nil || res.Reverse == nil || res.Reverse.Messages != 100 || res.Counters != nil {
			t.Fatalf("%s -b --counters off: %v, reverse %+v", op, err, res.Reverse)
		}
	}
}

// A bidirectional plan whose server warm-up outlasts the test (here a stalled one, as a
// long --warmup with an early start makes it) is ended at --max-test-time, not when the
// warm-up gives up (finding 3 of the hostile-peers review: the reply came after 30 s).
func TestPipeBidirectionalWarmupHeldToMaxTestTime(t *testing.T) {
	r := benchtest.NewRig(t, ops.All, func(s *bench.Server) {
		s.MaxTestTime = 500 * time.Millisecond
		s.Timeout = 30 * time.Second
		s.Token = "s3cret"
	})
	r.Server.Stall.Store(true)
	c := dial(t, r, "s3cret")
	start := time.Now()
	_, err := run(t, c, result.Config{Op: "write", Test: result.BW, Bidirectional: true, Iterations: 100, WarmupIterations: 10})
	if err == nil || !strings.Contains(err.Error(), "--max-test-time 500ms") || !strings.Contains(err.Error(), "warm-up") {
		t.Fatalf("want the server's --max-test-time during its warm-up, got %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the client heard after %v", d)
	}
}

// A shutdown during the server's warm-up of a bidirectional test ends the server within
// 2 s, and the client is told why.
func TestPipeShutdownDuringBidirectionalWarmup(t *testing.T) {
	r := benchtest.NewRig(t, ops.All, func(s *bench.Server) { s.Timeout = 30 * time.Second; s.Token = "s3cret" })
	r.Server.Stall.Store(true)
	c := dial(t, r, "s3cret")
	var took atomic.Int64
	time.AfterFunc(300*time.Millisecond, func() {
		at := time.Now()
		r.Shutdown()
		took.Store(int64(time.Since(at)))
	})
	_, err := run(t, c, result.Config{Op: "write", Test: result.BW, Bidirectional: true, Iterations: 100, WarmupIterations: 10})
	if err == nil || !strings.Contains(err.Error(), "shutting down") {
		t.Fatalf("want the server's shutdown notice, got %v", err)
	}
	for took.Load() == 0 {
		time.Sleep(10 * time.Millisecond)
	}
	if d := time.Duration(took.Load()); d > 2*time.Second {
		t.Fatalf("the server took %v to shut down during a warm-up", d)
	}
}

func withToken(s *bench.Server) { s.Token = "s3cret" }

// A server without a token does not stream to whatever address a client names: it
// refuses -b, and the session goes on (finding 6 of the hostile-peers review).
func TestPipeBidirectionalNeedsAToken(t *testing.T) {
	r := benchtest.NewRig(t, ops.All, nil)
	c := dial(t, r, "")
	if _, err := run(t, c, result.Config{Op: "write", Test: result.BW, Bidirectional: true, Iterations: 10}); err == nil || !strings.Contains(err.Error(), "without a token") {
		t.Fatalf("-b against a server without a token: %v", err)
	}
	if _, err := run(t, c, result.Config{Op: "write", Test: result.BW, Iterations: 10}); err != nil {
		t.Fatalf("the session must go on after the refusal: %v", err)
	}
}

// --peer-gid-check: an endpoint the server cannot tie to the control connection's
// address is refused before any QP is connected, and the session goes on.
func TestPipePeerGIDCheck(t *testing.T) {
	r := benchtest.NewRig(t, ops.All, func(s *bench.Server) { s.PeerGIDCheck = true })
	c := dial(t, r, "")
	if _, err := run(t, c, result.Config{Op: "read", Test: result.BW, Iterations: 10}); err == nil || !strings.Contains(err.Error(), "--peer-gid-check") {
		t.Fatalf("a pipe's client has no address its fe80:: GID could match: %v", err)
	}
	for _, s := range r.Server.Sessions() {
		if s.Connected() {
			t.Fatal("the server connected its QPs to a refused endpoint")
		}
	}
	if _, err := run(t, c, result.Config{Op: "read", Test: result.BW, Iterations: 10}); err == nil || !strings.Contains(err.Error(), "--peer-gid-check") {
		t.Fatalf("the session must go on after the refusal: %v", err)
	}
}

// An admitted client cannot flood the server's log: lines about sessions are limited
// per second too, and the log says how many it left out (finding 5's last).
func TestPipeSessionLinesAreBounded(t *testing.T) {
	r := benchtest.NewRig(t, ops.All, nil)
	conn := rawSession(t, r)
	const plans = 1000
	start := time.Now()
	for range plans {
		conn.Send(oob.Msg{Type: oob.TPlan, Plan: &result.Config{Op: "write", Test: result.BW, SQDepth: 4, PostList: 9}})
		if _, err := conn.Expect(oob.TEndpoint); err == nil {
			t.Fatal("an invalid plan was accepted")
		}
	}
	time.Sleep(1100 * time.Millisecond) // the next window reports what the last dropped
	conn.Send(oob.Msg{Type: oob.TBye})
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(r.Logs(), "bye") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	logs := r.Logs()
	n := strings.Count(logs, "test failed")
	// 128 a second, in every window the plans took (at most one more than the seconds)
	if limit := 128 * (int(time.Since(start)/time.Second) + 2); n >= plans || n > limit || !strings.Contains(logs, "more session lines not logged") {
		t.Fatalf("%d refused plans made %d log lines:\n%s", plans, n, logs[:min(len(logs), 2000)])
	}
}

// --max-test-time bounds the whole test, so a --duration is admitted only with room
// for its warm-up and drain: one that fits runs to its end, one that does not is
// refused before it starts, saying the most that fits (never stopped at its end).
func TestPipeDurationFitsMaxTestTime(t *testing.T) {
	r := benchtest.NewRig(t, ops.All, func(s *bench.Server) { s.MaxTestTime = time.Second }) // --timeout 2 s: room 250 ms
	c := dial(t, r, "")
	if _, err := run(t, c, result.Config{Op: "write", Test: result.BW, DurationS: 0.7, WarmupIterations: 1000}); err != nil {
		t.Fatalf("a --duration that fits: %v", err)
	}
	start := time.Now()
	_, err := run(t, c, result.Config{Op: "write", Test: result.BW, DurationS: 1, WarmupIterations: 1000})
	if err == nil || !strings.Contains(err.Error(), "at most --duration 750ms") || time.Since(start) > 500*time.Millisecond {
		t.Fatalf("a --duration of the whole --max-test-time: want it refused up front, got %v after %v", err, time.Since(start))
	}
}
