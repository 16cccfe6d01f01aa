package doctor

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
)

// The kernel's clocksource decides what a timestamp costs. Where it can be read in user
// space (the vDSO: tsc, and a hypervisor's clock that maps its page to the guest,
// kvm-clock or Hyper-V's TSC page), clock_gettime is a few instructions; on hpet,
// acpi_pm or jiffies (the x86 vDSO has no HPET read since Linux 4.20) every
// clock_gettime is a system call. The timed loops stamp with the TSC only where the
// clock check vouches for it, and otherwise with CLOCK_MONOTONIC_RAW, so on such a host
// every stamp is a system call, and so is every timestamp any program takes. A kernel
// that found the TSC unstable drops it from its clocksources ("demoted").

// vdsoClocksources are the x86 clocksources the vDSO reads without a system call.
var vdsoClocksources = []string{"tsc", "kvm-clock", "hyperv_clocksource_tsc_page"}

// clocksourceCheck: the kernel's clocksource, whether it demoted the TSC, and whether a
// timestamp costs a system call; on bare metal or in a VM (the CPU's hypervisor flag).
func clocksourceCheck(root string) Check { return clocksourceCheckArch(root, runtime.GOARCH) }

func clocksourceCheckArch(root, goarch string) Check {
	c := Check{Name: "clocksource"}
	if goarch != "amd64" {
		c.Verdict, c.Found = Skip, "no TSC on "+goarch
		return c
	}
	read := func(rel string) (string, error) {
		b, err := os.ReadFile(filepath.Join(root, rel))
		return strings.TrimSpace(string(b)), err
	}
	dir := "sys/devices/system/clocksource/clocksource0/"
	current, err := read(dir + "current_clocksource")
	if err != nil {
		c.Verdict, c.Found = Skip, "cannot read the kernel's clocksource: "+err.Error()
		return c
	}
	availText, _ := read(dir + "available_clocksource")
	avail := strings.Fields(availText)
	cpuinfo, _ := read("proc/cpuinfo")
	flags := map[string]bool{}
	for line := range strings.Lines(cpuinfo) {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "flags" {
			for _, f := range strings.Fields(v) {
				flags[f] = true
			}
			break // the first CPU's: the hypervisor and tsc flags are the same on every one
		}
	}
	where := "bare metal (no hypervisor flag)"
	if flags["hypervisor"] {
		where = "a VM (the CPU has the hypervisor flag)"
	}
	offered := slices.Contains(avail, "tsc")
	tscState := "the TSC is among the kernel's clocksources"
	if !offered {
		tscState = fmt.Sprintf("the TSC is not among the kernel's clocksources (%s)", orNone(availText))
		if flags["tsc"] {
			tscState += ", though the CPU has one: the kernel demoted it (found it unstable) or never trusted it"
		}
	}
	vdso := slices.Contains(vdsoClocksources, current)
	c.Found = fmt.Sprintf("%s; the kernel times itself on %s; %s", where, orNone(current), tscState)
	switch {
	case vdso:
		c.Verdict = OK
		c.Found += "; " + current + " is read in user space (vDSO): a timestamp costs no system call"
	case !flags["hypervisor"]:
		c.Verdict = Warn
		c.Found += "; " + current + " has no user-space read: every clock_gettime is a system call, and so is every stamp of the timed loops (CLOCK_MONOTONIC_RAW where the TSC is not used)"
		if offered {
			c.Fix = "echo tsc > /sys/devices/system/clocksource/clocksource0/current_clocksource (as root; clocksource=tsc on the kernel command line to keep it)"
		} else {
			c.Fix = "look for 'Marking TSC unstable' or 'clocksource: ... unstable' in the kernel log (dmesg) for the reason; check the BIOS (TSC sync across sockets, deep C-states); boot with tsc=reliable only if you know the TSC is sound"
		}
	default:
		c.Verdict = Warn
		c.Found += "; " + current + " has no user-space read: every clock_gettime is a system call in this guest"
		c.Fix = "give the guest a clock the vDSO reads: kvm-clock, or an invariant TSC (qemu/KVM: -cpu host or +invtsc; in a cloud, an instance type whose guests get it)"
	}
	return c
}

func orNone(s string) string {
	if strings.TrimSpace(s) == "" {
		return "none listed"
	}
	return strings.Join(strings.Fields(s), " ")
}
