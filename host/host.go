// Package host reads the facts about a host and its RDMA NIC that decide how fast a
// benchmark can go but that the device itself does not report: the NIC's PCIe link and
// NUMA node, the CPU and its frequency governor, the kernel, the NIC's firmware, the
// rdma-core (libibverbs) and provider the benchmark runs on, and in rdmabench's test bed
// whether the host's clock is virtual.
//
// Read takes a file system root ("/" normally; tests pass fixture trees) and reads only
// files below it: /sys, /proc and the usual library directories. It needs no cgo and no
// privileges. Every fact is optional: a fact Read cannot establish is left unknown (an
// empty string, a nil pointer or slice), never zero, and Facts.Notes say why when the
// reason is not simply that the file is absent.
package host

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Facts are one host's facts about itself and one RDMA device. The JSON names are what
// a result records (rdmabench's "host" object); every field is omitted when unknown.
type Facts struct {
	// Device is the RDMA device the NIC facts are about ("mlx5_0").
	Device string `json:"device,omitempty"`
	// Driver is the kernel driver bound to the device's PCI function: the base name of
	// /sys/class/infiniband/DEV/device/driver ("mlx5_core", "bnxt_en", "ice", "efa").
	// Unknown for software devices (rxe, siw), which have no PCI function.
	Driver string `json:"driver,omitempty"`
	// PCIAddress is the PCI function ("0000:3b:00.0"): the base name of the device link,
	// or PCI_SLOT_NAME in device/uevent.
	PCIAddress string `json:"pci_address,omitempty"`
	// PCIVendorID and PCIDeviceID are the function's IDs as sysfs writes them
	// ("0x15b3", "0x101b"; device/vendor and device/device).
	PCIVendorID string `json:"pci_vendor_id,omitempty"`
	PCIDeviceID string `json:"pci_device_id,omitempty"`
	// PCIeLink is the link the function trained at (device/current_link_speed and
	// current_link_width); PCIeMaxLink the best the function itself supports
	// (max_link_speed, max_link_width). A slot, riser or BIOS setting that offers less
	// shows as a PCIeLink below PCIeMaxLink. Unknown when either file is absent or says
	// "Unknown" (a virtual function's link registers are reserved and read as zero).
	PCIeLink    *PCIeLink `json:"pcie_link,omitempty"`
	PCIeMaxLink *PCIeLink `json:"pcie_max_link,omitempty"`
	// NUMANode is the NUMA node the NIC is attached to (device/numa_node); -1 when the
	// kernel knows none for it (a one-node machine, or firmware that does not say).
	NUMANode *int `json:"numa_node,omitempty"`
	// LocalCPUs are the CPUs of the NIC's node, as the kernel lists them
	// (device/local_cpulist: "0-15,32-47"): where the benchmark's threads belong.
	LocalCPUs string `json:"local_cpulist,omitempty"`
	// CPUModel is the first "model name" in /proc/cpuinfo (x86; arm64 has none).
	CPUModel string `json:"cpu_model,omitempty"`
	// CPUGovernors are the cpufreq scaling governors the CPUs run under
	// (/sys/devices/system/cpu/cpu*/cpufreq/scaling_governor), each once, sorted.
	// Unknown without cpufreq (most VMs).
	CPUGovernors []string `json:"cpu_governors,omitempty"`
	// KernelRelease is uname -r (/proc/sys/kernel/osrelease).
	KernelRelease string `json:"kernel_release,omitempty"`
	// ClockDomain is where the host's time comes from, when the kernel command line
	// (/proc/cmdline) says: rdmabench's Soft-RoCE test bed boots its guest with
	// rdmabench.clock=virtual (ClockVirtual: qemu -icount, guest time counts
	// instructions) or rdmabench.clock=real (ClockReal: qemu TCG on the host's clock).
	// Empty without that parameter: a machine's own clock (or a result from before the
	// fact existed). VirtualClock is the one test of it.
	ClockDomain string `json:"clock_domain,omitempty"`
	// FirmwareVersion is the NIC's firmware as the RDMA device reports it
	// (/sys/class/infiniband/DEV/fw_ver).
	FirmwareVersion string `json:"firmware_version,omitempty"`
	// Provider is the libibverbs provider that drives the device ("mlx5", "bnxt_re",
	// "irdma", "efa", "rxe"), named from the kernel driver (software devices: from
	// their node type).
	Provider string `json:"provider,omitempty"`
	// ProviderLibrary is the provider's library as installed
	// ("/usr/lib/x86_64-linux-gnu/libibverbs/libmlx5-rdmav34.so"), the first found in
	// the library directories LibibverbsLibrary names; unknown when none holds it.
	ProviderLibrary string `json:"provider_library,omitempty"`
	// RDMACoreVersion is the rdma-core release that libibverbs comes from ("50.0"): the
	// last two numbers of its file name, libibverbs.so.1.ABI.MAJOR.MINOR, which
	// rdma-core builds from its version. Unknown for a libibverbs not built by
	// rdma-core (the pre-2017 libibverbs.so.1.0.0).
	RDMACoreVersion string `json:"rdma_core_version,omitempty"`
	// LibibverbsLibrary is the libibverbs file the version was read from: what
	// libibverbs.so.1 points to (else the only libibverbs.so.1.*) in the first of
	// /usr/local/lib, /usr/local/lib64, /usr/lib/*-linux-gnu, /usr/lib64, /usr/lib,
	// /lib/*-linux-gnu, /lib64 to hold one (ld.so's usual order; an LD_LIBRARY_PATH
	// or an ld.so.conf entry can make the loader pick another).
	LibibverbsLibrary string `json:"libibverbs_library,omitempty"`
	// Notes say why a fact that has a file is unknown, or what is odd.
	Notes []string `json:"notes,omitempty"`
}

