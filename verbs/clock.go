package verbs

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
)

// The timed loops tick on the TSC only on evidence, all of it read without privileges,
// from the CPU and from the kernel's verdict; being listed in available_clocksource is
// not enough on its own:
//
//   - the CPU: every processor's flags in /proc/cpuinfo include constant_tsc (the TSC
//     ticks at one rate whatever the core's frequency) and nonstop_tsc (it keeps ticking
//     in deep C-states);
//   - the kernel still offers tsc as a clocksource
//     (/sys/devices/system/clocksource/clocksource0/available_clocksource). A kernel that
//     found the TSCs unsynchronized or unstable ("Marking TSC unstable due to ...")
//     withdraws it from that list. We read what the kernel did rather than what it
//     logged: reading the kernel log would need privileges and parsing messages that
//     change between versions;
//   - the kernel chose tsc (current_clocksource in the same directory). Offered is not
//     chosen: a kernel timing itself on hpet, acpi_pm or a hypervisor's clock (kvm-clock,
//     xen, hyperv_clocksource_tsc_page) has not vouched for the TSC, unless the
//     administrator did so on the kernel command line;
//   - the kernel command line (/proc/cmdline): tsc=unstable or notsc is a verdict
//     against; tsc=reliable is the administrator vouching for the TSC, which stands in
//     for the current clocksource (a KVM guest with an invariant TSC keeps kvm-clock).
//
// A file that cannot be read counts against the TSC and is named, except /proc/cmdline
// (see cmdlineVerdict). The note every result carries (clock_note) says which: the
// evidence when the TSC is used, the reasons when it is not. Anywhere the TSC is not
// used, the loops use CLOCK_MONOTONIC_RAW for every stamp.

const (
	cpuinfoPath   = "proc/cpuinfo"
	cmdlinePath   = "proc/cmdline"
	clocksrcDir   = "sys/devices/system/clocksource/clocksource0"
	monotonicTail = ": loops timed with CLOCK_MONOTONIC_RAW"
)

// ClockVerdict says whether the timed loops should tick on the TSC on the host whose
// file system is rooted at root ("/" normally; tests pass a fixture tree), and why.
// The note is one short line for the result's clock_note: the evidence when the TSC is
// used, otherwise what made the decision.
func ClockVerdict(root string) (useTSC bool, note string) {
	return clockVerdict(root, runtime.GOARCH)
}

func clockVerdict(root, goarch string) (bool, string) {
	ok, why := tscVerdict(root, goarch)
	return ok, clockNote(ok, why)
}

// ForcedTSCNote is the clock_note of a run whose --clock tsc overrides the verdict:
// the evidence when the host vouches for its TSC (as ClockVerdict's), otherwise what
// the verdict had against it. ok is false where there is no TSC to force (not x86-64).
func ForcedTSCNote(root string) (note string, ok bool) {
	return forcedTSCNote(root, runtime.GOARCH)
}

func forcedTSCNote(root, goarch string) (string, bool) {
	if goarch != "amd64" {
		return "no TSC on " + goarch, false
	}
	vouched, why := tscVerdict(root, goarch)
	if vouched {
		return clockNote(true, why), true
	}
	return "TSC forced by --clock tsc although " + why, true
}

// MonotonicNote is the clock_note of a run told to use CLOCK_MONOTONIC_RAW.
const MonotonicNote = "CLOCK_MONOTONIC_RAW chosen by --clock monotonic"

// clockNote turns a verdict into the one-line note stored in every result.
func clockNote(useTSC bool, why string) string {
	switch {
	case useTSC:
		return "TSC: " + why
	case strings.HasPrefix(why, "no TSC on "):
		return why + monotonicTail
	}
	return "TSC not used: " + why + monotonicTail
}

