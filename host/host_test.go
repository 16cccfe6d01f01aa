package host

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func ptr(n int) *int { return &n }

func TestUsableGbps(t *testing.T) {
	for _, c := range []struct {
		gts   float64
		lanes int
		gbps  float64
		gen   int
	}{
		{2.5, 1, 2, 1}, {5, 8, 32, 2}, {8, 16, 126.03, 3}, {16, 16, 252.06, 4}, {16, 8, 126.03, 4},
		{32, 16, 504.12, 5}, {64, 16, 968, 6},
	} {
		gbps, gen, ok := UsableGbps(c.gts, c.lanes)
		if !ok || gbps != c.gbps || gen != c.gen {
			t.Errorf("%g GT/s x%d: %g Gb/s Gen%d (%v), want %g Gen%d", c.gts, c.lanes, gbps, gen, ok, c.gbps, c.gen)
		}
	}
	if _, _, ok := UsableGbps(12, 16); ok {
		t.Error("12 GT/s is no generation's")
	}
	if NewPCIeLink(16, 0) != nil || NewPCIeLink(7, 4) != nil {
		t.Error("no link without lanes or a known rate")
	}
	if s := NewPCIeLink(8, 16).String(); s != "8.0 GT/s x16 (Gen3, 126 Gb/s)" {
		t.Error(s)
	}
}

func TestRead(t *testing.T) {
	for _, c := range []struct {
		root, dev string
		want      Facts
	}{
		{"testdata/cx6-gen3", "mlx5_0", Facts{
			Device: "mlx5_0", Driver: "mlx5_core", PCIAddress: "0000:3b:00.0", PCIVendorID: "0x15b3", PCIDeviceID: "0x101b",
			PCIeLink:    &PCIeLink{SpeedGTs: 8, Width: 16, Generation: 3, GbitPerS: 126.03},
			PCIeMaxLink: &PCIeLink{SpeedGTs: 16, Width: 16, Generation: 4, GbitPerS: 252.06},
			NUMANode:    ptr(1), LocalCPUs: "16-31,48-63",
			CPUModel: "Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz", CPUGovernors: []string{"powersave"},
			KernelRelease: "6.8.0-45-generic", FirmwareVersion: "20.39.1002", Provider: "mlx5",
			ProviderLibrary: "/usr/lib/x86_64-linux-gnu/libibverbs/libmlx5-rdmav34.so", RDMACoreVersion: "50.0",
			LibibverbsLibrary: "/usr/lib/x86_64-linux-gnu/libibverbs.so.1.14.50.0",
		}},
		{"testdata/bnxt_re", "bnxt_re0", Facts{
			Device: "bnxt_re0", Driver: "bnxt_en", PCIAddress: "0000:41:00.0", PCIVendorID: "0x14e4", PCIDeviceID: "0x1760",
			PCIeLink:    &PCIeLink{SpeedGTs: 32, Width: 16, Generation: 5, GbitPerS: 504.12},
			PCIeMaxLink: &PCIeLink{SpeedGTs: 32, Width: 16, Generation: 5, GbitPerS: 504.12},
			NUMANode:    ptr(0), LocalCPUs: "0-47",
			CPUModel: "AMD EPYC 9454 48-Core Processor", CPUGovernors: []string{"performance"},
			KernelRelease: "5.14.0-427.13.1.el9_4.x86_64", FirmwareVersion: "230.0.157.0", Provider: "bnxt_re",
			ProviderLibrary: "/usr/lib64/libibverbs/libbnxt_re-rdmav34.so", RDMACoreVersion: "48.0",
			LibibverbsLibrary: "/usr/lib64/libibverbs.so.1.14.48.0",
		}},
		{"testdata/irdma", "irdma0", Facts{
			Device: "irdma0", Driver: "ice", PCIAddress: "0000:17:00.0", PCIVendorID: "0x8086", PCIDeviceID: "0x1592",
			PCIeLink:    &PCIeLink{SpeedGTs: 16, Width: 16, Generation: 4, GbitPerS: 252.06},
			PCIeMaxLink: &PCIeLink{SpeedGTs: 16, Width: 16, Generation: 4, GbitPerS: 252.06},
			NUMANode:    ptr(-1), LocalCPUs: "0-15",
			CPUModel: "Intel(R) Xeon(R) E-2388G CPU @ 3.20GHz", CPUGovernors: []string{"performance", "schedutil"},
			KernelRelease: "6.8.0-45-generic", FirmwareVersion: "1.3", Provider: "irdma",
			ProviderLibrary: "/usr/lib/x86_64-linux-gnu/libibverbs/libirdma-rdmav34.so", RDMACoreVersion: "50.0",
			LibibverbsLibrary: "/usr/lib/x86_64-linux-gnu/libibverbs.so.1.14.50.0",
		}},
		// A virtual function: its link reads "Unknown", x0.
		{"testdata/efa", "efa_0", Facts{
			Device: "efa_0", Driver: "efa", PCIAddress: "0000:10:1b.0", PCIVendorID: "0x1d0f", PCIDeviceID: "0xefa1",
			NUMANode: ptr(0), LocalCPUs: "0-47", CPUModel: "Intel(R) Xeon(R) Platinum 8275CL CPU @ 3.00GHz",
			KernelRelease: "6.1.102-111.182.amzn2023.x86_64", FirmwareVersion: "0.0.0.0", Provider: "efa",
			ProviderLibrary: "/usr/lib64/libibverbs/libefa-rdmav34.so", RDMACoreVersion: "52.0",
			LibibverbsLibrary: "/usr/lib64/libibverbs.so.1.14.52.0",
			Notes: []string{`PCIe current link unknown: current_link_speed "Unknown", current_link_width "0"`,
				`PCIe max link unknown: max_link_speed "Unknown", max_link_width "0"`},
		}},
		// Soft-RoCE: no PCI function, so no driver, link or node.
		{"testdata/rxe", "rxe0", Facts{
			Device: "rxe0", CPUModel: "QEMU Virtual CPU version 2.5+", KernelRelease: "6.1.0-18-amd64", ClockDomain: ClockVirtual, FirmwareVersion: "0.0.0",
			Provider: "rxe", ProviderLibrary: "/usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so", RDMACoreVersion: "44.0",
			LibibverbsLibrary: "/usr/lib/x86_64-linux-gnu/libibverbs.so.1.14.44.0",
		}},
	} {
		got := Read(c.root, c.dev)
		if !reflect.DeepEqual(got, c.want) {
			g, _ := json.MarshalIndent(got, "", "  ")
			w, _ := json.MarshalIndent(c.want, "", "  ")
			t.Errorf("%s:\n got %s\nwant %s", c.root, g, w)
		}
	}
}

