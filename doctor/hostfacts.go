package doctor

import (
	"fmt"
	"slices"
	"strings"

	hostfacts "github.com/rdmabench/rdmabench/host"
	"github.com/rdmabench/rdmabench/profiles"
	"github.com/rdmabench/rdmabench/verbs"
)

// The checks on the host facts (package host): the NIC's PCIe link against what its
// port needs and against what the card supports, and the CPU frequency governor. Each
// is skipped, saying why, when the facts it needs are unknown (a software device has no
// PCIe link; a VM usually has no cpufreq).

// nominal is the NIC's nominal port rate from its built-in profile, and the words that
// name where it comes from: "a ConnectX-6 (cx6 profile)". ok false when no profile
// matches.
func nominal(d *verbs.DeviceInfo) (gbps float64, what string, ok bool) {
	prof, err := profiles.Detect(d.Driver, d.VendorID, d.VendorPartID)
	if err != nil {
		return 0, "", false
	}
	if m, ok := prof.Model(d.VendorPartID); ok {
		return m.LinkGbps, fmt.Sprintf("%s (%s profile)", article(m.Name), prof.Name), true
	}
	return prof.LinkGbps, fmt.Sprintf("the %s profile's NICs", prof.Name), true
}

// article is name with "a" or "an" before it: "a ConnectX-6", "an E810-C", "an X722".
func article(name string) string {
	if name != "" && strings.ContainsRune("AEIOUXaeiou", rune(name[0])) {
		return "an " + name
	}
	return "a " + name
}

// software says whether the device has no PCI function of its own (rxe, siw).
func software(d *verbs.DeviceInfo, f hostfacts.Facts) bool {
	return d.Driver == "rxe" || d.Driver == "siw" || f.Provider == "rxe" || f.Provider == "siw" ||
		(f.Driver == "" && f.PCIAddress == "" && f.PCIeLink == nil)
}

// linkUnknown is the skip for a device whose PCIe link the facts do not know.
func linkUnknown(name string, d *verbs.DeviceInfo, f hostfacts.Facts) Check {
	c := Check{Name: name, Verdict: Skip}
	if software(d, f) {
		c.Found = fmt.Sprintf("%s is software RDMA (%s): it has no PCIe link of its own", d.Name, d.Model)
		return c
	}
	why := "sysfs has no current_link_speed and current_link_width for it"
	for _, n := range f.Notes {
		if strings.HasPrefix(n, "PCIe current link unknown") {
			why = strings.TrimPrefix(n, "PCIe current link unknown: ") + ": a virtual function, or a link that is down"
		}
	}
	c.Found = fmt.Sprintf("%s's PCIe link is unknown (%s)", d.Name, why)
	return c
}

// lspci is the command that shows the function's link capability and status.
func lspci(f hostfacts.Facts) string {
	if f.PCIAddress == "" {
		return "lspci -vv"
	}
	return "lspci -vv -s " + f.PCIAddress
}

// slotFor is the slot a link of width lanes needs to carry gbps: "a Gen4 x16 slot (252
// Gb/s)"; "" when no generation at that width carries it.
func slotFor(gbps float64, lanes int) string {
	for gen := 1; gen <= 6; gen++ {
		gts := []float64{2.5, 5, 8, 16, 32, 64}[gen-1]
		if u, _, _ := hostfacts.UsableGbps(gts, lanes); u >= gbps {
			return fmt.Sprintf("a Gen%d x%d slot (%g Gb/s)", gen, lanes, roundGbps(u))
		}
	}
	return ""
}

func roundGbps(v float64) float64 { return float64(int64(v + 0.5)) }

// pcieLinkCheck: the bandwidth of the PCIe link the NIC trained at against the nominal
// rate of one of its ports (the profile's, per model). A link below it caps the port:
// the NIC cannot move data to and from memory as fast as the wire does.
func pcieLinkCheck(d *verbs.DeviceInfo, f hostfacts.Facts) Check {
	c := Check{Name: "pcie-link"}
	if d == nil {
		c.Verdict, c.Found = Skip, "no device to check (see the device check)"
		return c
	}
	l := f.PCIeLink
	if l == nil {
		return linkUnknown(c.Name, d, f)
	}
	need, what, ok := nominal(d)
	if !ok {
		c.Verdict = Skip
		c.Found = fmt.Sprintf("PCIe %s; no built-in NIC profile for %s (driver %s, vendor 0x%x, part %d) to compare it with", l, d.Model, d.Driver, d.VendorID, d.VendorPartID)
		return c
	}
	if l.GbitPerS >= need {
		c.Verdict = OK
		c.Found = fmt.Sprintf("PCIe %s each way, enough for the %g Gb/s of %s", l, need, what)
		return c
	}
	c.Verdict = Warn
	c.Found = fmt.Sprintf("%s sits on a PCIe %s link, below the %g Gb/s a port of %s runs at: the bus, not the wire, caps the bandwidth (at most about %g Gb/s each way, less the packets' headers)",
		d.Name, l, need, what, roundGbps(l.GbitPerS))
	lanes := l.Width
	if m := f.PCIeMaxLink; m != nil {
		lanes = m.Width
	}
	slot := slotFor(need, lanes)
	switch m := f.PCIeMaxLink; {
	case m != nil && m.GbitPerS >= need:
		c.Fix = fmt.Sprintf("the card can do %s: move it to %s wired to the CPU, or raise the slot's PCIe speed in the BIOS (%s: LnkCap is what the card can do, LnkSta what it got)", m, slot, lspci(f))
	case m != nil:
		c.Fix = fmt.Sprintf("the card itself stops at %s, below its port rate: expect at most about %g Gb/s from one port in this card, or use both ports of a dual-port card for traffic that splits (%s shows LnkCap and LnkSta)", m, roundGbps(m.GbitPerS), lspci(f))
	case slot != "":
		c.Fix = fmt.Sprintf("move the card to %s or faster, wired to the CPU (%s: LnkCap is what the card can do, LnkSta what it got)", slot, lspci(f))
	default:
		c.Fix = fmt.Sprintf("put the card in a wider, faster slot (%s: LnkCap is what the card can do, LnkSta what it got)", lspci(f))
	}
	return c
}

