package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/host"
	"github.com/rdmabench/rdmabench/report"
	"github.com/rdmabench/rdmabench/result"
)

// clockResult is a 64K WRITE of gbps measured where the clock domain is domain ("":
// none known, a real machine's).
func clockResult(domain string, gbps float64) result.Result {
	r := result.Result{SchemaVersion: result.SchemaVersion, Config: result.Config{Op: "write", Test: result.BW, MsgSizeBytes: 65536, SQDepth: 128, PostList: 1, CQMod: 100, NumQPs: 1},
		Iterations: 100000, BWGbps: gbps}
	if domain != "" {
		f := host.Facts{Device: "rxe0", Provider: "rxe", ClockDomain: domain}
		r.Client.HostFacts, r.ServerDevice.HostFacts = &f, &f
	}
	return r
}

func writeResultFile(t *testing.T, path string, rs ...result.Result) {
	t.Helper()
	os.MkdirAll(filepath.Dir(path), 0o755)
	var buf bytes.Buffer
	if err := result.WriteAll(result.NewNDJSONEncoder(&buf), rs); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func runRoot(args ...string) (string, error) {
	root := newRootCmd()
	var out bytes.Buffer
	root.SetArgs(args)
	root.SetOut(&out)
	root.SetErr(&out)
	err := root.Execute()
	return out.String(), err
}

// Two inputs of the same file name (two sweeps' sweep.ndjson) get columns that tell
// them apart. (It used to be sweep.ndjson_gbps twice.)
func TestReportCompareSameFileNames(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "out/a/sweep.ndjson"), filepath.Join(dir, "out/b/sweep.ndjson")
	writeResultFile(t, a, clockResult("", 10))
	writeResultFile(t, b, clockResult("", 11))
	out, err := runRoot("report", "compare", a, b, "--format", "plain")
	if err != nil {
		t.Fatal(err)
	}
	head := strings.SplitN(out, "\n", 2)[0]
	if head != "configuration a/sweep.ndjson_gbps a/sweep.ndjson_p99_us b/sweep.ndjson_gbps b/sweep.ndjson_gbps_change b/sweep.ndjson_p99_us b/sweep.ndjson_p99_change" {
		t.Errorf("header %q\n%s", head, out)
	}
}

// report compare of a virtual clock's run against a real one's says they are not
// comparable and, as for other configurations it cannot compare, exits 0; report check
// of a virtual result against a real baseline fails, saying why.
func TestReportAcrossClocks(t *testing.T) {
	dir := t.TempDir()
	virtual, real := filepath.Join(dir, "virtual.ndjson"), filepath.Join(dir, "real.ndjson")
	writeResultFile(t, virtual, clockResult(host.ClockVirtual, 10))
	writeResultFile(t, real, clockResult(host.ClockReal, 10))

	out, err := runRoot("report", "compare", real, virtual, "--format", "table")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{report.VirtualTime + "\n",
		"clock: real.ndjson vs virtual.ndjson: not comparable: real.ndjson was measured on a real or unknown clock, virtual.ndjson on a virtual clock (qemu icount); no change between them is shown\n",
		"not comparable: clock domain differs"} {
		if !strings.Contains(out, want) {
			t.Errorf("compare: no %q in\n%s", want, out)
		}
	}
	if strings.Contains(out, "+0.0%") {
		t.Errorf("compare: a change across clocks:\n%s", out)
	}

	// The same numbers: on the numbers alone it would pass.
	out, err = runRoot("report", "check", virtual, "--baseline", real)
	if err == nil || !strings.Contains(out, "FAIL write bw 64K qps=1 depth=128 post=1 cqmod=100 off=0 inline=0: not comparable: this result was measured on a virtual clock (qemu icount), the baseline on a real or unknown clock") ||
		!strings.Contains(out, "NOTE "+report.VirtualTime+"\n") {
		t.Errorf("check: %v\n%s", err, out)
	}
	if out, err := runRoot("report", "check", virtual, "--baseline", virtual); err != nil || !strings.Contains(out, "ok: 1 results pass") {
		t.Errorf("check on one clock: %v\n%s", err, out)
	}
	if out, err := runRoot("report", "show", virtual, "--format", "table"); err != nil || !strings.HasPrefix(out, report.VirtualTime+"\n") {
		t.Errorf("show: %v\n%s", err, out)
	}
}

// A run's own output (rdmabench write bw in the virtual-clock bed) says it once: in its
// table, or with --output on stderr, stdout keeping one number a line; the interim
// saves say nothing.
func TestRunOutputSaysVirtualTime(t *testing.T) {
	rs := []result.Result{clockResult(host.ClockVirtual, 10)}
	for _, f := range []string{"table", "plain", "perftest"} {
		var stdout, stderr bytes.Buffer
		o := outputs{Stdout: &stdout, Stderr: &stderr, Format: f}
		if err := o.save(rs); err != nil {
			t.Fatal(err)
		}
		if err := o.write(rs); err != nil {
			t.Fatal(err)
		}
		if strings.Count(stdout.String(), report.VirtualTime) != 1 || stderr.Len() != 0 {
			t.Errorf("%s: stdout\n%s\nstderr\n%s", f, stdout.String(), stderr.String())
		}
	}
	var stdout, stderr bytes.Buffer
	o := outputs{Stdout: &stdout, Stderr: &stderr, Output: "bandwidth"}
	if err := o.write(rs); err != nil {
		t.Fatal(err)
	}
	if countLines(stdout.String()) != 1 || strings.Contains(stdout.String(), "virtual") || stderr.String() != report.VirtualTime+"\n" {
		t.Errorf("--output: stdout %q, stderr %q", stdout.String(), stderr.String())
	}
	stdout.Reset()
	o = outputs{Stdout: &stdout, Stderr: &stderr, Format: "table"}
	if err := o.write([]result.Result{clockResult(host.ClockReal, 10)}); err != nil || strings.Contains(stdout.String(), "virtual") {
		t.Errorf("a real clock: %v\n%s", err, stdout.String())
	}
}
