package verbs

import (
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/verbs/qp"
)

func TestPickGIDLikePerftest(t *testing.T) {
	p := PortInfo{LinkLayer: "Ethernet", GIDs: []GIDEntry{
		{Index: 0, GID: "fe80::1", Type: "RoCE v1"},
		{Index: 1, GID: "fe80::1", Type: "RoCE v2"},
		{Index: 2, GID: "192.0.2.7", Type: "RoCE v1"},
		{Index: 3, GID: "192.0.2.7", Type: "RoCE v2"},
	}}
	if g, _ := pickGID(p, -1); g.Index != 3 {
		t.Fatalf("want the RoCE v2 IPv4-mapped GID 3, got %d", g.Index)
	}
	if g, _ := pickGID(p, 2); g.Index != 2 {
		t.Fatalf("-x 2 must win, got %d", g.Index)
	}
	if _, err := pickGID(p, 9); err == nil {
		t.Fatal("an absent index must fail")
	}
	if _, err := pickGID(PortInfo{}, -1); err == nil {
		t.Fatal("an empty table must fail")
	}
}

func TestModel(t *testing.T) {
	for want, got := range map[string]string{
		"ConnectX-5":      Model("mlx5_core", 0x02c9, 4119),
		"ConnectX-6 Dx":   Model("mlx5_core", 0x02c9, 4125),
		"Soft-RoCE (rxe)": Model("rxe", 0xffffff, 0),
	} {
		if got != want {
			t.Errorf("got %q want %q", got, want)
		}
	}
}

// chooseFixture: an IB HCA with its port down, a RoCE NIC whose port 1 is ACTIVE with
// an IPv4-mapped RoCE v2 GID at index 3 and whose port 2 is down, and an rxe device.
func chooseFixture() []DeviceInfo {
	roce := []GIDEntry{
		{Index: 0, GID: "fe80::1", Type: "RoCE v1", Netdev: "eth0"},
		{Index: 1, GID: "fe80::1", Type: "RoCE v2", Netdev: "eth0"},
		{Index: 2, GID: "192.0.2.7", Type: "RoCE v1", Netdev: "eth0"},
		{Index: 3, GID: "192.0.2.7", Type: "RoCE v2", Netdev: "eth0"},
	}
	return []DeviceInfo{
		{Name: "mlx4_0", Ports: []PortInfo{{Port: 1, State: "DOWN", LinkLayer: "InfiniBand",
			GIDs: []GIDEntry{{Index: 0, GID: "fe80::2", Type: "IB"}}}}},
		{Name: "mlx5_0", Ports: []PortInfo{
			{Port: 1, State: "ACTIVE", LinkLayer: "Ethernet", GIDs: roce},
			{Port: 2, State: "DOWN", LinkLayer: "Ethernet", GIDs: roce},
		}},
		{Name: "rxe0", Ports: []PortInfo{{Port: 1, State: "ACTIVE", LinkLayer: "Ethernet", GIDs: []GIDEntry{
			{Index: 0, GID: "fe80::3", Type: "RoCE v2", Netdev: "vethA"},
			{Index: 1, GID: "10.0.0.1", Type: "RoCE v2", Netdev: "vethA"},
		}}}},
		{Name: "ib0", Ports: []PortInfo{{Port: 1, State: "ACTIVE", LinkLayer: "InfiniBand", GIDs: []GIDEntry{
			{Index: 0, GID: "fe80::4", Type: "IB"},
			{Index: 1, GID: "fe80::5", Type: "IB"},
		}}}},
	}
}

func TestChoose(t *testing.T) {
	devs := chooseFixture()
	for _, c := range []struct {
		name     string
		port, x  int
		dev, gid string
		index    int
	}{
		{"", 1, -1, "mlx5_0", "192.0.2.7", 3}, // mlx4_0's port is down: the first usable one
		{"mlx5_0", 1, -1, "mlx5_0", "192.0.2.7", 3},
		{"mlx5_0", 1, 2, "mlx5_0", "192.0.2.7", 2}, // -x wins
		{"rxe0", 1, -1, "rxe0", "10.0.0.1", 1},
		{"ib0", 1, -1, "ib0", "fe80::4", 0}, // InfiniBand: index 0
	} {
		got, err := Choose(devs, c.name, c.port, c.x)
		if err != nil {
			t.Errorf("Choose(%q, %d, %d): %v", c.name, c.port, c.x, err)
			continue
		}
		want := Choice{Device: c.dev, Port: c.port}
		if got.Device != want.Device || got.Port != want.Port || got.GID != c.gid || got.Index != c.index {
			t.Errorf("Choose(%q, %d, %d) = %+v; want %s port %d GID %d %s", c.name, c.port, c.x, got, c.dev, c.port, c.index, c.gid)
		}
	}
	for _, c := range []struct {
		name    string
		port, x int
		devs    []DeviceInfo
		msg     string
	}{
		{"mlx4_0", 1, -1, devs, "mlx4_0 port 1 is DOWN, not ACTIVE"},
		{"mlx5_0", 2, -1, devs, "mlx5_0 port 2 is DOWN"},
		{"mlx5_0", 3, -1, devs, "mlx5_0 has no port 3 (it has 2)"},
		{"mlx5_0", 1, 9, devs, "mlx5_0 port 1: GID index 9 is not a valid entry"},
		{"nope", 1, -1, devs, `RDMA device "nope" not found; available: mlx4_0, mlx5_0, rxe0, ib0`},
		{"", 2, -1, devs, "no RDMA device among mlx4_0, mlx5_0, rxe0, ib0 has port 2 ACTIVE"},
		{"", 1, -1, nil, "no RDMA device found"},
	} {
		_, err := Choose(c.devs, c.name, c.port, c.x)
		if err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("Choose(%q, %d, %d): want an error with %q, got %v", c.name, c.port, c.x, c.msg, err)
		}
	}
	if _, err := Choose(nil, "", 1, -1); !errors.Is(err, ErrNoDevice) {
		t.Errorf("no devices: want ErrNoDevice, got %v", err)
	}
}

