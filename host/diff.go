package host

import (
	"fmt"
	"strconv"
	"strings"
)

// diffed are the facts Diff compares, by their JSON names, and how each is written.
// Left out: the device's name, PCI address and IDs (which NIC it is, which a result
// records already), the libibverbs file (its version is compared) and the notes.
var diffed = []struct {
	name string
	text func(Facts) string
}{
	{"pcie_link", func(f Facts) string { return f.PCIeLink.String() }},
	{"pcie_max_link", func(f Facts) string { return f.PCIeMaxLink.String() }},
	{"numa_node", func(f Facts) string {
		if f.NUMANode == nil {
			return ""
		}
		return strconv.Itoa(*f.NUMANode)
	}},
	{"local_cpulist", func(f Facts) string { return f.LocalCPUs }},
	{"cpu_model", func(f Facts) string { return f.CPUModel }},
	{"cpu_governors", func(f Facts) string { return strings.Join(f.CPUGovernors, ",") }},
	{"kernel_release", func(f Facts) string { return f.KernelRelease }},
	{"clock_domain", func(f Facts) string { return f.ClockDomain }},
	{"firmware_version", func(f Facts) string { return f.FirmwareVersion }},
	{"driver", func(f Facts) string { return f.Driver }},
	{"provider", func(f Facts) string { return f.Provider }},
	{"provider_library", func(f Facts) string { return f.ProviderLibrary }},
	{"rdma_core_version", func(f Facts) string { return f.RDMACoreVersion }},
}

// Diff lists where f and g differ, one line a fact, in Facts' order: "kernel_release:
// 6.8.0-45-generic vs 6.1.0-18-amd64". A fact known on one side only is a difference
// ("cpu_governors: performance vs unknown"); one unknown on both is not.
func (f Facts) Diff(g Facts) []string {
	var out []string
	for _, d := range diffed {
		a, b := d.text(f), d.text(g)
		if a == b {
			continue
		}
		out = append(out, fmt.Sprintf("%s: %s vs %s", d.name, orUnknown(a), orUnknown(b)))
	}
	return out
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
