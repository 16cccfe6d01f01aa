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
//	kvm-reliable   the same guest booted with tsc=reliable (still on kvm-clock)
//	hpet           bare metal with an invariant TSC, tsc offered, but booted with
//	               clocksource=hpet: the kernel did not choose the TSC
//	tsc-unstable   bare metal booted with tsc=unstable: tsc neither offered nor current
//	noflags        a Core 2: constant_tsc without nonstop_tsc, although the kernel runs on tsc
//	nocmdline      connectx without /proc/cmdline
//	nocmdline-kvm  kvm without /proc/cmdline
//	noclocksource  a /proc/cpuinfo but no clocksource files (and no /proc/cmdline)
//
// Every fixture but nocmdline, nocmdline-kvm and noclocksource has a /proc/cmdline, as
// every Linux host does; those three lack it on purpose (see cmdlineVerdict).
func fixture(name string) string { return filepath.Join("testdata", "clock", name) }

const (
	cannotRead = "cannot read "
	availFile  = "/sys/devices/system/clocksource/clocksource0/available_clocksource"
	curFile    = "/sys/devices/system/clocksource/clocksource0/current_clocksource"
	chosenTSC  = "TSC: constant_tsc and nonstop_tsc on every CPU; the kernel's clocksource is tsc"
	notUsed    = "TSC not used: "
)

func TestClockVerdict(t *testing.T) {
	for _, tc := range []struct {
		root, arch string
		tsc        bool
		note       string // exact
	}{
		{"connectx", "amd64", true, chosenTSC},
		{"qemu", "amd64", false, notUsed + "CPU lacks constant_tsc, nonstop_tsc; the kernel does not offer tsc as a clocksource (hpet acpi_pm); the kernel's current clocksource is hpet, not tsc" + monotonicTail},
		// Offered is not chosen: the kernel times itself on kvm-clock.
		{"kvm", "amd64", false, notUsed + "the kernel's current clocksource is kvm-clock, not tsc" + monotonicTail},
		// ... unless the administrator vouched for the TSC.
		{"kvm-reliable", "amd64", true, "TSC: constant_tsc and nonstop_tsc on every CPU; the kernel offers tsc (its clocksource is kvm-clock); tsc=reliable on the kernel command line"},
		{"hpet", "amd64", false, notUsed + "the kernel's current clocksource is hpet, not tsc" + monotonicTail},
		{"tsc-unstable", "amd64", false, notUsed + "tsc=unstable on the kernel command line; the kernel does not offer tsc as a clocksource (hpet acpi_pm); the kernel's current clocksource is hpet, not tsc" + monotonicTail},
		{"noflags", "amd64", false, notUsed + "CPU lacks nonstop_tsc" + monotonicTail},
		// No /proc/cmdline is no command-line verdict: the kernel chose tsc, so the TSC is used ...
		{"nocmdline", "amd64", true, chosenTSC},
		// ... and where it did not, the file that might have said tsc=reliable is named.
		{"nocmdline-kvm", "amd64", false, notUsed + cannotRead + "/proc/cmdline; the kernel's current clocksource is kvm-clock, not tsc" + monotonicTail},
		{"noclocksource", "amd64", false, notUsed + cannotRead + availFile + ", " + curFile + monotonicTail},
		{"no-such-host", "amd64", false, notUsed + cannotRead + "/proc/cpuinfo, " + availFile + ", " + curFile + monotonicTail},
		// Not x86-64: no TSC, whatever the files say.
		{"connectx", "arm64", false, "no TSC on arm64" + monotonicTail},
	} {
		tsc, note := clockVerdict(fixture(tc.root), tc.arch)
		if tsc != tc.tsc || note != tc.note {
			t.Errorf("%s on %s: got (%v, %q), want (%v, %q)", tc.root, tc.arch, tsc, note, tc.tsc, tc.note)
		}
		if note == "" || strings.Contains(note, "\n") {
			t.Errorf("%s: the note must be one non-empty line: %q", tc.root, note)
		}
	}
}

