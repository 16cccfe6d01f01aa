package verbs

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// The fixtures under testdata/clock are file-system trees as the hosts show them:
//
//	connectx       a ConnectX host: constant_tsc and nonstop_tsc, tsc offered and current
//	qemu           the test bed (qemu TCG): flags "tsc rdtscp" only, and a kernel that said
//	               "Marking TSC unstable due to TSCs unsynchronized" and offers hpet acpi_pm
//	kvm            a KVM guest with an invariant TSC whose kernel runs on kvm-clock
//	noclocksource  a /proc/cpuinfo but no clocksource files
func fixture(name string) string { return filepath.Join("testdata", "clock", name) }

func TestClockVerdict(t *testing.T) {
	for _, tc := range []struct {
		root, arch string
		tsc        bool
		note       string // exact; "" means the note must be empty
	}{
		{"connectx", "amd64", true, ""},
		{"qemu", "amd64", false, "TSC not used: CPU lacks constant_tsc, nonstop_tsc; the kernel does not offer tsc as a clocksource (hpet acpi_pm); the kernel's current clocksource is hpet: loops timed with CLOCK_MONOTONIC_RAW"},
		{"kvm", "amd64", true, "TSC used although the kernel's current clocksource is kvm-clock"},
		{"noclocksource", "amd64", false, "TSC not used: cannot read /sys/devices/system/clocksource/clocksource0/available_clocksource, /sys/devices/system/clocksource/clocksource0/current_clocksource: loops timed with CLOCK_MONOTONIC_RAW"},
		{"no-such-host", "amd64", false, "TSC not used: cannot read /proc/cpuinfo, /sys/devices/system/clocksource/clocksource0/available_clocksource, /sys/devices/system/clocksource/clocksource0/current_clocksource: loops timed with CLOCK_MONOTONIC_RAW"},
		// Not x86-64: no TSC, whatever the files say.
		{"connectx", "arm64", false, "no TSC on arm64: loops timed with CLOCK_MONOTONIC_RAW"},
	} {
		tsc, note := clockVerdict(fixture(tc.root), tc.arch)
		if tsc != tc.tsc || note != tc.note {
			t.Errorf("%s on %s: got (%v, %q), want (%v, %q)", tc.root, tc.arch, tsc, note, tc.tsc, tc.note)
		}
		if strings.Contains(note, "\n") {
			t.Errorf("%s: the note must be one line: %q", tc.root, note)
		}
	}
}

func TestClockVerdictThisArch(t *testing.T) {
	tsc, note := ClockVerdict(fixture("connectx"))
	if runtime.GOARCH == "amd64" {
		if !tsc || note != "" {
			t.Fatalf("ConnectX host on amd64: got (%v, %q)", tsc, note)
		}
		return
	}
	if tsc || !strings.HasPrefix(note, "no TSC on "+runtime.GOARCH) {
		t.Fatalf("on %s: got (%v, %q)", runtime.GOARCH, tsc, note)
	}
}

func TestForcedTSCNote(t *testing.T) {
	if note, ok := forcedTSCNote(fixture("connectx"), "amd64"); !ok || note != "" {
		t.Errorf("the verdict agrees: got (%q, %v), want an empty note", note, ok)
	}
	if note, ok := forcedTSCNote(fixture("kvm"), "amd64"); !ok || note != "" {
		t.Errorf("the verdict agrees (current clocksource aside): got (%q, %v)", note, ok)
	}
	want := "TSC forced by --clock tsc although CPU lacks constant_tsc, nonstop_tsc; the kernel does not offer tsc as a clocksource (hpet acpi_pm); the kernel's current clocksource is hpet"
	if note, ok := forcedTSCNote(fixture("qemu"), "amd64"); !ok || note != want {
		t.Errorf("qemu: got (%q, %v), want %q", note, ok, want)
	}
	if _, ok := forcedTSCNote(fixture("connectx"), "arm64"); ok {
		t.Error("there is no TSC to force on arm64")
	}
}

func TestMissingCPUFlags(t *testing.T) {
	// A flag one processor lacks is lacking: the loop may run on that one.
	mixed := "processor\t: 0\nflags\t\t: tsc constant_tsc nonstop_tsc\n\nprocessor\t: 1\nflags\t\t: tsc constant_tsc\n"
	if m, found := missingCPUFlags(mixed, "constant_tsc", "nonstop_tsc"); !found || len(m) != 1 || m[0] != "nonstop_tsc" {
		t.Errorf("mixed: got %v, %v", m, found)
	}
	// Substrings do not count (tsc_known_freq is not tsc, constant_tsc_x is not constant_tsc).
	if m, _ := missingCPUFlags("flags : constant_tsc_x nonstop_tsc2 tsc_known_freq\n", "constant_tsc", "nonstop_tsc"); len(m) != 2 {
		t.Errorf("substrings matched: %v", m)
	}
	// arm64's /proc/cpuinfo says "Features", not "flags".
	if _, found := missingCPUFlags("processor\t: 0\nFeatures\t: fp asimd evtstrm\n", "constant_tsc"); found {
		t.Error("found a flags line where there is none")
	}
	tmp := t.TempDir()
	os.MkdirAll(filepath.Join(tmp, clocksrcDir), 0o755)
	os.MkdirAll(filepath.Join(tmp, "proc"), 0o755)
	os.WriteFile(filepath.Join(tmp, cpuinfoPath), []byte("processor\t: 0\nFeatures\t: fp asimd\n"), 0o644)
	os.WriteFile(filepath.Join(tmp, clocksrcDir, "available_clocksource"), []byte("tsc\n"), 0o644)
	os.WriteFile(filepath.Join(tmp, clocksrcDir, "current_clocksource"), []byte("tsc\n"), 0o644)
	if tsc, note := clockVerdict(tmp, "amd64"); tsc || !strings.Contains(note, "no CPU flags in /proc/cpuinfo") {
		t.Errorf("no flags line: got (%v, %q)", tsc, note)
	}
}
