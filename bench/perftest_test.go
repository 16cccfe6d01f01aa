package bench_test

import (
	"bytes"
	"context"
	"log"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/bench"
	"github.com/rdmabench/rdmabench/bench/benchtest"
	"github.com/rdmabench/rdmabench/bench/ops"
	"github.com/rdmabench/rdmabench/oob/perftest"
	"github.com/rdmabench/rdmabench/plan"
	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/verbs"
)

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// servePerftest runs a PerftestServer on the fake engine over loopback TCP.
func servePerftest(t *testing.T, fab *benchtest.Fabric) (string, *syncBuf) {
	t.Helper()
	return servePerftestWith(t, &benchtest.Engine{Fabric: fab, Name: "srv"}, nil)
}

// servePerftestWith serves on engine e, with configure's settings.
func servePerftestWith(t *testing.T, e *benchtest.Engine, configure func(*bench.PerftestServer)) (string, *syncBuf) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuf{}
	ps := &bench.PerftestServer{Engine: e, Local: bench.Local{Device: "srv"},
		Timeout: 2 * time.Second, MaxTest: 10 * time.Second, MaxBuffer: 1 << 30, LatSize: 2, Log: log.New(logs, "", 0)}
	if configure != nil {
		configure(ps)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { ps.Serve(ctx, l); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return l.Addr().String(), logs
}

// TestPerftestBothSidesBandwidth: rdmabench's perftest client against rdmabench's
// perftest server (fake engines, real TCP): the exchange runs to its end, the client
// measures every message, and the server tells the test and logs the client's report.
func TestPerftestBothSidesBandwidth(t *testing.T) {
	fab := benchtest.NewFabric()
	addr, logs := servePerftest(t, fab)
	for _, tc := range []struct {
		op, test, want string
		qps            int
	}{
		{"write", "bw", "write_bw, 1 QP: the client reported 65536 B x 200", 1},
		{"write", "bw", "write_bw, 2 QP: the client reported 65536 B x 400", 2},
		{"read", "bw", "read_bw, 1 QP: the client reported 65536 B x 200", 1},
		{"read", "lat", "read_lat", 1},
	} {
		c := bench.PerftestClient{Engine: &benchtest.Engine{Fabric: fab, Name: "cli"}, Addr: addr, Local: bench.Local{Device: "cli"}, Timeout: 2 * time.Second}
		cfg := result.Config{Op: tc.op, Test: result.Test(tc.test), Iterations: 200, NumQPs: tc.qps, InlineBytes: plan.InlineAuto, Counters: "off"}
		ops.Defaults(&cfg)
		rs, err := c.Run(context.Background(), ops.All[tc.op], cfg, nil)
		if err != nil || len(rs) != 1 {
			t.Fatalf("%s %s -q %d: %v (%d results)", tc.op, tc.test, tc.qps, err, len(rs))
		}
		if want := uint64(200 * tc.qps); rs[0].Iterations != want {
			t.Errorf("%s %s: measured %d messages, want %d", tc.op, tc.test, rs[0].Iterations, want)
		}
		deadline := time.Now().Add(5 * time.Second)
		for !strings.Contains(logs.String(), tc.want) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if !strings.Contains(logs.String(), tc.want) {
			t.Fatalf("%s %s: the server's log does not say %q:\n%s", tc.op, tc.test, tc.want, logs)
		}
	}
}

// TestPerftestServerRefusesOutOfOrderKeys: a client that repeats a key message out of
// perftest's order is refused at once; it cannot hold the port.
func TestPerftestServerRefusesOutOfOrderKeys(t *testing.T) {
	fab := benchtest.NewFabric()
	addr, logs := servePerftest(t, fab)
	cli, _ := (&benchtest.Engine{Fabric: fab, Name: "cli"}).Open(bench.Local{Device: "cli"})
	s, err := cli.NewSession(ops.All["write"].ClientSpec(result.Config{Op: "write", Test: result.BW, NumQPs: 2, MsgSizeBytes: 64, SQDepth: 4, PostList: 1, CQMod: 1}))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ep := s.Local()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	pc := &perftest.Conn{NC: nc, Client: true, Timeout: 2 * time.Second}
	if err := pc.Versions(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := pc.SysData(4096, 64); err != nil {
		t.Fatal(err)
	}
	if _, err := pc.MTU(1024); err != nil {
		t.Fatal(err)
	}
	d0 := perftest.Dest{QPN: ep.QPNs[0], RKey: ep.RKey, OutReads: 1, GID: [16]byte{15: 1}}
	d1 := d0
	d1.QPN = ep.QPNs[1]
	if _, err := pc.Keys("keys", d0, true); err != nil {
		t.Fatal(err)
	}
	if _, err := pc.Keys("keys", d1, true); err != nil {
		t.Fatal(err)
	}
	// Round two must start with QP 0: QP 1 again is out of order.
	if _, err := pc.Keys("keys", d1, true); err == nil {
		t.Fatal("the server answered a key message out of perftest's order")
	}
	deadline := time.Now().Add(3 * time.Second)
	for !strings.Contains(logs.String(), "not perftest's order") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(logs.String(), "not perftest's order") {
		t.Fatalf("server log:\n%s", logs)
	}
}

// TestPerftestClientLatencyRule: the perftest client measures a latency test through
// the op's latency rule (Op.ClientLatency), as every client does: perftest's rounds,
// all of them, in one call; the samples are named by the op's LatKind.
func TestPerftestClientLatencyRule(t *testing.T) {
	fab := benchtest.NewFabric()
	addr, _ := servePerftest(t, fab)
	op := ops.All["read"]
	var calls []bench.LatRounds
	rule := op.ClientLatency
	op.ClientLatency = func(s bench.Session, c result.Config, r bench.LatRounds) (verbs.LatResult, error) {
		calls = append(calls, r)
		return rule(s, c, r)
	}
	c := bench.PerftestClient{Engine: &benchtest.Engine{Fabric: fab, Name: "cli"}, Addr: addr, Local: bench.Local{Device: "cli"}, Timeout: 2 * time.Second}
	cfg := result.Config{Op: "read", Test: result.Lat, Iterations: 300, InlineBytes: plan.InlineAuto, Counters: "off"}
	rs, err := c.Run(context.Background(), op, cfg, nil)
	if err != nil || len(rs) != 1 {
		t.Fatalf("%v (%d results)", err, len(rs))
	}
	want := bench.LatRounds{N: 300, Timeout: 2 * time.Second, Perftest: true}
	if len(calls) != 1 || calls[0] != want {
		t.Fatalf("the op's latency rule was called with %+v, want once with %+v", calls, want)
	}
	if rs[0].Iterations != 300 || rs[0].LatKind != op.LatKind || rs[0].Lat.Samples != 300 {
		t.Errorf("%d rounds, %d %q samples; want 300 %q", rs[0].Iterations, rs[0].Lat.Samples, rs[0].LatKind, op.LatKind)
	}
}
