package pairs

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/result"

	"github.com/rdmabench/rdmabench/internal/plaintest"
	"github.com/rdmabench/rdmabench/report"
)

func TestMatrixCells(t *testing.T) {
	rs := []PairResult{
		{A: 0, B: 1, Gbps: 97.5}, {A: 1, B: 2, Gbps: 97.1}, {A: 2, B: 3, Gbps: 96.9},
		{A: 3, B: 0, Gbps: 50}, {A: 0, B: 2, Err: "timeout"}, {A: 1, B: 3, Gbps: 97},
		{A: 9, B: 0, Gbps: 1}, // outside the fleet: left out
	}
	vs := Judge(rs, OutlierOpts{})
	m := Matrix(4, rs, vs, MetricBW)
	if len(m) != 4 || len(m[0]) != 4 {
		t.Fatalf("%d x %d", len(m), len(m[0]))
	}
	for _, c := range []struct {
		a, b int
		want string
	}{
		{0, 0, ""}, {0, 1, "97.5"}, {3, 0, "50.0!"}, {0, 2, "failed!"}, {2, 0, "-"}, {1, 3, "97.0"},
	} {
		if got := m[c.a][c.b].Text(MetricBW); got != c.want {
			t.Errorf("cell %d,%d: %q, want %q", c.a, c.b, got, c.want)
		}
	}
	// After retests, a flaky pair shows "~".
	final := slices.Clone(vs)
	for i := range final {
		if final[i].A == 3 && final[i].B == 0 || final[i].A == 0 && final[i].B == 2 {
			final[i].Bad, final[i].Flaky = false, true
		}
	}
	fm := Matrix(4, rs, final, MetricBW)
	if got := fm[3][0].Text(MetricBW); got != "50.0~" {
		t.Errorf("flaky cell %q", got)
	}
	if got := fm[0][2].Text(MetricBW); got != "failed~" {
		t.Errorf("flaky failure cell %q", got)
	}
	// The latency metric shows none of the bandwidth results, but the failure.
	lm := Matrix(4, rs, vs, MetricLat)
	if lm[0][1].Text(MetricLat) != "-" || lm[0][2].Text(MetricLat) != "failed!" {
		t.Errorf("latency matrix of bandwidth results: %+v", lm)
	}
}

func TestMatrixLatencyAndTiny(t *testing.T) {
	rs := []PairResult{{A: 0, B: 1, LatP50NS: 2150}, {A: 1, B: 0, LatP50NS: 2300}}
	m := Matrix(2, rs, Judge(rs, OutlierOpts{}), MetricLat)
	if got := m[0][1].Text(MetricLat); got != "2.15?" {
		t.Errorf("cannot-tell cell %q", got)
	}
	if got := m[1][0].Text(MetricLat); got != "2.30?" {
		t.Errorf("cannot-tell cell %q", got)
	}
	if m := Matrix(2, rs, nil, "bogus"); m[0][1].Has {
		t.Errorf("unknown metric gave values: %+v", m)
	}
}

