package verbs

import (
	"fmt"
	"net"
	"strings"

	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/verbs/qp"
)

// pickGID returns the GID entry at index, or with index -1 the one perftest would pick
// on RoCE: an IPv4-mapped RoCE v2 GID, else a RoCE v2 GID that is not link-local, else
// an IPv4-mapped RoCE v1 GID, else the first entry. InfiniBand ports use index 0.
func pickGID(p PortInfo, index int) (GIDEntry, error) {
	if len(p.GIDs) == 0 {
		return GIDEntry{}, fmt.Errorf("the GID table is empty (no IP address on the netdev?)")
	}
	if index >= 0 {
		for _, g := range p.GIDs {
			if g.Index == index {
				return g, nil
			}
		}
		return GIDEntry{}, fmt.Errorf("GID index %d is not a valid entry (see 'rdmabench devices')", index)
	}
	if p.LinkLayer != "Ethernet" {
		return p.GIDs[0], nil
	}
	score := func(g GIDEntry) int {
		ip := net.ParseIP(g.GID)
		v4 := ip != nil && ip.To4() != nil
		switch {
		case g.Type == "RoCE v2" && v4:
			return 4
		case g.Type == "RoCE v2" && !ip.IsLinkLocalUnicast():
			return 3
		case g.Type == "RoCE v1" && v4:
			return 2
		}
		return 1
	}
	best := p.GIDs[0]
	for _, g := range p.GIDs[1:] {
		if score(g) > score(best) {
			best = g
		}
	}
	return best, nil
}

// Choice is the device, port and GID entry rdmabench uses for a -d/-i/-x, as
// `rdmabench devices --gid` prints it.
type Choice struct {
	Device string `json:"device"`
	Port   int    `json:"port"`
	GIDEntry
}

// Choose picks from devs what Open picks for name, port and gidIndex: the named device
// or, with name "", the first whose port is usable; the port, which must be ACTIVE; its
// GID entry (gidIndex, or with -1 the one perftest would pick). It needs no device, so
// scripts ask `rdmabench devices --gid` instead of re-deriving the rule.
func Choose(devs []DeviceInfo, name string, port, gidIndex int) (Choice, error) {
	if len(devs) == 0 {
		return Choice{}, ErrNoDevice
	}
	var names []string
	for _, d := range devs {
		names = append(names, d.Name)
		if name != "" && d.Name != name {
			continue
		}
		err := Usable(d)
		var g GIDEntry
		if err == nil {
			_, g, err = portAndGID(d, port, gidIndex)
		}
		if err != nil && name == "" {
			continue // not usable; try the next one
		}
		return Choice{Device: d.Name, Port: port, GIDEntry: g}, err
	}
	if name == "" {
		return Choice{}, fmt.Errorf("no RDMA device among %s has port %d ACTIVE: check the link with 'rdmabench devices'", strings.Join(names, ", "), port)
	}
	return Choice{}, fmt.Errorf("RDMA device %q not found; available: %s (see 'rdmabench devices')", name, strings.Join(names, ", "))
}

// portAndGID is the per-device part of the choice: the port (1-based, ACTIVE) and the
// GID entry on it.
func portAndGID(d DeviceInfo, port, gidIndex int) (PortInfo, GIDEntry, error) {
	if port < 1 || port > len(d.Ports) {
		return PortInfo{}, GIDEntry{}, fmt.Errorf("%s has no port %d (it has %d)", d.Name, port, len(d.Ports))
	}
	p := d.Ports[port-1]
	if p.State != "ACTIVE" {
		return PortInfo{}, GIDEntry{}, fmt.Errorf("%s port %d is %s, not ACTIVE: check the cable/netdev ('rdmabench devices')", d.Name, port, p.State)
	}
	g, err := pickGID(p, gidIndex)
	if err != nil {
		return PortInfo{}, GIDEntry{}, fmt.Errorf("%s port %d: %w", d.Name, port, err)
	}
	return p, g, nil
}

