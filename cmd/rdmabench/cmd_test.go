package main

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/verbs"
)

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int{"2": 2, "64K": 65536, "64k": 65536, "1M": 1 << 20, "2G": 2 << 30, "4KiB": 4096, "8KB": 8192} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "K", "-1", "1.5M", "3X"} {
		if _, err := parseSize(bad); err == nil {
			t.Errorf("parseSize(%q) must fail", bad)
		}
	}
}

func TestFlagErrorsAreFlagErrors(t *testing.T) {
	for _, args := range [][]string{
		{"write", "bw", "--size", "3X", "host"},
		{"read", "lat", "--no-such-flag", "host"},
		{"write", "bw", "--cq-mod", "500", "host"},
		{"read", "bw", "--inline", "64", "host"},
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
	for _, key := range []string{`"model": "ConnectX-6"`, `"vendor_part_id"`, `"max_qp_rd_atom"`, `"active_mtu_bytes"`, `"type": "RoCE v2"`, `"netdev": "eth0"`} {
		if !strings.Contains(out.String(), key) {
			t.Errorf("devices --json lacks %s:\n%s", key, out.String())
		}
	}
}

func TestReportCheckExitCodes(t *testing.T) {
	dir := t.TempDir()
	file := dir + "/r.json"
	r := result.Result{SchemaVersion: result.SchemaVersion, Config: result.Config{Op: "write", Test: "bw", MsgSizeBytes: 65536, SQDepth: 128, PostList: 1, CQMod: 100, NumQPs: 1}, Iterations: 10, BWGbps: 42}
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
