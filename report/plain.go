package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/rdmabench/rdmabench/internal/text"
	"github.com/rdmabench/rdmabench/result"
)

// Peak bandwidth, said one way for every table.
//
// perftest's "BW peak" divides the message size by the best per-message time over any
// stretch of the run from a post to a later signalled completion, however short: a
// stretch of a few WRs, which a burst of completions the NIC had queued makes far
// shorter than the link could sustain, so it overstates, more the shorter the stretch.
// rdmabench's peak is the highest bandwidth of a whole --interval of the measured run
// (a full interval after the
// ramp: result.Intervals), at the interval's resolution; without --interval, or
// without one full interval, there is no peak, and the tables show "-".

// PeakGbps is r's peak bandwidth in Gb/s and true, or false where the samples do not
// support one (no --interval, or no full interval after the ramp).
func PeakGbps(r result.Result) (float64, bool) {
	if iv := r.Intervals; iv != nil && iv.Count > 0 && r.Iterations > 0 {
		return iv.MaxBWGbps, true
	}
	return 0, false
}

func peakGbps(r result.Result) string {
	if p, ok := PeakGbps(r); ok {
		return f3(p)
	}
	return "-"
}

// peakNote says under a table what its peak is, when a row has one.
func peakNote(w io.Writer, rs []result.Result) {
	for _, r := range rs {
		if _, ok := PeakGbps(r); ok {
			fmt.Fprintf(w, "peak: the best full --interval of %g s after the ramp (not perftest's best few WRs)\n",
				float64(r.Intervals.IntervalNS)/1e9)
			return
		}
	}
}

// Format is how results are shown on the terminal (--format).
type Format string

const (
	FormatTable    Format = "table"    // boxed, for people
	FormatPlain    Format = "plain"    // whitespace-separated, one header line, for awk
	FormatPerftest Format = "perftest" // perftest's columns
)

// Formats are the --format values, "auto" first: table on a terminal, plain elsewhere.
var Formats = []string{"auto", string(FormatTable), string(FormatPlain), string(FormatPerftest)}

// Show writes rs in format f: Table, Plain or Perftest (gbits: perftest's
// --report_gbits, bandwidth in Gb/s instead of MiB/s). Where a result was measured on a
// virtual clock, VirtualTime says so once: above the tables, or under them in plain.
func Show(w io.Writer, rs []result.Result, f Format, gbits bool) error {
	virtual := VirtualClock(rs)
	virtualTimeAbove(w, f, virtual)
	var err error
	switch f {
	case FormatPlain:
		err = Plain(w, rs)
	case FormatPerftest:
		err = Perftest(w, rs, gbits)
	default:
		err = Table(w, rs)
	}
	if err != nil {
		return err
	}
	virtualTimeUnder(w, f, virtual)
	return nil
}

