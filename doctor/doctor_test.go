package doctor

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/bench"
	hostfacts "github.com/rdmabench/rdmabench/host"
	"github.com/rdmabench/rdmabench/verbs"
)

// tree builds a host root: testdata/base, with testdata/broken/overlay's files laid
// over it and the paths its REMOVE file lists deleted.
func tree(t *testing.T, base, overlay string) string {
	t.Helper()
	dst := t.TempDir()
	copyTree(t, filepath.Join("testdata", base), dst)
	if overlay == "" {
		return dst
	}
	src := filepath.Join("testdata", "broken", overlay)
	if b, err := os.ReadFile(filepath.Join(src, "REMOVE")); err == nil {
		for _, p := range strings.Fields(string(b)) {
			if err := os.RemoveAll(filepath.Join(dst, p)); err != nil {
				t.Fatal(err)
			}
		}
	}
	copyTree(t, src, dst)
	os.Remove(filepath.Join(dst, "REMOVE"))
	return dst
}

func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// rxe0 is the rxe fixture's device as libibverbs lists it: port 1 ACTIVE over eth0
// (MTU 4096 from eth0's 9000), 10 Gb/s, a link-local and an IPv4 RoCE v2 GID.
func rxe0() verbs.DeviceInfo {
	return verbs.DeviceInfo{
		Name: "rxe0", Driver: "rxe", Transport: "InfiniBand", Model: "Soft-RoCE (rxe)", VendorID: 0xffffff,
		MaxQPWR: 1 << 20, MaxCQE: 1 << 22,
		Ports: []verbs.PortInfo{{
			Port: 1, State: "ACTIVE", PhysState: "LINK_UP", LinkLayer: "Ethernet", ActiveMTU: 4096, MaxMTU: 4096,
			Width: 1, LaneGbps: 10, RateGbps: 10,
			GIDs: []verbs.GIDEntry{
				{Index: 0, GID: "fe80::5054:ff:fe12:3456", Type: "RoCE v2", Netdev: "eth0"},
				{Index: 1, GID: "10.0.0.1", Type: "RoCE v2", Netdev: "eth0"},
			},
		}},
	}
}

// mlx50 is the mlx5 fixture's ConnectX-6: 4X 50 Gb/s; its GIDs carry no netdev, so
// the doctor finds ens1f0np0 in sysfs.
func mlx50() verbs.DeviceInfo {
	return verbs.DeviceInfo{
		Name: "mlx5_0", Driver: "mlx5_core", Transport: "InfiniBand", Model: "ConnectX-6", VendorID: 0x02c9, VendorPartID: 4123,
		Ports: []verbs.PortInfo{{
			Port: 1, State: "ACTIVE", PhysState: "LINK_UP", LinkLayer: "Ethernet", ActiveMTU: 4096, MaxMTU: 4096,
			Width: 4, LaneGbps: 50, RateGbps: 200,
			GIDs: []verbs.GIDEntry{
				{Index: 0, GID: "fe80::1", Type: "RoCE v1"},
				{Index: 1, GID: "fe80::1", Type: "RoCE v2"},
				{Index: 2, GID: "192.0.2.7", Type: "RoCE v1"},
				{Index: 3, GID: "192.0.2.7", Type: "RoCE v2"},
			},
		}},
	}
}

func devices(ds ...verbs.DeviceInfo) func() ([]verbs.DeviceInfo, error) {
	return func() ([]verbs.DeviceInfo, error) { return ds, nil }
}

func addrs(m map[string][]string) func(string) ([]net.IP, error) {
	return func(nd string) ([]net.IP, error) {
		a, ok := m[nd]
		if !ok {
			return nil, fmt.Errorf("no such network interface %q", nd)
		}
		var ips []net.IP
		for _, s := range a {
			ips = append(ips, net.ParseIP(s))
		}
		return ips, nil
	}
}

var hostAddrs = map[string][]string{"eth0": {"10.0.0.1", "fe80::5054:ff:fe12:3456"}, "ens1f0np0": {"192.0.2.7", "fe80::1"}}

// tsc is a clock verdict that does not depend on the machine the tests run on.
func tsc(string) (bool, string) { return true, "" }

func options(root string, list func() ([]verbs.DeviceInfo, error)) Options {
	return Options{Root: root, Local: bench.Local{Port: 1, GIDIndex: -1}, Devices: list, Addrs: addrs(hostAddrs), Clock: tsc}
}

