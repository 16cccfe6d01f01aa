package bench

import (
	"net"

	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/verbs"
)

// GIDChooser is a Device that picks a GID per connection (verbs.GIDChooser): the
// verbs engine's, the GID of the control connection's local address. Devices without
// it (fakes, the loopback) run every connection on their one GID.
type GIDChooser = verbs.GIDChooser

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
	gid, note, ok := verbs.ConnGID(dev, local)
	if !ok {
		return dev
	}
	return boundDevice{Device: dev, gid: gid, note: note}
}

// Identity is the device's with this connection's GID.
func (b boundDevice) Identity() result.Device { return b.mark(b.Device.Identity()) }

// mark is me (the device's identity) with this connection's GID.
func (b boundDevice) mark(me result.Device) result.Device { return verbs.MarkGID(me, b.gid, b.note) }

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