// pcieTrainingCheck: the link the NIC trained at against the best the card supports.
// Below it, the slot, a riser, a BIOS setting or a bad contact holds the card back.
func pcieTrainingCheck(d *verbs.DeviceInfo, f hostfacts.Facts) Check {
	c := Check{Name: "pcie-training"}
	if d == nil {
		c.Verdict, c.Found = Skip, "no device to check (see the device check)"
		return c
	}
	l, m := f.PCIeLink, f.PCIeMaxLink
	if l == nil {
		return linkUnknown(c.Name, d, f)
	}
	if m == nil {
		c.Verdict, c.Found = Skip, fmt.Sprintf("PCIe %s; the card's maximum is unknown (no max_link_speed and max_link_width)", l)
		return c
	}
	var below []string
	if l.SpeedGTs < m.SpeedGTs {
		below = append(below, fmt.Sprintf("%.1f GT/s instead of %.1f", l.SpeedGTs, m.SpeedGTs))
	}
	if l.Width < m.Width {
		below = append(below, fmt.Sprintf("x%d instead of x%d", l.Width, m.Width))
	}
	if len(below) == 0 {
		c.Verdict, c.Found = OK, fmt.Sprintf("PCIe %s, the card's maximum", l)
		return c
	}
	c.Verdict = Warn
	c.Found = fmt.Sprintf("%s's PCIe link trained at %s, below the %s the card supports (%s)", d.Name, l, m, strings.Join(below, ", "))
	switch {
	case l.Width < m.Width && l.SpeedGTs >= m.SpeedGTs:
		c.Fix = fmt.Sprintf("the slot has fewer lanes than the card (a x%d slot, or a x16 slot wired x%d, or one that shares its lanes): move the card to a x%d slot, and reseat it; %s shows LnkCap (the card) and LnkSta (the link)", l.Width, l.Width, m.Width, lspci(f))
	default:
		c.Fix = fmt.Sprintf("move the card to a slot that offers %.1f GT/s x%d (Gen%d x%d: the board's manual says which slots are, and which are wired to the CPU), check the BIOS's PCIe speed setting for the slot and any riser, and reseat the card; %s shows LnkCap (the card) and LnkSta (the link)", m.SpeedGTs, m.Width, m.Generation, m.Width, lspci(f))
	}
	return c
}

// governorCheck: the CPUs' frequency governor, as perftest checks it (-F skips that):
// a governor other than performance lets cores clock down between polls, which raises
// the latency and its spread and can cost bandwidth at small messages.
func governorCheck(f hostfacts.Facts) Check {
	c := Check{Name: "cpu-governor"}
	gs := f.CPUGovernors
	if len(gs) == 0 {
		c.Verdict, c.Found = Skip, "no cpufreq scaling governor (/sys/devices/system/cpu/cpu*/cpufreq): no cpufreq driver, as in most VMs; CPU frequency not checked"
		return c
	}
	others := slices.DeleteFunc(slices.Clone(gs), func(g string) bool { return g == "performance" })
	if len(others) == 0 {
		c.Verdict, c.Found = OK, "every CPU runs the performance governor"
		return c
	}
	c.Verdict = Warn
	if len(others) == len(gs) {
		c.Found = fmt.Sprintf("the CPUs run the %s governor, not performance", strings.Join(others, " and "))
	} else {
		c.Found = fmt.Sprintf("some CPUs run the %s governor, not performance", strings.Join(others, " and "))
	}
	c.Found += ": cores clock down between polls, which raises latency and its spread (perftest warns the same unless -F)"
	c.Fix = "sudo cpupower frequency-set -g performance (or: echo performance | sudo tee /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor) on both hosts before the run; tuned's latency-performance profile keeps it"
	return c
}

// The host's checks as Run calls them.
func (h *host) pcieLinkCheck() Check     { return pcieLinkCheck(h.dev, h.facts) }
func (h *host) pcieTrainingCheck() Check { return pcieTrainingCheck(h.dev, h.facts) }
func (h *host) governorCheck() Check     { return governorCheck(h.facts) }