// GIDForAddr is the GID a connection whose control (TCP) connection has local as
// this side's address runs on: the port's RoCE v2 GID that holds local, so that the
// RDMA traffic leaves from the address, netdev and VLAN the peer was reached on. When
// no entry holds it (a loopback control connection, an address on another netdev, an
// InfiniBand port, whose GIDs are no addresses) it is fallback, the GID chosen without
// an address, and note says why.
func GIDForAddr(dev string, p PortInfo, local net.IP, fallback GIDEntry) (g GIDEntry, note string) {
	which := fmt.Sprintf("GID %d (%s%s) as without an address", fallback.Index, fallback.GID, netdevOf(fallback))
	switch {
	case p.LinkLayer != "Ethernet":
		return fallback, fmt.Sprintf("%s port %d is InfiniBand, whose GIDs are not IP addresses: %s", dev, p.Port, which)
	case local == nil || local.IsUnspecified():
		return fallback, fmt.Sprintf("the control connection's local address is unknown: %s", which)
	}
	for _, e := range p.GIDs {
		if e.Type == "RoCE v2" && local.Equal(net.ParseIP(e.GID)) {
			return e, ""
		}
	}
	return fallback, fmt.Sprintf("no RoCE v2 GID of %s port %d holds %s, the control connection's local address: %s", dev, p.Port, local, which)
}

// GIDChooser is a device that picks a GID per connection: Device's GIDFor, the GID of
// the control connection's local address (GIDForAddr), so that the RDMA traffic leaves
// from the address, netdev and VLAN the peer was reached on. Devices without it (fakes,
// the Go API's loopback fabric) run every connection on their one GID.
type GIDChooser interface {
	GIDFor(local net.IP) (GIDEntry, string)
}

// ConnGID is the GID dev runs a connection on whose control connection has local as
// this side's address (the client's own end, or the address a server was reached on),
// and why it is not local's when it is not; ok is false when dev picks no GID per
// connection (it is no GIDChooser).
func ConnGID(dev any, local net.Addr) (g GIDEntry, note string, ok bool) {
	c, ok := dev.(GIDChooser)
	if !ok {
		return GIDEntry{}, "", false
	}
	g, note = c.GIDFor(addrIP(local))
	return g, note, true
}

func addrIP(a net.Addr) net.IP {
	if ta, ok := a.(*net.TCPAddr); ok {
		if v4 := ta.IP.To4(); v4 != nil {
			return v4
		}
		return ta.IP
	}
	return nil
}

// MarkGID is me, a device's identity, on the GID g of one connection; note says why g
// is not the GID of the connection's address, when it is not (ConnGID).
func MarkGID(me result.Device, g GIDEntry, note string) result.Device {
	me.GIDIndex, me.GIDType, me.GID, me.GIDNote = g.Index, g.Type, g.GID, note
	return me
}

func netdevOf(g GIDEntry) string {
	if g.Netdev == "" {
		return ""
	}
	return ", " + g.Netdev
}

// RTRHint is what an RTR failure (ibv_modify_qp to RTR) adds to the errno on a port of
// linkLayer: both ends' addresses, the netdevs they are on, and what to try.
func RTRHint(linkLayer string, local GIDEntry, lid uint16, remote qp.Endpoint) string {
	if linkLayer != "Ethernet" {
		return fmt.Sprintf("this side is LID %d, the peer LID %d: check that both ports are ACTIVE on one subnet with a subnet manager running ('rdmabench devices', ibstat)", lid, remote.LID)
	}
	peerNetdev := ""
	if remote.GIDNetdev != "" {
		peerNetdev = ", netdev " + remote.GIDNetdev
	}
	mine := "?"
	if local.Netdev != "" {
		mine = local.Netdev
	}
	return fmt.Sprintf("this side's GID %d is %s (%s, netdev %s), the peer's GID %d is %s (%s%s): check that both addresses are on the same subnet and VLAN and reach each other, or pick GIDs that do with -x on both sides ('rdmabench devices' lists them)",
		local.Index, local.GID, local.Type, mine, remote.GIDIndex, remote.GID, remote.GIDType, peerNetdev)
}

// grh says whether a port's QPs send a GRH and with which hop limit: on RoCE always (the
// GID is the IP address), on InfiniBand only with -x (pinned), as perftest. The hop
// limit is perftest's, 255, wherever a GRH is sent: its RTR (ctx_modify_qp_to_rtr in
// perftest_resources.c) sets grh.hop_limit = 0xFF with every GRH, so a RoCE v2 packet
// leaves with IP TTL 255 as perftest's does, and an InfiniBand one may cross IB routers
// (and carries the same 40 bytes more as perftest's with -x).
func grh(linkLayer string, pinned bool) (global bool, hopLimit uint8) {
	if linkLayer == "Ethernet" || pinned {
		return true, perftestHopLimit
	}
	return false, 0
}

// perftestHopLimit is the GRH hop limit perftest sets at RTR (0xFF).
const perftestHopLimit = 0xff
