package plan

import "github.com/rdmabench/rdmabench/result"

// InlineAuto is --inline's default: the inline size perftest would use on the device
// (see ResolveInline). It lives in the plan only until the client has opened its device.
const InlineAuto = -1

// ResolveInline turns an InlineAuto plan into perftest's default inline size for the
// client's device; any other value is the user's and stays.
func (op Op) ResolveInline(c *Config, dev result.Device) {
	if c.InlineBytes == InlineAuto {
		c.InlineBytes = op.DefaultInline(*c, dev)
	}
}

// DefaultInline is the inline size perftest picks when -I is not given, in
// ctx_set_max_inline() of perftest_parameters.c (the devices come from its
// ib_dev_name(), the sizes from perftest_parameters.h):
//
//   - a device perftest does not recognise gets 0: "Device not recognized to implement
//     inline feature". That includes Soft-RoCE (rxe: vendor 0xffffff, part 0) and
//     Soft-iWARP (siw), whatever the test;
//   - bandwidth tests get 0, and so does READ (no payload in the request);
//   - WRITE latency gets DEF_INLINE_WRITE, 220 B, on ConnectX and the other devices
//     perftest knows, except those it sizes itself: Broadcom NetXtreme 96, Amazon EFA
//     32, QLogic E4 (qedr) 128, Alibaba eRDMA 96, HiSilicon HNS 32, Intel (vendor
//     0x8086) 48 for part 14289 (i40iw) and 101 for the others (irdma).
//
// perftest recognises most devices by vendor_part_id alone, whatever the vendor ID
// (only Chelsio and Intel are told by their vendor ID), and so does this.
func (op Op) DefaultInline(c Config, dev result.Device) int {
	if !op.LatInline || c.Test != result.Lat {
		return 0
	}
	switch dev.Driver {
	case "rxe", "siw":
		return 0
	}
	switch dev.VendorID {
	case 0x1425: // Chelsio: T4, T5, T6 by the part ID's top nibble
		switch dev.VendorPartID >> 12 {
		case 4, 5, 6, 10, 11:
			return defInlineWrite
		}
		return 0
	case 0x8086:
		if dev.VendorPartID == 14289 {
			return 48
		}
		return 101
	}
	if n, ok := perftestLatInline[dev.VendorPartID]; ok {
		return n
	}
	return 0
}

// defInlineWrite is perftest's DEF_INLINE_WRITE.
const defInlineWrite = 220

// perftestLatInline maps the vendor_part_ids perftest recognises to its WRITE latency
// inline size.
var perftestLatInline = func() map[uint32]int {
	m := map[uint32]int{}
	set := func(n int, parts ...uint32) {
		for _, p := range parts {
			m[p] = n
		}
	}
	set(defInlineWrite,
		25408, 25418, 25428, 25448, // ConnectX
		26418, 26428, 26438, 26448, 26458, 26468, 26478, // ConnectX-2
		4099, 4100, 4103, 4104, // ConnectX-3, ConnectX-3 Pro
		4113,       // Connect-IB
		4115, 4116, // ConnectX-4
		4117, 4118, // ConnectX-4 Lx
		4119, 4120, 4121, 4122, // ConnectX-5, ConnectX-5 Ex
		4123, 4124, 4125, 4126, 4127, // ConnectX-6, -6 Dx, VF, -6 Lx
		4129, 4131, // ConnectX-7, ConnectX-8
		41682, 41683, 41686, 41692, // BlueField, -2, -3
		1824,                              // Emulex Skyhawk
		32880, 32881, 32882, 32883, 32912, // QLogic (perftest's QLOGIC_AH)
		33136, 33168, // QLogic (QLOGIC_AHP)
	)
	set(128, 5684, 5700, 5716, 5718, 5734) // QLogic (QLOGIC_E4)
	set(96,                                // Broadcom NetXtreme
		5638, 5652, 5824, 5825, 5827, 5839, 5846, 5847, 5848, 5849, 5855, 5858, 5859,
		5861, 5867, 5869, 5871, 5872, 5873, 5968, 5984, 6169, 55296, 55298, 55300)
	set(32, 61344, 61345, 61346)                             // Amazon EFA
	set(96, 4223)                                            // Alibaba eRDMA
	set(32, 41506, 41507, 41508, 41509, 41510, 41512, 41519) // HiSilicon HNS
	return m
}()

// The post APIs (--post-api).
const (
	PostAuto   = "auto"   // perftest's choice for the device (DefaultPostAPI)
	PostWR     = "wr"     // the extended QP API: ibv_wr_start .. ibv_wr_complete, one doorbell per chain
	PostLegacy = "legacy" // ibv_post_send
)

// DefaultPostAPI is the post API perftest 6.x uses on a device with this driver (as
// sysfs names the driver of its PCI function): the extended QP API on mlx5 (ConnectX-4
// and later, BlueField), EFA and HiSilicon's HNS, ibv_post_send elsewhere (rxe, siw,
// bnxt_re, irdma, mlx4, ...). perftest chooses by device model; these drivers serve
// exactly the models on its list that can reach this RC path.
func DefaultPostAPI(driver string) string {
	switch driver {
	case "mlx5_core", "efa", "hns3", "hns_roce_hw_v2":
		return PostWR
	}
	return PostLegacy
}

// ResolvePostAPI turns --post-api auto (or none) into perftest's choice for the
// client's device (DefaultPostAPI); wr and legacy are the user's and stay.
func ResolvePostAPI(c *Config, dev result.Device) {
	if c.PostAPI == "" || c.PostAPI == PostAuto {
		c.PostAPI = DefaultPostAPI(dev.Driver)
	}
}
