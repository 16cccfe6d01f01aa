package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/bench"
	"github.com/rdmabench/rdmabench/bench/benchtest"
	"github.com/rdmabench/rdmabench/bench/ops"
	"github.com/rdmabench/rdmabench/result"
)

// --baseline tcp on bandwidth tests; anything else is a usage error (exit 2) before
// anything runs.
func TestBaselineFlag(t *testing.T) {
	for _, op := range []string{"write", "read"} {
		if c, err := parsePlan(t, op, "bw", "--baseline", "tcp", "-q", "2"); err != nil || c.Baseline != "tcp" {
			t.Errorf("%s bw --baseline tcp: %q, %v", op, c.Baseline, err)
		}
		if c, err := parsePlan(t, op, "bw"); err != nil || c.Baseline != "" {
			t.Errorf("%s bw: no baseline by default, got %q, %v", op, c.Baseline, err)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"write", "bw", "host", "--baseline", "udp"}, `--baseline "udp": want tcp`},
		{[]string{"read", "bw", "host", "--baseline", "TCP"}, `--baseline "TCP": want tcp`},
		{[]string{"read", "bw", "host", "--baseline", "tcp", "-b"}, "--baseline applies to bandwidth tests, without -b/--bidirectional"},
		{[]string{"write", "lat", "host", "--baseline", "tcp"}, "unknown flag: --baseline"},
		{[]string{"read", "lat", "host", "--baseline", "tcp"}, "unknown flag: --baseline"},
		{[]string{"write", "bw", "host", "--baseline"}, "flag needs an argument: --baseline"},
	} {
		root := newRootCmd()
		root.SetArgs(tc.args)
		root.SetOut(&bytes.Buffer{})
		root.SetErr(&bytes.Buffer{})
		err := root.Execute()
		var fe *flagError
		if !errors.As(err, &fe) || exitCode(err) != 2 || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: want a usage error (exit 2) with %q, got exit %d: %v", tc.args, tc.want, exitCode(err), err)
		}
	}
}

// After the RDMA run the command measures the baseline and shows it under the table;
// a failed baseline keeps the RDMA numbers, says why and fails the command (exit 1).
func TestBaselineAfterTheRun(t *testing.T) {
	ctx := context.Background()
	r := benchtest.NewRig(t, ops.All, nil)
	c, err := r.Dial("")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res, err := c.Run(ctx, ops.All["write"], result.Config{Op: "write", Test: result.BW, Baseline: "tcp", Iterations: 100, MsgSizeBytes: 4096, NumQPs: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Baseline(ctx, &res); err != nil {
		t.Fatal(err)
	}
	if b := res.Baseline; b == nil || b.Messages != 200 || b.Bytes != res.Bytes || b.RDMAOverTCP <= 0 || b.BWGbps <= 0 {
		t.Fatalf("baseline: %+v", b)
	}
	res.Clock = "clock_monotonic_raw" // the fake engine's clock, "fake", is no clock of the schema
	file := filepath.Join(t.TempDir(), "r.json")
	var out bytes.Buffer
	if err := (outputs{JSON: file, Stdout: &out, Stderr: &out}).write([]result.Result{res}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "baseline: write bw 4K qps=2") || !strings.Contains(out.String(), "x tcp") {
		t.Errorf("the table must show the TCP rate and the ratio:\n%s", out.String())
	}
	js, _ := os.ReadFile(file)
	if err := result.Validate(js); err != nil || !bytes.Contains(js, []byte(`"rdma_over_tcp"`)) {
		t.Errorf("the JSON result with its baseline: %v\n%s", err, js)
	}

	short := benchtest.NewRig(t, ops.All, func(s *bench.Server) { s.MaxTestTime = 50 * time.Millisecond })
	c2, err := short.Dial("")
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	res, err = c2.Run(ctx, ops.All["read"], result.Config{Op: "read", Test: result.BW, Baseline: "tcp", Iterations: 3000, MsgSizeBytes: 1 << 20, SQDepth: 4})
	if err != nil {
		t.Fatal(err)
	}
	err = c2.Baseline(ctx, &res)
	if err == nil || exitCode(err) != 1 || !strings.HasPrefix(err.Error(), "TCP baseline: ") || !strings.Contains(err.Error(), "--max-test-time") {
		t.Fatalf("want a failed baseline, exit 1, naming the TCP baseline: %v", err)
	}
	if res.Error != "" || res.BWGbps <= 0 || res.Iterations != 3000 || res.Baseline == nil || res.Baseline.Error != err.Error() || res.Baseline.RDMAOverTCP != 0 {
		t.Fatalf("the RDMA numbers stay, the baseline says why: %+v, %+v", res, res.Baseline)
	}
	out.Reset()
	(outputs{Stdout: &out}).write([]result.Result{res})
	if !strings.Contains(out.String(), "baseline: read bw 1M") || !strings.Contains(out.String(), "tcp FAILED: TCP baseline: ") || strings.Count(out.String(), "\n") < 5 {
		t.Errorf("the table must show the failed baseline on one line:\n%s", out.String())
	}
}
