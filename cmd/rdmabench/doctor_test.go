package main

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/bench"
	"github.com/rdmabench/rdmabench/bench/benchtest"
	"github.com/rdmabench/rdmabench/bench/ops"
	"github.com/rdmabench/rdmabench/oob"
	"github.com/rdmabench/rdmabench/verbs"
)

func TestDoctorFlags(t *testing.T) {
	t.Setenv("RDMABENCH_TOKEN", "")
	tokenFile := filepath.Join(t.TempDir(), "token")
	os.WriteFile(tokenFile, []byte("s3cret\n"), 0o600)
	checkFlags(t, "doctor", newCmdDoctor,
		func() doctorOptions {
			return doctorOptions{Local: bench.Local{Port: 1, GIDIndex: -1}, TCPPort: oob.DefaultPort, Timeout: 10 * time.Second, Root: "/", Format: "auto"}
		},
		func(o *doctorOptions) { o.Out, o.Devices, o.Conn, o.Client = nil, nil, nil, nil },
		[]flagCase[doctorOptions]{
			{args: nil},
			{args: []string{"-d", "rxe0", "-i", "2", "-x", "3", "--json"}, want: func(o *doctorOptions) {
				o.Local, o.JSON = bench.Local{Device: "rxe0", Port: 2, GIDIndex: 3}, true
			}},
			{args: []string{"host", "-p", "9000", "--token-file", tokenFile, "--timeout", "5s"}, want: func(o *doctorOptions) {
				o.Server, o.TCPPort, o.TokenFile, o.Token, o.Timeout = "host", 9000, tokenFile, "s3cret", 5*time.Second
			}},
			{args: []string{"-p", "9000"}, wantErr: "--port goes with SERVER"},
			{args: []string{"--token-file", tokenFile}, wantErr: "--token-file goes with SERVER"},
			{args: []string{"--timeout", "1s"}, wantErr: "--timeout goes with SERVER"},
			{args: []string{"host", "--timeout", "0s"}, wantErr: "--timeout 0s"},
			{args: []string{"host", "--token", "a", "--token-file", tokenFile}, wantErr: "--token and --token-file: give one"},
			{args: []string{"a", "b"}, wantErr: "accepts at most 1 arg(s), received 2"},
			{args: []string{"--ib-port", "x"}, wantErr: `invalid argument "x" for "-i, --ib-port"`},
			{args: []string{"--format", "plain"}, want: func(o *doctorOptions) { o.Format = "plain" }},
			{args: []string{"--format", "perftest"}, wantErr: `--format "perftest": want auto, table, plain`},
			{args: []string{"--format", "table", "--json"}, wantErr: "--format goes with the text, not --json"},
		})
}

// healthyRxe is the doctor's healthy Soft-RoCE fixture and its device.
const healthyRxe = "../../doctor/testdata/rxe"

func rxeDevices() ([]verbs.DeviceInfo, error) {
	return []verbs.DeviceInfo{{
		Name: "rxe0", Driver: "rxe", Model: "Soft-RoCE (rxe)", VendorID: 0xffffff,
		Ports: []verbs.PortInfo{{Port: 1, State: "ACTIVE", LinkLayer: "Ethernet", ActiveMTU: 4096, MaxMTU: 4096, Width: 1, LaneGbps: 10, RateGbps: 10,
			GIDs: []verbs.GIDEntry{{Index: 1, GID: "10.0.0.1", Type: "RoCE v2", Netdev: "eth0"}}}},
	}}, nil
}

func eth0Addrs(nd string) ([]net.IP, error) {
	if nd != "eth0" {
		return nil, errors.New("no such interface")
	}
	return []net.IP{net.ParseIP("10.0.0.1")}, nil
}

// doctorWith runs the doctor command on the fixture root with devices, after set; as
// a table (its output is no terminal) unless args say --json or --format.
func doctorWith(root string, devices func() ([]verbs.DeviceInfo, error), set func(*doctorOptions), args ...string) (string, error) {
	if !slices.Contains(args, "--json") && !slices.Contains(args, "--format") {
		args = append(args, "--format", "table")
	}
	return execute(newCmdDoctor(func(o *doctorOptions) error {
		o.Root, o.Devices, o.Addrs = root, devices, eth0Addrs
		if set != nil {
			set(o)
		}
		return doctorRun(o)
	}), args...)
}

