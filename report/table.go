// Package report renders results: terminal tables, CSV, comparisons and CI checks.
// It reads results and never measures anything.
package report

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"
	"github.com/rdmabench/rdmabench/counters"
	"github.com/rdmabench/rdmabench/internal/text"
	"github.com/rdmabench/rdmabench/result"
)

func us(ns int64) string    { return fmt.Sprintf("%.2f", float64(ns)/1e3) }
func usf(ns float64) string { return fmt.Sprintf("%.2f", ns/1e3) }
func f3(v float64) string   { return fmt.Sprintf("%.3f", v) }
func f4(v float64) string   { return fmt.Sprintf("%.4f", v) }

// usp renders a percentile: "-" where the sample count does not support it.
func usp(ns *int64) string {
	if ns == nil {
		return "-"
	}
	return us(*ns)
}

// ifMeasured renders v where something was measured, "-" where nothing was: a run
// that completed nothing has no bandwidth, not a bandwidth of zero.
func ifMeasured(measured bool, v any) any {
	if !measured {
		return "-"
	}
	return v
}

// NewTable is rdmabench's table style: headers exactly as written (units stay "Gb/s").
func NewTable(w io.Writer) *tablewriter.Table {
	return tablewriter.NewTable(w, tablewriter.WithHeaderAutoFormat(tw.Off))
}

// Table writes results as a terminal table: bandwidth tests with their throughput and
// completion latency under load, latency tests with their distribution. Percentiles the
// samples do not support show "-"; a failed result says so in its note and its error
// is written under the table.
func Table(w io.Writer, rs []result.Result) error {
	var bw, lat []result.Result
	for _, r := range rs {
		if r.Config.Test == result.Lat {
			lat = append(lat, r)
		} else {
			bw = append(bw, r)
		}
	}
	if len(bw) > 0 {
		t := NewTable(w)
		// Within 100 columns: one column for the queue setup (QPs, tx depth, post list,
		// cq-mod, offset), the peak in Gb/s as the average (peakNote says what it is), and
		// the NIC's verdict is in the note (TAINTED), where it is one; plain (Plain) has a
		// column for each.
		t.Header("op", "bytes", "q/tx/pl/mod/off", "msgs", "Gb/s", "peak", "Mpps", "p50 us", "p99 us", "note")
		for _, r := range bw {
			c, ok := r.Config, r.Iterations > 0
			n := note(r)
			if r.Tainted || r.Paused {
				n = strings.TrimSpace(nic(r) + " " + n)
			}
			t.Append(text.Clean(c.Op, 16), c.MsgSizeBytes, fmt.Sprintf("%d/%d/%d/%d/%d", c.NumQPs, c.SQDepth, c.PostList, c.CQMod, c.BufOffsetBytes), r.Iterations,
				ifMeasured(ok, f3(r.BWGbps)), peakGbps(r), ifMeasured(ok, f4(r.MsgRateMpps)), usp(r.Lat.P50), usp(r.Lat.P99), n)
		}
		if err := t.Render(); err != nil {
			return err
		}
		if err := bwLines(w, bw); err != nil {
			return err
		}
	}
	if len(lat) > 0 {
		t := NewTable(w)
		t.Header("op", "bytes", "samples", "min us", "p50 us", "mean us", "stdev us", "p90 us", "p99 us", "p99.9 us", "p99.99 us", "max us", "NIC", "note")
		for _, r := range lat {
			l, ok := r.Lat, r.Lat.Samples > 0
			t.Append(text.Clean(r.Config.Op, 16), r.Config.MsgSizeBytes, l.Samples, ifMeasured(ok, us(l.Min)), usp(l.P50), ifMeasured(ok, usf(l.Mean)), ifMeasured(ok, usf(l.Stdev)),
				usp(l.P90), usp(l.P99), usp(l.P99_9), usp(l.P99_99), ifMeasured(ok, us(l.Max)), nic(r), note(r))
		}
		if err := t.Render(); err != nil {
			return err
		}
		errorLines(w, lat)
		counterLines(w, lat)
	}
	return nil
}

// maxErrorText is the most of a result's error a table prints (a results file is
// input: its strings are cleaned and cut).
const maxErrorText = 2000

// errorLines writes the error of each failed result under its table, whole: a note
// column is too narrow for it, and a failed row alone could pass for a measurement.
func errorLines(w io.Writer, rs []result.Result) {
	for _, r := range rs {
		if r.Error != "" {
			fmt.Fprintf(w, "error: %s: %s\n", ConfigKey(r.Config), text.Clean(strings.ReplaceAll(r.Error, "\n", "; "), maxErrorText))
		}
	}
}

