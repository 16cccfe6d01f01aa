package doctor

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// PCI configuration space, as sysfs shows it in device/config (PCI Local Bus and PCI
// Express Base specifications): the status register's capability-list bit, the
// capability list's head, and in the PCI Express capability the Device Control
// register, whose bit 4 is Enable Relaxed Ordering.
const (
	pciStatus          = 0x06
	pciStatusCapList   = 0x10
	pciCapPtr          = 0x34
	pciCapIDExp        = 0x10
	pciExpDevCtl       = 0x08 // from the PCI Express capability
	pciExpDevCtlRelaxd = 1 << 4
)

// errShortConfig is config space cut before the capabilities: sysfs gives the standard
// 64-byte header alone to a reader without CAP_SYS_ADMIN.
var errShortConfig = errors.New("config space ends before its capabilities")

// relaxedOrderingEnabled reads the Enable Relaxed Ordering bit of the Device Control
// register of the PCI Express capability in config, and where that register sits.
func relaxedOrderingEnabled(config []byte) (on bool, devCtl int, err error) {
	if len(config) <= pciCapPtr {
		return false, 0, errShortConfig
	}
	if config[pciStatus]&pciStatusCapList == 0 {
		return false, 0, errors.New("the function has no capability list")
	}
	ptr := int(config[pciCapPtr]) &^ 3
	for hops := 0; ptr != 0 && hops < 48; hops++ { // 48: the most 4-byte capabilities 192 bytes hold
		if ptr < 0x40 {
			return false, 0, fmt.Errorf("a capability pointer into the header (%#x)", ptr)
		}
		if ptr+pciExpDevCtl+2 > len(config) {
			return false, 0, errShortConfig
		}
		if config[ptr] == pciCapIDExp {
			devCtl = ptr + pciExpDevCtl
			v := uint16(config[devCtl]) | uint16(config[devCtl+1])<<8
			return v&pciExpDevCtlRelaxd != 0, devCtl, nil
		}
		ptr = int(config[ptr+1]) &^ 3
	}
	return false, 0, errors.New("no PCI Express capability")
}

// relaxedOrderingCheck: whether the NIC may use the relaxed ordering rdmabench's
// bandwidth tests ask for (IBV_ACCESS_RELAXED_ORDERING, perftest's default): only
// when its PCIe Device Control register's Enable Relaxed Ordering bit is set does it
// send relaxed-ordered writes, whatever the MR asks. Read from sysfs' config space; a
// software device has none, and then it does not apply.
func (h *host) relaxedOrderingCheck() Check {
	c := Check{Name: "pcie-relaxed"}
	d := h.dev
	if d == nil {
		c.Verdict, c.Found = Skip, "no device to check (see the device check)"
		return c
	}
	if software(d, h.facts) {
		c.Verdict = Skip
		c.Found = fmt.Sprintf("not applicable: %s (driver %s) is a software device with no PCIe function; the relaxed ordering bandwidth tests ask for is ignored there", d.Name, orUnknown(d.Driver))
		return c
	}
	path := h.path("sys", "class", "infiniband", d.Name, "device", "config")
	b, err := os.ReadFile(path)
	if err != nil {
		c.Verdict = Skip
		c.Found = fmt.Sprintf("unknown: %s shows no PCI config space (%s): a virtual or non-PCI device, where it does not apply", d.Name, pathErr(err))
		return c
	}
	on, devCtl, err := relaxedOrderingEnabled(b)
	switch {
	case errors.Is(err, errShortConfig) && len(b) <= 64:
		c.Verdict = Skip
		c.Found = fmt.Sprintf("unknown: sysfs shows only the first %d bytes of %s's PCI config space to a user without CAP_SYS_ADMIN, and the Device Control register lies beyond: run 'rdmabench doctor' as root to check it", len(b), d.Name)
		return c
	case err != nil:
		c.Verdict = Skip
		c.Found = fmt.Sprintf("unknown: %s's PCI config space (%d bytes): %v", d.Name, len(b), err)
		return c
	case on:
		c.Verdict = OK
		c.Found = fmt.Sprintf("%s's PCIe Device Control register (config offset %#x) has Enable Relaxed Ordering set: the NIC may reorder its writes to the memory bandwidth tests register with relaxed ordering (their default, as perftest's)", d.Name, devCtl)
		return c
	}
	c.Verdict = Warn
	c.Found = fmt.Sprintf("%s's PCIe Device Control register (config offset %#x) has Enable Relaxed Ordering clear: the NIC sends its writes in order whatever the MRs ask, so bandwidth tests run without relaxed ordering (as perftest's would on this host)", d.Name, devCtl)
	addr := "ADDR"
	if h.facts.PCIAddress != "" {
		addr = h.facts.PCIAddress
	}
	c.Fix = fmt.Sprintf("the kernel clears the bit below root ports known to mishandle relaxed ordering (dmesg | grep -i 'relaxed ordering'): there, leave it off; elsewhere it is the platform firmware's setting (BIOS), which 'lspci -vvv -s %s' shows as DevCtl RlxdOrd+/-; --disable-pcie-relaxed on both sides measures as this host runs now", addr)
	return c
}

func pathErr(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return filepath.Base(pe.Path) + ": " + pe.Err.Error()
	}
	return err.Error()
}
