package verbs

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
)

// The timed loops tick on the TSC only where the CPU and the kernel both vouch for it:
//
//   - the CPU: every processor's flags in /proc/cpuinfo include constant_tsc (the TSC
//     ticks at one rate whatever the core's frequency) and nonstop_tsc (it keeps ticking
//     in deep C-states);
//   - the kernel: tsc is among the clocksources it offers
//     (/sys/devices/system/clocksource/clocksource0/available_clocksource). A kernel that
//     found the TSCs unsynchronized or unstable ("Marking TSC unstable due to ...")
//     withdraws it from that list, which is the kernel's verdict we rely on: reading the
//     kernel log would need privileges and parsing messages that change between versions.
//
// Anywhere else the loops use CLOCK_MONOTONIC_RAW for every stamp.

const (
	cpuinfoPath   = "proc/cpuinfo"
	clocksrcDir   = "sys/devices/system/clocksource/clocksource0"
	monotonicTail = ": loops timed with CLOCK_MONOTONIC_RAW"
)

// ClockVerdict says whether the timed loops should tick on the TSC on the host whose
// file system is rooted at root ("/" normally; tests pass a fixture tree), and why not.
// The note is one short line for the result's clock_note: empty when the TSC is used
// and the kernel agrees, otherwise what made the decision.
func ClockVerdict(root string) (useTSC bool, note string) {
	return clockVerdict(root, runtime.GOARCH)
}

func clockVerdict(root, goarch string) (bool, string) {
	ok, why := tscVerdict(root, goarch)
	return ok, clockNote(ok, why)
}

// ForcedTSCNote is the clock_note of a run whose --clock tsc overrides the verdict:
// empty when the host vouches for its TSC, otherwise the verdict's reason. ok is false
// where there is no TSC to force (not x86-64).
func ForcedTSCNote(root string) (note string, ok bool) {
	return forcedTSCNote(root, runtime.GOARCH)
}

func forcedTSCNote(root, goarch string) (string, bool) {
	if goarch != "amd64" {
		return "no TSC on " + goarch, false
	}
	vouched, why := tscVerdict(root, goarch)
	if vouched {
		return "", true
	}
	return "TSC forced by --clock tsc although " + why, true
}

// MonotonicNote is the clock_note of a run told to use CLOCK_MONOTONIC_RAW.
const MonotonicNote = "CLOCK_MONOTONIC_RAW chosen by --clock monotonic"

// clockNote turns a verdict into the one-line note stored in every result.
func clockNote(useTSC bool, why string) string {
	switch {
	case !useTSC && strings.HasPrefix(why, "no TSC on "):
		return why + monotonicTail
	case !useTSC:
		return "TSC not used: " + why + monotonicTail
	case why != "":
		return "TSC used although " + why
	}
	return ""
}

// tscVerdict is ClockVerdict for an architecture: whether the TSC may be used and,
// joined by "; ", every reason against it (or, when it may be used, what is still
// worth saying: the kernel's current clocksource when that is not tsc).
func tscVerdict(root, goarch string) (bool, string) {
	if goarch != "amd64" {
		return false, "no TSC on " + goarch
	}
	var unreadable, against []string
	read := func(rel string) (string, bool) {
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			unreadable = append(unreadable, "/"+rel)
			return "", false
		}
		return strings.TrimSpace(string(b)), true
	}
	cpuinfo, cpuOK := read(cpuinfoPath)
	avail, availOK := read(clocksrcDir + "/available_clocksource")
	current, currentOK := read(clocksrcDir + "/current_clocksource")
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
	if availOK && !slices.Contains(strings.Fields(avail), "tsc") {
		list := strings.Join(strings.Fields(avail), " ")
		if list == "" {
			list = "none listed"
		}
		against = append(against, fmt.Sprintf("the kernel does not offer tsc as a clocksource (%s)", list))
	}
	var aside string
	if currentOK && current != "tsc" {
		if current == "" {
			current = "none"
		}
		aside = "the kernel's current clocksource is " + current
	}
	if len(against) > 0 {
		if aside != "" {
			against = append(against, aside)
		}
		return false, strings.Join(against, "; ")
	}
	return true, aside
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
