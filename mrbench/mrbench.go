// Package mrbench measures what registering memory costs (rdmabench mr, claim C2:
// "registering memory is expensive"): the latency of ibv_reg_mr and of ibv_dereg_mr,
// timed apart, per buffer size and per mode. It is pure Go: the timing itself is a
// function it is given (verbs.Device.TimeMR, or a fake in tests), so everything but the
// verbs runs without a device.
package mrbench

import (
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/verbs"
)

// SchemaVersion is the version of the document's shape; Kind tells it from results.
const (
	SchemaVersion = 1
	Kind          = "mr"
)

// Modes are the registration modes, in the order of the default --modes.
var Modes = []string{"warm", "cold", "huge", "odp"}

// DefaultSizes is the default --sizes: 4K, 64K, 1M, 64M.
var DefaultSizes = []int{4 << 10, 64 << 10, 1 << 20, 64 << 20}

// HugePage is the page size of mode "huge".
const HugePage = 2 << 20

// Timer times n registrations and deregistrations of size bytes in mode with access
// (verbs.Spec.Access), each apart, in ns (verbs.Device.TimeMR). It returns
// verbs.ErrNoHugepages or verbs.ErrNoODP for a mode the host or the device cannot run.
type Timer func(size int, mode string, n, access int) (reg, dereg []int64, err error)

// Options is one run.
type Options struct {
	Sizes      []int
	Modes      []string
	Iterations int
	Time       Timer
	Device     Device
	// DisablePCIeRelaxed registers without PCIe relaxed ordering (--disable-pcie-relaxed),
	// which a benchmark's buffer otherwise gets (Access).
	DisablePCIeRelaxed bool
	// Memlock is RLIMIT_MEMLOCK's soft limit in bytes, -1 for unlimited; IPCLock says
	// the process has CAP_IPC_LOCK, which lifts the limit for registrations.
	Memlock int64
	IPCLock bool
	// PageSize is the system's base page size (os.Getpagesize()).
	PageSize    int
	ToolVersion string
	Now         func() time.Time
	// Progress, when set, is called before each row is measured.
	Progress func(size int, mode string)
}

// Device is the identity of the device the registrations ran on.
type Device struct {
	Name         string `json:"name"`
	Driver       string `json:"driver,omitempty"`
	Model        string `json:"model,omitempty"`
	NodeGUID     string `json:"node_guid,omitempty"`
	FirmwareVer  string `json:"fw_ver,omitempty"`
	VendorID     uint32 `json:"vendor_id"`
	VendorPartID uint32 `json:"vendor_part_id"`
	MaxMRSize    uint64 `json:"max_mr_size"`
	Port         int    `json:"port"`
	LinkLayer    string `json:"link_layer,omitempty"`
}

// DeviceOf is the identity of an opened device.
func DeviceOf(info verbs.DeviceInfo, port verbs.PortInfo) Device {
	return Device{
		Name: info.Name, Driver: info.Driver, Model: info.Model, NodeGUID: info.NodeGUID, FirmwareVer: info.FirmwareVer,
		VendorID: info.VendorID, VendorPartID: info.VendorPartID, MaxMRSize: info.MaxMRSize,
		Port: port.Port, LinkLayer: port.LinkLayer,
	}
}

// Document is what --json writes.
type Document struct {
	SchemaVersion int    `json:"schema_version"`
	Kind          string `json:"kind"` // "mr"
	ToolVersion   string `json:"tool_version"`
	Time          string `json:"time"` // RFC 3339, when the run started
	Device        Device `json:"device"`
	// MemlockBytes is RLIMIT_MEMLOCK (soft), -1 for unlimited. With CAPIPCLock the
	// kernel does not apply it to registrations.
	MemlockBytes int64  `json:"memlock_bytes"`
	CAPIPCLock   bool   `json:"cap_ipc_lock"`
	PageBytes    int    `json:"page_bytes"`
	Config       Config `json:"config"`
	Rows         []Row  `json:"rows"`
}

// Config is what was asked for. PCIeRelaxedOrdering: the registrations asked for
// IBV_ACCESS_RELAXED_ORDERING, as a benchmark's buffers do unless
// --disable-pcie-relaxed (absent: off, as in every document before the field).
type Config struct {
	Sizes               []int    `json:"sizes"`
	Modes               []string `json:"modes"`
	Iterations          int      `json:"iterations"`
	PCIeRelaxedOrdering bool     `json:"pcie_relaxed_ordering,omitempty"`
}

// Access is what every registration of o is made with: what a benchmark's buffer gets
// (verbs.Spec.Access): local write, remote write and read, and relaxed ordering unless
// disabled.
func (o Options) Access() int {
	return verbs.Spec{RemoteWrite: true, RemoteRead: true, RelaxedOrdering: !o.DisablePCIeRelaxed}.Access()
}

