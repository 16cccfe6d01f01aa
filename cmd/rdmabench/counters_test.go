package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/counters"
	"github.com/rdmabench/rdmabench/verbs"
)

const (
	mlx5Tree = "../../counters/testdata/mlx5"
	rxeTree  = "../../counters/testdata/rxe-6.1"
)

func TestCountersFlagErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--count", "3"},
		{"--watch", "0s"},
		{"--watch", "-1s"},
		{"--watch", "1s", "--count", "0"},
		{"--watch", "1s", "--count", "-2"},
		{"--all"},
		{"-x", "3"},
		{"-i", "0"},
		{"--watch", "soon"},
		{"rxe0"},
	} {
		root := newRootCmd()
		root.SetArgs(append([]string{"counters"}, args...))
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&out)
		err := root.Execute()
		var fe *flagError
		if !errors.As(err, &fe) {
			t.Errorf("%v: want a flag error (exit 2), got %v", args, err)
		}
	}
}

func TestCountersFlags(t *testing.T) {
	var got *countersOptions
	cmd := newCmdCounters(func(o *countersOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"-d", "rxe0", "-i", "2", "--watch", "500ms", "--count", "4", "--json", "--all", "--profile", "rxe"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.Local.Device != "rxe0" || got.Local.Port != 2 || got.Watch != 500*time.Millisecond || got.Count != 4 ||
		!got.JSON || !got.All || got.Profile != "rxe" || got.Root != "/" || got.Ctx == nil {
		t.Errorf("%+v", got)
	}
	cmd = newCmdCounters(func(o *countersOptions) error { got = o; return nil })
	cmd.SetArgs(nil)
	if err := cmd.Execute(); err != nil || got.Local.Port != 1 || got.Watch != 0 || got.Count != 0 || got.Root != "/" {
		t.Errorf("defaults: %+v, %v", got, err)
	}
}

func runCounters(t *testing.T, o *countersOptions) (string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	o.Out, o.Err = &out, &errOut
	if o.Local.Port == 0 {
		o.Local.Port = 1
	}
	if err := countersRun(o); err != nil {
		t.Fatalf("%v\n%s%s", err, out.String(), errOut.String())
	}
	return out.String(), errOut.String()
}

func contains(t *testing.T, what, s string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(s, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, s)
		}
	}
}

func TestCountersSnapshotTable(t *testing.T) {
	out, errOut := runCounters(t, &countersOptions{Root: mlx5Tree})
	contains(t, "mlx5 table", out,
		"mlx5_1 port 1: ACTIVE (LinkUp), Ethernet, 100 Gb/sec (4X EDR); netdev ens1f1np1 up, MTU 9000; profile cx6; hw_counters cached 10ms",
		"port_xmit_wait", "N/A (no PMA)", "4-byte words", "11166778084", "rx_write_requests", "sanity", "congestion", "np_cnp_sent")
	if errOut != "" || strings.Contains(out, "note:") {
		t.Errorf("stderr %q", errOut)
	}
	out, _ = runCounters(t, &countersOptions{Root: rxeTree})
	contains(t, "rxe table", out, "rxe0 port 1: ACTIVE (LinkUp), Ethernet, 10 Gb/sec (1X QDR); netdev vethA up, MTU 1500; profile rxe",
		"note: no PMA port counters (ports/1/counters absent)", "completer_retry_err", "rx_dropped")
	// -d names a device whose port is down: it is shown all the same.
	o := &countersOptions{Root: mlx5Tree}
	o.Local.Device = "mlx5_0"
	out, _ = runCounters(t, o)
	contains(t, "mlx5_0", out, "mlx5_0 port 1: DOWN (Disabled)")
}

