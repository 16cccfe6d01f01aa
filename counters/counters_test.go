package counters

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// rxeHW are the hw_counters of rxe in kernel 6.1, lifespan aside.
var rxeHW = []string{"sent_pkts", "rcvd_pkts", "duplicate_request", "out_of_seq_request", "rcvd_rnr_err",
	"send_rnr_err", "rcvd_seq_err", "ack_deferred", "retry_exceeded_err", "retry_rnr_exceeded_err",
	"completer_retry_err", "send_err", "link_downed", "rdma_sends", "rdma_recvs"}

func take(t *testing.T, root, dev string, port int) Snapshot {
	t.Helper()
	s, err := Take(root, dev, port)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func value(t *testing.T, s Snapshot, scope Scope, name string) uint64 {
	t.Helper()
	c, ok := s.Get(scope, name)
	if !ok || c.Status != OK || c.Value == nil {
		t.Fatalf("%s %s: %+v, present %v", scope, name, c, ok)
	}
	return *c.Value
}

func count(s Snapshot, scope Scope) int {
	n := 0
	for _, c := range s.Counters {
		if c.Scope == scope {
			n++
		}
	}
	return n
}

func TestRxe61(t *testing.T) {
	s := take(t, "testdata/rxe-6.1", "rxe0", 1)
	if s.State != "ACTIVE" || s.PhysState != "LinkUp" || s.LinkLayer != "Ethernet" || s.Rate != "10 Gb/sec (1X QDR)" || s.RateGbps != 10 {
		t.Errorf("link: %+v", s)
	}
	if s.Netdev != "vethA" || s.NetdevMTU != 1500 || s.NetdevOperState != "up" {
		t.Errorf("netdev: %q mtu %d %q", s.Netdev, s.NetdevMTU, s.NetdevOperState)
	}
	if count(s, Port) != 0 || count(s, HWDevice) != 0 || count(s, HWPort) != 15 || count(s, Netdev) != 4 {
		t.Errorf("counters: %+v", s.Counters)
	}
	for _, n := range rxeHW {
		value(t, s, HWPort, n)
	}
	if _, ok := s.Get(HWPort, "lifespan"); ok {
		t.Error("lifespan is not a counter")
	}
	if value(t, s, HWPort, "sent_pkts") != 1048602 || value(t, s, HWPort, "completer_retry_err") != 3 {
		t.Error("values")
	}
	if s.Lifespan != 10*time.Millisecond || s.Settle() != 10*time.Millisecond+SettleMargin {
		t.Errorf("lifespan %v, settle %v", s.Lifespan, s.Settle())
	}
	// veth's ethtool statistics are all per queue: none is judged, and a note says so.
	if len(s.Notes) != 2 || !strings.Contains(s.Notes[0], "no PMA port counters (ports/1/counters absent)") ||
		s.Notes[1] != "ethtool statistics of vethA: none of its 10 is a pause, discard or error counter of the port" || count(s, Ethtool) != 0 {
		t.Errorf("notes: %q", s.Notes)
	}
	if s.Time.IsZero() || s.Took <= 0 {
		t.Errorf("time %v took %v", s.Time, s.Took)
	}
	// Sorted: hw_port by name, then netdev.
	if s.Counters[0].Name != "ack_deferred" || s.Counters[len(s.Counters)-1].Scope != Netdev {
		t.Errorf("order: first %s, last %s", s.Counters[0].Name, s.Counters[len(s.Counters)-1].Scope)
	}
}

func TestRxeOld(t *testing.T) {
	s := take(t, "testdata/rxe-old", "rxe0", 1)
	value(t, s, HWPort, "ack_deffered")
	if _, ok := s.Get(HWPort, "ack_deferred"); ok || count(s, HWPort) != 15 {
		t.Errorf("old rxe: %+v", s.Counters)
	}
}

func TestMlx5(t *testing.T) {
	s := take(t, "testdata/mlx5", "mlx5_1", 1)
	if s.State != "ACTIVE" || s.RateGbps != 100 || s.Netdev != "ens1f1np1" || s.NetdevMTU != 9000 || s.NetdevOperState != "up" {
		t.Errorf("link: %+v", s)
	}
	if count(s, Port) != 21 || count(s, HWPort) != 29 || count(s, HWDevice) != 0 {
		t.Errorf("port %d hw_port %d hw_device %d", count(s, Port), count(s, HWPort), count(s, HWDevice))
	}
	if len(s.Notes) != 0 {
		t.Errorf("notes: %q", s.Notes)
	}
	c, _ := s.Get(Port, "port_xmit_data")
	if c.Unit != Words4 || *c.Value != 11166778084 {
		t.Errorf("port_xmit_data: %+v", c)
	}
	if c, _ := s.Get(HWPort, "rx_write_requests"); c.Unit != Count {
		t.Errorf("rx_write_requests: %+v", c)
	}
	// "N/A (no PMA)" is not available, never 0.
	c, ok := s.Get(Port, "port_xmit_wait")
	if !ok || c.Status != NotAvailable || c.Value != nil || c.Text != "N/A (no PMA)" {
		t.Errorf("N/A: %+v", c)
	}
	if value(t, s, Netdev, "rx_dropped") != 17 {
		t.Error("netdev rx_dropped")
	}
}

// The netdev comes from device/net when the port has no GID table in sysfs.
func TestNetdevFromDevice(t *testing.T) {
	s := take(t, "testdata/mlx5", "mlx5_0", 1)
	if s.State != "DOWN" || s.PhysState != "Disabled" || s.Netdev != "ens1f0np0" || s.NetdevOperState != "down" {
		t.Errorf("%+v", s)
	}
	if !strings.Contains(strings.Join(s.Notes, "\n"), "no PMA port counters") {
		t.Errorf("notes: %q", s.Notes)
	}
}

func TestFindDevice(t *testing.T) {
	for _, c := range []struct {
		root, name string
		port       int
		want, err  string
	}{
		{"testdata/mlx5", "", 1, "mlx5_1", ""}, // mlx5_0's port is DOWN
		{"testdata/mlx5", "mlx5_0", 1, "mlx5_0", ""},
		{"testdata/rxe-6.1", "", 1, "rxe0", ""},
		{"testdata/mlx5", "mlx5_7", 1, "", `RDMA device "mlx5_7" not found; available: mlx5_0, mlx5_1`},
		{"testdata/mlx5", "", 2, "", "no RDMA device among mlx5_0, mlx5_1 has port 2 ACTIVE"},
	} {
		got, err := FindDevice(c.root, c.name, c.port)
		if got != c.want || (err == nil) != (c.err == "") || err != nil && !strings.Contains(err.Error(), c.err) {
			t.Errorf("FindDevice(%s, %q, %d) = %q, %v; want %q, %q", c.root, c.name, c.port, got, err, c.want, c.err)
		}
	}
	if _, err := FindDevice(t.TempDir(), "", 1); !errors.Is(err, ErrNoDevice) {
		t.Errorf("no sysfs: %v", err)
	}
	empty := t.TempDir()
	os.MkdirAll(filepath.Join(empty, "sys/class/infiniband"), 0o755)
	if _, err := FindDevice(empty, "rxe0", 1); !errors.Is(err, ErrNoDevice) {
		t.Errorf("no device: %v", err)
	}
}

func TestMissing(t *testing.T) {
	if _, err := Take("testdata/rxe-6.1", "rxe1", 1); err == nil || !strings.Contains(err.Error(), "rxe1") {
		t.Errorf("absent device: %v", err)
	}
	if _, err := Take("testdata/rxe-6.1", "rxe0", 2); err == nil || !strings.Contains(err.Error(), "no port 2: it has port 1") {
		t.Errorf("absent port: %v", err)
	}
	// A port with nothing but its state: no counters, no netdev, notes say so.
	root := t.TempDir()
	write(t, root, "sys/class/infiniband/x0/ports/1/state", "4: ACTIVE")
	write(t, root, "sys/class/infiniband/x0/ports/1/link_layer", "Ethernet")
	s := take(t, root, "x0", 1)
	if len(s.Counters) != 0 || s.Lifespan != 0 || s.Settle() != 0 || s.Netdev != "" {
		t.Errorf("%+v", s)
	}
	notes := strings.Join(s.Notes, "\n")
	for _, want := range []string{"no PMA port counters", "no hw_counters", "no netdev"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q: %s", want, notes)
		}
	}
}

