package report

import (
	"bytes"
	"encoding/csv"
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/counters"
	"github.com/rdmabench/rdmabench/result"
)

func ptr(v int64) *int64 { return &v }

// res is a bandwidth result with a supported p99.
func res(op string, size int, bw float64, p99 int64) result.Result {
	r := result.Result{SchemaVersion: result.SchemaVersion, Config: result.Config{Op: op, Test: result.BW, MsgSizeBytes: size, SQDepth: 128, PostList: 1, CQMod: 100, NumQPs: 1}, Iterations: 100000}
	r.BWGbps, r.Lat = bw, result.Latency{Samples: 1000, Min: 1000, Max: 2 * p99, Mean: 1500, P50: ptr(p99 / 2), P99: ptr(p99)}
	r.Client.RateGbps = 100
	return r
}

// noP99 is res at perftest's defaults: 5000 WRs at cq-mod 100, 50 signalled, no p99.
func noP99(op string, size int, bw float64) result.Result {
	r := res(op, size, bw, 0)
	r.Iterations, r.Lat = 5000, result.Latency{Samples: 50, Min: 1000, Max: 9000, Mean: 2000, P50: ptr(1800)}
	return r
}

func TestCheckThresholds(t *testing.T) {
	rs := []result.Result{res("write", 65536, 90, 5000), res("read", 65536, 40, 9000)}
	if f, _ := Check(rs, Thresholds{MinBWGbps: 30, MaxP99: 10 * time.Microsecond}); len(f) != 0 {
		t.Fatalf("want pass, got %v", f)
	}
	f, _ := Check(rs, Thresholds{MinLinkFraction: 0.5, MaxP99: 8 * time.Microsecond})
	if len(f) != 2 || !strings.Contains(f[0], "read") && !strings.Contains(f[1], "40.0% of the 100 Gb/s link") {
		t.Fatalf("want 2 failures (read below half the link, read p99), got %v", f)
	}
	for _, line := range f {
		if !strings.HasPrefix(line, "read bw 64K") {
			t.Errorf("each failure names its configuration: %q", line)
		}
	}
}

// A record that measured nothing and says no error is no pass: {"schema_version":3}
// alone used to pass every threshold.
func TestCheckRefusesWhatMeasuredNothing(t *testing.T) {
	empty := result.Result{SchemaVersion: result.SchemaVersion}
	zero := res("write", 65536, 0, 5000)
	zero.Iterations = 0
	for _, r := range []result.Result{empty, zero} {
		if f, _ := Check([]result.Result{r}, Thresholds{NoTaint: true, MinMsgRateMpps: 5}); len(f) != 1 || !strings.Contains(f[0], "not a measurement") {
			t.Errorf("%+v: want one failure saying it is not a measurement, got %v", r.Config, f)
		}
	}
}

func TestCheckBaselineRegression(t *testing.T) {
	base := []result.Result{res("write", 65536, 90, 5000)}
	if f, _ := Check([]result.Result{res("write", 65536, 87, 5100)}, Thresholds{Baseline: base, Tolerance: 0.05}); len(f) != 0 {
		t.Fatalf("within 5%%: %v", f)
	}
	f, _ := Check([]result.Result{res("write", 65536, 80, 6000)}, Thresholds{Baseline: base, Tolerance: 0.05})
	if len(f) != 2 || !strings.Contains(f[0], "bandwidth regressed -11.1%") || !strings.Contains(f[1], "p99 latency regressed +20.0%") {
		t.Fatalf("got %v", f)
	}
	if f, _ := Check([]result.Result{res("write", 4096, 80, 6000)}, Thresholds{Baseline: base}); len(f) != 1 || !strings.Contains(f[0], "no baseline") {
		t.Fatalf("got %v", f)
	}
}

func TestCompareAlignsByConfiguration(t *testing.T) {
	a := []result.Result{res("write", 65536, 50, 1000), res("write", 4096, 10, 500)}
	b := []result.Result{res("write", 65536, 75, 800), res("read", 65536, 40, 900)}
	var out bytes.Buffer
	if err := Compare(&out, []string{"cx5", "cx6"}, [][]result.Result{a, b}); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{"75.000 (+50.0%)", "0.80 (-20.0%)", "read bw 64K"} {
		if !strings.Contains(s, want) {
			t.Errorf("compare output lacks %q:\n%s", want, s)
		}
	}
}