// The clock domains of ClockDomain.
const (
	// ClockVirtual is rdmabench.clock=virtual: the guest's time counts instructions
	// (qemu -icount), so its figures describe the CPU path at a fixed instruction rate.
	ClockVirtual = "virtual (qemu icount)"
	// ClockReal is rdmabench.clock=real: an emulated guest (qemu TCG) on the host's clock.
	ClockReal = "real (qemu TCG, host clock)"
)

// clockParam is the kernel command-line parameter the test bed names its clock with.
const clockParam = "rdmabench.clock"

// VirtualClock says whether the facts are of a host whose time is virtual
// (ClockVirtual): its durations, rates and latencies are not a NIC's or any host's
// speed. Every report that says so asks this.
func (f Facts) VirtualClock() bool { return f.ClockDomain == ClockVirtual }

// PCIeLink is a PCIe link: its transfer rate per lane, its width, and what it carries.
type PCIeLink struct {
	// SpeedGTs is the transfer rate per lane in GT/s (2.5, 5, 8, 16, 32, 64).
	SpeedGTs float64 `json:"speed_gt_per_s"`
	// Width is the number of lanes (1 to 32).
	Width int `json:"width"`
	// Generation is the PCIe generation the rate belongs to (1 to 6).
	Generation int `json:"generation"`
	// GbitPerS is the data rate one direction carries after line encoding
	// (UsableGbps), in Gb/s.
	GbitPerS float64 `json:"gbit_per_s"`
}

// String is the link as lspci would say it, with its generation and data rate:
// "8.0 GT/s x16 (Gen3, 126 Gb/s)".
func (l *PCIeLink) String() string {
	if l == nil {
		return ""
	}
	return fmt.Sprintf("%.1f GT/s x%d (Gen%d, %s Gb/s)", l.SpeedGTs, l.Width, l.Generation, strconv.FormatFloat(math.Round(l.GbitPerS), 'f', -1, 64))
}

// A PCIe generation: its transfer rate per lane and the fraction of the bits on the
// wire that carry data after line encoding.
type generation struct {
	gts, efficiency float64
}