// Plain writes results for scripts: per kind of test (bandwidth, then latency) one
// header line and one line per result, columns separated by one space, every cell a
// single word ("-" for none; spaces within a note become '_'), numbers without
// thousands separators or units (the units are in the header's names), so that
// `awk '{print $9}'` picks a column. The lines that follow a table (errors, tainted
// counters) start with a word and a colon, like the table's, never with a number.
func Plain(w io.Writer, rs []result.Result) error {
	bw, lat := split(rs)
	if len(bw) > 0 {
		rows := [][]string{{"op", "bytes", "qps", "tx_depth", "post_list", "cq_mod", "offset", "msgs", "gbps", "peak_gbps",
			"mibps", "mpps", "p50_us", "p99_us", "nic", "note"}}
		for _, r := range bw {
			c, ok := r.Config, r.Iterations > 0
			rows = append(rows, []string{text.Clean(c.Op, 16), fmt.Sprint(c.MsgSizeBytes), fmt.Sprint(c.NumQPs), fmt.Sprint(c.SQDepth),
				fmt.Sprint(c.PostList), fmt.Sprint(c.CQMod), fmt.Sprint(c.BufOffsetBytes), fmt.Sprint(r.Iterations),
				dash(ok, f3(r.BWGbps)), peakGbps(r), dash(ok, fmt.Sprintf("%.2f", r.BWMiBps)), dash(ok, f4(r.MsgRateMpps)),
				usp(r.Lat.P50), usp(r.Lat.P99), nic(r), note(r)})
		}
		if err := plainRows(w, rows); err != nil {
			return err
		}
		if err := bwLines(w, bw); err != nil {
			return err
		}
	}
	if len(lat) > 0 {
		rows := [][]string{{"op", "bytes", "samples", "min_us", "p50_us", "mean_us", "stdev_us", "p90_us", "p99_us", "p99.9_us",
			"p99.99_us", "max_us", "nic", "note"}}
		for _, r := range lat {
			l, ok := r.Lat, r.Lat.Samples > 0
			rows = append(rows, []string{text.Clean(r.Config.Op, 16), fmt.Sprint(r.Config.MsgSizeBytes), fmt.Sprint(l.Samples),
				dash(ok, us(l.Min)), usp(l.P50), dash(ok, usf(l.Mean)), dash(ok, usf(l.Stdev)), usp(l.P90), usp(l.P99),
				usp(l.P99_9), usp(l.P99_99), dash(ok, us(l.Max)), nic(r), note(r)})
		}
		if err := plainRows(w, rows); err != nil {
			return err
		}
		errorLines(w, lat)
		counterLines(w, lat)
	}
	return nil
}

// Perftest writes results in perftest's columns: for bandwidth tests
// "#bytes #iterations BW peak[MB/sec] BW average[MB/sec] MsgRate[Mpps]" (MB is
// perftest's 2^20 bytes; with gbits, Gb/sec), for latency tests "#bytes #iterations
// t_min[usec] t_max[usec] t_typical[usec] t_avg[usec] t_stdev[usec] 99% percentile[usec]
// 99.9% percentile[usec]", t_typical being the median. Its peak is not perftest's (see
// PeakGbps): "-" where the run has none, as for a percentile its samples do not
// support. #iterations is the messages (bandwidth) or rounds (latency) completed.
func Perftest(w io.Writer, rs []result.Result, gbits bool) error {
	const line = "---------------------------------------------------------------------------------------\n"
	bw, lat := split(rs)
	if len(bw) > 0 {
		unit, conv := "MB/sec", func(g float64) float64 { return g * 1e9 / 8 / (1 << 20) }
		if gbits {
			unit, conv = "Gb/sec", func(g float64) float64 { return g }
		}
		fmt.Fprint(w, line)
		fmt.Fprintf(w, " %-10s %-14s %-18s %-20s %s\n", "#bytes", "#iterations", "BW peak["+unit+"]", "BW average["+unit+"]", "MsgRate[Mpps]")
		for _, r := range bw {
			ok := r.Iterations > 0
			peak := "-"
			if p, has := PeakGbps(r); has {
				peak = fmt.Sprintf("%.2f", conv(p))
			}
			fmt.Fprintf(w, " %-10d %-14d %-18s %-20s %s\n", r.Config.MsgSizeBytes, r.Iterations, peak,
				dash(ok, fmt.Sprintf("%.2f", conv(r.BWGbps))), dash(ok, fmt.Sprintf("%.6f", r.MsgRateMpps)))
		}
		fmt.Fprint(w, line)
		fmt.Fprintln(w, " BW peak: the best full --interval after the ramp; '-' without one (not perftest's best few WRs)")
		errorLines(w, bw)
		counterLines(w, bw)
	}
	if len(lat) > 0 {
		fmt.Fprint(w, line)
		fmt.Fprintf(w, " %-8s %-12s %-12s %-12s %-16s %-12s %-15s %-22s %s\n", "#bytes", "#iterations", "t_min[usec]", "t_max[usec]",
			"t_typical[usec]", "t_avg[usec]", "t_stdev[usec]", "99% percentile[usec]", "99.9% percentile[usec]")
		for _, r := range lat {
			l, ok := r.Lat, r.Lat.Samples > 0
			fmt.Fprintf(w, " %-8d %-12d %-12s %-12s %-16s %-12s %-15s %-22s %s\n", r.Config.MsgSizeBytes, r.Iterations,
				dash(ok, us(l.Min)), dash(ok, us(l.Max)), usp(l.P50), dash(ok, usf(l.Mean)), dash(ok, usf(l.Stdev)), usp(l.P99), usp(l.P99_9))
		}
		fmt.Fprint(w, line)
		errorLines(w, lat)
		counterLines(w, lat)
	}
	return nil
}

