package bench

import (
	"net"

	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/verbs"
)

// GIDChooser is a Device that picks a GID per connection: the verbs engine's, the GID
// of the control connection's local address (verbs.Device.GIDFor), so that the RDMA
// traffic leaves from the address, netdev and VLAN the peer was reached on. Devices
// without it (fakes, the loopback) run every connection on their one GID.
type GIDChooser interface {
	GIDFor(local net.IP) (verbs.GIDEntry, string)
}

// boundDevice is a device bound to one control connection's GID: its identity says
// which GID (and why it is not the local address's, when it is not), and its sessions'
// QPs use it. It shares the device: closing it closes the device.
type boundDevice struct {
	Device
	gid  verbs.GIDEntry
	note string
}

// bindGID is dev bound to the GID for a control connection whose local address is
// local (the client's own end, or the address a server was reached on); dev itself when
// dev picks no GID per connection.
func bindGID(dev Device, local net.Addr) Device {
	c, ok := dev.(GIDChooser)
	if !ok {
		return dev
	}
	gid, note := c.GIDFor(addrIP(local))
	return boundDevice{Device: dev, gid: gid, note: note}
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

// Identity is the device's with this connection's GID.
func (b boundDevice) Identity() result.Device { return b.mark(b.Device.Identity()) }

// mark is me (the device's identity) with this connection's GID.
func (b boundDevice) mark(me result.Device) result.Device {
	me.GIDIndex, me.GIDType, me.GID, me.GIDNote = b.gid.Index, b.gid.Type, b.gid.GID, b.note
	return me
}

func (b boundDevice) NewSession(s verbs.Spec) (Session, error) {
	if len(s.GIDs) == 0 {
		s.GIDs = []verbs.GIDEntry{b.gid}
	}
	return b.Device.NewSession(s)
}

// identityOn is me, the identity of dev, as dev bound to a connection shows it.
func identityOn(dev Device, me result.Device) result.Device {
	if b, ok := dev.(boundDevice); ok {
		return b.mark(me)
	}
	return me
}