func find(t *testing.T, checks []Check, name string) Check {
	t.Helper()
	for _, c := range checks {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no %s check in %+v", name, checks)
	return Check{}
}

func dump(checks []Check) string {
	var b bytes.Buffer
	NewReport(checks).WriteText(&b)
	return b.String()
}

var localChecks = []string{"device", "link-rate", "pcie-link", "pcie-training", "pcie-relaxed", "mtu", "netdev", "roce-v2-gid", "soft-roce", "memlock",
	"hugepages", "clock", "clocksource", "cpu-governor"}

func TestHealthyHosts(t *testing.T) {
	for _, tc := range []struct {
		base string
		dev  verbs.DeviceInfo
		skip []string // checks that do not apply
	}{
		{"rxe", rxe0(), []string{"pcie-link", "pcie-training", "pcie-relaxed", "cpu-governor"}}, // software RDMA, no cpufreq
		{"mlx5", mlx50(), []string{"soft-roce"}},
	} {
		checks := Run(context.Background(), options(tree(t, tc.base, ""), devices(tc.dev)))
		if len(checks) != len(localChecks) {
			t.Fatalf("%s: want the %d local checks, got\n%s", tc.base, len(localChecks), dump(checks))
		}
		for i, c := range checks {
			want := OK
			if slices.Contains(tc.skip, c.Name) {
				want = Skip
			}
			if c.Name != localChecks[i] || c.Verdict != want || c.Fix != "" || c.Found == "" {
				t.Errorf("%s: %s: want %s with no fix, got %+v", tc.base, localChecks[i], want, c)
			}
		}
		if !NewReport(checks).OK {
			t.Errorf("%s: a healthy host must pass", tc.base)
		}
	}
	checks := Run(context.Background(), options(tree(t, "mlx5", ""), devices(mlx50())))
	if c := find(t, checks, "netdev"); !strings.Contains(c.Found, "ens1f0np0 is up") {
		t.Errorf("the netdev must come from the PCI function's device/net: %+v", c)
	}
	if c := find(t, checks, "roce-v2-gid"); !strings.Contains(c.Found, "GID 3 is RoCE v2 for ens1f0np0's address 192.0.2.7") {
		t.Errorf("roce-v2-gid: %+v", c)
	}
	if c := find(t, checks, "link-rate"); !strings.Contains(c.Found, "200 Gb/s, at least the cx6 profile's nominal 200 Gb/s for a ConnectX-6") {
		t.Errorf("link-rate: %+v", c)
	}
	for name, found := range map[string]string{
		"pcie-link":     "PCIe 16.0 GT/s x16 (Gen4, 252 Gb/s) each way, enough for the 200 Gb/s of a ConnectX-6 (cx6 profile)",
		"pcie-training": "PCIe 16.0 GT/s x16 (Gen4, 252 Gb/s), the card's maximum",
		"cpu-governor":  "every CPU runs the performance governor",
		"pcie-relaxed":  "mlx5_0's PCIe Device Control register (config offset 0x68) has Enable Relaxed Ordering set: the NIC may reorder its writes to the memory bandwidth tests register with relaxed ordering (their default, as perftest's)",
	} {
		if c := find(t, checks, name); c.Found != found {
			t.Errorf("%s: %+v", name, c)
		}
	}
}

// want is what a case expects of one check: its verdict, and words of what it found
// and of its fix.
type want struct {
	verdict    Verdict
	found, fix string
}

func TestBrokenHosts(t *testing.T) {
	down := rxe0()
	down.Ports[0].State, down.Ports[0].PhysState = "DOWN", "DISABLED"
	mtu4096 := rxe0() // eth0's MTU lowered to 1500 under a port still at 4096
	mtu1024 := rxe0()
	mtu1024.Ports[0].ActiveMTU = 1024
	v1Only := rxe0()
	for i := range v1Only.Ports[0].GIDs {
		v1Only.Ports[0].GIDs[i].Type = "RoCE v1"
	}
	noV4 := rxe0() // eth0 has only its link-local address
	noV4.Ports[0].GIDs = noV4.Ports[0].GIDs[:1]
	v6 := rxe0()
	v6.Ports[0].GIDs[1].GID = "2001:db8::1"
	slow := mlx50()
	slow.Ports[0].LaneGbps, slow.Ports[0].RateGbps = 25, 100
	dx := slow // a ConnectX-6 Dx: 100 Gb/s is its nominal rate
	dx.Model, dx.VendorPartID = "ConnectX-6 Dx", 4125
	orphan := rxe0()
	for i := range orphan.Ports[0].GIDs {
		orphan.Ports[0].GIDs[i].Netdev = ""
	}
	ib := mlx50()
	ib.Ports[0].LinkLayer, ib.Ports[0].ActiveMTU, ib.Ports[0].GIDs = "InfiniBand", 2048, []verbs.GIDEntry{{Index: 0, GID: "fe80::248a:703:49:d4f0", Type: "IB"}}
	noDevice := func() ([]verbs.DeviceInfo, error) { return nil, verbs.ErrNoDevice }
	noCgo := func() ([]verbs.DeviceInfo, error) { return nil, verbs.ErrUnsupported }

	for _, tc := range []struct {
		name, base, overlay string
		list                func() ([]verbs.DeviceInfo, error)
		local               *bench.Local
		addrs               map[string][]string
		want                map[string]want
	}{
		{name: "device down", base: "rxe", overlay: "port-down", list: devices(down), want: map[string]want{
			"device": {Fail, "rxe0 port 1 is DOWN (physical state DISABLED)", "ip link set dev eth0 up"},
			"netdev": {Fail, "eth0 is down", "ip link set dev eth0 up"},
		}},
		{name: "MTU mismatch", base: "rxe", overlay: "mtu-1500", list: devices(mtu4096), want: map[string]want{
			"mtu": {Fail, "RDMA MTU 4096 but eth0's MTU is 1500", "ip link set dev eth0 mtu 4176"},
		}},
		{name: "netdev MTU 1500", base: "rxe", overlay: "mtu-1500", list: devices(mtu1024), want: map[string]want{
			"mtu": {Warn, "RDMA MTU 1024, limited by eth0's MTU 1500 (4096 needs a netdev MTU of at least 4176)", "ip link set dev eth0 mtu 9000"},
		}},
		{name: "port MTU stale", base: "rxe", list: devices(mtu1024), want: map[string]want{
			"mtu": {Warn, "RDMA MTU 1024, but eth0's MTU 9000 allows 4096", "rdma link delete rxe0 && rdma link add rxe0 type rxe netdev eth0"},
		}},
		{name: "no RoCE v2 GID", base: "rxe", list: devices(v1Only), want: map[string]want{
			"roce-v2-gid": {Fail, "eth0 has 10.0.0.1 but the port has no RoCE v2 GID for it (GIDs: 0 fe80::5054:ff:fe12:3456 RoCE v1, 1 10.0.0.1 RoCE v1)", "put the address on eth0 itself"},
		}},
		{name: "no IPv4 address", base: "rxe", list: devices(noV4), addrs: map[string][]string{"eth0": {"fe80::5054:ff:fe12:3456"}}, want: map[string]want{
			"device":      {OK, "GID 0 fe80::5054:ff:fe12:3456 (RoCE v2) on eth0", ""},
			"roce-v2-gid": {Fail, "eth0 has no IPv4 address and the port no routable RoCE v2 GID", "ip addr add ADDR/PREFIX dev eth0"},
		}},
		{name: "IPv6 only", base: "rxe", list: devices(v6), addrs: map[string][]string{"eth0": {"2001:db8::1", "fe80::5054:ff:fe12:3456"}}, want: map[string]want{
			"roce-v2-gid": {Warn, "eth0 has no IPv4 address; the default GID is 1, RoCE v2 for 2001:db8::1 (IPv6)", "fine if the peer uses IPv6 too"},
		}},
		{name: "RoCE v1 GID chosen", base: "mlx5", list: devices(mlx50()), local: &bench.Local{Port: 1, GIDIndex: 2}, want: map[string]want{
			"roce-v2-gid": {Warn, "but -x 2 picks a RoCE v1 GID (192.0.2.7)", "use -x 3"},
		}},
		{name: "memlock 64 KiB", base: "rxe", overlay: "memlock-64k", list: devices(rxe0()), want: map[string]want{
			"memlock": {Fail, "locked-memory limit (ulimit -l) 64 KiB, hard 64 KiB, below the 1.1 MiB a default write bw registers", "ulimit -l unlimited in the shell that runs rdmabench (the hard limit stops that: add '* - memlock unlimited' to /etc/security/limits.conf"},
		}},
		{name: "no hugepages", base: "rxe", overlay: "no-hugepages", list: devices(rxe0()), want: map[string]want{
			"hugepages": {Warn, "no hugepages reserved", "sysctl -w vm.nr_hugepages=64"},
		}},
		{name: "rxe module missing", base: "rxe", overlay: "no-rxe", list: noDevice, want: map[string]want{
			"device":    {Fail, "libibverbs found no RDMA device", "create a Soft-RoCE device (see soft-roce)"},
			"soft-roce": {Warn, "the Soft-RoCE module rdma_rxe is not loaded", "modprobe rdma_rxe && rdma link add rxe0 type rxe netdev eth0"},
			"link-rate": {Skip, "see the device check", ""},
			"mtu":       {Skip, "", ""},
		}},
		{name: "rxe netdev gone", base: "rxe", overlay: "rxe-orphan", list: devices(orphan), want: map[string]want{
			"netdev":    {Fail, "rxe0 port 1 is on veth9, which does not exist", "rdma link delete rxe0 && rdma link add rxe0 type rxe netdev eth0"},
			"soft-roce": {Fail, "rxe0's netdev veth9 does not exist", "rdma link delete rxe0 && rdma link add rxe0 type rxe netdev eth0"},
		}},
		{name: "slow link", base: "mlx5", list: devices(slow), want: map[string]want{
			"link-rate": {Warn, "mlx5_0 port 1 runs at 100 Gb/s (4X 25 Gb/s), below the cx6 profile's nominal 200 Gb/s for a ConnectX-6", "ethtool ens1f0np0"},
		}},
		{name: "ConnectX-6 Dx at 100 Gb/s", base: "mlx5", list: devices(dx), want: map[string]want{
			"link-rate": {OK, "100 Gb/s, at least the cx6 profile's nominal 100 Gb/s for a ConnectX-6 Dx", ""},
			"pcie-link": {OK, "enough for the 100 Gb/s of a ConnectX-6 Dx (cx6 profile)", ""},
		}},
		{name: "PCIe Gen3 under a 200G ConnectX-6, powersave", base: "mlx5", overlay: "pcie-gen3", list: devices(mlx50()), want: map[string]want{
			"pcie-link": {Warn, "mlx5_0 sits on a PCIe 8.0 GT/s x16 (Gen3, 126 Gb/s) link, below the 200 Gb/s a port of a ConnectX-6 (cx6 profile) runs at",
				"the card can do 16.0 GT/s x16 (Gen4, 252 Gb/s): move it to a Gen4 x16 slot (252 Gb/s) wired to the CPU"},
			"pcie-training": {Warn, "mlx5_0's PCIe link trained at 8.0 GT/s x16 (Gen3, 126 Gb/s), below the 16.0 GT/s x16 (Gen4, 252 Gb/s) the card supports (8.0 GT/s instead of 16.0)",
				"move the card to a slot that offers 16.0 GT/s x16 (Gen4 x16"},
			"cpu-governor": {Warn, "the CPUs run the powersave governor, not performance", "cpupower frequency-set -g performance"},
			"link-rate":    {OK, "200 Gb/s", ""},
		}},
		{name: "relaxed ordering disabled", base: "mlx5", overlay: "relaxed-ordering-off", list: devices(mlx50()), want: map[string]want{
			"pcie-relaxed": {Warn, "has Enable Relaxed Ordering clear: the NIC sends its writes in order whatever the MRs ask", "lspci -vvv -s 0000:3b:00.0"},
		}},
		{name: "config space read without root", base: "mlx5", overlay: "config-64", list: devices(mlx50()), want: map[string]want{
			"pcie-relaxed": {Skip, "unknown: sysfs shows only the first 64 bytes of mlx5_0's PCI config space to a user without CAP_SYS_ADMIN", ""},
		}},
		{name: "Soft-RoCE: relaxed ordering does not apply", base: "rxe", list: devices(rxe0()), want: map[string]want{
			"pcie-relaxed": {Skip, "not applicable: rxe0 (driver rxe) is a software device with no PCIe function", ""},
		}},
		{name: "InfiniBand", base: "mlx5", list: devices(ib), want: map[string]want{
			"device":      {OK, "mlx5_0 (ConnectX-6, driver mlx5_core) port 1: ACTIVE, InfiniBand, 200 Gb/s; GID 0 fe80::248a:703:49:d4f0 (IB)", ""},
			"mtu":         {Warn, "InfiniBand: active MTU 2048 (port maximum 4096)", "opensm"},
			"netdev":      {Skip, "InfiniBand", ""},
			"roce-v2-gid": {Skip, "InfiniBand", ""},
		}},
		{name: "built without cgo", base: "rxe", list: noCgo, want: map[string]want{
			"device":    {Fail, "built without cgo", "make setup && make build"},
			"soft-roce": {Skip, "could not be listed", ""},
		}},
		{name: "unknown device", base: "rxe", list: devices(rxe0()), local: &bench.Local{Device: "mlx5_9", Port: 1, GIDIndex: -1}, want: map[string]want{
			"device": {Fail, `RDMA device "mlx5_9" not found; available: rxe0`, "-d NAME"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := options(tree(t, tc.base, tc.overlay), tc.list)
			if tc.local != nil {
				o.Local = *tc.local
			}
			if tc.addrs != nil {
				o.Addrs = addrs(tc.addrs)
			}
			checks := Run(context.Background(), o)
			for name, w := range tc.want {
				c := find(t, checks, name)
				if c.Verdict != w.verdict || !strings.Contains(c.Found, w.found) || !strings.Contains(c.Fix, w.fix) || (w.fix == "" && c.Fix != "") {
					t.Errorf("%s: want %s, found %q, fix %q; got\n%+v", name, w.verdict, w.found, w.fix, c)
				}
			}
			// Every failure and warning says what to do.
			for _, c := range checks {
				if (c.Verdict == Fail || c.Verdict == Warn) && c.Fix == "" {
					t.Errorf("%s is %s without a fix: %+v", c.Name, c.Verdict, c)
				}
			}
		})
	}
}

func TestMemlockWithCapIPCLock(t *testing.T) {
	root := tree(t, "rxe", "memlock-64k")
	status := filepath.Join(root, "proc/self/status")
	b, _ := os.ReadFile(status)
	os.WriteFile(status, bytes.Replace(b, []byte("CapEff:\t0000000000000000"), []byte("CapEff:\t000001ffffffffff"), 1), 0o644)
	c := memlockCheck(root)
	if c.Verdict != OK || !strings.Contains(c.Found, "CAP_IPC_LOCK") {
		t.Errorf("root lifts the limit: %+v", c)
	}
	if c := memlockCheck(t.TempDir()); c.Verdict != Skip {
		t.Errorf("no /proc/self/limits: %+v", c)
	}
}

// The margin aside, the need is what bench registers for a default write bw.
func TestMemlockNeed(t *testing.T) {
	// Client: 64 KiB buffer, 128 send-queue entries and a 129-entry CQ at bench's sizes.
	if got, want := MemlockNeed(), uint64(65536+128*256+129*64+4095)/4096*4096+memlockMargin; got != want {
		t.Errorf("MemlockNeed %d, want %d", got, want)
	}
}

func TestClock(t *testing.T) {
	for _, tc := range []struct {
		useTSC  bool
		note    string
		verdict Verdict
	}{
		{true, "", OK},
		{true, "TSC used although the kernel's current clocksource is hpet", OK},
		{false, "no TSC on arm64: loops timed with CLOCK_MONOTONIC_RAW", OK},
		{false, "TSC not used: CPU lacks nonstop_tsc: loops timed with CLOCK_MONOTONIC_RAW", Warn},
	} {
		c := clockCheck(Options{Clock: func(string) (bool, string) { return tc.useTSC, tc.note }})
		if c.Verdict != tc.verdict || (tc.note != "" && c.Found != tc.note) {
			t.Errorf("%v %q: got %+v", tc.useTSC, tc.note, c)
		}
	}
	if runtime.GOARCH != "amd64" {
		t.Skip("the fixtures' TSC verdicts are amd64's")
	}
	for overlay, verdict := range map[string]Verdict{"": OK, "no-tsc": Warn} {
		c := clockCheck(Options{Root: tree(t, "rxe", overlay)}) // verbs.ClockVerdict on the tree
		if c.Verdict != verdict {
			t.Errorf("%q: got %+v", overlay, c)
		}
		if verdict == Warn && !strings.Contains(c.Found, "CPU lacks nonstop_tsc; the kernel does not offer tsc as a clocksource") {
			t.Errorf("the note must say why: %+v", c)
		}
	}
}

func TestIBMTUFor(t *testing.T) {
	for _, tc := range []struct{ netdev, headroom, want int }{
		{1500, roceHeadroom, 1024}, {9000, roceHeadroom, 4096}, {4192, roceHeadroom, 4096}, {4191, roceHeadroom, 2048},
		{4176, rxeHeadroom, 4096}, {4175, rxeHeadroom, 2048}, {300, roceHeadroom, 0}, {2144, roceHeadroom, 2048},
	} {
		if got := ibMTUFor(tc.netdev, tc.headroom); got != tc.want {
			t.Errorf("ibMTUFor(%d, %d) = %d, want %d", tc.netdev, tc.headroom, got, tc.want)
		}
	}
}

func TestGuessNetdev(t *testing.T) {
	if nd := guessNetdev(tree(t, "mlx5", "")); nd != "eno1" {
		t.Errorf("the default route's netdev: got %q", nd)
	}
	root := tree(t, "mlx5", "")
	os.Remove(filepath.Join(root, "proc/net/route"))
	if nd := guessNetdev(root); nd != "eno1" { // the first netdev up, in name order
		t.Errorf("without routes: got %q", nd)
	}
	if nd := guessNetdev(t.TempDir()); nd != "eth0" {
		t.Errorf("nothing known: got %q", nd)
	}
}

func TestReport(t *testing.T) {
	checks := []Check{
		{Name: "device", Verdict: OK, Found: "rxe0"},
		{Name: "hugepages", Verdict: Warn, Found: "none", Fix: "sysctl"},
		{Name: "memlock", Verdict: Fail, Found: "64 KiB", Fix: "ulimit -l unlimited"},
		{Name: "netdev", Verdict: Skip, Found: "InfiniBand"},
	}
	r := NewReport(checks)
	if r.OK || r.Summary[OK] != 1 || r.Summary[Warn] != 1 || r.Summary[Fail] != 1 || r.Summary[Skip] != 1 {
		t.Errorf("summary: %+v", r)
	}
	if !NewReport(checks[:2]).OK {
		t.Error("warnings alone pass")
	}
	var text bytes.Buffer
	r.WriteText(&text)
	wantText := `ok    device     rxe0
warn  hugepages  none
                 fix: sysctl
FAIL  memlock    64 KiB
                 fix: ulimit -l unlimited
skip  netdev     InfiniBand

1 ok, 1 warning, 1 failed, 1 skipped
`
	if text.String() != wantText {
		t.Errorf("text:\n%s\nwant:\n%s", text.String(), wantText)
	}
	var js bytes.Buffer
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var got struct {
		OK      *bool          `json:"ok"`
		Summary map[string]int `json:"summary"`
		Checks  []map[string]string
	}
	if err := json.Unmarshal(js.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.OK == nil || *got.OK || len(got.Summary) != 4 || got.Summary["fail"] != 1 || len(got.Checks) != 4 {
		t.Fatalf("JSON: %s", js.String())
	}
	if c := got.Checks[2]; c["name"] != "memlock" || c["verdict"] != "fail" || c["found"] != "64 KiB" || c["fix"] != "ulimit -l unlimited" {
		t.Errorf("JSON check: %v", c)
	}
	if _, ok := got.Checks[0]["fix"]; ok {
		t.Errorf("no fix, no key: %v", got.Checks[0])
	}
}

func TestBytesText(t *testing.T) {
	for n, want := range map[uint64]string{100: "100 bytes", 65536: "64 KiB", 1 << 20: "1 MiB", 1155072: "1.1 MiB", 8 << 30: "8 GiB"} {
		if got := bytesText(n); got != want {
			t.Errorf("bytesText(%d) = %q, want %q", n, got, want)
		}
	}
}

// The host-fact checks on the host package's fixtures: each NIC's PCIe link against its
// model's port rate and against the card's maximum, and the governors.
func TestHostFactChecks(t *testing.T) {
	nic := func(name, driver, model string, vendor, part uint32) *verbs.DeviceInfo {
		return &verbs.DeviceInfo{Name: name, Driver: driver, Model: model, VendorID: vendor, VendorPartID: part}
	}
	rxe := rxe0()
	for _, tc := range []struct {
		root string
		dev  *verbs.DeviceInfo
		want map[string]want
	}{
		{"cx6-gen3", nic("mlx5_0", "mlx5_core", "ConnectX-6", 0x02c9, 4123), map[string]want{
			"pcie-link": {Warn, "mlx5_0 sits on a PCIe 8.0 GT/s x16 (Gen3, 126 Gb/s) link, below the 200 Gb/s a port of a ConnectX-6 (cx6 profile) runs at: the bus, not the wire, caps the bandwidth (at most about 126 Gb/s each way",
				"the card can do 16.0 GT/s x16 (Gen4, 252 Gb/s): move it to a Gen4 x16 slot (252 Gb/s) wired to the CPU, or raise the slot's PCIe speed in the BIOS (lspci -vv -s 0000:3b:00.0: LnkCap"},
			"pcie-training": {Warn, "trained at 8.0 GT/s x16 (Gen3, 126 Gb/s), below the 16.0 GT/s x16 (Gen4, 252 Gb/s) the card supports (8.0 GT/s instead of 16.0)",
				"lspci -vv -s 0000:3b:00.0 shows LnkCap"},
			"cpu-governor": {Warn, "the CPUs run the powersave governor, not performance: cores clock down between polls", "cpupower frequency-set -g performance"},
		}},
		{"bnxt_re", nic("bnxt_re0", "bnxt_en", "vendor 0x14e4 part 5984", 0x14e4, 0x1760), map[string]want{
			"pcie-link":     {OK, "PCIe 32.0 GT/s x16 (Gen5, 504 Gb/s) each way, enough for the 400 Gb/s of a BCM57608 (bnxt_re profile)", ""},
			"pcie-training": {OK, "the card's maximum", ""},
			"cpu-governor":  {OK, "every CPU runs the performance governor", ""},
		}},
		{"irdma", nic("irdma0", "ice", "vendor 0x8086 part 5522", 0x8086, 0x1592), map[string]want{
			"pcie-link":     {OK, "PCIe 16.0 GT/s x16 (Gen4, 252 Gb/s) each way, enough for the 100 Gb/s of an E810-C (irdma profile)", ""},
			"pcie-training": {OK, "the card's maximum", ""},
			"cpu-governor":  {Warn, "some CPUs run the schedutil governor, not performance", "cpupower"},
		}},
		{"efa", nic("efa_0", "efa", "vendor 0x1d0f part 61345", 0x1d0f, 0xefa1), map[string]want{
			"pcie-link":     {Skip, `efa_0's PCIe link is unknown (current_link_speed "Unknown", current_link_width "0": a virtual function, or a link that is down)`, ""},
			"pcie-training": {Skip, "efa_0's PCIe link is unknown", ""},
			"cpu-governor":  {Skip, "no cpufreq driver, as in most VMs", ""},
		}},
		{"rxe", &rxe, map[string]want{
			"pcie-link":     {Skip, "rxe0 is software RDMA (Soft-RoCE (rxe)): it has no PCIe link of its own", ""},
			"pcie-training": {Skip, "rxe0 is software RDMA", ""},
			"cpu-governor":  {Skip, "CPU frequency not checked", ""},
		}},
	} {
		f := hostfacts.Read(filepath.Join("../host/testdata", tc.root), tc.dev.Name)
		checks := []Check{pcieLinkCheck(tc.dev, f), pcieTrainingCheck(tc.dev, f), governorCheck(f)}
		for name, w := range tc.want {
			c := find(t, checks, name)
			if c.Verdict != w.verdict || !strings.Contains(c.Found, w.found) || !strings.Contains(c.Fix, w.fix) || (w.fix == "" && c.Fix != "") {
				t.Errorf("%s: %s: want %s, found %q, fix %q; got\n%+v", tc.root, name, w.verdict, w.found, w.fix, c)
			}
		}
	}
	if c := pcieLinkCheck(nil, hostfacts.Facts{}); c.Verdict != Skip {
		t.Errorf("no device: %+v", c)
	}
}

// What the fix says depends on what the card could do.
func TestPCIeFixes(t *testing.T) {
	cx6 := &verbs.DeviceInfo{Name: "mlx5_0", Driver: "mlx5_core", Model: "ConnectX-6", VendorID: 0x02c9, VendorPartID: 4123}
	for _, tc := range []struct {
		name      string
		cur, max  *hostfacts.PCIeLink
		check     func(*verbs.DeviceInfo, hostfacts.Facts) Check
		verdict   Verdict
		found     string
		fixPrefix string
	}{
		{"a card that stops at Gen3", hostfacts.NewPCIeLink(8, 16), hostfacts.NewPCIeLink(8, 16), pcieLinkCheck, Warn,
			"below the 200 Gb/s", "the card itself stops at 8.0 GT/s x16 (Gen3, 126 Gb/s), below its port rate: expect at most about 126 Gb/s"},
		{"no maximum known", hostfacts.NewPCIeLink(8, 16), nil, pcieLinkCheck, Warn,
			"below the 200 Gb/s", "move the card to a Gen4 x16 slot (252 Gb/s) or faster"},
		{"x8 in a x16 card", hostfacts.NewPCIeLink(16, 8), hostfacts.NewPCIeLink(16, 16), pcieTrainingCheck, Warn,
			"(x8 instead of x16)", "the slot has fewer lanes than the card"},
		{"x8 in a x16 card, for the bandwidth", hostfacts.NewPCIeLink(16, 8), hostfacts.NewPCIeLink(16, 16), pcieLinkCheck, Warn,
			"PCIe 16.0 GT/s x8 (Gen4, 126 Gb/s) link", "the card can do 16.0 GT/s x16 (Gen4, 252 Gb/s): move it to a Gen4 x16 slot (252 Gb/s)"},
		{"no maximum for training", hostfacts.NewPCIeLink(16, 16), nil, pcieTrainingCheck, Skip, "the card's maximum is unknown", ""},
	} {
		c := tc.check(cx6, hostfacts.Facts{Driver: "mlx5_core", PCIeLink: tc.cur, PCIeMaxLink: tc.max})
		if c.Verdict != tc.verdict || !strings.Contains(c.Found, tc.found) || !strings.HasPrefix(c.Fix, tc.fixPrefix) {
			t.Errorf("%s: got %+v", tc.name, c)
		}
	}
	// A NIC no profile knows: the link is reported, not judged.
	c := pcieLinkCheck(&verbs.DeviceInfo{Name: "x0", Driver: "x", Model: "vendor 0x1 part 2", VendorID: 1, VendorPartID: 2},
		hostfacts.Facts{Driver: "x", PCIeLink: hostfacts.NewPCIeLink(16, 16)})
	if c.Verdict != Skip || !strings.Contains(c.Found, "PCIe 16.0 GT/s x16 (Gen4, 252 Gb/s); no built-in NIC profile") {
		t.Errorf("unknown NIC: %+v", c)
	}
}

// The Device Control register is found by walking the capability list, whatever lies
// before it; a list that loops, points into the header or runs off the end is an
// answer of "unknown", never a guess.
func TestRelaxedOrderingEnabled(t *testing.T) {
	cfg := func(devCtl uint16) []byte {
		b := make([]byte, 256)
		b[pciStatus], b[pciCapPtr] = pciStatusCapList, 0x50
		b[0x50], b[0x51] = 0x05, 0x70 // MSI, then
		b[0x70], b[0x71] = 0x11, 0xa0 // MSI-X, then
		b[0xa0], b[0xa1] = pciCapIDExp, 0
		b[0xa8], b[0xa9] = byte(devCtl), byte(devCtl>>8)
		return b
	}
	if on, at, err := relaxedOrderingEnabled(cfg(0x2810)); !on || at != 0xa8 || err != nil {
		t.Errorf("bit 4 set: %v %#x %v", on, at, err)
	}
	if on, _, err := relaxedOrderingEnabled(cfg(0xffef)); on || err != nil {
		t.Errorf("every bit but 4: %v %v", on, err)
	}
	loop := cfg(0x10)
	loop[0x71] = 0x50
	noCaps := cfg(0x10)
	noCaps[pciStatus] = 0
	header := cfg(0x10)
	header[0x51] = 0x20
	for name, b := range map[string][]byte{"a loop": loop, "no list": noCaps, "into the header": header, "64 bytes": cfg(0x10)[:64], "cut": cfg(0x10)[:0xa4]} {
		if on, _, err := relaxedOrderingEnabled(b); err == nil || on {
			t.Errorf("%s: %v %v, want an error", name, on, err)
		}
	}
}

// The kernel's clocksource: read in user space (tsc, kvm-clock) is fine; a TSC the
// kernel demoted on bare metal, or hpet chosen, costs a system call per timestamp, and
// the check says so with a fix; in a VM it says what it found.
func TestClocksource(t *testing.T) {
	cs := "sys/devices/system/clocksource/clocksource0/"
	for _, tc := range []struct {
		name, base, overlay string
		edit                map[string]string // file -> content, after the overlay
		verdict             Verdict
		found, fix          string
	}{
		{"VM on tsc", "rxe", "", nil, OK, "a VM (the CPU has the hypervisor flag); the kernel times itself on tsc; the TSC is among the kernel's clocksources; tsc is read in user space (vDSO)", ""},
		{"VM on kvm-clock without a TSC offered", "rxe", "no-tsc", nil, OK,
			"a VM (the CPU has the hypervisor flag); the kernel times itself on kvm-clock; the TSC is not among the kernel's clocksources (kvm-clock hpet acpi_pm), though the CPU has one", ""},
		{"bare metal, TSC demoted", "mlx5", "tsc-demoted", nil, Warn,
			"bare metal (no hypervisor flag); the kernel times itself on hpet; the TSC is not among the kernel's clocksources (hpet acpi_pm), though the CPU has one: the kernel demoted it (found it unstable) or never trusted it; hpet has no user-space read: every clock_gettime is a system call",
			"'Marking TSC unstable'"},
		{"bare metal, hpet chosen", "mlx5", "tsc-demoted", map[string]string{cs + "available_clocksource": "tsc hpet acpi_pm"}, Warn,
			"bare metal (no hypervisor flag); the kernel times itself on hpet; the TSC is among the kernel's clocksources; hpet has no user-space read", "echo tsc > /sys/devices/system/clocksource/clocksource0/current_clocksource"},
		{"VM on hpet", "rxe", "", map[string]string{cs + "current_clocksource": "hpet"}, Warn, "a VM (the CPU has the hypervisor flag); the kernel times itself on hpet", "+invtsc"},
		{"bare metal on tsc", "mlx5", "tsc-demoted", map[string]string{cs + "available_clocksource": "tsc hpet acpi_pm", cs + "current_clocksource": "tsc"}, OK,
			"bare metal (no hypervisor flag); the kernel times itself on tsc; the TSC is among the kernel's clocksources; tsc is read in user space (vDSO): a timestamp costs no system call", ""},
		{"no clocksource", "rxe", "", map[string]string{cs + "current_clocksource": "\x00"}, Skip, "", ""},
	} {
		root := tree(t, tc.base, tc.overlay)
		for f, v := range tc.edit {
			if v == "\x00" {
				os.Remove(filepath.Join(root, f))
				continue
			}
			os.WriteFile(filepath.Join(root, f), []byte(v+"\n"), 0o644)
		}
		c := clocksourceCheckArch(root, "amd64")
		if c.Name != "clocksource" || c.Verdict != tc.verdict || !strings.Contains(c.Found, tc.found) || !strings.Contains(c.Fix, tc.fix) || (tc.fix == "") != (c.Fix == "") {
			t.Errorf("%s: want %s, found %q, fix %q; got\n%+v", tc.name, tc.verdict, tc.found, tc.fix, c)
		}
	}
	if c := clocksourceCheckArch(tree(t, "rxe", ""), "arm64"); c.Verdict != Skip || c.Found != "no TSC on arm64" {
		t.Errorf("arm64: %+v", c)
	}
}
