package htmlreport

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/result"
)

// A fleet's stream becomes a coloured host x host table: the slow host's pairs red
// (bad in the retest too), hosts from the file escaped.
func TestFleetMatrixSection(t *testing.T) {
	hosts := []string{"a:1", "b:1", "c:1", `<b>d</b>:1`}
	var rs []result.Result
	add := func(a, b, retest int, gbps float64) {
		rs = append(rs, result.Result{SchemaVersion: result.SchemaVersion, Config: result.Config{Op: "write", Test: result.BW, MsgSizeBytes: 65536},
			Iterations: 100, Bytes: 100 * 65536, DurationNS: 1e6, BWGbps: gbps, Client: result.Device{Name: "mlx5_0"},
			Fleet: &result.FleetPair{Pattern: "pairwise", Round: map[bool]int{true: -1, false: 0}[retest > 0], Retest: retest, A: a, B: b, HostA: hosts[a], HostB: hosts[b]}})
	}
	for a := range 4 {
		for b := a + 1; b < 4; b++ {
			g := 90.0
			if b == 3 {
				g = 20
			}
			add(a, b, 0, g)
		}
	}
	for a := range 3 {
		add(a, 3, 1, 21)
	}
	var nd bytes.Buffer
	for _, r := range rs {
		result.NewNDJSONEncoder(&nd).Encode(r)
	}
	ss, err := Build([]File{{Path: "fleet.ndjson", Data: nd.Bytes()}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var pg bytes.Buffer
	if err := Write(&pg, ss, Options{}); err != nil {
		t.Fatal(err)
	}
	page := pg.String()
	for _, want := range []string{`id="fleet"`, "6 pairs (3 retests), 3 bad", `<td class="bad">20.0!</td>`, `<td class="num">90.0</td>`, "&lt;b&gt;d&lt;/b&gt;:1"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(page, "<b>d</b>") {
		t.Error("a host name from the file is not escaped")
	}
	checkSelfContained(t, page)
}