func TestCountersSnapshotJSON(t *testing.T) {
	out, _ := runCounters(t, &countersOptions{Root: rxeTree, JSON: true})
	if strings.Count(out, "\n") != 1 {
		t.Fatalf("want one line:\n%s", out)
	}
	validateDoc(t, "counters-snapshot", []byte(out))
	var line map[string]any
	if err := json.Unmarshal([]byte(out), &line); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"schema_version", "kind", "profile", "device", "port", "time", "took_ns", "state", "rate", "netdev", "netdev_mtu_bytes",
		"hw_counters_lifespan_ns", "counters", "notes", "classes"} {
		if _, ok := line[k]; !ok {
			t.Errorf("snapshot line lacks %q: %s", k, out)
		}
	}
	if line["kind"] != "snapshot" || line["profile"] != "rxe" || line["device"] != "rxe0" {
		t.Errorf("%s", out)
	}
	if cl := line["classes"].(map[string]any); cl["send_err"] != "error" || cl["sent_pkts"] != "sanity" || cl["ack_deferred"] != nil {
		t.Errorf("classes: %v", cl)
	}
}

// fakeWatch makes Take return the fixture with steps[i] added to its counters on the
// i-th re-read, one second apart, and Tick a channel that ticks as often as asked.
func fakeWatch(o *countersOptions, steps []map[string]uint64) {
	base := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	n := 0
	o.Take = func(root, dev string, port int) (counters.Snapshot, error) {
		s, err := counters.Take(root, dev, port)
		s.Time = base.Add(time.Duration(n) * time.Second)
		for i := 0; i < n && i < len(steps); i++ {
			for k, add := range steps[i] {
				for j := range s.Counters {
					if c := &s.Counters[j]; string(c.Scope)+"/"+c.Name == k {
						*c.Value += add
					}
				}
			}
		}
		n++
		return s, err
	}
	o.Tick = func(time.Duration) (<-chan time.Time, func()) {
		c := make(chan time.Time, 16)
		for range 16 {
			c <- base
		}
		return c, func() {}
	}
}

func TestCountersWatchTable(t *testing.T) {
	o := &countersOptions{Root: rxeTree, Watch: time.Second, Count: 2}
	fakeWatch(o, []map[string]uint64{{"hw_port/sent_pkts": 1000, "hw_port/duplicate_request": 3, "netdev/rx_dropped": 2}, {}})
	out, _ := runCounters(t, o)
	contains(t, "watch", out, "rxe0 port 1: ACTIVE", "03:04:06.000 (1.000s):", "sent_pkts", "1000.0", "duplicate_request",
		"03:04:07.000 (1.000s): no counter changed")
	if strings.Contains(out, "rcvd_pkts") || strings.Contains(out, "completer_retry_err") {
		t.Errorf("unchanged counters shown:\n%s", out)
	}
	// The flagged rows are marked; the sanity row is not.
	for _, l := range strings.Split(out, "\n") {
		flagged := strings.Contains(l, "duplicate_request") // rx_dropped is info on rxe: unrelated traffic lands there too
		if (flagged || strings.Contains(l, "sent_pkts") || strings.Contains(l, "rx_dropped")) && strings.Contains(l, "!") != flagged {
			t.Errorf("mark: %q", l)
		}
	}

	// --all: every counter, changed or not.
	o = &countersOptions{Root: rxeTree, Watch: time.Second, Count: 1, All: true}
	fakeWatch(o, nil)
	out, _ = runCounters(t, o)
	contains(t, "watch --all", out, "rcvd_pkts", "completer_retry_err", "tx_errors")
}

func TestCountersWatchJSON(t *testing.T) {
	o := &countersOptions{Root: mlx5Tree, Watch: time.Second, Count: 2, JSON: true}
	fakeWatch(o, []map[string]uint64{{"port/port_xmit_data": 250, "hw_port/np_cnp_sent": 4, "hw_port/rx_write_requests": 64}, {}})
	out, _ := runCounters(t, o)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 {
		t.Fatalf("want a snapshot and 2 delta lines:\n%s", out)
	}
	validateDoc(t, "counters-snapshot", []byte(lines[0]))
	validateDoc(t, "counters-delta", []byte(lines[1]))
	validateDoc(t, "counters-delta", []byte(lines[2]))
	var d struct {
		Kind     string            `json:"kind"`
		Device   string            `json:"device"`
		Interval time.Duration     `json:"interval_ns"`
		Counters []counters.Change `json:"counters"`
		Flags    []counters.Flag   `json:"flags"`
	}
	if err := json.Unmarshal([]byte(lines[1]), &d); err != nil {
		t.Fatal(err)
	}
	if d.Kind != "delta" || d.Device != "mlx5_1" || d.Interval != time.Second || len(d.Counters) != 3 {
		t.Errorf("%s", lines[1])
	}
	if c := d.Counters[0]; c.Name != "port_xmit_data" || c.Unit != counters.Bytes || *c.Delta != 1000 {
		t.Errorf("4-byte words in bytes: %+v", c)
	}
	if len(d.Flags) != 1 || d.Flags[0].String() != "local congestion counter np_cnp_sent (hw_port) +4" {
		t.Errorf("flags: %+v", d.Flags)
	}
	contains(t, "quiet interval", lines[2], `"kind":"delta"`, `"counters":[]`)
}