// tscVerdict is ClockVerdict for an architecture: whether the TSC may be used and,
// joined by "; ", the evidence for it when it may, every reason against it when not.
func tscVerdict(root, goarch string) (bool, string) {
	if goarch != "amd64" {
		return false, "no TSC on " + goarch
	}
	read := func(rel string) (string, bool) {
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			return "", false
		}
		return strings.TrimSpace(string(b)), true
	}
	cpuinfo, cpuOK := read(cpuinfoPath)
	cmdline, cmdlineOK := read(cmdlinePath)
	avail, availOK := read(clocksrcDir + "/available_clocksource")
	current, currentOK := read(clocksrcDir + "/current_clocksource")
	cmdAgainst, reliable := cmdlineVerdict(cmdline)
	chosen := currentOK && current == "tsc"

	var unreadable, against []string
	for _, f := range []struct {
		rel    string
		unread bool // could not be read, and to be named as such
	}{
		{cpuinfoPath, !cpuOK},
		// /proc/cmdline only where a tsc=reliable in it would have made up for the
		// current clocksource: the one case its contents could change the decision.
		{cmdlinePath, !cmdlineOK && currentOK && !chosen},
		{clocksrcDir + "/available_clocksource", !availOK},
		{clocksrcDir + "/current_clocksource", !currentOK},
	} {
		if f.unread {
			unreadable = append(unreadable, "/"+f.rel)
		}
	}
	if len(unreadable) > 0 {
		against = append(against, "cannot read "+strings.Join(unreadable, ", "))
	}
	if cpuOK {
		missing, found := missingCPUFlags(cpuinfo, "constant_tsc", "nonstop_tsc")
		switch {
		case !found:
			against = append(against, "no CPU flags in /proc/cpuinfo")
		case len(missing) > 0:
			against = append(against, "CPU lacks "+strings.Join(missing, ", "))
		}
	}
	if len(cmdAgainst) > 0 {
		against = append(against, strings.Join(cmdAgainst, " and ")+" on the kernel command line")
	}
	if availOK && !slices.Contains(strings.Fields(avail), "tsc") {
		list := strings.Join(strings.Fields(avail), " ")
		if list == "" {
			list = "none listed"
		}
		against = append(against, fmt.Sprintf("the kernel does not offer tsc as a clocksource (%s)", list))
	}
	if current == "" {
		current = "none"
	}
	if currentOK && !chosen && !reliable {
		against = append(against, "the kernel's current clocksource is "+current+", not tsc")
	}
	if len(against) > 0 {
		return false, strings.Join(against, "; ")
	}
	evidence := []string{"constant_tsc and nonstop_tsc on every CPU"}
	if chosen {
		evidence = append(evidence, "the kernel's clocksource is tsc")
	} else {
		evidence = append(evidence, "the kernel offers tsc (its clocksource is "+current+")")
	}
	if reliable {
		evidence = append(evidence, "tsc=reliable on the kernel command line")
	}
	return true, strings.Join(evidence, "; ")
}

// cmdlineVerdict reads the kernel command line's say on the TSC: against lists the
// parameters that make the kernel mark it unstable (tsc=unstable, notsc), in the order
// given; reliable says whether tsc=reliable vouches for it (a verdict against wins, as
// it does in the kernel, which marks the TSC unstable whatever else it was told).
// Parameters after a lone "--" are init's, not the kernel's; a double-quoted value may
// hold spaces.
//
// An unreadable /proc/cmdline is no command-line verdict rather than one against, unlike
// the other files, because nothing it could say against the TSC would go unseen: a
// kernel booted with tsc=unstable or notsc marks the TSC unstable, so it neither offers
// nor chooses tsc, and available_clocksource and current_clocksource (which are
// required) already say no. All the file can add is tsc=reliable, and missing that only
// keeps the TSC off where the kernel chose another clocksource; there the note names
// /proc/cmdline as unreadable. (Fixture trees without proc/cmdline are hosts whose
// command line says nothing about the TSC.)
func cmdlineVerdict(cmdline string) (against []string, reliable bool) {
	for _, p := range cmdlineParams(cmdline) {
		if p == "--" {
			break
		}
		switch p {
		case "tsc=unstable", "notsc":
			if !slices.Contains(against, p) {
				against = append(against, p)
			}
		case "tsc=reliable":
			reliable = true
		}
	}
	return against, reliable && len(against) == 0
}

// cmdlineParams splits a kernel command line at white space outside double quotes and
// drops the quotes, so that a quoted value's words are not taken for parameters.
func cmdlineParams(cmdline string) []string {
	var params []string
	var p strings.Builder
	quoted, in := false, false
	for _, r := range cmdline {
		switch {
		case r == '"':
			quoted, in = !quoted, true
		case !quoted && (r == ' ' || r == '\t' || r == '\n'):
			if in {
				params = append(params, p.String())
				p.Reset()
			}
			in = false
		default:
			p.WriteRune(r)
			in = true
		}
	}
	if in {
		params = append(params, p.String())
	}
	return params
}

// missingCPUFlags returns the flags absent from any processor's "flags" line of a
// /proc/cpuinfo text, in the order asked; found says whether there was a flags line.
func missingCPUFlags(cpuinfo string, want ...string) (missing []string, found bool) {
	lacking := map[string]bool{}
	for line := range strings.Lines(cpuinfo) {
		key, val, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(key) != "flags" {
			continue
		}
		found = true
		have := strings.Fields(val)
		for _, f := range want {
			if !slices.Contains(have, f) {
				lacking[f] = true
			}
		}
	}
	for _, f := range want {
		if lacking[f] {
			missing = append(missing, f)
		}
	}
	return missing, found
}
