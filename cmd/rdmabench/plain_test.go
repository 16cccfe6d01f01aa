package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/internal/plaintest"
	"github.com/rdmabench/rdmabench/profiles"
	"github.com/rdmabench/rdmabench/verbs"
)

// --format plain, table by table: one header line, then a line per row with as many
// words as the header, and what else the command says under it, each line starting with
// a word and a colon.

func TestCountersPlain(t *testing.T) {
	out, _ := runCounters(t, &countersOptions{Root: rxeTree, Format: "plain"})
	rows := plaintest.Rows(t, out, "counter scope value unit class", strings.Count(out, "\n")-4) // two notes and the link under it
	if len(rows) == 0 || !strings.Contains(out, "\nnote: no PMA port counters") || !strings.HasSuffix(out, "\nlink: rxe0 port 1: ACTIVE (LinkUp), Ethernet, 10 Gb/sec (1X QDR); netdev vethA up, MTU 1500; profile rxe; hw_counters cached 10ms\n") {
		t.Errorf("notes and link under the table:\n%s", out)
	}

	// --watch: the header once, a line per counter and interval.
	o := &countersOptions{Root: rxeTree, Watch: time.Second, Count: 2, Format: "plain"}
	fakeWatch(o, []map[string]uint64{{"hw_port/sent_pkts": 1000, "hw_port/duplicate_request": 3, "netdev/rx_dropped": 2}, {}})
	out, _ = runCounters(t, o)
	rows = plaintest.Rows(t, out, "time interval_s flag counter scope delta unit per_s class", 3)
	for _, r := range rows {
		if r[0] != "03:04:06.000" || r[1] != "1.000" || (r[3] == "duplicate_request") != (r[2] == "!") {
			t.Errorf("row %q", r)
		}
	}
	if !strings.HasPrefix(strings.Split(out, "\n")[4], "link: rxe0 port 1") {
		t.Errorf("the link's line under the rows:\n%s", out)
	}
}

func TestDoctorPlain(t *testing.T) {
	out, err := doctorWith(healthyRxe, rxeDevices, nil, "--format", "plain")
	if err != nil {
		t.Fatal(err)
	}
	rows := plaintest.Rows(t, out, "verdict check found fix", 13)
	if r := rows[0]; r[0] != "ok" || r[1] != "device" || r[3] != "-" {
		t.Errorf("device row %q", r)
	}
	if !strings.HasSuffix(out, "\nsummary: 10 ok, 0 warnings, 0 failed, 4 skipped\n") {
		t.Errorf("summary:\n%s", out)
	}
	// auto, on no terminal, is plain: awk '$1 == "FAIL" {print $2}' names the failure.
	out, _ = execute(newCmdDoctor(func(o *doctorOptions) error {
		o.Root, o.Addrs = healthyRxe, eth0Addrs
		o.Devices = func() ([]verbs.DeviceInfo, error) { return nil, verbs.ErrNoDevice }
		return doctorRun(o)
	}))
	if r := plaintest.Rows(t, out, "verdict check found fix", 13); r[0][0] != "FAIL" || r[0][1] != "device" {
		t.Errorf("auto:\n%s", out)
	}
}

func TestDevicesPlain(t *testing.T) {
	var out bytes.Buffer
	if err := devicesRun(&devicesOptions{Out: &out, Format: "plain", List: gidFixture}); err != nil {
		t.Fatal(err)
	}
	rows := plaintest.Rows(t, out.String(), "device model driver fw port state link_layer active_mtu gbps gid_index gid type netdev", 6)
	if r := rows[1]; r[0] != "rxe0" || r[4] != "1" || r[9] != "1" || r[10] != "10.0.0.1" || r[11] != "RoCE_v2" || r[12] != "vethA" {
		t.Errorf("rxe0's GID 1: %q", r)
	}
	// A port without a GID has its line.
	out.Reset()
	list := func() ([]verbs.DeviceInfo, error) {
		return []verbs.DeviceInfo{{Name: "mlx5_1", Model: "ConnectX-6 Dx", Ports: []verbs.PortInfo{{Port: 1, State: "DOWN"}}}}, nil
	}
	if err := devicesRun(&devicesOptions{Out: &out, Format: "plain", List: list}); err != nil {
		t.Fatal(err)
	}
	if r := plaintest.Rows(t, out.String(), "device model driver fw port state link_layer active_mtu gbps gid_index gid type netdev", 1); r[0][1] != "ConnectX-6_Dx" || r[0][10] != "-" {
		t.Errorf("%q", r)
	}
	if _, err := execute(newCmdDevices(nil), "--gid", "--format", "plain"); err == nil || !strings.Contains(err.Error(), "--format goes with the list") {
		t.Errorf("--gid --format: %v", err)
	}
}

func TestProfilesPlain(t *testing.T) {
	var out bytes.Buffer
	if err := profilesRun(&profilesOptions{Out: &out, Format: "plain"}); err != nil {
		t.Fatal(err)
	}
	all, err := profiles.All()
	if err != nil {
		t.Fatal(err)
	}
	rows := plaintest.Rows(t, out.String(), "profile description drivers vendor_ids part_ids link_gbps grid_points_write", len(all))
	got := map[string]string{}
	for i, r := range rows {
		if r[0] != all[i].Name || strings.Contains(r[4], " ") {
			t.Errorf("row %q", r)
		}
		got[r[0]] = r[5]
	}
	// A family's nominal rate is the range its models span, one figure where every
	// part has the same rate.
	for name, want := range map[string]string{"cx6": "25-200", "cx7": "200-800", "bnxt_re": "10-400", "irdma": "1-100",
		"cx5": "100", "efa": "100", "rxe": "10"} {
		if got[name] != want {
			t.Errorf("%s: link Gb/s %q, want %q", name, got[name], want)
		}
	}
}

func TestMRPlain(t *testing.T) {
	out, err := execute(newCmdMR(fakeMR(-1, 64<<10)), "-d", "rxe0", "--sizes", "4K,64K", "--modes", "warm,huge", "--format", "plain")
	if exitCode(err) != 0 {
		t.Fatalf("%v\n%s", err, out)
	}
	rows := plaintest.Rows(t, out, "bytes mode pages reg_p50_us reg_p99_us reg_mean_us dereg_p50_us dereg_p99_us dereg_mean_us reg_gibps note", 4)
	if r := rows[1]; r[0] != "4096" || r[1] != "huge" || r[10] != "skipped:_no_hugepages_reserved_(sysctl_vm.nr_hugepages)" {
		t.Errorf("row %q", r)
	}
	for _, want := range []string{"\nmr: rxe0 port 1: ibv_reg_mr / ibv_dereg_mr, 20 times each; memlock unlimited\n", "\nerror: 64K warm: ibv_reg_mr(warm)"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q under the table:\n%s", want, out)
		}
	}
}
