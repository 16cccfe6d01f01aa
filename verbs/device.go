//go:build linux && cgo

package verbs

/*
#cgo LDFLAGS: -libverbs
#include <stdlib.h>
#include <errno.h>
#include "rb.h"
*/
import "C"

import (
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"unsafe"
)

// SysfsRoot is where device sysfs attributes (driver link) are read; tests may move it.
var SysfsRoot = "/sys"

// Devices lists every RDMA device with its ports and GID tables.
func Devices() ([]DeviceInfo, error) {
	list, err := deviceList()
	if err != nil {
		return nil, err
	}
	defer C.ibv_free_device_list(list.head)
	var out []DeviceInfo
	for _, dev := range list.devs {
		ctx, err := C.ibv_open_device(dev)
		if ctx == nil {
			return nil, &VerbError{Verb: "ibv_open_device", Phase: C.GoString(C.ibv_get_device_name(dev)), Err: errnoOr(err)}
		}
		info, err := queryDevice(ctx)
		C.ibv_close_device(ctx)
		if err != nil {
			return nil, err
		}
		out = append(out, info)
	}
	return out, nil
}

type devList struct {
	head **C.struct_ibv_device
	devs []*C.struct_ibv_device
}

func deviceList() (devList, error) {
	var n C.int
	head, err := C.ibv_get_device_list(&n)
	if head == nil {
		if err == syscall.ENOSYS || err == syscall.ENOENT || err == nil {
			return devList{}, ErrNoDevice
		}
		return devList{}, &VerbError{Verb: "ibv_get_device_list", Err: err}
	}
	if n == 0 {
		C.ibv_free_device_list(head)
		return devList{}, ErrNoDevice
	}
	return devList{head: head, devs: unsafe.Slice(head, int(n))}, nil
}

func errnoOr(err error) error {
	if err == nil {
		return syscall.EIO
	}
	return err
}

func queryDevice(ctx *C.struct_ibv_context) (DeviceInfo, error) {
	name := C.GoString(C.ibv_get_device_name(ctx.device))
	var attr C.struct_ibv_device_attr
	if rc := C.ibv_query_device(ctx, &attr); rc != 0 {
		return DeviceInfo{}, &VerbError{Verb: "ibv_query_device", Phase: name, Err: syscall.Errno(rc)}
	}
	var guid [8]byte
	// __be64: the integer's bytes in memory are already in network order.
	binary.NativeEndian.PutUint64(guid[:], uint64(C.ibv_get_device_guid(ctx.device)))
	info := DeviceInfo{
		Name:            name,
		Transport:       transport(ctx.device.transport_type),
		NodeGUID:        fmt.Sprintf("%02x%02x:%02x%02x:%02x%02x:%02x%02x", guid[0], guid[1], guid[2], guid[3], guid[4], guid[5], guid[6], guid[7]),
		FirmwareVer:     C.GoString(&attr.fw_ver[0]),
		VendorID:        uint32(attr.vendor_id),
		VendorPartID:    uint32(attr.vendor_part_id),
		MaxQPWR:         int(attr.max_qp_wr),
		MaxCQE:          int(attr.max_cqe),
		MaxQPRdAtom:     int(attr.max_qp_rd_atom),
		MaxQPInitRdAtom: int(attr.max_qp_init_rd_atom),
		MaxMRSize:       uint64(attr.max_mr_size),
	}
	info.Driver = driverName(name, info.VendorID)
	info.Model = Model(info.Driver, info.VendorID, info.VendorPartID)
	gids, err := gidTable(ctx, int(attr.phys_port_cnt))
	if err != nil {
		return DeviceInfo{}, err
	}
	for p := 1; p <= int(attr.phys_port_cnt); p++ {
		var pa C.struct_ibv_port_attr
		if rc := C.rb_query_port(ctx, C.uint8_t(p), &pa); rc != 0 {
			return DeviceInfo{}, &VerbError{Verb: "ibv_query_port", Phase: fmt.Sprintf("%s port %d", name, p), Err: syscall.Errno(rc)}
		}
		pi := portInfo(p, &pa, info.Transport)
		pi.GIDs = gids[p]
		info.Ports = append(info.Ports, pi)
	}
	return info, nil
}

func transport(t C.enum_ibv_transport_type) string {
	switch t {
	case C.IBV_TRANSPORT_IB:
		return "InfiniBand"
	case C.IBV_TRANSPORT_IWARP:
		return "iWARP"
	case C.IBV_TRANSPORT_USNIC, C.IBV_TRANSPORT_USNIC_UDP:
		return "usNIC"
	case C.IBV_TRANSPORT_UNSPECIFIED:
		return "unspecified" // EFA
	}
	return "unknown"
}

