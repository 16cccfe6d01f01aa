//go:build linux && cgo

package verbs

/*
#include "rb.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
)

// Device is an opened device with its protection domain, bound to one port and GID.
type Device struct {
	Info DeviceInfo
	Port PortInfo
	GID  GIDEntry
	// pinned: the GID was chosen with -x, which every connection then uses (GIDFor).
	pinned bool
	ctx    *C.struct_ibv_context
	pd     *C.struct_ibv_pd
}

// Open opens the named device (or, with name "", the first one with an ACTIVE port),
// allocates a PD and picks the GID: gidIndex, or with -1 the one perftest would pick.
func Open(name string, port, gidIndex int) (*Device, error) {
	list, err := deviceList()
	if err != nil {
		return nil, err
	}
	defer C.ibv_free_device_list(list.head)
	var names []string
	for _, dev := range list.devs {
		n := C.GoString(C.ibv_get_device_name(dev))
		names = append(names, n)
		if name != "" && n != name {
			continue
		}
		d, err := openOne(dev, port, gidIndex)
		if err != nil && name == "" {
			continue // not usable; try the next one
		}
		return d, err
	}
	if name == "" {
		return nil, fmt.Errorf("no RDMA device among %s has port %d ACTIVE: check the link with 'rdmabench devices'", strings.Join(names, ", "), port)
	}
	return nil, fmt.Errorf("RDMA device %q not found; available: %s (see 'rdmabench devices')", name, strings.Join(names, ", "))
}

func openOne(dev *C.struct_ibv_device, port, gidIndex int) (_ *Device, err error) {
	name := C.GoString(C.ibv_get_device_name(dev))
	ctx, cerr := C.ibv_open_device(dev)
	if ctx == nil {
		return nil, &VerbError{Verb: "ibv_open_device", Phase: name, Err: errnoOr(cerr)}
	}
	d := &Device{ctx: ctx}
	defer func() {
		if err != nil {
			d.Close()
		}
	}()
	if d.Info, err = queryDevice(ctx); err != nil {
		return nil, err
	}
	if err := Usable(d.Info); err != nil {
		return nil, err
	}
	if port < 1 || port > len(d.Info.Ports) {
		return nil, fmt.Errorf("%s has no port %d (it has %d)", name, port, len(d.Info.Ports))
	}
	d.Port = d.Info.Ports[port-1]
	if d.Port.State != "ACTIVE" {
		return nil, fmt.Errorf("%s port %d is %s, not ACTIVE: check the cable/netdev ('rdmabench devices')", name, port, d.Port.State)
	}
	if d.GID, err = pickGID(d.Port, gidIndex); err != nil {
		return nil, fmt.Errorf("%s port %d: %w", name, port, err)
	}
	d.pinned = gidIndex >= 0 // on InfiniBand too: its QPs then send a GRH, as perftest's -x
	pd, cerr := C.ibv_alloc_pd(ctx)
	if pd == nil {
		return nil, &VerbError{Verb: "ibv_alloc_pd", Phase: name, Err: errnoOr(cerr)}
	}
	d.pd = pd
	return d, nil
}

// GIDFor is the GID entry a connection whose control connection has local as this
// side's address uses (GIDForAddr), and why it is not local's when it is not; with -x,
// always that entry.
func (d *Device) GIDFor(local net.IP) (GIDEntry, string) {
	if d.pinned {
		return d.GID, ""
	}
	return GIDForAddr(d.Info.Name, d.Port, local, d.GID)
}

// Close releases the PD and the device context; it is nil-safe and idempotent.
func (d *Device) Close() error {
	if d == nil {
		return nil
	}
	var errs []error
	if d.pd != nil {
		if rc := C.ibv_dealloc_pd(d.pd); rc != 0 {
			errs = append(errs, &VerbError{Verb: "ibv_dealloc_pd", Err: syscall.Errno(rc)})
		}
		d.pd = nil
	}
	if d.ctx != nil {
		if rc := C.ibv_close_device(d.ctx); rc != 0 {
			errs = append(errs, &VerbError{Verb: "ibv_close_device", Err: syscall.Errno(rc)})
		}
		d.ctx = nil
	}
	return errors.Join(errs...)
}
