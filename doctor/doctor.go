// Package doctor checks a host for what rdmabench needs: the RDMA device and its port,
// the link rate, the NIC's PCIe link (against its port rate and against the card's
// maximum) and whether it may use relaxed ordering, the MTUs, the RoCE v2 GID, the
// locked-memory limit, hugepages, Soft-RoCE, the clock, the kernel's clocksource (does a
// timestamp cost a system call), the CPU frequency governor and, given a server, the
// control connection,
// the token and a short WRITE and READ bandwidth run. Each check has a verdict, what it
// found and, when something is wrong, a fix the user can apply.
//
// The host's state is read from a root directory (/proc and /sys below it; tests pass
// fixture trees) and, for what no file holds, from the function fields of Options
// (the device list through libibverbs, a netdev's addresses, the server connections),
// which tests replace.
package doctor

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/rdmabench/rdmabench/bench"
	"github.com/rdmabench/rdmabench/report"
	"github.com/rdmabench/rdmabench/verbs"
)

// Verdict is a check's outcome.
type Verdict string

const (
	OK   Verdict = "ok"   // nothing to do
	Warn Verdict = "warn" // works, but not as well as it could, or some tests will not run
	Fail Verdict = "fail" // rdmabench will not work (or not as asked) until fixed
	Skip Verdict = "skip" // not applicable, or not checkable because an earlier check failed
)

// Check is one check's outcome.
type Check struct {
	Name    string  `json:"name"`
	Verdict Verdict `json:"verdict"`
	Found   string  `json:"found"`
	Fix     string  `json:"fix,omitempty"`
}

// Options say what to check and where the host's state comes from.
type Options struct {
	// Root is the host's file system root: /proc and /sys are read below it ("/"
	// normally; tests pass a fixture tree).
	Root string
	// Local is the device, port and GID index (-d/-i/-x) the other commands would use.
	Local bench.Local
	// Devices lists the RDMA devices (verbs.Devices).
	Devices func() ([]verbs.DeviceInfo, error)
	// Addrs lists a netdev's IP addresses (nil: the host's, through package net).
	Addrs func(netdev string) ([]net.IP, error)
	// Clock says whether the timed loops would tick on the TSC (verbs.ClockVerdict).
	Clock func(root string) (useTSC bool, note string)
	// Server, when not nil, adds the checks against a running rdmabench server.
	Server *Server
}

// Run runs every check, in order: the local ones, then, with Options.Server, the
// server's. It never stops early: a check that cannot run says why (skip).
func Run(ctx context.Context, o Options) []Check {
	if o.Root == "" {
		o.Root = "/"
	}
	if o.Addrs == nil {
		o.Addrs = interfaceAddrs
	}
	h := inspect(o)
	checks := []Check{
		h.deviceCheck(),
		h.linkRateCheck(),
		h.pcieLinkCheck(),
		h.pcieTrainingCheck(),
		h.relaxedOrderingCheck(),
		h.mtuCheck(),
		h.netdevCheck(),
		h.gidCheck(),
		h.softRoCECheck(),
		memlockCheck(o.Root),
		hugepagesCheck(o.Root),
		clockCheck(o),
		clocksourceCheck(o.Root),
		h.governorCheck(),
	}
	if o.Server != nil {
		checks = append(checks, serverChecks(ctx, o.Server, h)...)
	}
	return checks
}

// Report is what the command prints: the checks and how many had each verdict.
type Report struct {
	// SchemaVersion is the version of this JSON (docs/schemas/doctor.schema.json).
	SchemaVersion int `json:"schema_version"`
	// OK: no check failed (warnings allowed); the command exits 0.
	OK      bool            `json:"ok"`
	Summary map[Verdict]int `json:"summary"`
	Checks  []Check         `json:"checks"`
}

// SchemaVersion is the version of doctor's JSON report.
const SchemaVersion = 1

// NewReport counts the verdicts of checks.
func NewReport(checks []Check) Report {
	r := Report{SchemaVersion: SchemaVersion, Summary: map[Verdict]int{OK: 0, Warn: 0, Fail: 0, Skip: 0}, Checks: checks}
	for _, c := range checks {
		r.Summary[c.Verdict]++
	}
	r.OK = r.Summary[Fail] == 0
	return r
}

// WriteJSON writes the report as one indented JSON object.
func (r Report) WriteJSON(w io.Writer) error {
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	return e.Encode(r)
}

// WriteText writes one line per check (verdict, name, what was found) and, under a
// warning or a failure, its fix; then the counts.
func (r Report) WriteText(w io.Writer) error {
	width := 0
	for _, c := range r.Checks {
		width = max(width, len(c.Name))
	}
	var b strings.Builder
	for _, c := range r.Checks {
		fmt.Fprintf(&b, "%-4s  %-*s  %s\n", c.Verdict.text(), width, c.Name, c.Found)
		if c.Fix != "" {
			fmt.Fprintf(&b, "%-4s  %-*s  fix: %s\n", "", width, "", c.Fix)
		}
	}
	fmt.Fprintf(&b, "\n%s\n", r.counts())
	_, err := io.WriteString(w, b.String())
	return err
}

// WritePlain writes the report for scripts (report.Tab, plain): one header line
// "verdict check found fix", then a line per check, one word a cell ("-": no fix), so
// that awk '$1 == "FAIL" {print $2}' names the failed checks; then the counts on a line
// "summary:".
func (r Report) WritePlain(w io.Writer) error {
	t := report.NewTab(w, report.FormatPlain, "verdict", "check", "found", "fix")
	for _, c := range r.Checks {
		t.Append(c.Verdict.text(), c.Name, c.Found, c.Fix)
	}
	if err := t.Render(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, "summary: "+r.counts())
	return err
}

// text is the verdict as the text reports write it: FAIL in capitals, to stand out.
func (v Verdict) text() string {
	if v == Fail {
		return "FAIL"
	}
	return string(v)
}

// counts are the report's verdicts counted, in words.
func (r Report) counts() string {
	return fmt.Sprintf("%d ok, %d %s, %d failed, %d skipped", r.Summary[OK], r.Summary[Warn], plural(r.Summary[Warn], "warning"), r.Summary[Fail], r.Summary[Skip])
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

func interfaceAddrs(name string) ([]net.IP, error) {
	ifc, err := net.InterfaceByName(name)
	if err != nil {
		return nil, err
	}
	addrs, err := ifc.Addrs()
	if err != nil {
		return nil, err
	}
	var ips []net.IP
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			ips = append(ips, n.IP)
		}
	}
	return ips, nil
}

// bytesText writes a byte count in binary units: 64 KiB, 1.1 MiB.
func bytesText(n uint64) string {
	units := []string{"bytes", "KiB", "MiB", "GiB", "TiB"}
	v, i := float64(n), 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%d bytes", n)
	}
	if v == float64(int64(v)) {
		return fmt.Sprintf("%d %s", int64(v), units[i])
	}
	return fmt.Sprintf("%.1f %s", v, units[i])
}
