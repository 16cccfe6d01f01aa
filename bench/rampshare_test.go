package bench_test

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/bench"
	"github.com/rdmabench/rdmabench/bench/benchtest"
	"github.com/rdmabench/rdmabench/bench/ops"
	"github.com/rdmabench/rdmabench/plan"
	"github.com/rdmabench/rdmabench/result"
)

// The ramp share a run reports (Client.Run, bench/client.go): its QPs' queues at once
// over the bytes it moved, each by hand. The fake's READs are capped at 16 outstanding
// per QP (its max_rd_atom). 1 QP of 1200 messages and 4 QPs of 300 move the same bytes;
// the 4 QPs hold 4 queues.
func TestRampShareOfAClientRun(t *testing.T) {
	r := benchtest.NewRig(t, ops.All, nil)
	c := dial(t, r, "")
	bw := func(op string, qps, depth int, iters uint64) result.Config {
		return result.Config{Op: op, Test: result.BW, MsgSizeBytes: 4096, SQDepth: depth, NumQPs: qps, Iterations: iters, Counters: "off"}
	}
	for _, tc := range []struct {
		name string
		cfg  result.Config
		want float64
	}{
		{"write, 1 QP x 32", bw("write", 1, 32, 1200), 32.0 / 1200},
		{"write, 4 QPs x 32", bw("write", 4, 32, 300), 4 * 32.0 / 1200},
		{"read, 1 QP x 128, rd_atom 16", bw("read", 1, 128, 1200), 16.0 / 1200},
		{"read, 4 QPs x 128, rd_atom 16", bw("read", 4, 128, 300), 4 * 16.0 / 1200},
		{"read, 4 QPs x 8, rd_atom 16", bw("read", 4, 8, 300), 4 * 8.0 / 1200},
		{"write, 2 QPs x 128 of 50 messages", bw("write", 2, 128, 50), 1},
	} {
		res, err := run(t, c, tc.cfg)
		switch {
		case err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case res.Bytes != 1200*4096 && tc.want != 1:
			t.Errorf("%s: moved %d B, want 1200 x 4096", tc.name, res.Bytes)
		case tc.cfg.Op == "read" && res.MaxRdAtom != 16:
			t.Errorf("%s: max_rd_atom %d, want the fake's 16", tc.name, res.MaxRdAtom)
		case res.RampShare == nil:
			t.Errorf("%s: no ramp share", tc.name)
		case math.Abs(*res.RampShare-tc.want) > 1e-12:
			t.Errorf("%s: ramp share %v, want %v", tc.name, *res.RampShare, tc.want)
		}
	}
}

// Against a perftest server (PerftestClient, bench/perftest.go) the same: -q 2 of
// 200 messages each, depth 128; the fake's READs capped at 16. And the report the
// server logs is the client's average in the unit the client used (MB/s of 2^20
// bytes, or Gb/s with --report_gbits), the same number as the client's result.
func TestPerftestClientRampShareAndReport(t *testing.T) {
	fab := benchtest.NewFabric()
	addr, logs := servePerftest(t, fab)
	for _, tc := range []struct {
		op    string
		gbits bool
		want  float64
	}{
		{"write", false, 2 * 128.0 / 400},
		{"read", false, 2 * 16.0 / 400},
		{"write", true, 2 * 128.0 / 400},
	} {
		c := bench.PerftestClient{Engine: &benchtest.Engine{Fabric: fab, Name: "cli"}, Addr: addr, Local: bench.Local{Device: "cli"},
			Timeout: 2 * time.Second, Gbits: tc.gbits}
		cfg := result.Config{Op: tc.op, Test: result.BW, Iterations: 200, NumQPs: 2, SQDepth: 128, InlineBytes: plan.InlineAuto, Counters: "off"}
		ops.Defaults(&cfg)
		rs, err := c.Run(t.Context(), ops.All[tc.op], cfg, nil)
		if err != nil || len(rs) != 1 {
			t.Fatalf("%s: %v (%d results)", tc.op, err, len(rs))
		}
		r := rs[0]
		if r.RampShare == nil || math.Abs(*r.RampShare-tc.want) > 1e-12 {
			t.Errorf("%s -q 2: ramp share %v, want %v", tc.op, r.RampShare, tc.want)
		}
		want := fmt.Sprintf("%.2f MB/s (2^20 B) = %.3f Gb/s", r.BWMiBps, r.BWGbps)
		if tc.gbits {
			want = fmt.Sprintf("%.3f Gb/s (--report_gbits)", r.BWGbps)
		}
		want = fmt.Sprintf("the client reported %d B x %d: %s", r.Config.MsgSizeBytes, r.Iterations, want)
		deadline := time.Now().Add(5 * time.Second)
		for !strings.Contains(logs.String(), want) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if !strings.Contains(logs.String(), want) {
			t.Errorf("%s, --report_gbits %v: the server's log does not say %q:\n%s", tc.op, tc.gbits, want, logs)
		}
	}
}
