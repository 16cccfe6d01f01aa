package bench_test

// Fan-out / fan-in over net.Pipe with the fake engine: one client device, several
// servers, one QP each.

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/bench"
	"github.com/rdmabench/rdmabench/bench/benchtest"
	"github.com/rdmabench/rdmabench/bench/ops"
	"github.com/rdmabench/rdmabench/result"
)

func dialFan(t *testing.T, rs []*benchtest.Rig) *bench.Fan {
	t.Helper()
	f, err := benchtest.DialFan(rs, "")
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func runFan(t *testing.T, f *bench.Fan, cfg result.Config) (result.Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return f.Run(ctx, ops.All[cfg.Op], cfg)
}

// Broadcast WRITE and gather READ, streamed and in rounds, verified at every server
// (WRITE) or in every landing region (READ): the servers' shares add up to the
// totals, and the fairness index is 1 when every server is as fast.
func TestFanEveryMode(t *testing.T) {
	rs := benchtest.NewRigs(t, 3, ops.All, nil)
	f := dialFan(t, rs)
	for _, cfg := range []result.Config{
		{Op: "write", Test: result.BW, Verify: true, Iterations: 300, MsgSizeBytes: 4096, SQDepth: 16},
		{Op: "write", Test: result.BW, Verify: true, Iterations: 50, MsgSizeBytes: 100, Sync: "rounds"},
		{Op: "read", Test: result.BW, Verify: true, Iterations: 300, MsgSizeBytes: 100},
		{Op: "read", Test: result.BW, Verify: true, Iterations: 40, MsgSizeBytes: 8192, Sync: "rounds", Landing: "per-peer"},
		{Op: "read", Test: result.BW, Iterations: 40, MsgSizeBytes: 8192, Landing: "shared"},
		{Op: "write", Test: result.BW, DurationS: 0.05, MsgSizeBytes: 1},
	} {
		r, err := runFan(t, f, cfg)
		name := cfg.Op + "/" + r.Config.Sync + "/" + r.Config.Landing
		if err != nil || r.Error != "" {
			t.Fatalf("%s: %v (%s)", name, err, r.Error)
		}
		fan := r.Fan
		if fan == nil || len(fan.Peers) != 3 {
			t.Fatalf("%s: fan %+v", name, fan)
		}
		var msgs, bytes uint64
		for i, p := range fan.Peers {
			msgs += p.Messages
			bytes += p.Bytes
			if p.Device.Name != rs[i].Server.Name || !strings.HasPrefix(p.Server, "fake-server-") {
				t.Errorf("%s: peer %d is %s on %q", name, i, p.Server, p.Device.Name)
			}
			if cfg.DurationS == 0 && p.Messages != cfg.Iterations {
				t.Errorf("%s: peer %d completed %d, want %d", name, i, p.Messages, cfg.Iterations)
			}
			if p.BWGbps <= 0 || p.DurationNS <= 0 || p.DurationNS > r.DurationNS || p.Lat.Samples == 0 {
				t.Errorf("%s: peer %d: %g Gb/s over %d ns (run %d ns), %d samples", name, i, p.BWGbps, p.DurationNS, r.DurationNS, p.Lat.Samples)
			}
			if cfg.Verify && (p.Verify == nil || !p.Verify.OK) {
				t.Errorf("%s: peer %d verification %+v", name, i, p.Verify)
			}
		}
		if msgs != r.Iterations || bytes != r.Bytes || r.BWGbps <= 0 {
			t.Errorf("%s: peers %d msgs / %d B, total %d / %d (%g Gb/s)", name, msgs, bytes, r.Iterations, r.Bytes, r.BWGbps)
		}
		if math.Abs(fan.JainFairness-1) > 1e-9 || fan.MinPeerGbps <= 0 {
			t.Errorf("%s: fairness %g, min %g", name, fan.JainFairness, fan.MinPeerGbps)
		}
		// A verdict for timed streams only: every server gets every round, or all n messages.
		if want := map[bool]string{true: result.FairnessCannotTell, false: ""}[r.Config.Sync != "rounds" && cfg.DurationS > 0]; fan.Fairness != want || (want != "") != (fan.FairnessSpreadMessages != nil) {
			t.Errorf("%s: fairness verdict %q (spread %v, edge %d), want %q", name, fan.Fairness, fan.FairnessSpreadMessages, fan.FairnessEdgeMessages, want)
		}
		regions := 1
		if cfg.Op == "read" && r.Config.Landing == "per-peer" {
			regions = 3
		}
		if fan.RegisteredBytes <= 0 || fan.RegisteredBytes%int64(regions) != 0 || fan.ServerRegisteredBytes <= 0 {
			t.Errorf("%s: registered %d B here, %d B per server", name, fan.RegisteredBytes, fan.ServerRegisteredBytes)
		}
		if r.Counters == nil || r.Counters.Local == nil || r.Counters.Remote != nil || fan.WirePacketsPerMessage == nil || *fan.WirePacketsPerMessage < 1 {
			t.Errorf("%s: this side's counters %+v, %v packets per message", name, r.Counters, fan.WirePacketsPerMessage)
		}
		if r.Config.Sync == "rounds" {
			if fan.Rounds != cfg.Iterations || r.LatKind != "round" || r.Lat.Samples != cfg.Iterations {
				t.Errorf("%s: %d rounds, %d %q samples, want %d", name, fan.Rounds, r.Lat.Samples, r.LatKind, cfg.Iterations)
			}
		}
	}
}

// Landing: a shared region registers one server's worth, per-peer one per server.
func TestFanLandingMemory(t *testing.T) {
	f := dialFan(t, benchtest.NewRigs(t, 4, ops.All, nil))
	reg := map[string]int64{}
	for _, l := range []string{"shared", "per-peer"} {
		r, err := runFan(t, f, result.Config{Op: "read", Test: result.BW, Iterations: 20, MsgSizeBytes: 65536, Landing: l})
		if err != nil {
			t.Fatal(err)
		}
		reg[l] = r.Fan.RegisteredBytes
	}
	if reg["per-peer"] != 4*reg["shared"] || reg["shared"] < 65536 {
		t.Errorf("registered bytes: %v", reg)
	}
}

// A slow server gets fewer messages in a timed stream (and the index says so); in
// rounds everyone gets the same, at the pace of the slowest.
func TestFanFairness(t *testing.T) {
	rs := benchtest.NewRigs(t, 3, ops.All, nil)
	rs[2].Server.Cost = 4 * time.Microsecond
	f := dialFan(t, rs)
	r, err := runFan(t, f, result.Config{Op: "write", Test: result.BW, DurationS: 0.1, MsgSizeBytes: 4096})
	if err != nil {
		t.Fatal(err)
	}
	p := r.Fan.Peers
	if p[2].Messages*2 > p[0].Messages || r.Fan.JainFairness > 0.95 || r.Fan.MinPeerGbps != p[2].BWGbps {
		t.Errorf("stream: messages %d %d %d, fairness %g, min %g", p[0].Messages, p[1].Messages, p[2].Messages, r.Fan.JainFairness, r.Fan.MinPeerGbps)
	}
	if r.Fan.Fairness != result.FairnessUneven || r.Fan.FairnessEdgeMessages != 2*int64(r.Config.SQDepth)+int64(r.Config.CQMod) ||
		r.Fan.FairnessSpreadMessages == nil || *r.Fan.FairnessSpreadMessages <= float64(r.Fan.FairnessEdgeMessages) {
		t.Errorf("stream: verdict %q, spread %v messages, edge %d", r.Fan.Fairness, r.Fan.FairnessSpreadMessages, r.Fan.FairnessEdgeMessages)
	}
	r, err = runFan(t, f, result.Config{Op: "write", Test: result.BW, Iterations: 100, MsgSizeBytes: 4096, Sync: "rounds"})
	if err != nil {
		t.Fatal(err)
	}
	for i, q := range r.Fan.Peers {
		if q.Messages != 100 {
			t.Errorf("rounds: peer %d completed %d", i, q.Messages)
		}
	}
	if r.Lat.Min < (4 * time.Microsecond).Nanoseconds() {
		t.Errorf("rounds at the pace of the slowest: round min %d ns", r.Lat.Min)
	}
}

// One server refusing the plan fails the run with its reason and leaves every
// session usable; corruption at one server fails the run naming it.
func TestFanRefusalAndCorruption(t *testing.T) {
	rs := benchtest.NewRigs(t, 3, ops.All, func(s *bench.Server) { s.MaxBuffer = 1 << 20 })
	rs[1].Srv.MaxBuffer = 1 << 16
	f := dialFan(t, rs)
	_, err := runFan(t, f, result.Config{Op: "write", Test: result.BW, Iterations: 10, MsgSizeBytes: 1 << 17})
	if err == nil || !strings.Contains(err.Error(), "fake-server-2") || !strings.Contains(err.Error(), "max-buffer") {
		t.Fatalf("refusal: %v", err)
	}
	r, err := runFan(t, f, result.Config{Op: "write", Test: result.BW, Iterations: 10, MsgSizeBytes: 4096})
	if err != nil || r.Iterations != 30 {
		t.Fatalf("after a refusal: %v, %d messages", err, r.Iterations)
	}
	rs[0].Client.Corrupt.Store(true)
	r, err = runFan(t, f, result.Config{Op: "write", Test: result.BW, Iterations: 10, MsgSizeBytes: 4096, SQDepth: 8, Verify: true})
	rs[0].Client.Corrupt.Store(false)
	if err == nil || !strings.Contains(err.Error(), "verification failed") || r.Iterations == 0 {
		t.Fatalf("corruption: %v (%d messages kept)", err, r.Iterations)
	}
}

// What a fan run does not take is refused before anything is sent.
func TestFanRefusesPlans(t *testing.T) {
	f := dialFan(t, benchtest.NewRigs(t, 2, ops.All, nil))
	for _, c := range []struct {
		cfg  result.Config
		want string
	}{
		{result.Config{Op: "write", Test: result.Lat}, "bandwidth tests only"},
		{result.Config{Op: "write", Test: result.BW, NumQPs: 2}, "one QP per server"},
		{result.Config{Op: "write", Test: result.BW, Landing: "shared"}, "--landing applies to READ"},
		{result.Config{Op: "read", Test: result.BW, Landing: "shared", Verify: true}, "--landing per-peer"},
		{result.Config{Op: "read", Test: result.BW, Sync: "lockstep"}, "--sync"},
		{result.Config{Op: "read", Test: result.BW, Sync: "rounds", PostList: 4}, "do not apply"},
		{result.Config{Op: "write", Test: result.BW, Bidirectional: true}, "for one server"},
	} {
		if _, err := runFan(t, f, c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.cfg, err, c.want)
		}
	}
	if _, err := runFan(t, f, result.Config{Op: "write", Test: result.BW, Iterations: 10}); err != nil {
		t.Errorf("after the refusals: %v", err)
	}
}

