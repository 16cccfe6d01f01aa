package report

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/host"
	"github.com/rdmabench/rdmabench/internal/plaintest"
	"github.com/rdmabench/rdmabench/result"
)

// The test bed's hosts: a virtual clock (VM_CLOCK=virtual) and the host's (VM_CLOCK=real).
var (
	virtualHost = facts("rxe", "rxe0")
	realBedHost = facts("bed-real", "")
)

// onVirtual is r measured in the virtual-clock bed; onReal in the real-clock one.
func onVirtual(r result.Result) result.Result { return withHosts(r, virtualHost, virtualHost) }
func onReal(r result.Result) result.Result    { return withHosts(r, realBedHost, realBedHost) }

func TestFixturesClocks(t *testing.T) {
	if !virtualHost.VirtualClock() || realBedHost.ClockDomain != host.ClockReal {
		t.Fatalf("fixtures: %q, %q", virtualHost.ClockDomain, realBedHost.ClockDomain)
	}
}

// A results table says once that virtual time is not a NIC's: first above a boxed
// table (and perftest's columns), last under a plain one; a table of results on a real
// clock, or of unknown clock, says nothing of it.
func TestShowSaysVirtualTime(t *testing.T) {
	lat := onVirtual(res("write", 8, 0, 4000))
	lat.Config.Test = result.Lat
	virtual := []result.Result{onVirtual(res("write", 65536, 10, 1000)), res("write", 4096, 4, 600), lat}
	for _, f := range []Format{FormatTable, FormatPlain, FormatPerftest} {
		var out bytes.Buffer
		if err := Show(&out, virtual, f, false); err != nil {
			t.Fatal(err)
		}
		s := out.String()
		lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
		if n := strings.Count(s, VirtualTime); n != 1 {
			t.Errorf("%s: said %d times:\n%s", f, n, s)
		}
		at := lines[0]
		if f == FormatPlain {
			at = lines[len(lines)-1]
		}
		if at != VirtualTime {
			t.Errorf("%s: not where it belongs:\n%s", f, s)
		}
		if f == FormatPlain {
			plaintest.Rows(t, s, "op bytes qps tx_depth post_list cq_mod offset msgs gbps peak_gbps mibps mpps p50_us p99_us nic note", 2)
		}
		for _, rs := range [][]result.Result{{onReal(res("write", 65536, 10, 1000))}, {res("write", 65536, 10, 1000)}} {
			out.Reset()
			if err := Show(&out, rs, f, false); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(out.String(), "virtual") {
				t.Errorf("%s: a real clock's table speaks of virtual time:\n%s", f, out.String())
			}
		}
	}
}

// The tuned report (sweep's table, report show of tuned.json) knows its clock from its
// devices' host facts.
func TestTunedSaysVirtualTime(t *testing.T) {
	tu := tunedFixture(t)
	tu.Client.HostFacts, tu.Server.HostFacts = virtualHost, virtualHost
	for _, f := range []Format{FormatTable, FormatPlain} {
		var out bytes.Buffer
		if err := TunedShow(&out, tu, f); err != nil {
			t.Fatal(err)
		}
		s := out.String()
		if strings.Count(s, VirtualTime) != 1 {
			t.Errorf("%s: not once:\n%s", f, s)
		}
		if f == FormatTable && !strings.HasPrefix(s, VirtualTime+"\nTuned parameters for ") {
			t.Errorf("table: not first:\n%s", s)
		}
		if f == FormatPlain && !strings.HasSuffix(s, "\ntuned: parameters for ConnectX-5 (profile cx5), objective bw\n"+VirtualTime+"\n") {
			t.Errorf("plain: not last:\n%s", s)
		}
	}
	tu.Client.HostFacts, tu.Server.HostFacts = realBedHost, nil
	var out bytes.Buffer
	if err := TunedShow(&out, tu, FormatTable); err != nil || strings.Contains(out.String(), "virtual") {
		t.Errorf("a real clock: %v\n%s", err, out.String())
	}
}

