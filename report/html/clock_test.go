package htmlreport

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/host"
	"github.com/rdmabench/rdmabench/report"
	"github.com/rdmabench/rdmabench/result"
)

// clockRuns is an NDJSON stream of two 64K WRITE runs whose hosts keep the clock domain
// (facts: "" is none read), for page tests.
func clockRuns(t *testing.T, domain string, gbps float64) []byte {
	t.Helper()
	var rs []result.Result
	for _, g := range []float64{gbps, gbps * 1.01} {
		r := result.Result{SchemaVersion: result.SchemaVersion, Config: result.Config{Op: "write", Test: result.BW, MsgSizeBytes: 65536, DurationS: 2,
			SQDepth: 128, CQMod: 100, PostList: 1, NumQPs: 1}}
		r.SetThroughput(uint64(g*1e9/8*2/65536), 65536, 2_000_000_000)
		if domain != "" {
			r.Client.HostFacts = &host.Facts{Device: "rxe0", ClockDomain: domain}
		}
		rs = append(rs, r)
	}
	var buf bytes.Buffer
	if err := result.WriteAll(result.NewNDJSONEncoder(&buf), rs); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func pageOf(t *testing.T, files ...File) ([]*Series, string) {
	t.Helper()
	ss, err := Build(files, nil)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := Write(&buf, ss, Options{}); err != nil {
		t.Fatal(err)
	}
	return ss, buf.String()
}

// A page with results measured on a virtual clock says so once, in a banner above
// everything else, and names the series where not all were; it draws no change between
// a virtual clock's series and a real one's.
func TestPageSaysVirtualTime(t *testing.T) {
	const said = "virtual time: figures describe Soft-RoCE&#39;s CPU path at a fixed instruction rate, not a NIC or this host&#39;s speed."
	_, pg := pageOf(t, File{Path: "v.ndjson", Data: clockRuns(t, host.ClockVirtual, 10)}, File{Path: "w.ndjson", Data: clockRuns(t, host.ClockVirtual, 12)})
	if strings.Count(pg, said) != 1 || !strings.Contains(pg, `<div class="virtual" id="virtual-time" role="note">`) {
		t.Errorf("no banner, or more than one:\n%s", pg)
	}
	if i, j := strings.Index(pg, said), strings.Index(pg, `<nav>`); i < 0 || i > j {
		t.Error("the banner belongs above the contents")
	}
	if strings.Contains(pg, "Measured on a virtual clock") || strings.Contains(pg, "not comparable: v.ndjson") {
		t.Error("every series is virtual: nothing to name, and the comparison stands")
	}
	if !strings.Contains(pg, "&#43;20.0%") {
		t.Error("two virtual series are compared")
	}

	ss, pg := pageOf(t, File{Path: "v.ndjson", Data: clockRuns(t, host.ClockVirtual, 10)}, File{Path: "r.ndjson", Data: clockRuns(t, host.ClockReal, 12)},
		File{Path: "m.ndjson", Data: clockRuns(t, "", 12)})
	if strings.Count(pg, said) != 1 || !strings.Contains(pg, "Measured on a virtual clock (qemu icount): v.ndjson. The other inputs were measured on a real or unknown clock: the two are not comparable.") {
		t.Errorf("the banner must name the virtual series:\n%s", pg)
	}
	for _, b := range []string{"r.ndjson", "m.ndjson"} {
		if !strings.Contains(pg, b+" against v.ndjson: not comparable: "+b+" was measured on a real or unknown clock, v.ndjson on a virtual clock (qemu icount): no change is shown.") {
			t.Errorf("%s against v.ndjson: no refusal", b)
		}
	}
	if strings.Contains(pg, "20.0%") {
		t.Error("the page has a change between clocks")
	}
	n, _ := Charts(ss)
	checkSVGs(t, pg, n)

	// No virtual clock: no banner.
	if _, pg := pageOf(t, File{Path: "r.ndjson", Data: clockRuns(t, host.ClockReal, 10)}, File{Path: "m.ndjson", Data: clockRuns(t, "", 12)}); strings.Contains(pg, "virtual time") || strings.Contains(pg, `class="virtual"`) {
		t.Error("a page of real clocks speaks of virtual time")
	}

	// A tuned report alone knows its clock from its devices.
	tu, ok, err := report.ReadTuned(readFiles(t, "demo4-tuned.json")[0].Data)
	if !ok || err != nil {
		t.Fatal(ok, err)
	}
	tu.Client.HostFacts = &host.Facts{ClockDomain: host.ClockVirtual}
	var buf bytes.Buffer
	if err := report.WriteTunedJSON(&buf, tu); err != nil {
		t.Fatal(err)
	}
	if _, pg := pageOf(t, File{Path: "tuned.json", Data: buf.Bytes()}); strings.Count(pg, said) != 1 {
		t.Error("a virtual tuned report: no banner")
	}
}

// Two inputs of the same file name are told apart by their paths.
func TestSameFileNamesGetDistinctLabels(t *testing.T) {
	ss, _ := pageOf(t, File{Path: "out/a/sweep.ndjson", Data: clockRuns(t, "", 10)}, File{Path: "out/b/sweep.ndjson", Data: clockRuns(t, "", 12)},
		File{Path: "out/c/other.ndjson", Data: clockRuns(t, "", 12)})
	if got := strings.Join(names(ss), ","); got != "a/sweep.ndjson,b/sweep.ndjson,other.ndjson" {
		t.Errorf("labels %s", got)
	}
}
