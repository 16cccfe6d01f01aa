package doctor

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	hostfacts "github.com/rdmabench/rdmabench/host"
	"github.com/rdmabench/rdmabench/profiles"
	"github.com/rdmabench/rdmabench/verbs"
)

// host is what the local checks look at: the devices, the one the other commands
// would use (or, when none is usable, the one asked for, or the first), its port and
// the port's netdev.
type host struct {
	o         Options
	devs      []verbs.DeviceInfo
	devErr    error // listing the devices failed
	dev       *verbs.DeviceInfo
	port      *verbs.PortInfo
	choice    *verbs.Choice // nil: verbs.Choose refused (chooseErr says why)
	chooseErr error
	netdev    string // the port's netdev; "" when unknown or InfiniBand
	facts     hostfacts.Facts
}

func inspect(o Options) *host {
	h := &host{o: o}
	if o.Devices == nil {
		o.Devices = verbs.Devices
	}
	h.devs, h.devErr = o.Devices()
	// Whatever device is found (none at all: the host's facts alone), on every return.
	defer func() {
		name := ""
		if h.dev != nil {
			name = h.dev.Name
		}
		h.facts = hostfacts.Read(o.Root, name)
	}()
	if h.devErr != nil {
		return h
	}
	c, err := verbs.Choose(h.devs, o.Local.Device, o.Local.Port, o.Local.GIDIndex)
	name := o.Local.Device
	if err == nil {
		h.choice, name = &c, c.Device
	}
	h.chooseErr = err
	for i := range h.devs {
		if name == "" || h.devs[i].Name == name {
			h.dev = &h.devs[i]
			break
		}
	}
	if h.dev != nil && o.Local.Port >= 1 && o.Local.Port <= len(h.dev.Ports) {
		h.port = &h.dev.Ports[o.Local.Port-1]
		h.netdev = h.findNetdev()
	}
	return h
}

func (h *host) path(rel ...string) string {
	return filepath.Join(append([]string{h.o.Root}, rel...)...)
}

