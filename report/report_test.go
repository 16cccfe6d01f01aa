package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/result"
)

func res(op string, size int, bw float64, p99 int64) result.Result {
	r := result.Result{SchemaVersion: 1, Config: result.Config{Op: op, Test: "bw", MsgSizeBytes: size, SQDepth: 128, PostList: 1, CQMod: 100, NumQPs: 1}, Iterations: 100}
	r.BWGbps, r.Lat = bw, result.Latency{Samples: 10, P99: p99}
	r.Client.RateGbps = 100
	return r
}

func TestCheckThresholds(t *testing.T) {
	rs := []result.Result{res("write", 65536, 90, 5000), res("read", 65536, 40, 9000)}
	if f := Check(rs, Thresholds{MinBWGbps: 30, MaxP99: 10 * time.Microsecond}); len(f) != 0 {
		t.Fatalf("want pass, got %v", f)
	}
	f := Check(rs, Thresholds{MinLinkFraction: 0.5, MaxP99: 8 * time.Microsecond})
	if len(f) != 2 || !strings.Contains(f[0], "read") && !strings.Contains(f[1], "40.0% of the 100 Gb/s link") {
		t.Fatalf("want 2 failures (read below half the link, read p99), got %v", f)
	}
	for _, line := range f {
		if !strings.HasPrefix(line, "read bw 64K") {
			t.Errorf("each failure names its configuration: %q", line)
		}
	}
}

func TestCheckBaselineRegression(t *testing.T) {
	base := []result.Result{res("write", 65536, 90, 5000)}
	if f := Check([]result.Result{res("write", 65536, 87, 5100)}, Thresholds{Baseline: base, Tolerance: 0.05}); len(f) != 0 {
		t.Fatalf("within 5%%: %v", f)
	}
	f := Check([]result.Result{res("write", 65536, 80, 6000)}, Thresholds{Baseline: base, Tolerance: 0.05})
	if len(f) != 2 || !strings.Contains(f[0], "bandwidth regressed -11.1%") || !strings.Contains(f[1], "p99 latency regressed +20.0%") {
		t.Fatalf("got %v", f)
	}
	if f := Check([]result.Result{res("write", 4096, 80, 6000)}, Thresholds{Baseline: base}); len(f) != 1 || !strings.Contains(f[0], "no baseline") {
		t.Fatalf("got %v", f)
	}
}

func TestCompareAlignsByConfiguration(t *testing.T) {
	a := []result.Result{res("write", 65536, 50, 1000), res("write", 4096, 10, 500)}
	b := []result.Result{res("write", 65536, 75, 800), res("read", 65536, 40, 900)}
	var out bytes.Buffer
	if err := Compare(&out, []string{"cx5", "cx6"}, [][]result.Result{a, b}); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{"75.000 (+50.0%)", "0.80 (-20.0%)", "read bw 64K"} {
		if !strings.Contains(s, want) {
			t.Errorf("compare output lacks %q:\n%s", want, s)
		}
	}
}

func TestCSVHeaderMatchesRows(t *testing.T) {
	var out bytes.Buffer
	if err := WriteCSV(&out, []result.Result{res("write", 64, 1, 1)}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || strings.Count(lines[0], ",") != strings.Count(lines[1], ",") {
		t.Fatalf("header and row differ in columns:\n%s", out.String())
	}
}
