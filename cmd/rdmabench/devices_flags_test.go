package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/bench"
	"github.com/rdmabench/rdmabench/verbs"
)

// gidFixture: rxe0 (port ACTIVE, its IPv4 GID at index 1) and mlx5_0 (port 1 ACTIVE,
// RoCE v1 and v2 GIDs, the IPv4-mapped RoCE v2 one at index 3).
func gidFixture() ([]verbs.DeviceInfo, error) {
	return []verbs.DeviceInfo{
		{Name: "rxe0", Ports: []verbs.PortInfo{{Port: 1, State: "ACTIVE", LinkLayer: "Ethernet", GIDs: []verbs.GIDEntry{
			{Index: 0, GID: "fe80::f870:25ff:febf:b0ac", Type: "RoCE v2", Netdev: "vethA"},
			{Index: 1, GID: "10.0.0.1", Type: "RoCE v2", Netdev: "vethA"},
		}}}},
		{Name: "mlx5_0", Ports: []verbs.PortInfo{{Port: 1, State: "ACTIVE", LinkLayer: "Ethernet", GIDs: []verbs.GIDEntry{
			{Index: 0, GID: "fe80::1", Type: "RoCE v1", Netdev: "eth0"},
			{Index: 1, GID: "fe80::1", Type: "RoCE v2", Netdev: "eth0"},
			{Index: 2, GID: "192.0.2.7", Type: "RoCE v1", Netdev: "eth0"},
			{Index: 3, GID: "192.0.2.7", Type: "RoCE v2", Netdev: "eth0"},
		}}}},
	}, nil
}

func TestDevicesGIDFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		gid  bool
		want bench.Local
	}{
		{nil, false, bench.Local{Port: 1, GIDIndex: -1}},
		{[]string{"--gid"}, true, bench.Local{Port: 1, GIDIndex: -1}},
		{[]string{"--gid", "-d", "rxe0"}, true, bench.Local{Device: "rxe0", Port: 1, GIDIndex: -1}},
		{[]string{"--gid", "--device", "mlx5_0", "--ib-port", "2", "--gid-index", "3", "--json"}, true, bench.Local{Device: "mlx5_0", Port: 2, GIDIndex: 3}},
	} {
		var got *devicesOptions
		cmd := newCmdDevices(func(o *devicesOptions) error { got = o; return nil })
		cmd.SetArgs(c.args)
		cmd.SetOut(&bytes.Buffer{})
		cmd.SetErr(&bytes.Buffer{})
		if err := cmd.Execute(); err != nil {
			t.Errorf("%v: %v", c.args, err)
			continue
		}
		if got == nil || got.GID != c.gid || got.Local != c.want {
			t.Errorf("%v: got %+v, want gid %v and %+v", c.args, got, c.gid, c.want)
		}
	}
}

// -d, -i and -x select nothing in the listing: without --gid they are usage errors
// (exit 2), reported before any device is opened.
func TestDevicesLocalFlagsNeedGID(t *testing.T) {
	for _, args := range [][]string{
		{"devices", "-d", "rxe0"},
		{"devices", "--json", "-i", "2"},
		{"devices", "-x", "1"},
	} {
		root := newRootCmd()
		root.SetArgs(args)
		root.SetOut(&bytes.Buffer{})
		root.SetErr(&bytes.Buffer{})
		err := root.Execute()
		var fe *flagError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), "goes with --gid") {
			t.Errorf("%v: want a flag error naming --gid, got %v", args, err)
		}
	}
}

func TestDevicesGIDOutput(t *testing.T) {
	for _, c := range []struct {
		local bench.Local
		want  string
	}{
		{bench.Local{Port: 1, GIDIndex: -1}, "rxe0 1 1 10.0.0.1 RoCE v2\n"}, // the first device with port 1 ACTIVE
		{bench.Local{Device: "mlx5_0", Port: 1, GIDIndex: -1}, "mlx5_0 1 3 192.0.2.7 RoCE v2\n"},
		{bench.Local{Device: "mlx5_0", Port: 1, GIDIndex: 2}, "mlx5_0 1 2 192.0.2.7 RoCE v1\n"},
	} {
		var out bytes.Buffer
		o := &devicesOptions{Out: &out, GID: true, Local: c.local, List: gidFixture}
		if err := devicesRun(o); err != nil {
			t.Errorf("%+v: %v", c.local, err)
			continue
		}
		if out.String() != c.want {
			t.Errorf("%+v: got %q, want %q", c.local, out.String(), c.want)
		}
	}
}

func TestDevicesGIDJSON(t *testing.T) {
	var out bytes.Buffer
	o := &devicesOptions{Out: &out, GID: true, JSON: true, Local: bench.Local{Device: "rxe0", Port: 1, GIDIndex: -1}, List: gidFixture}
	if err := devicesRun(o); err != nil {
		t.Fatal(err)
	}
	validateDoc(t, "devices-gid", out.Bytes())
	var got map[string]any
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, out.String())
	}
	want := map[string]any{"schema_version": 1.0, "device": "rxe0", "port": 1.0, "index": 1.0, "gid": "10.0.0.1", "type": "RoCE v2", "netdev": "vethA"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: got %v, want %v (%s)", k, got[k], v, out.String())
		}
	}
}

func TestDevicesGIDErrors(t *testing.T) {
	for _, c := range []struct {
		local bench.Local
		list  func() ([]verbs.DeviceInfo, error)
		msg   string
	}{
		{bench.Local{Device: "rxe9", Port: 1, GIDIndex: -1}, gidFixture, `RDMA device "rxe9" not found; available: rxe0, mlx5_0`},
		{bench.Local{Device: "rxe0", Port: 2, GIDIndex: -1}, gidFixture, "rxe0 has no port 2"},
		{bench.Local{Device: "rxe0", Port: 1, GIDIndex: 7}, gidFixture, "GID index 7 is not a valid entry"},
		{bench.Local{Port: 1, GIDIndex: -1}, func() ([]verbs.DeviceInfo, error) { return nil, verbs.ErrNoDevice }, "rdma link add"},
	} {
		var out bytes.Buffer
		o := &devicesOptions{Out: &out, GID: true, Local: c.local, List: c.list}
		err := devicesRun(o)
		if err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%+v: want an error with %q, got %v", c.local, c.msg, err)
		}
		if out.Len() != 0 {
			t.Errorf("%+v: printed %q on failure", c.local, out.String())
		}
	}
}