var generations = []generation{
	{2.5, 8.0 / 10},   // Gen1: 8b/10b
	{5, 8.0 / 10},     // Gen2: 8b/10b
	{8, 128.0 / 130},  // Gen3: 128b/130b
	{16, 128.0 / 130}, // Gen4: 128b/130b
	{32, 128.0 / 130}, // Gen5: 128b/130b
	{64, 242.0 / 256}, // Gen6: PAM4 in FLIT mode, 242 of 256 bytes (14 are CRC and FEC)
}

// UsableGbps is the data rate, in Gb/s, that one direction of a PCIe link of width
// lanes at gts GT/s a lane carries:
//
//	Gb/s = GT/s x lanes x encoding efficiency
//
// where the efficiency is 8/10 at 2.5 and 5 GT/s (8b/10b), 128/130 at 8, 16 and 32 GT/s
// (128b/130b), and 242/256 at 64 GT/s (PCIe 6.0's 256-byte FLITs carry 236 bytes of
// transaction-layer packets and 6 of data-link packets; the other 14 are CRC and
// FEC). So Gen3 x16 carries 8 x 16 x 128/130 = 126 Gb/s, Gen4 x16 252, Gen5 x16 504.
// The packets' own headers (TLP and DLLP framing, about 24 bytes a TLP; with 256-byte
// payloads, 10-15%) are not counted: a NIC moves less than this over the link, so a
// link only just above a port's rate already holds it back. Returns ok false for a
// rate that is no PCIe generation's.
func UsableGbps(gts float64, lanes int) (gbps float64, gen int, ok bool) {
	for i, g := range generations {
		if gts == g.gts {
			return math.Round(gts*float64(lanes)*g.efficiency*100) / 100, i + 1, true
		}
	}
	return 0, 0, false
}

// NewPCIeLink is the link of that rate and width; nil when the rate is no PCIe
// generation's or the width is not 1 to 32.
func NewPCIeLink(gts float64, lanes int) *PCIeLink {
	gbps, gen, ok := UsableGbps(gts, lanes)
	if !ok || lanes < 1 || lanes > 32 {
		return nil
	}
	return &PCIeLink{SpeedGTs: gts, Width: lanes, Generation: gen, GbitPerS: gbps}
}

// Read reads the facts about the host under root ("/" normally) and its RDMA device
// dev. It never fails: what it cannot read is unknown. dev may be "" for the host's
// facts alone.
func Read(root, dev string) Facts {
	r := reader{root: root}
	f := Facts{Device: dev}
	if dev != "" {
		r.device(&f, dev)
	}
	f.CPUModel = r.cpuModel()
	f.CPUGovernors = r.governors()
	f.KernelRelease, _ = r.line("proc/sys/kernel/osrelease")
	f.ClockDomain = r.clockDomain()
	f.LibibverbsLibrary, f.RDMACoreVersion = r.libibverbs(&f)
	if f.Provider != "" {
		f.ProviderLibrary = r.providerLibrary(f.Provider)
	}
	f.Notes = r.notes
	return f
}

type reader struct {
	root  string
	notes []string
}

func (r *reader) path(rel string) string { return filepath.Join(r.root, rel) }

func (r *reader) note(format string, a ...any) { r.notes = append(r.notes, fmt.Sprintf(format, a...)) }

// line reads a one-line file, trimmed; false when it cannot be read or is empty.
func (r *reader) line(rel string) (string, bool) {
	b, err := os.ReadFile(r.path(rel))
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			r.note("/%s: %v", rel, err)
		}
		return "", false
	}
	s := strings.TrimSpace(string(b))
	return s, s != ""
}

