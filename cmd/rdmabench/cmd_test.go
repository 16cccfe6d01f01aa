package main

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/plan"
	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/verbs"
)

func TestFlagErrorsAreFlagErrors(t *testing.T) {
	for _, args := range [][]string{
		{"write", "bw", "--size", "3X", "host"},
		{"read", "lat", "--no-such-flag", "host"},
		{"write", "bw", "--cq-mod", "500", "host"},
		{"read", "bw", "--inline", "64", "host"},
		{"help", "bogus"},
		{"help", "report", "bogus"},
	} {
		root := newRootCmd()
		root.SetArgs(args)
		root.SetOut(&bytes.Buffer{})
		root.SetErr(&bytes.Buffer{})
		err := root.Execute()
		var fe *flagError
		if !errors.As(err, &fe) {
			t.Errorf("%v: want a flag error (exit 2), got %v", args, err)
		}
	}
}

func TestHelpTopics(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"help", "write"}, {"help", "report", "check"}} {
		root := newRootCmd()
		var out bytes.Buffer
		root.SetArgs(args)
		root.SetOut(&out)
		root.SetErr(&out)
		if err := root.Execute(); err != nil || !strings.Contains(out.String(), "Usage:") {
			t.Errorf("%v: err %v, output %q", args, err, out.String())
		}
	}
}

func TestDevicesWithoutDevice(t *testing.T) {
	var out bytes.Buffer
	o := &devicesOptions{Out: &out, List: func() ([]verbs.DeviceInfo, error) { return nil, verbs.ErrNoDevice }}
	err := devicesRun(o)
	if !errors.Is(err, verbs.ErrNoDevice) || !strings.Contains(err.Error(), "rdma link add") {
		t.Fatalf("want the no-device hint, got %v", err)
	}
}

func TestDevicesJSONFields(t *testing.T) {
	var out bytes.Buffer
	o := &devicesOptions{Out: &out, JSON: true, List: func() ([]verbs.DeviceInfo, error) {
		return []verbs.DeviceInfo{{Name: "mlx5_0", Model: verbs.Model("mlx5_core", 0x02c9, 4123),
			Ports: []verbs.PortInfo{{Port: 1, State: "ACTIVE", GIDs: []verbs.GIDEntry{{Index: 3, GID: "192.0.2.1", Type: "RoCE v2", Netdev: "eth0"}}}}}}, nil
	}}
	if err := devicesRun(o); err != nil {
		t.Fatal(err)
	}
	validateDoc(t, "devices", out.Bytes())
	for _, key := range []string{`"schema_version": 1`, `"model": "ConnectX-6"`, `"vendor_part_id"`, `"max_qp_rd_atom"`, `"active_mtu_bytes"`, `"type": "RoCE v2"`, `"netdev": "eth0"`} {
		if !strings.Contains(out.String(), key) {
			t.Errorf("devices --json lacks %s:\n%s", key, out.String())
		}
	}
}

func TestReportCheckExitCodes(t *testing.T) {
	dir := t.TempDir()
	file := dir + "/r.json"
	r := result.Result{SchemaVersion: result.SchemaVersion, Config: result.Config{Op: "write", Test: result.BW, MsgSizeBytes: 65536, SQDepth: 128, PostList: 1, CQMod: 100, NumQPs: 1}, Iterations: 10, BWGbps: 42}
	var buf bytes.Buffer
	result.WriteJSON(&buf, r)
	os.WriteFile(file, buf.Bytes(), 0o644)
	check := func(args ...string) (string, error) {
		root := newRootCmd()
		var out bytes.Buffer
		root.SetArgs(append([]string{"report", "check", file}, args...))
		root.SetOut(&out)
		root.SetErr(&out)
		err := root.Execute()
		return out.String(), err
	}
	if out, err := check("--min-bw", "40"); err != nil || !strings.Contains(out, "ok: 1 results pass") {
		t.Fatalf("want exit 0: %v\n%s", err, out)
	}
	out, err := check("--min-bw", "50")
	var fe *flagError
	if err == nil || errors.As(err, &fe) || !strings.Contains(out, "FAIL write bw 64K") || !strings.Contains(out, "below the minimum 50.000 Gb/s") {
		t.Fatalf("want exit 1 with a reason: %v\n%s", err, out)
	}
}

// parsePlan runs a test command's flag handling and returns the plan it would run.
func parsePlan(t *testing.T, op, test string, args ...string) (result.Config, error) {
	t.Helper()
	var got result.Config
	cmd := newCmdTest(op, test, func(o *testOptions) error { got = o.Config; return nil })
	cmd.SetArgs(append(args, "host"))
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	return got, cmd.Execute()
}

func TestInlineFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want int
	}{
		{nil, plan.InlineAuto},
		{[]string{"--inline", "auto"}, plan.InlineAuto},
		{[]string{"--inline", "0"}, 0},
		{[]string{"--inline", "64"}, 64},
		{[]string{"--inline", "1K"}, 1024},
	} {
		c, err := parsePlan(t, "write", "lat", tc.args...)
		if err != nil || c.InlineBytes != tc.want {
			t.Errorf("write lat %v: inline %d, %v; want %d", tc.args, c.InlineBytes, err, tc.want)
		}
	}
	// READ takes auto (it resolves to 0) and 0, not a size.
	if c, err := parsePlan(t, "read", "lat"); err != nil || c.InlineBytes != plan.InlineAuto {
		t.Errorf("read lat: inline %d, %v", c.InlineBytes, err)
	}
	for _, args := range [][]string{{"--inline", "-5"}, {"--inline", "big"}} {
		if _, err := parsePlan(t, "write", "lat", args...); err == nil {
			t.Errorf("write lat %v must fail", args)
		}
	}
}

