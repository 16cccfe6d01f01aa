package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/counters"
	"github.com/rdmabench/rdmabench/internal/plaintest"
	"github.com/rdmabench/rdmabench/profiles"
	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/sweep"
)

// Plain: one header line and a line per result, each cell one word, so that awk's
// fields are the columns, whatever the notes and the NIC verdict say.
func TestPlainIsAwkable(t *testing.T) {
	tainted := noP99("write", 65536, 90)
	tainted.Tainted = true
	tainted.Counters = &result.Counters{Local: &counters.Deltas{Device: "rxe1", Port: 1}}
	tainted.CountersFlags = []counters.Flag{{Counter: "rcvd_seq_err"}}
	tainted.Interrupted = true
	peaked := res("read", 4096, 40, 5000)
	peaked.Intervals = &result.Intervals{Count: 3, MinBWGbps: 38, MaxBWGbps: 41.5, IntervalNS: 1e9}
	lat := result.Result{Config: result.Config{Op: "write", Test: result.Lat, MsgSizeBytes: 2},
		Lat: result.Latency{Samples: 1000, Min: 1000, Max: 9000, Mean: 2000, Stdev: 10, P50: ptr(1900), P90: ptr(2500), P99: ptr(7000)}}
	var out bytes.Buffer
	if err := Plain(&out, []result.Result{tainted, peaked, lat}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out.String(), "\n")
	head := strings.Fields(lines[0])
	col := map[string]int{}
	for i, h := range head {
		col[h] = i
	}
	for _, l := range lines[1:3] {
		if f := strings.Fields(l); len(f) != len(head) {
			t.Fatalf("%d fields, header has %d:\n%s", len(f), len(head), out.String())
		}
	}
	w, r := strings.Fields(lines[1]), strings.Fields(lines[2])
	if w[col["gbps"]] != "90.000" || w[col["peak_gbps"]] != "-" || w[col["nic"]] != "TAINTED_(1)" || w[col["note"]] != "interrupted" ||
		w[col["p99_us"]] != "-" || w[col["bytes"]] != "65536" {
		t.Errorf("write row: %q", w)
	}
	if r[col["peak_gbps"]] != "41.500" || r[col["tx_depth"]] != "128" {
		t.Errorf("read row: %q", r)
	}
	if strings.ContainsAny(out.String(), "│┌─") {
		t.Errorf("box drawing in plain output:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "peak: the best full --interval of 1 s after the ramp") {
		t.Errorf("no word on what the peak is:\n%s", out.String())
	}
	latHead := -1
	for i, l := range lines {
		if strings.HasPrefix(l, "op bytes samples") {
			latHead = i
		}
	}
	if latHead < 0 || strings.Fields(lines[latHead+1])[8] != "7.00" {
		t.Errorf("latency table:\n%s", out.String())
	}
}

// Perftest's BW columns are MB/sec of 2^20 bytes, converted from rdmabench's Gb/s of
// 10^9 bits, by hand: 0.192937984 Gb/s (368 x 64 KiB a second) is 23.00 MB/sec, its
// peak of twice that 46.00 (with 10^6-byte MB: 24.12 and 48.23).
func TestPerftestColumnsMiB(t *testing.T) {
	r := res("write", 65536, 0.192937984, 368)
	r.MsgRateMpps = 0.000368
	r.Intervals = &result.Intervals{Count: 3, MaxBWGbps: 2 * 0.192937984, IntervalNS: 1e9}
	var out bytes.Buffer
	Perftest(&out, []result.Result{r}, false)
	if f := strings.Fields(strings.Split(out.String(), "\n")[2]); len(f) != 5 || f[2] != "46.00" || f[3] != "23.00" || f[4] != "0.000368" {
		t.Errorf("MB/sec row %q:\n%s", f, out.String())
	}
	out.Reset()
	Perftest(&out, []result.Result{r}, true)
	if f := strings.Fields(strings.Split(out.String(), "\n")[2]); len(f) != 5 || f[2] != "0.39" || f[3] != "0.19" {
		t.Errorf("Gb/sec row %q:\n%s", f, out.String())
	}
}

// Perftest: perftest's columns; the peak is "-" without --interval, never a number the
// samples do not support; --report_gbits switches the unit.
func TestPerftestColumns(t *testing.T) {
	plain := res("write", 65536, 8*1.048576, 5000) // 1000 MiB/s
	plain.MsgRateMpps = 0.016
	peaked := plain
	peaked.Intervals = &result.Intervals{Count: 2, MaxBWGbps: 2 * 8 * 1.048576, IntervalNS: 1e9}
	var out bytes.Buffer
	Perftest(&out, []result.Result{plain, peaked}, false)
	s := out.String()
	if !strings.Contains(s, "#bytes") || !strings.Contains(s, "BW peak[MB/sec]") || !strings.Contains(s, "MsgRate[Mpps]") {
		t.Fatalf("perftest's header:\n%s", s)
	}
	rows := strings.Split(s, "\n")
	if f := strings.Fields(rows[2]); f[0] != "65536" || f[1] != "100000" || f[2] != "-" || f[3] != "1000.00" || f[4] != "0.016000" {
		t.Errorf("row without intervals: %q", f)
	}
	if f := strings.Fields(rows[3]); f[2] != "2000.00" {
		t.Errorf("row with intervals: %q", f)
	}
	out.Reset()
	Perftest(&out, []result.Result{peaked}, true)
	if !strings.Contains(out.String(), "BW average[Gb/sec]") || strings.Fields(strings.Split(out.String(), "\n")[2])[2] != "16.78" {
		t.Errorf("--report_gbits:\n%s", out.String())
	}
	lat := result.Result{Config: result.Config{Op: "read", Test: result.Lat, MsgSizeBytes: 2}, Iterations: 1000,
		Lat: result.Latency{Samples: 1000, Min: 1000, Max: 9000, Mean: 2000, Stdev: 10, P50: ptr(1900), P99: ptr(7000)}}
	out.Reset()
	Perftest(&out, []result.Result{lat}, false)
	if f := strings.Fields(strings.Split(out.String(), "\n")[2]); len(f) != 9 || f[4] != "1.90" || f[7] != "7.00" || f[8] != "-" {
		t.Errorf("latency row %q:\n%s", f, out.String())
	}
}

// The tuned report in plain form: three tables, each one header line and a line per
// row of as many words; the notes and the title under them, each line starting with a
// word and a colon.
func TestTunedPlain(t *testing.T) {
	var out bytes.Buffer
	if err := TunedShow(&out, tunedFixture(t), FormatPlain); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	params := plaintest.Rows(t, s, "parameter write write_article write_verdict read read_article read_verdict", len(profiles.Dims))
	if params[0][0] != "message_size" || params[0][1] != "256K" || params[0][3] != "differs,_at_+-2.0%" {
		t.Errorf("message size row: %q", params[0])
	}
	plaintest.Rows(t, s, "op configuration size/depth/off/mod/pl runs gbps 95%_interval gain_95%_interval", 4)
	plaintest.Rows(t, s, "op objective size/depth/off/mod/pl runs median 95%_interval unit decided", 3)
	if strings.HasPrefix(s, "Tuned") || !strings.Contains(s, "\ntuned: parameters for ConnectX-5 (profile cx5), objective bw\n") {
		t.Errorf("the title belongs under the tables:\n%s", s)
	}
	if strings.Contains(s, "\n  ") {
		t.Errorf("an indented line:\n%s", s)
	}
}

func TestModesPlain(t *testing.T) {
	lo, hi, tg := 0.2, 0.3, 1.5
	o := sweep.ModeOutcome{Op: "write", A: "pool", B: "per-io", Rows: []sweep.ModeRow{
		{Size: 4096, Pairs: 3, A: 1, B: 0.25, BOverA: sweep.Ratio{N: 3, Median: 0.25, Low: &lo, High: &hi}, Verdict: sweep.Worse,
			TCP: &tg, BOverTCP: &sweep.Ratio{N: 3, Median: 0.17, Low: &lo, High: &hi}, TCPVerdict: sweep.Worse},
		{Size: 1 << 20, Pairs: 0, Verdict: sweep.Undecided, Failed: []string{"per-io: boom"}},
	}, BreakEvenNote: "cannot tell"}
	var out bytes.Buffer
	if err := ModesShow(&out, []sweep.ModeOutcome{o}, FormatPlain); err != nil {
		t.Fatal(err)
	}
	rows := plaintest.Rows(t, out.String(), "op bytes pairs pool_gbps per-io_gbps per-io/pool_95% verdict tcp_gbps per-io/tcp_95% vs_tcp", 2)
	if rows[0][5] != "0.250_[0.200,_0.300]" || rows[1][3] != "-" {
		t.Errorf("rows: %q", rows)
	}
}

// report compare --format plain: a column for each run's Gb/s and p99 and for their
// changes against the first, one word each.
func TestComparePlain(t *testing.T) {
	a := []result.Result{res("write", 65536, 10, 1000), res("write", 4096, 4, 600)}
	bidi := res("write", 65536, 6, 800)
	bidi.Config.Bidirectional = true
	b := []result.Result{res("write", 65536, 11, 900), bidi}
	var out bytes.Buffer
	if err := CompareShow(&out, []string{"a.json", "b json"}, [][]result.Result{a, b}, FormatPlain); err != nil {
		t.Fatal(err)
	}
	rows := plaintest.Rows(t, out.String(), "configuration a.json_gbps a.json_p99_us b_json_gbps b_json_gbps_change b_json_p99_us b_json_p99_change", 3)
	byKey := map[string][]string{}
	for _, r := range rows {
		byKey[r[0]] = r
	}
	if r := byKey[strings.ReplaceAll(key64K, " ", "_")]; r == nil || r[1] != "10.000" || r[3] != "11.000" || r[4] != "+10.0%" || r[6] != "-10.0%" {
		t.Errorf("64K: %q\n%s", r, out.String())
	}
	if r := byKey[strings.ReplaceAll(key64K+" bidirectional", " ", "_")]; r == nil || r[1] != "-" || r[4] != "not_comparable:_bidirectional_differs" || r[6] != "not_comparable" {
		t.Errorf("bidirectional: %q\n%s", r, out.String())
	}
}