func TestSplitServers(t *testing.T) {
	for in, want := range map[string]string{
		"a":                             "a:18515",
		"a,b:1,c":                       "a:18515 b:1 c:18515",
		"fe80::1,[fe80::2]:7, 10.0.0.1": "[fe80::1]:18515 [fe80::2]:7 10.0.0.1:18515",
	} {
		got, err := bench.SplitServers(in, 18515)
		if err != nil || strings.Join(got, " ") != want {
			t.Errorf("%q: %v %v, want %s", in, got, err, want)
		}
	}
	for _, in := range []string{"a,,b", "a,a:18515", ":1,b"} {
		if _, err := bench.SplitServers(in, 18515); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}

// Ctrl-C during the warm-up: an interrupted run that measured nothing, said so, with
// nothing "verified" and every session left usable.
func TestFanInterruptedInWarmup(t *testing.T) {
	rs := benchtest.NewRigs(t, 2, ops.All, nil)
	for _, r := range rs {
		r.Server.Cost = 50 * time.Microsecond
	}
	f := dialFan(t, rs)
	for _, op := range []string{"read", "write"} {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(100*time.Millisecond, cancel)
		r, err := f.Run(ctx, ops.All[op], result.Config{Op: op, Test: result.BW, Verify: true, WarmupIterations: 100000, Iterations: 10, MsgSizeBytes: 4096})
		cancel()
		if err == nil || !strings.Contains(err.Error(), "interrupted before") || !r.Interrupted {
			t.Errorf("%s: %v (interrupted %v)", op, err, r.Interrupted)
		}
		for _, p := range r.Fan.Peers {
			if p.Verify == nil || p.Verify.OK || !strings.Contains(p.Verify.Detail, "nothing was measured") {
				t.Errorf("%s: %s verification %+v", op, p.Server, p.Verify)
			}
		}
	}
	if _, err := runFan(t, f, result.Config{Op: "write", Test: result.BW, Iterations: 10}); err != nil {
		t.Errorf("after the interrupts: %v", err)
	}
}
