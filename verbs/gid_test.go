package verbs

import (
	"errors"
	"strings"
	"testing"
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