// host writes a host tree: an invariant TSC that the kernel offers and chose, and the
// given kernel command line.
func host(t *testing.T, cmdline string) string {
	t.Helper()
	root := t.TempDir()
	for rel, text := range map[string]string{
		cpuinfoPath:                            "processor\t: 0\nflags\t\t: tsc constant_tsc nonstop_tsc\n",
		cmdlinePath:                            cmdline + "\n",
		clocksrcDir + "/available_clocksource": "tsc hpet acpi_pm \n",
		clocksrcDir + "/current_clocksource":   "tsc\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, rel), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// The command line's verdict against stands on its own, even where the sysfs files
// would vouch for the TSC (which a real kernel so booted would not let them do).
func TestClockVerdictCmdline(t *testing.T) {
	for _, tc := range []struct {
		cmdline string
		tsc     bool
		note    string
	}{
		{"ro quiet", true, chosenTSC},
		{"ro tsc=reliable", true, chosenTSC + "; tsc=reliable on the kernel command line"},
		{"ro tsc=unstable", false, notUsed + "tsc=unstable on the kernel command line" + monotonicTail},
		{"ro notsc", false, notUsed + "notsc on the kernel command line" + monotonicTail},
		// A verdict against wins over tsc=reliable, as in the kernel.
		{"tsc=reliable tsc=unstable notsc tsc=unstable", false, notUsed + "tsc=unstable and notsc on the kernel command line" + monotonicTail},
		// After "--" the parameters are init's; inside quotes, a value's words.
		{"ro -- tsc=unstable", true, chosenTSC},
		{`ro dyndbg="file tsc.c +p tsc=unstable" quiet`, true, chosenTSC},
		{`ro "tsc=unstable"`, false, notUsed + "tsc=unstable on the kernel command line" + monotonicTail},
		// Substrings and other tsc= values do not count.
		{"tsc=unstable2 xnotsc tsc=nowatchdog", true, chosenTSC},
	} {
		tsc, note := clockVerdict(host(t, tc.cmdline), "amd64")
		if tsc != tc.tsc || note != tc.note {
			t.Errorf("%q: got (%v, %q), want (%v, %q)", tc.cmdline, tsc, note, tc.tsc, tc.note)
		}
	}
}

func TestClockVerdictThisArch(t *testing.T) {
	tsc, note := ClockVerdict(fixture("connectx"))
	if runtime.GOARCH == "amd64" {
		if !tsc || note != chosenTSC {
			t.Fatalf("ConnectX host on amd64: got (%v, %q)", tsc, note)
		}
		return
	}
	if tsc || !strings.HasPrefix(note, "no TSC on "+runtime.GOARCH) {
		t.Fatalf("on %s: got (%v, %q)", runtime.GOARCH, tsc, note)
	}
}

func TestForcedTSCNote(t *testing.T) {
	// Where the verdict agrees, the note is the evidence, as under auto.
	for _, root := range []string{"connectx", "kvm-reliable"} {
		_, want := clockVerdict(fixture(root), "amd64")
		if note, ok := forcedTSCNote(fixture(root), "amd64"); !ok || note != want {
			t.Errorf("%s: the verdict agrees: got (%q, %v), want %q", root, note, ok, want)
		}
	}
	for root, want := range map[string]string{
		"kvm":  "TSC forced by --clock tsc although the kernel's current clocksource is kvm-clock, not tsc",
		"qemu": "TSC forced by --clock tsc although CPU lacks constant_tsc, nonstop_tsc; the kernel does not offer tsc as a clocksource (hpet acpi_pm); the kernel's current clocksource is hpet, not tsc",
	} {
		if note, ok := forcedTSCNote(fixture(root), "amd64"); !ok || note != want {
			t.Errorf("%s: got (%q, %v), want %q", root, note, ok, want)
		}
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