func TestCSVHeaderMatchesRows(t *testing.T) {
	var out bytes.Buffer
	if err := result.WriteCSV(&out, []result.Result{res("write", 64, 1, 1)}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || strings.Count(lines[0], ",") != strings.Count(lines[1], ",") {
		t.Fatalf("header and row differ in columns:\n%s", out.String())
	}
}

func TestCheckMaxP99NeedsASupportedP99(t *testing.T) {
	f, _ := Check([]result.Result{noP99("write", 65536, 90)}, Thresholds{MaxP99: time.Hour})
	if len(f) != 1 || !strings.Contains(f[0], "cannot check --max-p99: p99 not supported by 50 samples; run with at least 1000 samples") {
		t.Fatalf("a max-p99 bound on a result without a p99 must fail, saying why: %v", f)
	}
}

func TestCheckBaselineP99NeedsBothSides(t *testing.T) {
	th := Thresholds{Baseline: []result.Result{res("write", 65536, 90, 5000)}, Tolerance: 0.05}
	f, _ := Check([]result.Result{noP99("write", 65536, 90)}, th)
	if len(f) != 1 || !strings.Contains(f[0], "cannot compare p99 with the baseline's 5.00 us: p99 not supported by 50 samples") {
		t.Fatalf("a result that lost its baseline's p99 fails: %v", f)
	}
	th.Baseline = []result.Result{noP99("write", 65536, 90)}
	f, notes := Check([]result.Result{res("write", 65536, 90, 50000)}, th)
	if len(f) != 0 || len(notes) != 1 || !strings.Contains(notes[0], "cannot compare p99 with the baseline: its p99 not supported by 50 samples") {
		t.Fatalf("a baseline without a p99 is said, not failed: %v %v", f, notes)
	}
}

func TestTableShowsUnsupportedPercentilesAndErrors(t *testing.T) {
	failed := res("read", 4096, 0, 0)
	failed.Iterations, failed.Lat, failed.Error = 0, result.Latency{}, "ibv_post_send: Cannot allocate memory\nand more"
	lat := result.Result{SchemaVersion: result.SchemaVersion, Config: result.Config{Op: "write", Test: result.Lat, MsgSizeBytes: 2},
		Lat: result.Latency{Samples: 1000, Min: 1000, Max: 9000, Mean: 2000, Stdev: 10, P50: ptr(1900), P90: ptr(2500), P99: ptr(7000)}}
	var out bytes.Buffer
	if err := Table(&out, []result.Result{noP99("write", 65536, 90), failed, lat}); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	row := func(prefix string) string { return row(t, s, prefix) }
	// bw: op bytes setup msgs Gb/s peak Mpps p50 p99 note
	if c := cells(row("│ write │ 65536")); c[7] != "1.80" || c[8] != "-" || c[5] != "-" {
		t.Errorf("50 samples: p50 shown, p99 '-': %q", c)
	}
	if c := cells(row("│ read  │ 4096")); c[4] != "-" || c[7] != "-" || c[8] != "-" || c[9] != "ERROR (below)" {
		t.Errorf("a failed run that completed nothing shows '-' and says it failed: %q", c)
	}
	if !strings.Contains(s, "error: read bw 4K qps=1 depth=128 post=1 cqmod=100 off=0 inline=0: ibv_post_send: Cannot allocate memory; and more\n") {
		t.Errorf("the error is written under the table:\n%s", s)
	}
	// lat: ... p90 p99 p99.9 p99.99
	if c := cells(row("│ write │ 2")); c[7] != "2.50" || c[8] != "7.00" || c[9] != "-" || c[10] != "-" {
		t.Errorf("1000 samples: p99 shown, p99.9 and p99.99 '-': %q", c)
	}
}

// row finds the table row that starts with prefix.
func row(t *testing.T, table, prefix string) string {
	t.Helper()
	for _, l := range strings.Split(table, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	t.Fatalf("no row %q in:\n%s", prefix, table)
	return ""
}

// cells splits a table row into its trimmed cells.
func cells(row string) []string {
	var c []string
	for _, f := range strings.Split(row, "│")[1:] {
		c = append(c, strings.TrimSpace(f))
	}
	return c[:len(c)-1]
}

func TestCSVLeavesUnsupportedPercentilesEmpty(t *testing.T) {
	var out bytes.Buffer
	if err := result.WriteCSV(&out, []result.Result{noP99("write", 65536, 90)}); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&out).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]string{}
	for i, h := range rows[0] {
		col[h] = rows[1][i]
	}
	if col["lat_p50_ns"] != "1800" || col["lat_p90_ns"] != "" || col["lat_p99_ns"] != "" || col["lat_max_ns"] != "9000" {
		t.Fatalf("p50 1800, p90 and p99 empty, max 9000: %v", col)
	}
}

func TestCompareNeedsBothP99s(t *testing.T) {
	a := []result.Result{noP99("write", 65536, 50)}
	b := []result.Result{res("write", 65536, 75, 800)}
	var out bytes.Buffer
	if err := Compare(&out, []string{"a", "b"}, [][]result.Result{a, b}); err != nil {
		t.Fatal(err)
	}
	c := cells(row(t, out.String(), "│ write bw 64K"))
	if c[2] != "-" || c[4] != "0.80 (n/a)" {
		t.Errorf("a p99 only where supported, a p99 change only against one: %q", c)
	}
}