// report compare does not compare a virtual clock's results with a real (or unknown)
// clock's: the changes say why, a line under the table says which run was measured on
// which clock, and the report starts with VirtualTime.
func TestCompareRefusesAcrossClocks(t *testing.T) {
	a := []result.Result{onVirtual(res("write", 65536, 10, 1000)), onVirtual(res("write", 4096, 4, 600))}
	b := []result.Result{onReal(res("write", 65536, 11, 900))}
	c := []result.Result{onVirtual(res("write", 65536, 9, 1100))}
	s := compare(t, a, b, c)
	if !strings.HasPrefix(s, VirtualTime+"\n") || strings.Count(s, VirtualTime) != 1 {
		t.Errorf("VirtualTime first, once:\n%s", s)
	}
	row := keyRow(t, s, key64K)
	if row[3] != "11.000 ("+notComparableClock+")" || row[4] != "0.90 (not comparable)" {
		t.Errorf("a vs b, across clocks: %q\n%s", row, s)
	}
	if row[5] != "9.000 (-10.0%)" || row[6] != "1.10 (+10.0%)" {
		t.Errorf("a vs c, both virtual: %q\n%s", row, s)
	}
	want := "clock: a vs b: not comparable: a was measured on a virtual clock (qemu icount), b on a real or unknown clock; no change between them is shown"
	var clock []string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, "clock: ") {
			clock = append(clock, l)
		}
	}
	if !reflect.DeepEqual(clock, []string{want}) {
		t.Errorf("clock lines %q, want %q", clock, want)
	}
	if !strings.Contains(s, "host: client, a vs b: clock_domain: virtual (qemu icount) vs real (qemu TCG, host clock)\n") {
		t.Errorf("the hosts' clocks differ:\n%s", s)
	}

	// Plain: the same, one word a cell; VirtualTime last.
	var out bytes.Buffer
	if err := CompareShow(&out, []string{"a", "b"}, [][]result.Result{b, a}, FormatPlain); err != nil {
		t.Fatal(err)
	}
	p := out.String()
	rows := plaintest.Rows(t, p, "configuration a_gbps a_p99_us b_gbps b_gbps_change b_p99_us b_p99_change", 2)
	for _, r := range rows {
		if r[0] == strings.ReplaceAll(key64K, " ", "_") && (r[4] != "not_comparable:_clock_domain_differs" || r[6] != "not_comparable") {
			t.Errorf("plain row %q\n%s", r, p)
		}
	}
	if !strings.HasSuffix(p, "\n"+VirtualTime+"\n") || !strings.Contains(p, "\nclock: a vs b: not comparable: a was measured on a real or unknown clock, b on a virtual clock (qemu icount); ") {
		t.Errorf("plain:\n%s", p)
	}

	// Results of unknown clock (a real machine, an older rdmabench) against the real
	// bed's: no virtual time, nothing refused.
	s = compare(t, []result.Result{res("write", 65536, 10, 1000)}, b)
	if strings.Contains(s, "virtual") || strings.Contains(s, "clock:") || keyRow(t, s, key64K)[3] != "11.000 (+10.0%)" {
		t.Errorf("no virtual clock:\n%s", s)
	}
}

// report check does not gate a virtual clock's result on a real clock's baseline, or
// the other way round: it fails, saying why, whatever the numbers (a pass would vouch
// for a number that is no NIC's; a regression is no regression).
func TestCheckRefusesABaselineOnAnotherClock(t *testing.T) {
	for _, c := range []struct {
		name    string
		r, b    result.Result
		why     string
		virtual bool
	}{
		{"virtual against real, would pass", onVirtual(res("write", 65536, 10, 1000)), onReal(res("write", 65536, 10, 1000)),
			"not comparable: this result was measured on a virtual clock (qemu icount), the baseline on a real or unknown clock", true},
		{"virtual against unknown, would regress", onVirtual(res("write", 65536, 1, 9000)), res("write", 65536, 10, 1000),
			"not comparable: this result was measured on a virtual clock (qemu icount), the baseline on a real or unknown clock", true},
		{"real against virtual", onReal(res("write", 65536, 10, 1000)), onVirtual(res("write", 65536, 10, 1000)),
			"not comparable: this result was measured on a real or unknown clock, the baseline on a virtual clock (qemu icount)", true},
	} {
		fails, notes := Check([]result.Result{c.r}, Thresholds{Baseline: []result.Result{c.b}, Tolerance: 0.05})
		want := key64K + ": " + c.why + "; check it against a baseline measured on the same clock"
		if !reflect.DeepEqual(fails, []string{want}) {
			t.Errorf("%s: fails %q, want %q", c.name, fails, want)
		}
		if !reflect.DeepEqual(notes, []string{VirtualTime}) {
			t.Errorf("%s: notes %q", c.name, notes)
		}
	}
	// Both on the virtual clock: the numbers are checked as ever.
	fails, notes := Check([]result.Result{onVirtual(res("write", 65536, 8, 1000))}, Thresholds{Baseline: []result.Result{onVirtual(res("write", 65536, 10, 1000))}, Tolerance: 0.05})
	if len(fails) != 1 || !strings.Contains(fails[0], "bandwidth regressed -20.0% against the baseline") || !reflect.DeepEqual(notes, []string{VirtualTime}) {
		t.Errorf("both virtual: %q %q", fails, notes)
	}
	// Both real (the bed's real clock against a machine's, unknown): checked, no note.
	fails, notes = Check([]result.Result{onReal(res("write", 65536, 10, 1000))}, Thresholds{Baseline: []result.Result{res("write", 65536, 10, 1000)}, Tolerance: 0.05})
	if fails != nil || notes != nil {
		t.Errorf("both real: %q %q", fails, notes)
	}
}

// Inputs of the same file name are labelled by the shortest ends of their paths that
// tell them apart; others by their file names.
func TestLabels(t *testing.T) {
	for _, c := range []struct{ in, want []string }{
		{[]string{"out/a/sweep.ndjson", "out/b/sweep.ndjson"}, []string{"a/sweep.ndjson", "b/sweep.ndjson"}},
		{[]string{"x/a.json", "y/b.json"}, []string{"a.json", "b.json"}},
		{[]string{"x/a/s.json", "y/a/s.json", "z/b/s.json", "t.json"}, []string{"x/a/s.json", "y/a/s.json", "b/s.json", "t.json"}},
		{[]string{"a/s.json", "s.json"}, []string{"a/s.json", "s.json"}},
		{[]string{"./a//s.json", "/tmp/a/s.json"}, []string{"a/s.json", "tmp/a/s.json"}},
		{[]string{"s.json", "s.json", "s.json"}, []string{"s.json", "s.json (2)", "s.json (3)"}},
	} {
		if got := Labels(c.in); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q: %q, want %q", c.in, got, c.want)
		}
	}
}