// Row is one size in one mode. A skipped row (the mode cannot run here) and a failed
// row (Error) have no latencies, or those of the pairs that completed before the error.
type Row struct {
	SizeBytes      int            `json:"size_bytes"`
	Mode           string         `json:"mode"`
	Skipped        string         `json:"skipped,omitempty"`
	Reg            result.Latency `json:"reg_ns"`
	Dereg          result.Latency `json:"dereg_ns"`
	RegHistogram   string         `json:"reg_histogram,omitempty"`
	DeregHistogram string         `json:"dereg_histogram,omitempty"`
	// RegGiBps is SizeBytes over the mean registration time; 0 when none completed.
	RegGiBps float64 `json:"reg_gib_per_s"`
	Pages    int     `json:"pages"` // pages registered: SizeBytes over the mode's page size, rounded up
	Error    string  `json:"error,omitempty"`
}

// OK says the row was measured in full.
func (r Row) OK() bool { return r.Skipped == "" && r.Error == "" }

// ErrNothingMeasured: every row failed or was skipped.
var ErrNothingMeasured = errors.New("mr: every row failed or was skipped: nothing was measured")

// Err is the run's verdict: ErrNothingMeasured when no row was measured in full.
func (d Document) Err() error {
	for _, r := range d.Rows {
		if r.OK() {
			return nil
		}
	}
	return ErrNothingMeasured
}

// Run measures every size in every mode, in that order (sizes outer). A row that fails
// does not stop the others.
func Run(o Options) Document {
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	page := o.PageSize
	if page <= 0 {
		page = 4096
	}
	doc := Document{
		SchemaVersion: SchemaVersion, Kind: Kind, ToolVersion: o.ToolVersion, Time: now().UTC().Format(time.RFC3339),
		Device: o.Device, MemlockBytes: o.Memlock, CAPIPCLock: o.IPCLock, PageBytes: page,
		Config: Config{Sizes: o.Sizes, Modes: o.Modes, Iterations: o.Iterations, PCIeRelaxedOrdering: !o.DisablePCIeRelaxed},
		Rows:   []Row{},
	}
	for _, size := range o.Sizes {
		for _, mode := range o.Modes {
			if o.Progress != nil {
				o.Progress(size, mode)
			}
			doc.Rows = append(doc.Rows, row(o, size, mode, page))
		}
	}
	return doc
}

func row(o Options, size int, mode string, page int) Row {
	r := Row{SizeBytes: size, Mode: mode}
	// The kernel charges a registration's pinned memory in system pages covering the
	// range (the buffers are page-aligned), on hugepages too; ODP pins nothing, so the
	// limit does not apply to it.
	pages := (size + page - 1) / page
	pinned := int64(pages) * int64(page)
	if mode == "huge" {
		page = HugePage
	}
	r.Pages = (size + page - 1) / page
	if mode != "odp" && !o.IPCLock && o.Memlock >= 0 && pinned > o.Memlock {
		r.Error = fmt.Sprintf("%s pins %d pages (%s), more than the memlock limit (RLIMIT_MEMLOCK %s): raise it with 'ulimit -l unlimited' (or memlock in /etc/security/limits.conf, LimitMEMLOCK= for a systemd unit)",
			result.FormatSize(size), pages, result.FormatSize(int(pinned)), result.FormatSize(int(o.Memlock)))
		return r
	}
	reg, dereg, err := o.Time(size, mode, o.Iterations, o.Access())
	switch {
	case errors.Is(err, verbs.ErrNoHugepages):
		r.Skipped = "no hugepages reserved (sysctl vm.nr_hugepages)"
		return r
	case errors.Is(err, verbs.ErrNoODP):
		r.Skipped = "no ODP"
		return r
	case err != nil:
		r.Error = err.Error()
		if errors.Is(err, syscall.ENOMEM) && mode != "odp" {
			lim := "unlimited"
			if o.Memlock >= 0 {
				lim = result.FormatSize(int(o.Memlock))
			}
			r.Error += fmt.Sprintf(" (registering pins the pages against RLIMIT_MEMLOCK, %s here: raise it with 'ulimit -l unlimited')", lim)
		}
	case len(reg) != o.Iterations || len(dereg) != o.Iterations:
		r.Error = fmt.Sprintf("timed %d registrations and %d deregistrations, want %d each", len(reg), len(dereg), o.Iterations)
	}
	var herr error
	if r.Reg, r.RegHistogram, herr = summary(reg); herr == nil {
		r.Dereg, r.DeregHistogram, herr = summary(dereg)
	}
	if herr != nil && r.Error == "" {
		r.Error = herr.Error()
	}
	if r.Reg.Samples > 0 && r.Reg.Mean > 0 {
		r.RegGiBps = float64(size) / (1 << 30) / (r.Reg.Mean / 1e9)
	}
	return r
}

func summary(samples []int64) (result.Latency, string, error) {
	h, m := result.FromSamples(samples)
	return result.NewLatency(h, m)
}