// A tainted result: the note says so, its flags are written under the table,
// and check --no-taint fails it.
func TestTaintedResults(t *testing.T) {
	r := noP99("write", 65536, 90)
	d := uint64(4)
	r.Tainted = true
	r.Counters = &result.Counters{Local: &counters.Deltas{Device: "rxe1", Port: 1}}
	r.CountersFlags = []counters.Flag{{Counter: "rcvd_seq_err", Scope: counters.HWPort, Side: "remote", Class: counters.Error, Unit: counters.Count, Status: counters.OK, Delta: &d}}
	clean := noP99("read", 65536, 90)
	clean.Counters = &result.Counters{Local: &counters.Deltas{Device: "rxe1", Port: 1}}
	var out bytes.Buffer
	if err := Table(&out, []result.Result{r, clean}); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	if c := cells(row(t, s, "│ write │ 65536")); c[9] != "TAINTED (1)" {
		t.Errorf("note %q", c[9])
	}
	if c := cells(row(t, s, "│ read  │ 65536")); c[9] != "" {
		t.Errorf("note %q", c[9])
	}
	if !strings.Contains(s, "tainted: write bw 64K") || !strings.Contains(s, "remote error counter rcvd_seq_err (hw_port) +4") {
		t.Errorf("the flags go under the table:\n%s", s)
	}
	fails, _ := Check([]result.Result{r, clean}, Thresholds{NoTaint: true})
	if len(fails) != 1 || !strings.Contains(fails[0], "tainted: remote error counter rcvd_seq_err") {
		t.Errorf("--no-taint: %q", fails)
	}
	if fails, _ := Check([]result.Result{r}, Thresholds{}); len(fails) != 0 {
		t.Errorf("without --no-taint a tainted result passes: %q", fails)
	}
}

// Congestion is shown, not tainting; pause frames make a run "paused", never clean;
// only the flags that taint are counted and listed as tainted; a note says the
// counters are port-wide.
func TestCongestionAndPauseResults(t *testing.T) {
	n := func(v uint64) *uint64 { return &v }
	rate := 600.0
	cnp := counters.Flag{Counter: "np_cnp_sent", Scope: counters.HWPort, Side: "local", Class: counters.Congestion, Unit: counters.Count, Status: counters.OK, Delta: n(1200), PerMillionPkts: &rate}
	txPause := counters.Flag{Counter: "tx_prio3_pause", Scope: counters.Ethtool, Side: "remote", Class: counters.Pause, Unit: counters.Count, Status: counters.OK, Delta: n(7)}
	rxPause := counters.Flag{Counter: "rx_prio3_pause", Scope: counters.Ethtool, Side: "local", Class: counters.Pause, Unit: counters.Count, Status: counters.OK, Delta: n(9), Taints: true}
	mk := func(size int, paused, tainted bool, flags ...counters.Flag) result.Result {
		r := noP99("write", size, 90)
		r.Counters = &result.Counters{Local: &counters.Deltas{Device: "mlx5_0", Port: 1}}
		r.CountersFlags, r.Paused, r.Tainted = flags, paused, tainted
		return r
	}
	rs := []result.Result{mk(4096, false, false, cnp), mk(8192, true, false, cnp, txPause), mk(16384, true, true, cnp, txPause, rxPause)}
	var out bytes.Buffer
	if err := Table(&out, rs); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for size, want := range map[string]string{"4096 ": "", "8192 ": "paused", "16384": "TAINTED (1)"} {
		if c := cells(row(t, s, "│ write │ "+size)); c[9] != want {
			t.Errorf("%s: note %q, want %q", size, c[9], want)
		}
	}
	for _, want := range []string{
		"congestion: write bw 4K qps=1 depth=128 post=1 cqmod=100 off=0 inline=0: local congestion counter np_cnp_sent (hw_port) +1200 (600 per million packets)\n",
		"congestion: write bw 8K qps=1 depth=128 post=1 cqmod=100 off=0 inline=0: local congestion counter np_cnp_sent (hw_port) +1200 (600 per million packets), remote pause counter tx_prio3_pause (ethtool) +7\n",
		"tainted: write bw 16K qps=1 depth=128 post=1 cqmod=100 off=0 inline=0: local pause counter rx_prio3_pause (ethtool) +9\n",
		"note: NIC counters are port-wide: other traffic on either port moves them too\n",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("want %q under the table:\n%s", want, s)
		}
	}
	fails, _ := Check(rs, Thresholds{NoTaint: true})
	if len(fails) != 1 || !strings.Contains(fails[0], "tainted: local pause counter rx_prio3_pause (ethtool) +9") || strings.Contains(fails[0], "np_cnp_sent") {
		t.Errorf("--no-taint: %q", fails)
	}
}