// providers names the libibverbs provider of a kernel driver bound to a PCI function.
var providers = map[string]string{
	"mlx5_core": "mlx5", "mlx4_core": "mlx4", "bnxt_en": "bnxt_re", "ice": "irdma", "i40e": "irdma",
	"irdma": "irdma", "efa": "efa", "qede": "qedr", "hns3": "hns", "erdma": "erdma", "mana": "mana",
	"vmw_pvrdma": "vmw_pvrdma", "cxgb4": "cxgb4", "ionic": "ionic",
}

func (r *reader) device(f *Facts, dev string) {
	ib := filepath.Join("sys/class/infiniband", dev)
	if _, err := os.Stat(r.path(ib)); err != nil {
		r.note("no RDMA device %s (/%s)", dev, ib)
		return
	}
	f.FirmwareVersion, _ = r.line(filepath.Join(ib, "fw_ver"))
	d := filepath.Join(ib, "device")
	if _, err := os.Stat(r.path(d)); err != nil {
		// No PCI function: a software device. rxe is an InfiniBand CA, siw an iWARP RNIC.
		if t, ok := r.line(filepath.Join(ib, "node_type")); ok {
			switch {
			case strings.HasSuffix(t, "RNIC"):
				f.Provider = "siw"
			case strings.HasSuffix(t, "CA"):
				f.Provider = "rxe"
			}
		}
		return
	}
	if l, err := os.Readlink(r.path(filepath.Join(d, "driver"))); err == nil {
		f.Driver = filepath.Base(l)
		f.Provider = providers[f.Driver]
	}
	if l, err := os.Readlink(r.path(d)); err == nil {
		f.PCIAddress = filepath.Base(l)
	} else if b, err := os.ReadFile(r.path(filepath.Join(d, "uevent"))); err == nil {
		for line := range strings.Lines(string(b)) {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "PCI_SLOT_NAME="); ok {
				f.PCIAddress = v
			}
		}
	}
	f.PCIVendorID, _ = r.line(filepath.Join(d, "vendor"))
	f.PCIDeviceID, _ = r.line(filepath.Join(d, "device"))
	f.PCIeLink = r.link(d, "current")
	f.PCIeMaxLink = r.link(d, "max")
	if s, ok := r.line(filepath.Join(d, "numa_node")); ok {
		if n, err := strconv.Atoi(s); err == nil && n >= -1 {
			f.NUMANode = &n
		} else {
			r.note("/%s/numa_node: not a node: %q", d, s)
		}
	}
	f.LocalCPUs, _ = r.line(filepath.Join(d, "local_cpulist"))
}

// link reads which ("current" or "max") link of the PCI function in dir.
func (r *reader) link(dir, which string) *PCIeLink {
	speedFile, widthFile := filepath.Join(dir, which+"_link_speed"), filepath.Join(dir, which+"_link_width")
	speed, okS := r.line(speedFile)
	width, okW := r.line(widthFile)
	if !okS && !okW {
		return nil
	}
	gts, errS := parseSpeed(speed)
	lanes, errW := strconv.Atoi(strings.TrimPrefix(width, "x"))
	if errS != nil || errW != nil || lanes == 0 {
		r.note("PCIe %s link unknown: %s %q, %s %q", which, filepath.Base(speedFile), speed, filepath.Base(widthFile), width)
		return nil
	}
	l := NewPCIeLink(gts, lanes)
	if l == nil {
		r.note("PCIe %s link unknown: %q x%d is no PCIe generation's", which, speed, lanes)
	}
	return l
}

// parseSpeed reads a link speed as sysfs writes it: "16.0 GT/s PCIe" (kernels since
// 5.x), "8 GT/s" (older), "Unknown" (a link that is down, or a virtual function's).
func parseSpeed(s string) (float64, error) {
	v, _, ok := strings.Cut(s, "GT/s")
	if !ok {
		return 0, fmt.Errorf("no GT/s in %q", s)
	}
	return strconv.ParseFloat(strings.TrimSpace(v), 64)
}

