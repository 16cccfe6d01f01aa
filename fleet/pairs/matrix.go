package pairs

import (
	"fmt"
	"io"
	"math"

	"github.com/rdmabench/rdmabench/report"
)

// Cell is one pair of a fleet's matrix: row A (the client) and column B (the server).
type Cell struct {
	Self     bool    // A == B: no such test
	Has      bool    // a result of the matrix's metric is there
	Failed   bool    // the test failed: there is no value
	Value    float64 // Gb/s, or p50 in microseconds
	Bad      bool    // judged bad (a failure is bad)
	Flaky    bool    // bad in the first pass, then not in a retest
	Unjudged bool    // measured, but the fleet was too small to judge it (cannot tell)
}

// Text is how WriteMatrix shows the cell: the value, "!" after a bad one, "~" after
// a flaky one, "?" after one that cannot be told; "failed!" for a failure ("failed~"
// when it was flaky), "-" for a pair with no result, "" on the diagonal.
func (c Cell) Text(metric string) string {
	switch {
	case c.Self:
		return ""
	case c.Failed && c.Flaky:
		return "failed~"
	case c.Failed:
		return "failed!"
	case !c.Has:
		return "-"
	}
	s := sig3(c.Value)
	if metric == MetricLat {
		s = fmt.Sprintf("%.2f", c.Value)
	}
	switch {
	case c.Bad:
		s += "!"
	case c.Flaky:
		s += "~"
	case c.Unjudged:
		s += "?"
	}
	return s
}

// sig3 shows v with three significant digits, trailing zeros kept: 197, 97.3, 40.0,
// 0.345, 0.0187 (Gb/s from 100G NICs to an emulator's).
func sig3(v float64) string {
	switch a := math.Abs(v); {
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	case a >= 1:
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.3g", v)
}

// Matrix lays out a fleet of n's results as an n x n table, row A (the client) and
// column B (the server) of each pair, in metric (MetricBW: Gb/s of the bandwidth tests;
// MetricLat: p50 microseconds of the latency tests). A failed test shows in any metric;
// a result of the other metric, a result outside the fleet and a pair with none leave
// the cell empty. verdicts (Judge's, or Retests.Final's) mark the cells by their pair;
// where a pair has several results or verdicts, the last one counts. An unknown metric
// gives a matrix of empty cells (WriteMatrix refuses it).
func Matrix(n int, results []PairResult, verdicts []Verdict, metric string) [][]Cell {
	m := make([][]Cell, n)
	for a := range m {
		m[a] = make([]Cell, n)
		m[a][a].Self = true
	}
	in := func(a, b int) bool { return a >= 0 && a < n && b >= 0 && b < n && a != b }
	for _, r := range results {
		if !in(r.A, r.B) {
			continue
		}
		c := &m[r.A][r.B]
		switch {
		case r.Err != "":
			*c = Cell{Failed: true, Bad: true}
		case metric == MetricLat && r.latency(), metric == MetricBW && !r.latency() && r.Gbps > 0:
			*c = Cell{Has: true, Value: r.value()}
		default:
			*c = Cell{}
		}
	}
	for _, v := range verdicts {
		if !in(v.A, v.B) {
			continue
		}
		c := &m[v.A][v.B]
		if !c.Has && !c.Failed {
			continue
		}
		c.Bad, c.Flaky, c.Unjudged = v.Bad, v.Flaky, v.CannotTell
	}
	return m
}

// ValidMetric says whether metric is one Matrix knows.
func ValidMetric(metric string) bool { return metric == MetricBW || metric == MetricLat }

// WriteMatrix writes m (Matrix) as a table, one row and one column per host (hosts[i]
// names rank i), the client in the row and the server in the column, then a legend.
func WriteMatrix(w io.Writer, hosts []string, m [][]Cell, metric string) error {
	return WriteMatrixFormat(w, hosts, m, metric, report.FormatTable)
}

// WriteMatrixFormat writes m as WriteMatrix does, in f: FormatPlain is one header line
// (the metric's unit and client\server, then the hosts) and a line per client, one word
// a cell ("-" on the diagonal too), the legend under it on a line "legend:".
func WriteMatrixFormat(w io.Writer, hosts []string, m [][]Cell, metric string, f report.Format) error {
	if !ValidMetric(metric) {
		return fmt.Errorf("metric %q: want %s or %s", metric, MetricBW, MetricLat)
	}
	if len(hosts) != len(m) {
		return fmt.Errorf("%d host names for a matrix of %d", len(hosts), len(m))
	}
	unit := "Gb/s"
	if metric == MetricLat {
		unit = "p50 us"
	}
	corner := unit + ": client \\ server"
	if f == report.FormatPlain {
		corner = unit + " client\\server"
	}
	header := []string{corner}
	header = append(header, hosts...)
	t := report.NewTab(w, f, header...)
	for a, row := range m {
		if len(row) != len(m) {
			return fmt.Errorf("matrix row %d has %d cells, want %d", a, len(row), len(m))
		}
		cells := []any{hosts[a]}
		for _, c := range row {
			cells = append(cells, c.Text(metric))
		}
		t.Append(cells...)
	}
	if err := t.Render(); err != nil {
		return err
	}
	legend := "! bad   ~ flaky (bad, then good in a retest)   ? cannot tell (fewer than 3 pairs measured)   - not run"
	if t.Plain() {
		legend = "legend: ! bad, ~ flaky (bad, then good in a retest), ? cannot tell (fewer than 3 pairs measured), - not run"
	}
	_, err := fmt.Fprintln(w, legend)
	return err
}