func driverName(dev string, vendorID uint32) string {
	if l, err := os.Readlink(filepath.Join(SysfsRoot, "class/infiniband", dev, "device/driver")); err == nil {
		return filepath.Base(l)
	}
	switch vendorID {
	case 0xffffff, 0:
		return "rxe"
	case 0x626d74:
		return "siw"
	}
	return "unknown"
}

func gidTable(ctx *C.struct_ibv_context, ports int) (map[int][]GIDEntry, error) {
	// The kernel passes the entry array in an attribute whose length is 16 bits:
	// 2047 entries of 32 bytes is the most one call can return.
	const max = 2047
	entries := make([]C.struct_ibv_gid_entry, max)
	n, err := C.ibv_query_gid_table(ctx, &entries[0], max, 0)
	if n < 0 {
		return nil, &VerbError{Verb: "ibv_query_gid_table", Err: errnoOr(err)}
	}
	out := map[int][]GIDEntry{}
	for _, e := range entries[:n] {
		g := GIDEntry{Index: int(e.gid_index), GID: net.IP(C.GoBytes(unsafe.Pointer(&e.gid), 16)).String(), Type: gidType(e.gid_type)}
		if e.ndev_ifindex != 0 {
			if ifc, err := net.InterfaceByIndex(int(e.ndev_ifindex)); err == nil {
				g.Netdev = ifc.Name
			}
		}
		out[int(e.port_num)] = append(out[int(e.port_num)], g)
	}
	return out, nil
}

func gidType(t C.uint32_t) string {
	switch t {
	case C.IBV_GID_TYPE_IB:
		return "IB"
	case C.IBV_GID_TYPE_ROCE_V1:
		return "RoCE v1"
	case C.IBV_GID_TYPE_ROCE_V2:
		return "RoCE v2"
	}
	return "unknown"
}

var portStates = map[C.enum_ibv_port_state]string{
	C.IBV_PORT_NOP: "NOP", C.IBV_PORT_DOWN: "DOWN", C.IBV_PORT_INIT: "INIT",
	C.IBV_PORT_ARMED: "ARMED", C.IBV_PORT_ACTIVE: "ACTIVE", C.IBV_PORT_ACTIVE_DEFER: "ACTIVE_DEFER",
}

var physStates = map[C.uint8_t]string{
	1: "SLEEP", 2: "POLLING", 3: "DISABLED", 4: "PORT_CONFIGURATION_TRAINING",
	5: "LINK_UP", 6: "LINK_ERROR_RECOVERY", 7: "PHY_TEST",
}

// Per-lane data rates of the IB speed codes, as ibstat's "Rate" counts them.
var laneGbps = map[C.uint8_t]float64{1: 2.5, 2: 5, 4: 10, 8: 10, 16: 14, 32: 25, 64: 50, 128: 100}
var widthLanes = map[C.uint8_t]int{1: 1, 2: 4, 4: 8, 8: 12, 16: 2}

func portInfo(p int, a *C.struct_ibv_port_attr, transport string) PortInfo {
	pi := PortInfo{
		Port:       p,
		State:      portStates[a.state],
		PhysState:  physStates[a.phys_state],
		ActiveMTU:  mtuBytes(a.active_mtu),
		MaxMTU:     mtuBytes(a.max_mtu),
		LID:        uint16(a.lid),
		Width:      widthLanes[a.active_width],
		LaneGbps:   laneGbps[a.active_speed],
		MaxMsgSize: uint32(a.max_msg_sz),
	}
	pi.RateGbps = pi.LaneGbps * float64(pi.Width)
	ll := linkUnspecified
	switch a.link_layer {
	case C.IBV_LINK_LAYER_ETHERNET:
		ll = linkEthernet
	case C.IBV_LINK_LAYER_INFINIBAND:
		ll = linkInfiniBand
	}
	pi.LinkLayer = linkLayer(ll, transport)
	return pi
}

func mtuBytes(m C.enum_ibv_mtu) int {
	if m < 1 || m > 5 {
		return 0
	}
	return 128 << int(m)
}

func mtuEnum(bytes int) C.enum_ibv_mtu {
	for e := C.enum_ibv_mtu(5); e >= 1; e-- {
		if 128<<int(e) <= bytes {
			return e
		}
	}
	return C.IBV_MTU_256
}