// nic is the NIC column: what the counters said about the run ("-": not read):
// TAINTED with the number of flags that taint, "paused" for a run pause frames
// throttled without tainting it, else "clean" (congestion is on a line under the
// table).
func nic(r result.Result) string {
	switch {
	case r.Tainted:
		return fmt.Sprintf("TAINTED (%d)", len(TaintFlags(r)))
	case r.Paused:
		return "paused"
	case r.Counters == nil || (r.Counters.Local == nil && r.Counters.Remote == nil):
		return "-"
	}
	return "clean"
}

// oldTaint says r is a tainted result from before flags said whether they taint
// (none has Taints): every flag of it tainted.
func oldTaint(r result.Result) bool {
	return r.Tainted && !slices.ContainsFunc(r.CountersFlags, func(f counters.Flag) bool { return f.Taints })
}

// TaintFlags are the flags that taint r.
func TaintFlags(r result.Result) []counters.Flag {
	if oldTaint(r) {
		return r.CountersFlags
	}
	var out []counters.Flag
	for _, f := range r.CountersFlags {
		if f.Taints {
			out = append(out, f)
		}
	}
	return out
}

// ReportedFlags are r's congestion and pause flags that do not taint it.
func ReportedFlags(r result.Result) []counters.Flag {
	if oldTaint(r) {
		return nil
	}
	var out []counters.Flag
	for _, f := range r.CountersFlags {
		if !f.Taints && (f.Class == counters.Congestion || f.Class == counters.Pause) {
			out = append(out, f)
		}
	}
	return out
}

// counterLines writes each tainted result's tainting flags under its table, the
// congestion and pause counters that moved without tainting, a note that the counters
// are port-wide when it wrote either, and with --counters all (or a list), every
// counter that moved on each side.
func counterLines(w io.Writer, rs []result.Result) {
	flagged := false
	defer func() {
		if flagged {
			fmt.Fprintln(w, "note: NIC counters are port-wide: other traffic on either port moves them too")
		}
	}()
	for _, r := range rs {
		if r.Tainted {
			fmt.Fprintf(w, "tainted: %s: %s\n", ConfigKey(r.Config), flagList(TaintFlags(r)))
			flagged = true
		}
		if f := ReportedFlags(r); len(f) > 0 {
			fmt.Fprintf(w, "congestion: %s: %s\n", ConfigKey(r.Config), flagList(f))
			flagged = true
		}
		if r.Counters == nil || r.Config.Counters == "" || r.Config.Counters == "auto" {
			continue
		}
		for _, sd := range []struct {
			side string
			d    *counters.Deltas
		}{{"client", r.Counters.Local}, {"server", r.Counters.Remote}} {
			side, d := sd.side, sd.d
			if d == nil {
				continue
			}
			var moved []string
			for _, c := range d.Counters {
				if c.Changed() && c.Delta != nil {
					moved = append(moved, fmt.Sprintf("%s +%d", text.Clean(c.Name, 64), *c.Delta))
				} else if c.Changed() {
					moved = append(moved, fmt.Sprintf("%s %s", text.Clean(c.Name, 64), text.Clean(string(c.Status), 16)))
				}
			}
			if len(moved) > 0 { // a result file is input: its strings are cleaned
				fmt.Fprintf(w, "counters: %s: %s %s: %s\n", ConfigKey(r.Config), side, text.Clean(d.Device, 64), strings.Join(moved, ", "))
			}
		}
	}
}

func note(r result.Result) string {
	s := ""
	if r.Interrupted {
		s += "interrupted "
	}
	if r.Verify != nil {
		if r.Verify.OK {
			s += "verified "
		} else {
			s += "VERIFY FAILED "
		}
	}
	if r.Reverse != nil {
		if r.Reverse.Error != "" {
			s += "bidirectional: server's direction FAILED "
		} else {
			s += fmt.Sprintf("bidirectional: +%.3f Gb/s from the server = %.3f Gb/s ", r.Reverse.BWGbps, r.BWSumGbps)
		}
	}
	if r.ClockBackwards > 0 {
		s += fmt.Sprintf("%d clock-backwards samples excluded ", r.ClockBackwards)
	}
	if r.Error != "" {
		s += "ERROR (below)"
	}
	return strings.TrimSpace(s)
}

// bwLines are what follows a bandwidth table in every format: the peak's resolution,
// the errors, the counters, the registrations, the threads' and QPs' shares and the
// fan-out tables.
func bwLines(w io.Writer, bw []result.Result) error {
	peakNote(w, bw)
	errorLines(w, bw)
	counterLines(w, bw)
	mrLines(w, bw)
	shareLines(w, bw)
	return fanTables(w, bw)
}