func gidFixture(t *testing.T, name string) DeviceInfo {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata/gids", name))
	if err != nil {
		t.Fatal(err)
	}
	var d DeviceInfo
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return d
}

// Each connection runs on the RoCE v2 GID of its control connection's local address:
// the primary and secondary address of a netdev, a VLAN netdev's, IPv6; an address no
// entry holds falls back to the GID picked without one, and says so.
func TestGIDForAddrOnOneNetdevAndVLANs(t *testing.T) {
	d := gidFixture(t, "cx6dx-vlans.json")
	p := d.Ports[0]
	fallback, err := pickGID(p, -1)
	if err != nil || fallback.Index != 3 {
		t.Fatalf("without an address: want GID 3 (192.0.2.7, the lowest IPv4 RoCE v2), got %+v %v", fallback, err)
	}
	for _, c := range []struct {
		addr   string
		index  int
		netdev string
		note   string // "" when the address's GID is used
	}{
		{"192.0.2.7", 3, "ens1f0np0", ""},
		{"192.0.2.8", 5, "ens1f0np0", ""}, // the secondary address: its own GID, not the first address's
		{"198.51.100.7", 9, "ens1f0np0.100", ""},
		{"203.0.113.7", 11, "ens1f0np0.200", ""},
		{"2001:db8::7", 13, "ens1f0np0", ""},
		{"::ffff:192.0.2.8", 5, "ens1f0np0", ""}, // a v4-mapped socket address is the IPv4 one
		{"127.0.0.1", 3, "ens1f0np0", "no RoCE v2 GID of mlx5_0 port 1 holds 127.0.0.1, the control connection's local address: GID 3 (192.0.2.7, ens1f0np0) as without an address"},
		{"10.9.9.9", 3, "ens1f0np0", "no RoCE v2 GID of mlx5_0 port 1 holds 10.9.9.9"},
		{"", 3, "ens1f0np0", "the control connection's local address is unknown"},
	} {
		g, note := GIDForAddr(d.Name, p, net.ParseIP(c.addr), fallback)
		if g.Index != c.index || g.Netdev != c.netdev || g.Type != "RoCE v2" {
			t.Errorf("%s: got GID %d (%s, %s), want %d on %s", c.addr, g.Index, g.Type, g.Netdev, c.index, c.netdev)
		}
		if (c.note == "") != (note == "") || !strings.Contains(note, c.note) {
			t.Errorf("%s: note %q, want %q", c.addr, note, c.note)
		}
	}
	// A RoCE v1 entry is never taken for an address: both sides agree on v2.
	v1only := PortInfo{Port: 1, LinkLayer: "Ethernet", GIDs: []GIDEntry{{Index: 0, GID: "192.0.2.9", Type: "RoCE v1"}}}
	if g, note := GIDForAddr("x", v1only, net.ParseIP("192.0.2.9"), fallback); g != fallback || note == "" {
		t.Errorf("RoCE v1 only: got %+v %q, want the fallback with a note", g, note)
	}
	ib := PortInfo{Port: 1, LinkLayer: "InfiniBand", GIDs: []GIDEntry{{Index: 0, GID: "fe80::4", Type: "IB"}}}
	if g, note := GIDForAddr("mlx5_1", ib, net.ParseIP("192.0.2.7"), ib.GIDs[0]); g.Index != 0 || !strings.Contains(note, "InfiniBand") {
		t.Errorf("InfiniBand: got %+v %q, want GID 0 with a note", g, note)
	}
}

func TestRTRHintNamesBothGIDsAndNetdevs(t *testing.T) {
	d := gidFixture(t, "cx6dx-vlans.json")
	local := d.Ports[0].GIDs[9]
	remote := qp.Endpoint{GID: "192.0.2.20", GIDIndex: 3, GIDType: "RoCE v2", GIDNetdev: "eth2"}
	h := RTRHint("Ethernet", local, 0, remote)
	for _, want := range []string{"GID 9 is 198.51.100.7", "netdev ens1f0np0.100", "GID 3 is 192.0.2.20", "netdev eth2", "same subnet", "-x"} {
		if !strings.Contains(h, want) {
			t.Errorf("hint %q lacks %q", h, want)
		}
	}
	if h := RTRHint("InfiniBand", GIDEntry{}, 7, qp.Endpoint{LID: 9}); !strings.Contains(h, "LID 7") || !strings.Contains(h, "LID 9") {
		t.Errorf("InfiniBand hint %q", h)
	}
}
