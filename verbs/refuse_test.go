package verbs

import (
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/internal/memlock"
)

func deviceFixture(t *testing.T, name string) DeviceInfo {
	t.Helper()
	return gidFixture(t, "../devices/"+name)
}

// iWARP and EFA are refused when the device is opened (Open, and Choose for devices
// --gid and doctor), naming why; a name-less choice passes over them.
func TestUsableRefusesIWARPAndEFA(t *testing.T) {
	efa, iw := deviceFixture(t, "efa.json"), deviceFixture(t, "irdma-iwarp.json")
	for _, c := range []struct {
		d    DeviceInfo
		want []string
	}{
		{efa, []string{"rdmap0s6 is an AWS EFA device", "no RC queue pairs", "UD and SRD"}},
		{iw, []string{"irdma0 is an iWARP device", "RDMA-CM", "RoCE or InfiniBand"}},
	} {
		err := Usable(c.d)
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: want an error with %q, got %v", c.d.Name, w, err)
			}
		}
		if _, err := Choose([]DeviceInfo{c.d}, c.d.Name, 1, -1); err == nil || !strings.Contains(err.Error(), c.want[0]) {
			t.Errorf("Choose(%s): want the refusal, got %v", c.d.Name, err)
		}
	}
	for _, name := range []string{"cx7-ib.json", "../gids/cx6dx-vlans.json"} {
		if err := Usable(deviceFixture(t, name)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	rxe := DeviceInfo{Name: "rxe0", Driver: "rxe", Transport: "InfiniBand", Ports: []PortInfo{{Port: 1, State: "ACTIVE", LinkLayer: "Ethernet",
		GIDs: []GIDEntry{{Index: 1, GID: "10.0.0.1", Type: "RoCE v2"}}}}}
	if c, err := Choose([]DeviceInfo{efa, iw, rxe}, "", 1, -1); err != nil || c.Device != "rxe0" {
		t.Errorf("the first usable device: got %+v %v, want rxe0", c, err)
	}
}

// EFA's port reports an unspecified link layer, which is InfiniBand only on an
// InfiniBand transport.
func TestLinkLayerNames(t *testing.T) {
	for _, c := range []struct {
		ll        int
		transport string
		want      string
	}{
		{linkEthernet, "InfiniBand", "Ethernet"},
		{linkInfiniBand, "InfiniBand", "InfiniBand"},
		{linkUnspecified, "InfiniBand", "InfiniBand"},
		{linkUnspecified, "unspecified", "unspecified"}, // EFA
		{linkEthernet, "iWARP", "Ethernet"},
	} {
		if got := linkLayer(c.ll, c.transport); got != c.want {
			t.Errorf("linkLayer(%d, %s) = %s, want %s", c.ll, c.transport, got, c.want)
		}
	}
	if d := deviceFixture(t, "efa.json"); d.Ports[0].LinkLayer == "InfiniBand" || d.Transport == "InfiniBand" {
		t.Errorf("the EFA fixture must not say InfiniBand: %+v", d)
	}
}

func TestCheckMsgSizeAgainstMaxMsgSz(t *testing.T) {
	d := deviceFixture(t, "cx7-ib.json")
	p := d.Ports[0]
	if err := CheckMsgSize(d, p, 1<<30); err != nil {
		t.Errorf("1 GiB on a 1 GiB port: %v", err)
	}
	err := CheckMsgSize(d, p, 1<<31)
	if err == nil || !strings.Contains(err.Error(), "2147483648 bytes is above mlx5_0 port 1's max_msg_sz of 1073741824 bytes") || !strings.Contains(err.Error(), "--size 1073741824 or less") {
		t.Errorf("2 GiB: %v", err)
	}
	if err := CheckMsgSize(d, PortInfo{Port: 1}, 1<<31); err != nil {
		t.Errorf("a port that reports no max_msg_sz is not checked: %v", err)
	}
}

func TestMemlockHint(t *testing.T) {
	for _, c := range []struct {
		name             string
		need, soft, hard uint64
		ok, capLock      bool
		want             []string
	}{
		{"64 KiB limit", 8 << 20, 64 << 10, 64 << 10, true, false, []string{"RLIMIT_MEMLOCK is 64 KiB (ulimit -l)", "pins 8192 KiB", "hard limit is 64 KiB", "limits.conf", "LimitMEMLOCK=infinity", "CAP_IPC_LOCK"}},
		{"raisable", 8 << 20, 64 << 10, memlock.Unlimited, true, false, []string{"RLIMIT_MEMLOCK is 64 KiB", "ulimit -l unlimited (the hard limit allows it)"}},
		{"unlimited", 8 << 20, memlock.Unlimited, memlock.Unlimited, true, false, []string{"does not apply (ulimit -l is unlimited)", "did not fit in memory"}},
		{"root", 8 << 20, 64 << 10, 64 << 10, true, true, []string{"does not apply (CAP_IPC_LOCK)"}},
		{"unknown", 8 << 20, 0, 0, false, false, []string{"pins 8388608 bytes", "ulimit -l"}},
	} {
		h := memlockHint(c.need, c.soft, c.hard, c.ok, c.capLock)
		for _, w := range c.want {
			if !strings.Contains(h, w) {
				t.Errorf("%s: %q lacks %q", c.name, h, w)
			}
		}
	}
}

// -x on InfiniBand is not ignored: a GRH, as perftest sends one with -x. Every GRH has
// perftest's hop limit, 255 (its RTR sets grh.hop_limit = 0xFF), on RoCE too: the IP
// TTL of the packets is perftest's.
func TestGRHOnInfiniBandOnlyWithX(t *testing.T) {
	for _, c := range []struct {
		ll     string
		pinned bool
		global bool
		hops   uint8
	}{{"Ethernet", false, true, 255}, {"Ethernet", true, true, 255}, {"InfiniBand", false, false, 0}, {"InfiniBand", true, true, 255}} {
		if g, h := grh(c.ll, c.pinned); g != c.global || h != c.hops {
			t.Errorf("grh(%s, -x %v) = %v %d, want %v %d", c.ll, c.pinned, g, h, c.global, c.hops)
		}
	}
}