// Unknown facts are left out of the JSON, never written as zero; -1 and 0 are facts.
func TestJSON(t *testing.T) {
	b, _ := json.Marshal(Read("testdata/rxe", "rxe0"))
	for _, absent := range []string{"pcie_link", "numa_node", "driver", "local_cpulist", "cpu_governors", "pci_address", "notes"} {
		if strings.Contains(string(b), `"`+absent+`"`) {
			t.Errorf("rxe: %s is unknown, not %s", absent, b)
		}
	}
	b, _ = json.Marshal(Read("testdata/irdma", "irdma0"))
	for _, want := range []string{`"numa_node":-1`, `"pcie_link":{"speed_gt_per_s":16,"width":16,"generation":4,"gbit_per_s":252.06}`,
		`"cpu_governors":["performance","schedutil"]`, `"rdma_core_version":"50.0"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("irdma: no %s in %s", want, b)
		}
	}
	b, _ = json.Marshal(Read("testdata/bnxt_re", "bnxt_re0"))
	if !strings.Contains(string(b), `"numa_node":0`) {
		t.Errorf("node 0 is a fact: %s", b)
	}
	if b, _ := json.Marshal(Facts{}); string(b) != "{}" {
		t.Errorf("nothing known: %s", b)
	}
}

func TestReadNothing(t *testing.T) {
	f := Read(t.TempDir(), "mlx5_0")
	if !reflect.DeepEqual(f, Facts{Device: "mlx5_0", Notes: []string{"no RDMA device mlx5_0 (/sys/class/infiniband/mlx5_0)"}}) {
		t.Errorf("%+v", f)
	}
	if f := Read(t.TempDir(), ""); !reflect.DeepEqual(f, Facts{}) {
		t.Errorf("%+v", f)
	}
}

// The clock domain comes from rdmabench.clock on the kernel command line, which the test
// bed's guest is booted with; a machine's own command line has none, and says nothing.
func TestClockDomain(t *testing.T) {
	for _, c := range []struct {
		root, want string
		virtual    bool
	}{
		{"testdata/rxe", ClockVirtual, true},    // VM_CLOCK=virtual
		{"testdata/bed-real", ClockReal, false}, // VM_CLOCK=real
		{"testdata/cx6-gen3", "", false},        // a real machine: no parameter
		{"testdata/bnxt_re", "", false},         // no /proc/cmdline at all
	} {
		f := Read(c.root, "")
		if f.ClockDomain != c.want || f.VirtualClock() != c.virtual || f.Notes != nil {
			t.Errorf("%s: clock domain %q (virtual %v, notes %q), want %q (%v)", c.root, f.ClockDomain, f.VirtualClock(), f.Notes, c.want, c.virtual)
		}
	}
	for cmdline, want := range map[string]string{
		"ro rdmabench.clock=\"virtual\"":                    ClockVirtual,
		"rdmabench.clock=virtual rdmabench.clock=real":      ClockReal, // the last one counts
		"rdmabench.clocks=virtual xrdmabench.clock=virtual": "",
		"": "",
	} {
		root := t.TempDir()
		os.MkdirAll(filepath.Join(root, "proc"), 0o755)
		os.WriteFile(filepath.Join(root, "proc/cmdline"), []byte(cmdline+"\n"), 0o644)
		if f := Read(root, ""); f.ClockDomain != want || f.Notes != nil {
			t.Errorf("%q: %q (notes %q), want %q", cmdline, f.ClockDomain, f.Notes, want)
		}
	}
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "proc"), 0o755)
	os.WriteFile(filepath.Join(root, "proc/cmdline"), []byte("rdmabench.clock=wall\n"), 0o644)
	f := Read(root, "")
	if f.ClockDomain != "" || f.VirtualClock() || !reflect.DeepEqual(f.Notes, []string{`/proc/cmdline: rdmabench.clock="wall" is neither virtual nor real: clock domain unknown`}) {
		t.Errorf("an unknown value: %+v", f)
	}
	if b, _ := json.Marshal(Read("testdata/rxe", "")); !strings.Contains(string(b), `"clock_domain":"virtual (qemu icount)"`) {
		t.Errorf("rxe: %s", b)
	}
	if (Facts{}).VirtualClock() || (Facts{ClockDomain: ClockReal}).VirtualClock() {
		t.Error("only the virtual clock is virtual")
	}
}

func TestRDMACoreVersion(t *testing.T) {
	for name, want := range map[string]string{
		"libibverbs.so.1.14.50.0": "50.0", "libibverbs.so.1.1.17.1": "17.1", "libibverbs.so.1.0.0": "",
		"libibverbs.so.1": "", "libmlx5.so.1.24.50.0": "", "libibverbs.so.1.14.50.rc1": "",
	} {
		if got := RDMACoreVersion(name); got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
}

func TestDiff(t *testing.T) {
	cx6, irdma, rxe := Read("testdata/cx6-gen3", "mlx5_0"), Read("testdata/irdma", "irdma0"), Read("testdata/rxe", "rxe0")
	if d := cx6.Diff(cx6); d != nil {
		t.Errorf("a host does not differ from itself: %q", d)
	}
	want := []string{
		"pcie_link: 8.0 GT/s x16 (Gen3, 126 Gb/s) vs 16.0 GT/s x16 (Gen4, 252 Gb/s)",
		"numa_node: 1 vs -1",
		"local_cpulist: 16-31,48-63 vs 0-15",
		"cpu_model: Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz vs Intel(R) Xeon(R) E-2388G CPU @ 3.20GHz",
		"cpu_governors: powersave vs performance,schedutil",
		"firmware_version: 20.39.1002 vs 1.3",
		"driver: mlx5_core vs ice",
		"provider: mlx5 vs irdma",
		"provider_library: /usr/lib/x86_64-linux-gnu/libibverbs/libmlx5-rdmav34.so vs /usr/lib/x86_64-linux-gnu/libibverbs/libirdma-rdmav34.so",
	}
	if d := cx6.Diff(irdma); !reflect.DeepEqual(d, want) {
		t.Errorf("cx6 vs irdma:\n got %q\nwant %q", d, want)
	}
	// What one side does not know is a difference; what neither knows is not.
	d := strings.Join(rxe.Diff(cx6), "\n")
	for _, w := range []string{"pcie_link: unknown vs 8.0 GT/s x16 (Gen3, 126 Gb/s)", "numa_node: unknown vs 1",
		"cpu_governors: unknown vs powersave", "rdma_core_version: 44.0 vs 50.0", "kernel_release: 6.1.0-18-amd64 vs 6.8.0-45-generic",
		"clock_domain: virtual (qemu icount) vs unknown"} {
		if !strings.Contains(d, w) {
			t.Errorf("rxe vs cx6: no %q in\n%s", w, d)
		}
	}
	if d := (Facts{}).Diff(Facts{Device: "x", Notes: []string{"y"}}); d != nil {
		t.Errorf("device names and notes are not compared: %q", d)
	}
}