func split(rs []result.Result) (bw, lat []result.Result) {
	for _, r := range rs {
		if r.Config.Test == result.Lat {
			lat = append(lat, r)
		} else {
			bw = append(bw, r)
		}
	}
	return bw, lat
}

func dash(ok bool, v string) string {
	if !ok {
		return "-"
	}
	return v
}

// plainRows writes rows with their cells made single words.
func plainRows(w io.Writer, rows [][]string) error {
	for _, row := range rows {
		for i, c := range row {
			c = strings.Join(strings.Fields(c), "_")
			if c == "" {
				c = "-"
			}
			row[i] = c
		}
		if _, err := fmt.Fprintln(w, strings.Join(row, " ")); err != nil {
			return err
		}
	}
	return nil
}

// TableFormats are the --format values of the tables that have no perftest form (every
// table but the results'), "auto" first: table on a terminal, plain elsewhere.
var TableFormats = []string{"auto", string(FormatTable), string(FormatPlain)}

// Tab is a table shown in a Format: boxed (NewTable) for people, or plain for scripts,
// by Plain's rules (plainRows): one header line, then a line per row, cells separated by
// one space, each cell one word ('_' for a space within it, "-" for an empty one).
type Tab struct {
	w     io.Writer
	plain bool
	head  []string
	rows  [][]any
}

// NewTab starts a table of the columns head (as the boxed table names them; plain
// names them by PlainName) to be shown in f (FormatPlain, else boxed).
func NewTab(w io.Writer, f Format, head ...string) *Tab {
	return &Tab{w: w, plain: f == FormatPlain, head: head}
}

// Plain says whether the table is shown plain: what goes around it differs (Plain's
// rules: nothing above the header; a line under it starts with a word and a colon).
func (t *Tab) Plain() bool { return t.plain }

// Append adds a row.
func (t *Tab) Append(cells ...any) { t.rows = append(t.rows, cells) }

// RenderRows writes the rows alone, plain: the lines of a stream whose header was
// written once (an empty Tab's Render). Boxed, it is Render.
func (t *Tab) RenderRows() error {
	if !t.plain {
		return t.Render()
	}
	return t.render(false)
}

// Render writes the table.
func (t *Tab) Render() error {
	if !t.plain {
		tb := NewTable(t.w)
		head := make([]any, len(t.head))
		for i, h := range t.head {
			head[i] = h
		}
		tb.Header(head...)
		for _, r := range t.rows {
			if err := tb.Append(r...); err != nil {
				return err
			}
		}
		return tb.Render()
	}
	return t.render(true)
}

func (t *Tab) render(header bool) error {
	rows := make([][]string, 0, len(t.rows)+1)
	if header {
		head := make([]string, len(t.head))
		for i, h := range t.head {
			head[i] = PlainName(h)
		}
		rows = append(rows, head)
	}
	for _, r := range t.rows {
		row := make([]string, len(r))
		for i, c := range r {
			row[i] = fmt.Sprint(c)
		}
		rows = append(rows, row)
	}
	return plainRows(t.w, rows)
}

// PlainName is a column's name in plain form: lower case, one word, the unit in it
// ("p50 us": p50_us, "Gb/s": gbps, "reg GiB/s": reg_gibps), brackets left out.
func PlainName(h string) string {
	h = strings.NewReplacer("Gb/s", "gbps", "GiB/s", "gibps", "MiB/s", "mibps", "(", "", ")", "", "[", "", "]", "").Replace(h)
	return strings.ToLower(strings.Join(strings.Fields(h), "_"))
}