// clockDomain reads rdmabench.clock from the kernel command line (the last one, as
// the kernel's own parameters go): "virtual" is ClockVirtual, "real" ClockReal; absent,
// "" (a machine's own clock); any other value, "" and a note.
func (r *reader) clockDomain() string {
	cmdline, ok := r.line("proc/cmdline")
	if !ok {
		return ""
	}
	v, set := "", false
	for _, w := range strings.Fields(cmdline) {
		if val, ok := strings.CutPrefix(w, clockParam+"="); ok {
			v, set = strings.Trim(val, `"`), true
		}
	}
	switch {
	case !set:
		return ""
	case v == "virtual":
		return ClockVirtual
	case v == "real":
		return ClockReal
	}
	r.note("/proc/cmdline: %s=%q is neither virtual nor real: clock domain unknown", clockParam, v)
	return ""
}

func (r *reader) cpuModel() string {
	fh, err := os.Open(r.path("proc/cpuinfo"))
	if err != nil {
		return ""
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func (r *reader) governors() []string {
	files, _ := filepath.Glob(r.path("sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor"))
	var out []string
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			if g := strings.TrimSpace(string(b)); g != "" && !slices.Contains(out, g) {
				out = append(out, g)
			}
		}
	}
	slices.Sort(out)
	return out
}

// libDirs are where libibverbs and its providers are looked for, in the order ld.so
// usually searches them (glob patterns, below the root).
var libDirs = []string{"usr/local/lib", "usr/local/lib64", "usr/lib/*-linux-gnu", "usr/lib64", "usr/lib", "lib/*-linux-gnu", "lib64"}

// libibverbs finds libibverbs and reads rdma-core's version from its file name.
func (r *reader) libibverbs(f *Facts) (file, version string) {
	for _, pattern := range libDirs {
		dirs, _ := filepath.Glob(r.path(pattern))
		for _, dir := range dirs {
			name := ""
			if l, err := os.Readlink(filepath.Join(dir, "libibverbs.so.1")); err == nil {
				name = filepath.Base(l)
			} else if m, _ := filepath.Glob(filepath.Join(dir, "libibverbs.so.1.*")); len(m) == 1 {
				name = filepath.Base(m[0])
			} else if len(m) > 1 {
				r.note("%s holds %d libibverbs.so.1.* and no libibverbs.so.1 link to tell which is used", r.rel(dir), len(m))
				continue
			}
			if name == "" {
				continue
			}
			file = filepath.Join(r.rel(dir), name)
			if version = RDMACoreVersion(name); version == "" {
				r.note("%s: not rdma-core's libibverbs.so.1.ABI.MAJOR.MINOR: rdma-core version unknown", file)
			}
			return file, version
		}
	}
	return "", ""
}

// RDMACoreVersion is the rdma-core release a libibverbs file name says
// ("libibverbs.so.1.14.50.0" is 50.0); "" when the name is not rdma-core's.
func RDMACoreVersion(name string) string {
	rest, ok := strings.CutPrefix(name, "libibverbs.so.1.")
	if !ok {
		return ""
	}
	parts := strings.Split(rest, ".")
	if len(parts) != 3 {
		return ""
	}
	for _, p := range parts {
		if _, err := strconv.Atoi(p); err != nil {
			return ""
		}
	}
	return parts[1] + "." + parts[2]
}

// providerLibrary finds the provider's library (libNAME-rdmavN.so) in a libibverbs
// directory under one of libDirs.
func (r *reader) providerLibrary(provider string) string {
	for _, pattern := range libDirs {
		m, _ := filepath.Glob(r.path(filepath.Join(pattern, "libibverbs", "lib"+provider+"-rdmav*.so")))
		if len(m) > 0 {
			slices.Sort(m)
			return r.rel(m[len(m)-1])
		}
	}
	return ""
}

// rel is path p as seen on the host: "/usr/lib/...".
func (r *reader) rel(p string) string {
	rel, err := filepath.Rel(r.root, p)
	if err != nil {
		return p
	}
	return "/" + filepath.ToSlash(rel)
}