// Exit 0 with warnings, 1 when a check failed, 2 for usage errors.
func TestDoctorExitCodes(t *testing.T) {
	slow := func() ([]verbs.DeviceInfo, error) {
		ds, _ := rxeDevices()
		ds[0].Ports[0].RateGbps = 2.5
		return ds, nil
	}
	none := func() ([]verbs.DeviceInfo, error) { return nil, verbs.ErrNoDevice }
	for _, tc := range []struct {
		name    string
		devices func() ([]verbs.DeviceInfo, error)
		args    []string
		code    int
		out     string
	}{
		{"healthy", rxeDevices, nil, 0, "10 ok, 0 warnings, 0 failed, 4 skipped"},
		{"warnings", slow, nil, 0, "warn  link-rate      rxe0 port 1 runs at 2.5 Gb/s"},
		{"failure", none, nil, 1, "FAIL  device         libibverbs found no RDMA device"},
		{"usage", rxeDevices, []string{"--json", "a", "b"}, 2, ""},
	} {
		out, err := doctorWith(healthyRxe, tc.devices, nil, tc.args...)
		if got := exitCode(err); got != tc.code || !strings.Contains(out, tc.out) {
			t.Errorf("%s: exit %d (%v), want %d with %q in\n%s", tc.name, got, err, tc.code, tc.out, out)
		}
		if tc.code == 1 && !strings.Contains(err.Error(), "doctor: 1 of 14 checks failed") {
			t.Errorf("%s: the error counts the failures: %v", tc.name, err)
		}
	}
}

func TestDoctorJSON(t *testing.T) {
	none := func() ([]verbs.DeviceInfo, error) { return nil, verbs.ErrNoDevice }
	out, err := doctorWith(healthyRxe, none, nil, "--json")
	if exitCode(err) != 1 {
		t.Fatalf("want exit 1: %v", err)
	}
	validateDoc(t, "doctor", []byte(out))
	var r struct {
		SchemaVersion int            `json:"schema_version"`
		OK            bool           `json:"ok"`
		Summary       map[string]int `json:"summary"`
		Checks        []struct {
			Name, Verdict, Found, Fix string
		} `json:"checks"`
	}
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil || dec.More() {
		t.Fatalf("stdout must be one JSON object: %v\n%s", err, out)
	}
	if r.OK || r.Summary["fail"] != 1 || len(r.Checks) != 14 || r.Checks[0].Name != "device" || r.Checks[0].Verdict != "fail" || r.Checks[0].Fix == "" {
		t.Errorf("JSON: %+v", r)
	}
}

// With SERVER, the checks reach the server the command dials, with its token.
func TestDoctorServer(t *testing.T) {
	t.Setenv("RDMABENCH_TOKEN", "")
	r := benchtest.NewRig(t, ops.All, func(s *bench.Server) { s.Token = "s3cret" })
	tokenFile := filepath.Join(t.TempDir(), "token")
	os.WriteFile(tokenFile, []byte("s3cret\n"), 0o600)
	var dialed []string
	rig := func(o *doctorOptions) {
		o.Conn = func(_ context.Context, addr string, timeout time.Duration) (net.Conn, error) {
			dialed = append(dialed, addr)
			return r.DialConn(), nil
		}
		o.Client = func(_ context.Context, addr string, local bench.Local, token string, _ time.Duration) (*bench.Client, error) {
			if local != (bench.Local{Device: "rxe0", Port: 1, GIDIndex: -1}) {
				t.Errorf("the client's device: %+v", local)
			}
			return r.Dial(token)
		}
	}
	out, err := doctorWith(healthyRxe, rxeDevices, rig, "-d", "rxe0", "server-host", "-p", "9000", "--token-file", tokenFile)
	if err != nil || len(dialed) != 1 || dialed[0] != "server-host:9000" {
		t.Fatalf("want exit 0 after dialing server-host:9000 (%v): %v\n%s", dialed, err, out)
	}
	for _, want := range []string{"ok    server-token", "ok    write-bw          100 WRITEs of 4 KiB: ", "ok    read-bw ", "15 ok, 0 warnings, 0 failed"} {
		if !strings.Contains(out, want) {
			t.Errorf("want %q in\n%s", want, out)
		}
	}
	t.Setenv("RDMABENCH_TOKEN", "wrong")
	out, err = doctorWith(healthyRxe, rxeDevices, rig, "server-host")
	if exitCode(err) != 1 || !strings.Contains(out, "FAIL  server-token") {
		t.Errorf("a wrong token fails its check: %v\n%s", err, out)
	}
}

// The command's own dial: a closed port is a failed check, not an error of the command.
func TestDoctorServerRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skip(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	out, err := doctorWith(healthyRxe, rxeDevices, nil, "127.0.0.1", "-p", strconv.Itoa(port), "--timeout", "2s")
	if exitCode(err) != 1 || !strings.Contains(out, "FAIL  server-reachable  cannot connect to 127.0.0.1:"+strconv.Itoa(port)) {
		t.Errorf("want a failed reachability check: %v\n%s", err, out)
	}
}