// The defaults a plain command line gets are perftest's for the same test.
func TestDefaultPlansArePerftests(t *testing.T) {
	for _, tc := range []struct {
		op, test         string
		size, depth, mod int
		iters            uint64
	}{
		{"write", "bw", 65536, 128, 1, 5000},
		{"read", "bw", 65536, 128, 1, 1000},
		{"write", "lat", 2, 1, 1, 1000},
		{"read", "lat", 2, 1, 1, 1000},
	} {
		c, err := parsePlan(t, tc.op, tc.test)
		if err != nil || c.MsgSizeBytes != tc.size || c.SQDepth != tc.depth || c.CQMod != tc.mod || c.Iterations != tc.iters || c.PostList != 1 {
			t.Errorf("%s %s: %+v, %v", tc.op, tc.test, c, err)
		}
	}
	if c, _ := parsePlan(t, "write", "bw", "-s", "64"); c.CQMod != 100 {
		t.Errorf("write bw -s 64: cq-mod %d, want 100", c.CQMod)
	}
}

func TestWarmupFlag(t *testing.T) {
	if c, err := parsePlan(t, "write", "bw", "-n", "2000"); err != nil || c.WarmupIterations != 200 {
		t.Errorf("default warm-up: %d, %v; want a tenth of 2000", c.WarmupIterations, err)
	}
	if c, err := parsePlan(t, "write", "bw", "--warmup", "0"); err != nil || c.WarmupIterations != 0 {
		t.Errorf("--warmup 0: %d, %v", c.WarmupIterations, err)
	}
	var fe *flagError
	for _, w := range []string{"-1", "-5", "1000000001"} {
		if _, err := parsePlan(t, "write", "bw", "--warmup", w); !errors.As(err, &fe) || !strings.Contains(err.Error(), "--warmup") {
			t.Errorf("--warmup %s: want a flag error naming --warmup, got %v", w, err)
		}
	}
}

func TestPlanFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-n", "18446744073709551615", "-q", "2"}, "--iters"},
		{[]string{"-s", "1G", "-n", "281474976710655", "-q", "1024"}, "--size"},
		{[]string{"--warmup", "1000000001"}, "--warmup"},
		{[]string{"-D", "NaN"}, "--duration"},
		{[]string{"-D", "+Inf"}, "--duration"},
		{[]string{"-D", "-1"}, "--duration"},
		{[]string{"-D", "1e7"}, "--duration"},
		{[]string{"-t", "8", "-l", "9"}, "--post-list"},
		{[]string{"-t", "8", "-Q", "9"}, "--cq-mod"},
		{[]string{"-u", "32"}, "--qp-timeout 32: want 1 to 31"},
		{[]string{"--qp-timeout", "-1"}, "--qp-timeout"},
		{[]string{"-u", "0"}, "--qp-timeout 0"},
	} {
		_, err := parsePlan(t, "write", "bw", tc.args...)
		var fe *flagError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("write bw %v: want a flag error naming %s, got %v", tc.args, tc.want, err)
		}
	}
	if c, err := parsePlan(t, "read", "lat", "-u", "20"); err != nil || c.QPTimeout != 20 {
		t.Errorf("read lat -u 20: %+v, %v", c, err)
	}
	if c, err := parsePlan(t, "write", "bw", "-u", "14"); err != nil || c.QPTimeout != 0 {
		t.Errorf("write bw -u 14 (the default): %+v, %v", c, err)
	}
	// These used to deadlock the bandwidth loop; they are valid plans.
	for _, args := range [][]string{
		{"-t", "128", "-l", "64"},
		{"-t", "100", "-l", "8"},
		{"-t", "64", "-l", "32", "-Q", "50"},
		{"-t", "16", "-l", "16", "-Q", "10"},
	} {
		if _, err := parsePlan(t, "write", "bw", args...); err != nil {
			t.Errorf("write bw %v: %v", args, err)
		}
	}
}

func TestApplyClock(t *testing.T) {
	var fe *flagError
	if err := applyClock("rdtsc"); !errors.As(err, &fe) {
		t.Errorf("--clock rdtsc: want a flag error, got %v", err)
	}
	if err := applyClock("monotonic"); err != nil {
		t.Fatal(err)
	}
	if verbs.Clock() != "" && verbs.ClockNote() != verbs.MonotonicNote { // "" without cgo
		t.Errorf("--clock monotonic: note %q", verbs.ClockNote())
	}
	if err := applyClock("auto"); err != nil {
		t.Fatal(err)
	}
	_, ok := verbs.ForcedTSCNote("/")
	if err := applyClock("tsc"); (err == nil) != ok {
		t.Errorf("--clock tsc: %v (a TSC to force: %v)", err, ok)
	}
	applyClock("auto")
}

// An empty results file is an error that says so: show used to exit 0 silently, and
// check to say "1 of 0 checks failed".
func TestReportEmptyFile(t *testing.T) {
	file := t.TempDir() + "/empty.ndjson"
	os.WriteFile(file, nil, 0o644)
	for _, sub := range []string{"show", "check", "compare"} {
		args := []string{"report", sub, file}
		if sub == "compare" {
			args = append(args, file)
		}
		root := newRootCmd()
		var out bytes.Buffer
		root.SetArgs(args)
		root.SetOut(&out)
		root.SetErr(&out)
		if err := root.Execute(); err == nil || !strings.Contains(err.Error(), "no results in it") {
			t.Errorf("report %s of an empty file: want an error saying it holds no results, got %v\n%s", sub, err, out.String())
		}
	}
}
