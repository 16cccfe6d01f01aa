package bench_test

// bench.Measurer, a search's engine, on the fake engine: the plan picks the client (one
// server's session, a fan-out's Fan per run), and what a lost connection means follows
// the client (the session's loss ends the search, a fan-out's is its run's).

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/bench"
	"github.com/rdmabench/rdmabench/bench/benchtest"
	"github.com/rdmabench/rdmabench/bench/ops"
	"github.com/rdmabench/rdmabench/plan"
	"github.com/rdmabench/rdmabench/result"
)

// stops says whether a search ends on err (plan.Measurer's contract).
func stops(err error) bool {
	var s interface{ StopsSweep() bool }
	return errors.As(err, &s) && s.StopsSweep()
}

func measure(t *testing.T, m plan.Measurer, cfg result.Config) (result.Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return m.Measure(ctx, cfg)
}

// A plan of one server runs on the session; of k servers on a Fan of the first k,
// connected for that run and closed after it.
func TestMeasurerPicksTheClient(t *testing.T) {
	rs := benchtest.NewRigs(t, 3, ops.All, nil)
	c := dial(t, rs[0], "")
	var dials []int
	m := bench.Measurer{Client: c, Ops: ops.All, Fan: func(_ context.Context, k int) (*bench.Fan, error) {
		dials = append(dials, k)
		return benchtest.DialFan(rs[:k], "")
	}}
	r, err := measure(t, m, result.Config{Op: "write", Test: result.BW, Iterations: 100, MsgSizeBytes: 4096})
	if err != nil || r.Fan != nil || r.Iterations != 100 || r.Server != c.Addr || len(dials) != 0 {
		t.Fatalf("one server: %v, fan %+v, %d messages on %q, dialled %v", err, r.Fan, r.Iterations, r.Server, dials)
	}
	for _, k := range []int{2, 3} {
		r, err := measure(t, m, result.Config{Op: "read", Test: result.BW, Iterations: 50, MsgSizeBytes: 4096, Peers: k})
		if err != nil || r.Fan == nil || len(r.Fan.Peers) != k || r.Iterations != uint64(50*k) {
			t.Fatalf("a fan-out of %d: %v, %+v, %d messages", k, err, r.Fan, r.Iterations)
		}
	}
	if len(dials) != 2 || dials[0] != 2 || dials[1] != 3 {
		t.Errorf("a Fan per fan-out run, of its servers: dialled %v", dials)
	}
	// The session goes on after the fan-outs.
	if r, err := measure(t, m, result.Config{Op: "write", Test: result.BW, Iterations: 10}); err != nil || r.Iterations != 10 {
		t.Fatalf("one server after the fan-outs: %v", err)
	}
}

// A fan-out that cannot be run (no Fan: one server; a server that cannot be reached)
// is that run's error, not the search's end; an unknown operation too.
func TestMeasurerFanOutErrorsAreTheRuns(t *testing.T) {
	rs := benchtest.NewRigs(t, 2, ops.All, nil)
	c := dial(t, rs[0], "")
	one := bench.Measurer{Client: c, Ops: ops.All}
	r, err := measure(t, one, result.Config{Op: "write", Test: result.BW, Iterations: 10, Peers: 2})
	if err == nil || stops(err) || !strings.Contains(err.Error(), "this search has one server") || r.Error != err.Error() {
		t.Errorf("a fan-out without a Fan: %v (stops %v), result error %q", err, stops(err), r.Error)
	}
	unreachable := bench.Measurer{Client: c, Ops: ops.All, Fan: func(context.Context, int) (*bench.Fan, error) {
		return nil, errors.New("cannot reach the rdmabench server at b:18600")
	}}
	if _, err := measure(t, unreachable, result.Config{Op: "write", Test: result.BW, Iterations: 10, Peers: 2}); err == nil || stops(err) {
		t.Errorf("a fan-out whose server cannot be reached: %v (stops %v)", err, stops(err))
	}
	if _, err := measure(t, one, result.Config{Op: "send", Test: result.BW, Iterations: 10}); err == nil || stops(err) || !strings.Contains(err.Error(), `unknown operation "send"`) {
		t.Errorf("an unknown operation: %v", err)
	}
	if _, err := bench.FanDialer([]string{"a:1", "b:1"}, bench.Local{}, "", time.Second)(context.Background(), 3); err == nil || !strings.Contains(err.Error(), "a fan-out to 3 servers: 2 given") {
		t.Errorf("FanDialer beyond its servers: %v", err)
	}
}

// Losing the session's server ends the search (*plan.SessionLostError), the result
// keeping what was measured.
func TestMeasurerSessionLost(t *testing.T) {
	r := benchtest.NewRig(t, ops.All, nil)
	m := bench.Measurer{Client: dial(t, r, ""), Ops: ops.All}
	time.AfterFunc(300*time.Millisecond, r.CutServer)
	res, err := measure(t, m, result.Config{Op: "write", Test: result.BW, DurationS: 30})
	var lost *plan.SessionLostError
	if !errors.As(err, &lost) || !stops(err) || !strings.Contains(err.Error(), "lost the server") {
		t.Fatalf("want a lost session that ends the search, got %#v", err)
	}
	if res.Error == "" || res.Iterations == 0 {
		t.Errorf("the result keeps what was measured: %d messages, error %q", res.Iterations, res.Error)
	}
}

// A plan that asks for a TCP baseline has it after its run; a failed baseline (here
// past the server's --max-test-time) is the result's, not an error: the RDMA run is
// still a measurement.
func TestMeasurerBaseline(t *testing.T) {
	r := benchtest.NewRig(t, ops.All, nil)
	m := bench.Measurer{Client: dial(t, r, ""), Ops: ops.All}
	res, err := measure(t, m, result.Config{Op: "write", Test: result.BW, Baseline: "tcp", Iterations: 100, MsgSizeBytes: 4096})
	if b := res.Baseline; err != nil || b == nil || b.Error != "" || b.Bytes != res.Bytes || b.RDMAOverTCP <= 0 {
		t.Fatalf("baseline: %v, %+v", err, b)
	}
	if res, err := measure(t, m, result.Config{Op: "write", Test: result.BW, Iterations: 100, MsgSizeBytes: 4096}); err != nil || res.Baseline != nil {
		t.Errorf("no baseline unless the plan asks: %v, %+v", err, res.Baseline)
	}
	// A server whose --max-test-time the run fits in and the baseline does not: 5 times
	// the run's wall time here (measured first, so that a slow or loaded host stretches
	// the limit too), for a baseline of 30 GB, which loopback TCP does not move in that.
	big := result.Config{Op: "read", Test: result.BW, Iterations: 30000, MsgSizeBytes: 1 << 20, SQDepth: 4}
	t0 := time.Now()
	if _, err := measure(t, m, big); err != nil {
		t.Fatal(err)
	}
	limit := max(50*time.Millisecond, 5*time.Since(t0))
	short := benchtest.NewRig(t, ops.All, func(s *bench.Server) { s.MaxTestTime = limit })
	m = bench.Measurer{Client: dial(t, short, ""), Ops: ops.All}
	big.Baseline = "tcp"
	res, err = measure(t, m, big)
	if err != nil || res.Error != "" || res.BWGbps <= 0 || res.Baseline == nil || !strings.Contains(res.Baseline.Error, "--max-test-time") {
		t.Fatalf("a failed baseline stays in the result: %v, %+v", err, res.Baseline)
	}
}