func TestWriteMatrix(t *testing.T) {
	rs := []PairResult{
		{A: 0, B: 1, Gbps: 97.5}, {A: 1, B: 2, Gbps: 97.1}, {A: 2, B: 0, Gbps: 40},
	}
	hosts := []string{"node-a", "node-b", "node-c"}
	var b bytes.Buffer
	if err := WriteMatrix(&b, hosts, Matrix(3, rs, Judge(rs, OutlierOpts{}), MetricBW), MetricBW); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	lines := strings.Split(out, "\n")
	for _, want := range []string{"Gb/s: client \\ server", "node-a", "node-c", "97.5", "40.0!", "! bad", "~ flaky", "- not run"} {
		if !strings.Contains(out, want) {
			t.Errorf("matrix lacks %q:\n%s", want, out)
		}
	}
	// Row node-c: 40.0! under node-a, "-" under node-b.
	for _, l := range lines {
		if strings.Contains(l, "node-c") && !strings.Contains(l, "client") {
			f := strings.FieldsFunc(l, func(r rune) bool { return r == '│' || r == '|' })
			for i := range f {
				f[i] = strings.TrimSpace(f[i])
			}
			if len(f) < 4 || f[0] != "node-c" || f[1] != "40.0!" || f[2] != "-" || f[3] != "" {
				t.Errorf("row node-c: %q", f)
			}
		}
	}
	if err := WriteMatrix(&b, hosts[:2], Matrix(3, rs, nil, MetricBW), MetricBW); err == nil {
		t.Error("2 names for 3 hosts: no error")
	}
	if err := WriteMatrix(&b, hosts, Matrix(3, rs, nil, MetricBW), "mpps"); err == nil || !strings.Contains(err.Error(), `metric "mpps"`) {
		t.Errorf("unknown metric: %v", err)
	}
	b.Reset()
	if err := WriteMatrix(&b, hosts, Matrix(3, nil, nil, MetricLat), MetricLat); err != nil || !strings.Contains(b.String(), "p50 us: client \\ server") {
		t.Errorf("%v\n%s", err, b.String())
	}
}

// A results file is a peer's word: ranks outside the fleet are refused, never an index
// out of range or a matrix sized by a forged number.
func TestFromResultsRefusesForgedRanks(t *testing.T) {
	for _, p := range [][2]int{{-1, 0}, {0, -1}, {0, MaxMembers}, {60000, 1}, {2, 2}} {
		rs := []result.Result{{Fleet: &result.FleetPair{A: p[0], B: p[1]}, BWGbps: 1}}
		if _, err := FromResults(rs, OutlierOpts{}); err == nil || !strings.Contains(err.Error(), "ranks run from 0") {
			t.Errorf("pair %d -> %d: want a refusal naming the ranks, got %v", p[0], p[1], err)
		}
	}
	rs := []result.Result{{Fleet: &result.FleetPair{A: 0, B: MaxMembers - 1}, BWGbps: 1}}
	if out, err := FromResults(rs, OutlierOpts{}); err != nil || len(out.Hosts) != MaxMembers {
		t.Errorf("the highest rank is a member: %d hosts, %v", len(out.Hosts), err)
	}
}

// A results file's host names reach the matrix, check's and html's lines cleaned and
// cut (finding 5 of the hostile-peers review).
func TestFromResultsCleansHosts(t *testing.T) {
	long := strings.Repeat("A", 100_000)
	out, err := FromResults([]result.Result{{Config: result.Config{Op: "write", Test: result.BW}, BWGbps: 1,
		Fleet: &result.FleetPair{A: 0, B: 1, HostA: "\x1b[2J\rforged\n", HostB: long}}}, OutlierOpts{})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range out.Hosts {
		if strings.ContainsAny(h, "\x1b\r\n") || len(h) > 200 {
			t.Fatalf("host %q (%d bytes)", h[:min(len(h), 40)], len(h))
		}
	}
}

// --format plain: one header line (the unit, then the servers), a line per client.
func TestWriteMatrixPlain(t *testing.T) {
	rs := []PairResult{{A: 0, B: 1, Gbps: 97.5}, {A: 1, B: 2, Gbps: 97.1}, {A: 2, B: 0, Gbps: 40}}
	var b bytes.Buffer
	if err := WriteMatrixFormat(&b, []string{"node-a", "node-b", "node-c"}, Matrix(3, rs, Judge(rs, OutlierOpts{}), MetricBW), MetricBW, report.FormatPlain); err != nil {
		t.Fatal(err)
	}
	rows := plaintest.Rows(t, b.String(), `gbps_client\server node-a node-b node-c`, 3)
	if c := rows[2]; c[0] != "node-c" || c[1] != "40.0!" || c[2] != "-" {
		t.Errorf("row node-c: %q", c)
	}
	if !strings.Contains(b.String(), "\nlegend: ! bad,") {
		t.Errorf("legend:\n%s", b.String())
	}
}
