package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/counters"
	"github.com/rdmabench/rdmabench/result"
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