// Without --count, watch runs until Ctrl-C (the context), and ends without an error.
func TestCountersWatchUntilCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	o := &countersOptions{Root: rxeTree, Watch: time.Second, Ctx: ctx}
	fakeWatch(o, nil)
	take, ticks := o.Take, 0
	o.Take = func(root, dev string, port int) (counters.Snapshot, error) {
		if ticks++; ticks == 4 {
			cancel()
		}
		return take(root, dev, port)
	}
	out, _ := runCounters(t, o)
	if n := strings.Count(out, "no counter changed"); n < 3 {
		t.Errorf("want 3 or more intervals:\n%s", out)
	}
}

func TestCountersShortWatchWarns(t *testing.T) {
	o := &countersOptions{Root: rxeTree, Watch: 5 * time.Millisecond, Count: 1}
	fakeWatch(o, nil)
	_, errOut := runCounters(t, o)
	contains(t, "stderr", errOut, "shorter than the hw_counters' cache (10ms)")
}

func TestCountersDevices(t *testing.T) {
	empty := t.TempDir()
	os.MkdirAll(filepath.Join(empty, "sys/class/infiniband"), 0o755)
	for _, c := range []struct {
		root, dev string
		port      int
		want      string
	}{
		{empty, "", 1, "rdma link add"},
		{t.TempDir(), "rxe0", 1, "rdma link add"},
		{mlx5Tree, "mlx5_9", 1, `RDMA device "mlx5_9" not found; available: mlx5_0, mlx5_1`},
		{mlx5Tree, "", 2, "no RDMA device among mlx5_0, mlx5_1 has port 2 ACTIVE"},
		{rxeTree, "rxe0", 3, "RDMA device rxe0 has no port 3: it has port 1"},
	} {
		o := &countersOptions{Root: c.root, Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}
		o.Local.Device, o.Local.Port = c.dev, c.port
		err := countersRun(o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s -d %q -i %d: want %q, got %v", c.root, c.dev, c.port, c.want, err)
		}
		if c.want == "rdma link add" && !errors.Is(err, verbs.ErrNoDevice) {
			t.Errorf("want verbs.ErrNoDevice, got %v", err)
		}
	}
}

func TestCountersProfile(t *testing.T) {
	// --profile wins over detection.
	o := &countersOptions{Root: mlx5Tree, Profile: "cx5"}
	out, _ := runCounters(t, o)
	contains(t, "--profile", out, "; profile cx5;")
	// A device sysfs does not identify: no classes, and a word on stderr.
	root := t.TempDir()
	for f, v := range map[string]string{"ports/1/state": "4: ACTIVE", "ports/1/hw_counters/send_err": "1"} {
		p := filepath.Join(root, "sys/class/infiniband/x0", f)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(v+"\n"), 0o644)
	}
	out, errOut := runCounters(t, &countersOptions{Root: root})
	contains(t, "stderr", errOut, "cannot tell x0's driver from sysfs: no counter classes (pass --profile)")
	contains(t, "table", out, "send_err", "info")
	if _, err := detectProfile(mlx5Tree, "mlx5_1"); err != nil {
		t.Error(err)
	}
	if err := countersRun(&countersOptions{Root: rxeTree, Profile: "nosuch", Local: o.Local, Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}); err == nil || !strings.Contains(err.Error(), `no profile "nosuch"`) {
		t.Errorf("bad --profile: %v", err)
	}
}