// Garbage in a counter file marks that counter unreadable, naming the file; the rest
// of the snapshot is read.
func TestGarbage(t *testing.T) {
	root := copyTree(t, "testdata/rxe-6.1")
	hw := "sys/class/infiniband/rxe0/ports/1/hw_counters/"
	write(t, root, hw+"send_err", "-3")
	write(t, root, hw+"rdma_sends", "")
	write(t, root, hw+"lifespan", "soon")
	// A file that cannot be read (a driver's read error, here a dangling link).
	os.Remove(filepath.Join(root, hw+"rcvd_pkts"))
	if err := os.Symlink("nowhere", filepath.Join(root, hw+"rcvd_pkts")); err != nil {
		t.Fatal(err)
	}
	s := take(t, root, "rxe0", 1)
	for _, n := range []string{"send_err", "rdma_sends"} {
		c, _ := s.Get(HWPort, n)
		if c.Status != Unreadable || c.Value != nil || !strings.Contains(c.Text, filepath.Join(root, hw+n)) || !strings.Contains(c.Text, "not a counter value") {
			t.Errorf("%s: %+v", n, c)
		}
	}
	if c, _ := s.Get(HWPort, "rcvd_pkts"); c.Status != Unreadable || c.Value != nil || !strings.Contains(c.Text, filepath.Join(root, hw+"rcvd_pkts")) {
		t.Errorf("rcvd_pkts: %+v", c)
	}
	value(t, s, HWPort, "sent_pkts")
	if s.Lifespan != DefaultLifespan || !strings.Contains(strings.Join(s.Notes, "\n"), `lifespan: not a number: "soon"`) {
		t.Errorf("lifespan %v, notes %q", s.Lifespan, s.Notes)
	}
}

// The device-level hw_counters (mlx5 in switchdev mode, for one) are read too; the
// longer lifespan of the two wins.
func TestDeviceHWCounters(t *testing.T) {
	root := copyTree(t, "testdata/rxe-6.1")
	write(t, root, "sys/class/infiniband/rxe0/hw_counters/lifespan", "50")
	write(t, root, "sys/class/infiniband/rxe0/hw_counters/dev_thing", "8")
	s := take(t, root, "rxe0", 1)
	if value(t, s, HWDevice, "dev_thing") != 8 || count(s, HWDevice) != 1 || s.Lifespan != 50*time.Millisecond {
		t.Errorf("%+v, lifespan %v", s.Counters, s.Lifespan)
	}
}

func write(t *testing.T, root, rel, content string) {
	t.Helper()
	p := filepath.Join(root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// copyTree copies a fixture tree (symbolic links as links) to a temporary directory.
func copyTree(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		out := filepath.Join(dst, rel)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(l, out)
		case d.IsDir():
			return os.MkdirAll(out, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(out, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}