// findNetdev is the Ethernet netdev under the port, as `rdma link` shows it: the
// chosen GID's, else any GID's, else the kernel's GID attributes in sysfs, else rxe's
// parent, else the PCI function's network interface.
func (h *host) findNetdev() string {
	if h.port.LinkLayer == "InfiniBand" {
		return ""
	}
	if h.choice != nil && h.choice.Netdev != "" {
		return h.choice.Netdev
	}
	for _, g := range h.port.GIDs {
		if g.Netdev != "" {
			return g.Netdev
		}
	}
	ib := h.path("sys/class/infiniband", h.dev.Name)
	ndevs, _ := os.ReadDir(filepath.Join(ib, "ports", strconv.Itoa(h.port.Port), "gid_attrs/ndevs"))
	slices.SortFunc(ndevs, func(a, b os.DirEntry) int { return atoi(a.Name()) - atoi(b.Name()) })
	for _, e := range ndevs {
		if nd, err := readTrim(filepath.Join(ib, "ports", strconv.Itoa(h.port.Port), "gid_attrs/ndevs", e.Name())); err == nil && nd != "" {
			return nd
		}
	}
	if nd, err := readTrim(filepath.Join(ib, "parent")); err == nil && nd != "" {
		return nd
	}
	if nets, _ := os.ReadDir(filepath.Join(ib, "device/net")); len(nets) > 0 {
		return nets[0].Name()
	}
	return ""
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

func readTrim(path string) (string, error) {
	b, err := os.ReadFile(path)
	return strings.TrimSpace(string(b)), err
}

func (h *host) noPort(name string) Check {
	return Check{Name: name, Verdict: Skip, Found: "no device port to check (see the device check)"}
}

func (h *host) isRXE() bool {
	return h.dev != nil && (h.dev.Driver == "rxe" || h.dev.Model == verbs.Model("rxe", 0, 0))
}

// deviceCheck: a device, its port ACTIVE, and a GID, exactly as server, write and read
// choose them (verbs.Choose).
func (h *host) deviceCheck() Check {
	c := Check{Name: "device", Verdict: Fail}
	switch {
	case errors.Is(h.devErr, verbs.ErrUnsupported):
		c.Found = "this rdmabench was built without cgo: it cannot use RDMA devices"
		c.Fix = "rebuild with cgo and libibverbs-dev installed: make setup && make build"
	case errors.Is(h.devErr, verbs.ErrNoDevice) || (h.devErr == nil && len(h.devs) == 0):
		c.Found = "libibverbs found no RDMA device"
		c.Fix = "load your NIC's RDMA driver (ConnectX: modprobe mlx5_ib), or create a Soft-RoCE device (see soft-roce)"
	case h.devErr != nil:
		c.Found = "cannot list the RDMA devices: " + h.devErr.Error()
		c.Fix = "install the userspace provider for your NIC (Debian: ibverbs-providers) and check that /dev/infiniband/uverbs* exist and are readable by you"
	case h.dev == nil:
		c.Found = h.chooseErr.Error()
		c.Fix = "pick one of the devices listed with -d NAME ('rdmabench devices' shows them)"
	case h.port == nil:
		c.Found = h.chooseErr.Error()
		c.Fix = fmt.Sprintf("pick a port %s has with -i N ('rdmabench devices' shows them)", h.dev.Name)
	case h.port.State != "ACTIVE":
		c.Found = fmt.Sprintf("%s port %d is %s (physical state %s), %s", h.dev.Name, h.port.Port, h.port.State, orUnknown(h.port.PhysState), h.port.LinkLayer)
		switch {
		case h.netdev != "":
			c.Fix = fmt.Sprintf("bring %s up (ip link set dev %s up) and check its cable and switch port; the RDMA port follows the netdev", h.netdev, h.netdev)
		case h.port.LinkLayer == "InfiniBand":
			c.Fix = "check the cable and the switch; an InfiniBand port stays INIT until a subnet manager (opensm) runs on the fabric"
		default:
			c.Fix = "check the cable and the switch port ('rdmabench devices' shows the port state)"
		}
	case h.choice == nil: // the port is fine; its GID is not
		c.Found = h.chooseErr.Error()
		c.Fix = "give the port's netdev an IP address (ip addr add ADDR/PREFIX dev NETDEV), or pick a valid GID with -x ('rdmabench devices' lists them)"
	default:
		d, p, g := h.dev, h.port, h.choice
		c.Verdict = OK
		c.Found = fmt.Sprintf("%s (%s, driver %s) port %d: %s, %s, %g Gb/s; GID %d %s (%s)", d.Name, d.Model, d.Driver, p.Port, p.State, p.LinkLayer, p.RateGbps, g.Index, g.GID, g.Type)
		if h.netdev != "" {
			c.Found += " on " + h.netdev
		}
	}
	return c
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// linkRateCheck: the port's rate against the NIC profile's nominal rate: its model's
// (profiles.Profile.Model), else the profile's.
func (h *host) linkRateCheck() Check {
	c := Check{Name: "link-rate"}
	if h.port == nil {
		return h.noPort(c.Name)
	}
	d, p := h.dev, h.port
	prof, err := profiles.Detect(d.Driver, d.VendorID, d.VendorPartID)
	if err != nil {
		c.Verdict = Skip
		c.Found = fmt.Sprintf("%g Gb/s; no built-in NIC profile for %s (driver %s, vendor 0x%x, part %d) to compare it with", p.RateGbps, d.Model, d.Driver, d.VendorID, d.VendorPartID)
		return c
	}
	rate, model := prof.LinkGbps, ""
	if m, ok := prof.Model(d.VendorPartID); ok {
		rate, model = m.LinkGbps, " for "+article(m.Name)
	}
	fix := "check the cable, the transceiver and the switch port"
	if h.netdev != "" {
		fix += fmt.Sprintf(": 'ethtool %s' shows the negotiated speed and what each end advertises", h.netdev)
	} else if p.LinkLayer == "InfiniBand" {
		fix += ": 'ibstat' shows the rate and width each end settled on"
	}
	switch {
	case p.RateGbps <= 0:
		c.Verdict, c.Fix = Warn, fix
		c.Found = fmt.Sprintf("%s port %d reports no link rate (the %s profile's nominal rate is %g Gb/s%s)", d.Name, p.Port, prof.Name, rate, model)
	case p.RateGbps < rate:
		c.Verdict, c.Fix = Warn, fix
		c.Found = fmt.Sprintf("%s port %d runs at %g Gb/s (%dX %g Gb/s), below the %s profile's nominal %g Gb/s%s", d.Name, p.Port, p.RateGbps, p.Width, p.LaneGbps, prof.Name, rate, model)
	default:
		c.Verdict = OK
		c.Found = fmt.Sprintf("%g Gb/s, at least the %s profile's nominal %g Gb/s%s", p.RateGbps, prof.Name, rate, model)
	}
	return c
}

// RoCE headers and the MTU.
//
// A netdev's MTU bounds the IP packet. A RoCE v2 packet carries, besides a payload of up
// to the RDMA (IB) MTU, an IP header (20 bytes IPv4, 40 IPv6), UDP (8), the base
// transport header (BTH, 12), at most one extended header (RETH 16 in the first packet
// of a WRITE, AETH 4 in a READ response, AtomicETH 28) and the invariant CRC (ICRC, 4).
//
// The kernel derives a RoCE port's active MTU from its netdev's MTU with a worst-case
// allowance: iboe_get_mtu() in include/rdma/ib_addr.h (used by mlx4, mlx5, bnxt_re,
// hns and the RDMA CM) subtracts GRH 40 + UDP 8 + BTH 12 + XRC ETH 4 + AtomicETH 28 +
// ICRC 4 = 96 bytes and takes the largest IB MTU that fits; Soft-RoCE's
// eth_mtu_int_to_enum() (drivers/infiniband/sw/rxe/rxe_param.h) subtracts
// RXE_MAX_HDR_LENGTH, 80 bytes. So an RDMA MTU of 4096 needs a netdev MTU of at least
// 4192 (4176 on rxe), and the default 1500 gives 1024 (1500 - 96 = 1404).
const (
	roceHeadroom = 96 // iboe_get_mtu()
	rxeHeadroom  = 80 // RXE_MAX_HDR_LENGTH
	// roceMinHeaders is the least a full-size RoCE v2 WRITE packet adds to its payload:
	// IPv4 20 + UDP 8 + BTH 12 + RETH 16 + ICRC 4. An active MTU within this of the
	// netdev's MTU makes packets the netdev cannot send.
	roceMinHeaders = 60
)

// ibMTUFor is the largest IB MTU (256 .. 4096) at most netdevMTU - headroom; 0 if none.
func ibMTUFor(netdevMTU, headroom int) int {
	for m := 4096; m >= 256; m /= 2 {
		if m <= netdevMTU-headroom {
			return m
		}
	}
	return 0
}

// mtuCheck: the port's active MTU against what its netdev's MTU allows (RoCE), or
// against the port's maximum (InfiniBand).
func (h *host) mtuCheck() Check {
	c := Check{Name: "mtu"}
	if h.port == nil {
		return h.noPort(c.Name)
	}
	p := h.port
	if p.LinkLayer == "InfiniBand" {
		c.Verdict, c.Found = OK, fmt.Sprintf("InfiniBand: active MTU %d (port maximum %d)", p.ActiveMTU, p.MaxMTU)
		if p.MaxMTU > 0 && p.ActiveMTU < p.MaxMTU {
			c.Verdict = Warn
			c.Fix = "the subnet manager's partition MTU or the neighbour's port limits it: set mtu=5 (4096) for the partition in opensm's partitions.conf"
		}
		return c
	}
	if h.netdev == "" {
		c.Verdict, c.Found = Skip, fmt.Sprintf("active MTU %d; no netdev found for %s port %d to compare it with", p.ActiveMTU, h.dev.Name, p.Port)
		return c
	}
	s, err := readTrim(h.path("sys/class/net", h.netdev, "mtu"))
	ndMTU, perr := strconv.Atoi(s)
	if err != nil || perr != nil {
		c.Verdict, c.Found = Skip, fmt.Sprintf("active MTU %d; cannot read %s's MTU (/sys/class/net/%s/mtu)", p.ActiveMTU, h.netdev, h.netdev)
		return c
	}
	headroom := roceHeadroom
	if h.isRXE() {
		headroom = rxeHeadroom
	}
	allowed := ibMTUFor(ndMTU, headroom)
	maxMTU := 4096
	if p.MaxMTU > 0 {
		maxMTU = min(maxMTU, p.MaxMTU)
	}
	want := min(allowed, maxMTU)
	switch {
	case p.ActiveMTU <= 0:
		c.Verdict, c.Found = Skip, fmt.Sprintf("%s port %d reports no active MTU; %s's MTU is %d", h.dev.Name, p.Port, h.netdev, ndMTU)
	case p.ActiveMTU+roceMinHeaders > ndMTU:
		c.Verdict = Fail
		c.Found = fmt.Sprintf("RDMA MTU %d but %s's MTU is %d: full-size RoCE v2 packets (%d + at least %d bytes of headers) do not fit the netdev", p.ActiveMTU, h.netdev, ndMTU, p.ActiveMTU, roceMinHeaders)
		c.Fix = fmt.Sprintf("raise the netdev's MTU (ip link set dev %s mtu %d, on both hosts and the switch ports between them), or run the tests with --mtu %d", h.netdev, p.ActiveMTU+headroom, max(256, allowed))
	case p.ActiveMTU < want:
		c.Verdict = Warn
		c.Found = fmt.Sprintf("RDMA MTU %d, but %s's MTU %d allows %d", p.ActiveMTU, h.netdev, ndMTU, want)
		c.Fix = "the RDMA port did not follow the netdev's MTU change: restart the port"
		if h.isRXE() {
			c.Fix += fmt.Sprintf(" (rdma link delete %s && rdma link add %s type rxe netdev %s)", h.dev.Name, h.dev.Name, h.netdev)
		} else {
			c.Fix += fmt.Sprintf(" (ip link set dev %s down && ip link set dev %s up)", h.netdev, h.netdev)
		}
	case p.ActiveMTU < maxMTU:
		c.Verdict = Warn
		c.Found = fmt.Sprintf("RDMA MTU %d, limited by %s's MTU %d (%d needs a netdev MTU of at least %d): large messages travel in %dx as many packets", p.ActiveMTU, h.netdev, ndMTU, maxMTU, maxMTU+headroom, maxMTU/p.ActiveMTU)
		c.Fix = fmt.Sprintf("ip link set dev %s mtu 9000 on both hosts (and allow jumbo frames on the switch ports between them)", h.netdev)
	default:
		c.Verdict = OK
		c.Found = fmt.Sprintf("RDMA MTU %d; %s's MTU %d carries it (%d + %d bytes of headers)", p.ActiveMTU, h.netdev, ndMTU, p.ActiveMTU, headroom)
	}
	return c
}

// roce says whether a check about the port's netdev applies, and when not, the check
// that says why (no port, InfiniBand with why, no netdev found).
func (h *host) roce(name, whyIB string) (Check, bool) {
	c := Check{Name: name}
	switch {
	case h.port == nil:
		return h.noPort(name), false
	case h.port.LinkLayer == "InfiniBand":
		c.Verdict, c.Found = Skip, whyIB
		return c, false
	case h.netdev == "":
		c.Verdict, c.Found = Skip, fmt.Sprintf("no netdev found for %s port %d", h.dev.Name, h.port.Port)
		return c, false
	}
	return c, true
}

// netdevCheck: the RoCE port's netdev exists and is up.
func (h *host) netdevCheck() Check {
	c, ok := h.roce("netdev", "InfiniBand: no netdev under the port")
	if !ok {
		return c
	}
	nd := h.netdev
	state, err := readTrim(h.path("sys/class/net", nd, "operstate"))
	if err != nil {
		c.Verdict = Fail
		c.Found = fmt.Sprintf("%s port %d is on %s, which does not exist (/sys/class/net/%s)", h.dev.Name, h.port.Port, nd, nd)
		c.Fix = "recreate the RDMA device on an existing netdev"
		if h.isRXE() {
			c.Fix = fmt.Sprintf("rdma link delete %s && rdma link add %s type rxe netdev %s", h.dev.Name, h.dev.Name, guessNetdev(h.o.Root))
		}
		return c
	}
	carrier, _ := readTrim(h.path("sys/class/net", nd, "carrier"))
	switch {
	case state == "up":
		c.Verdict, c.Found = OK, nd+" is up"
	case state == "unknown" && carrier == "1":
		// Virtual links (veth before 5.x, tun, dummy) report "unknown" with a carrier.
		c.Verdict, c.Found = OK, nd+" is up (operstate unknown, carrier on)"
	case state == "lowerlayerdown":
		c.Verdict = Fail
		c.Found = nd + " is lowerlayerdown: the device below it (bond slave, VLAN parent) is down"
		c.Fix = fmt.Sprintf("bring up the device under %s (ip link show %s names it) and check its cable", nd, nd)
	default:
		c.Verdict = Fail
		c.Found = fmt.Sprintf("%s is %s", nd, state)
		c.Fix = fmt.Sprintf("ip link set dev %s up, and check its cable and switch port ('ip link show %s')", nd, nd)
	}
	return c
}

// gidCheck: on Ethernet, a RoCE v2 GID for the netdev's IPv4 address, which is what
// the other commands pick by default (perftest's rule, verbs.Choose).
func (h *host) gidCheck() Check {
	c, ok := h.roce("roce-v2-gid", "InfiniBand: GIDs come from the subnet manager, not from IP addresses")
	if !ok {
		return c
	}
	nd := h.netdev
	ips, err := h.o.Addrs(nd)
	if err != nil {
		c.Verdict, c.Found = Skip, fmt.Sprintf("cannot list %s's addresses: %v", nd, err)
		return c
	}
	var v4 []net.IP
	for _, ip := range ips {
		if ip.To4() != nil {
			v4 = append(v4, ip)
		}
	}
	v2 := func(ip net.IP) *verbs.GIDEntry {
		for i, g := range h.port.GIDs {
			if g.Type == "RoCE v2" && ip.Equal(net.ParseIP(g.GID)) {
				return &h.port.GIDs[i]
			}
		}
		return nil
	}
	for _, ip := range v4 {
		g := v2(ip)
		if g == nil {
			continue
		}
		c.Verdict, c.Found = OK, fmt.Sprintf("GID %d is RoCE v2 for %s's address %s", g.Index, nd, ip)
		if ch := h.choice; ch != nil && ch.Index != g.Index && ch.Type != "RoCE v2" {
			c.Verdict = Warn
			c.Found += fmt.Sprintf(", but -x %d picks a %s GID (%s)", ch.Index, ch.Type, ch.GID)
			c.Fix = fmt.Sprintf("use -x %d (or leave -x out) on both hosts: RoCE v1 is not routable and peers must use the same version", g.Index)
		}
		return c
	}
	table := gidList(h.port.GIDs)
	if len(v4) == 0 {
		for _, g := range h.port.GIDs {
			if ip := net.ParseIP(g.GID); g.Type == "RoCE v2" && ip != nil && ip.To4() == nil && !ip.IsLinkLocalUnicast() {
				c.Verdict = Warn
				c.Found = fmt.Sprintf("%s has no IPv4 address; the default GID is %d, RoCE v2 for %s (IPv6)", nd, g.Index, g.GID)
				c.Fix = fmt.Sprintf("fine if the peer uses IPv6 too; for the IPv4-mapped RoCE v2 GID that perftest and rdmabench pick first: ip addr add ADDR/PREFIX dev %s", nd)
				return c
			}
		}
		c.Verdict = Fail
		c.Found = fmt.Sprintf("%s has no IPv4 address and the port no routable RoCE v2 GID (%s)", nd, table)
		c.Fix = fmt.Sprintf("ip addr add ADDR/PREFIX dev %s (an address the peer can reach): the kernel adds a RoCE v2 GID for each address of the netdev", nd)
		return c
	}
	c.Verdict = Fail
	c.Found = fmt.Sprintf("%s has %s but the port has no RoCE v2 GID for it (%s)", nd, ipList(v4), table)
	c.Fix = fmt.Sprintf("the kernel adds a RoCE v2 GID for each address of the RDMA device's own netdev: put the address on %s itself (not on a bridge or bond above it), check that RoCE v2 is enabled on the NIC, and list the GIDs again with 'rdmabench devices'", nd)
	return c
}

func gidList(gs []verbs.GIDEntry) string {
	if len(gs) == 0 {
		return "the GID table is empty"
	}
	var s []string
	for _, g := range gs {
		s = append(s, fmt.Sprintf("%d %s %s", g.Index, g.GID, g.Type))
	}
	return "GIDs: " + strings.Join(s, ", ")
}

func ipList(ips []net.IP) string {
	var s []string
	for _, ip := range ips {
		s = append(s, ip.String())
	}
	return strings.Join(s, ", ")
}

// softRoCECheck: for an rxe device, rdma_rxe loaded and the device on an existing
// netdev (what `rdma link` shows); without any device, how to make one.
func (h *host) softRoCECheck() Check {
	c := Check{Name: "soft-roce"}
	loaded := rxeLoaded(h.o.Root)
	guess := guessNetdev(h.o.Root)
	add := func(dev string) string { return fmt.Sprintf("rdma link add %s type rxe netdev %s", dev, guess) }
	switch {
	case h.dev != nil && !h.isRXE():
		c.Verdict, c.Found = Skip, fmt.Sprintf("%s is not Soft-RoCE (%s)", h.dev.Name, h.dev.Model)
	case h.dev == nil && h.devErr != nil && !errors.Is(h.devErr, verbs.ErrNoDevice):
		c.Verdict, c.Found = Skip, "the devices could not be listed (see the device check)"
	case h.dev == nil && !loaded:
		c.Verdict = Warn
		c.Found = "no RDMA device, and the Soft-RoCE module rdma_rxe is not loaded"
		c.Fix = "without an RDMA NIC, use Soft-RoCE: modprobe rdma_rxe && " + add("rxe0")
	case h.dev == nil:
		c.Verdict = Warn
		c.Found = "rdma_rxe is loaded but there is no Soft-RoCE device"
		c.Fix = add("rxe0")
	case !loaded:
		c.Verdict = Fail
		c.Found = fmt.Sprintf("%s is Soft-RoCE but rdma_rxe is not loaded (not in /proc/modules nor /sys/module)", h.dev.Name)
		c.Fix = "modprobe rdma_rxe && " + add(h.dev.Name)
	case h.netdev == "":
		c.Verdict = Fail
		c.Found = fmt.Sprintf("rdma_rxe is loaded, but %s has no netdev", h.dev.Name)
		c.Fix = fmt.Sprintf("rdma link delete %s && %s", h.dev.Name, add(h.dev.Name))
	case !exists(h.path("sys/class/net", h.netdev)):
		c.Verdict = Fail
		c.Found = fmt.Sprintf("rdma_rxe is loaded, but %s's netdev %s does not exist", h.dev.Name, h.netdev)
		c.Fix = fmt.Sprintf("rdma link delete %s && %s", h.dev.Name, add(h.dev.Name))
	default:
		c.Verdict, c.Found = OK, fmt.Sprintf("rdma_rxe is loaded; %s runs over %s", h.dev.Name, h.netdev)
	}
	return c
}

func exists(path string) bool { _, err := os.Stat(path); return err == nil }

// rxeLoaded: rdma_rxe in /proc/modules, or under /sys/module (built in, or loaded).
func rxeLoaded(root string) bool {
	if exists(filepath.Join(root, "sys/module/rdma_rxe")) {
		return true
	}
	b, err := os.ReadFile(filepath.Join(root, "proc/modules"))
	if err != nil {
		return false
	}
	for line := range strings.Lines(string(b)) {
		if f := strings.Fields(line); len(f) > 0 && f[0] == "rdma_rxe" {
			return true
		}
	}
	return false
}

// guessNetdev is the netdev a Soft-RoCE device would best sit on: the one the default
// route leaves through (/proc/net/route), else the first netdev that is up and not the
// loopback, else "eth0".
func guessNetdev(root string) string {
	if b, err := os.ReadFile(filepath.Join(root, "proc/net/route")); err == nil {
		for line := range strings.Lines(string(b)) {
			f := strings.Fields(line)
			// Iface Destination Gateway Flags RefCnt Use Metric Mask ...
			if len(f) >= 8 && f[1] == "00000000" && f[7] == "00000000" {
				return f[0]
			}
		}
	}
	if es, err := os.ReadDir(filepath.Join(root, "sys/class/net")); err == nil {
		for _, e := range es {
			if e.Name() == "lo" {
				continue
			}
			if s, _ := readTrim(filepath.Join(root, "sys/class/net", e.Name(), "operstate")); s == "up" {
				return e.Name()
			}
		}
	}
	return "eth0"
}
