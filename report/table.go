// Package report renders results: terminal tables, CSV, comparisons and CI checks.
// It reads results and never measures anything.
package report

import (
	"fmt"
	"io"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"
	"github.com/rdmabench/rdmabench/result"
)

func us(ns int64) string    { return fmt.Sprintf("%.2f", float64(ns)/1e3) }
func usf(ns float64) string { return fmt.Sprintf("%.2f", ns/1e3) }
func f3(v float64) string   { return fmt.Sprintf("%.3f", v) }
func f4(v float64) string   { return fmt.Sprintf("%.4f", v) }

// NewTable is rdmabench's table style: headers exactly as written (units stay "Gb/s").
func NewTable(w io.Writer) *tablewriter.Table {
	return tablewriter.NewTable(w, tablewriter.WithHeaderAutoFormat(tw.Off))
}

// Table writes results as a terminal table: bandwidth tests with their throughput and
// completion latency under load, latency tests with their distribution.
func Table(w io.Writer, rs []result.Result) error {
	var bw, lat []result.Result
	for _, r := range rs {
		if r.Config.Test == "lat" {
			lat = append(lat, r)
		} else {
			bw = append(bw, r)
		}
	}
	if len(bw) > 0 {
		t := NewTable(w)
		t.Header("op", "bytes", "QPs", "depth", "post list", "cq mod", "offset", "msgs", "Gb/s", "MiB/s", "Mpps", "p50 us", "p99 us", "note")
		for _, r := range bw {
			c := r.Config
			t.Append(c.Op, c.MsgSizeBytes, c.NumQPs, c.SQDepth, c.PostList, c.CQMod, c.BufOffsetBytes, r.Iterations,
				f3(r.BWGbps), fmt.Sprintf("%.2f", r.BWMiBps), f4(r.MsgRateMpps), us(r.Lat.P50), us(r.Lat.P99), note(r))
		}
		if err := t.Render(); err != nil {
			return err
		}
	}
	if len(lat) > 0 {
		t := NewTable(w)
		t.Header("op", "bytes", "samples", "min us", "p50 us", "mean us", "stdev us", "p90 us", "p99 us", "p99.9 us", "p99.99 us", "max us", "note")
		for _, r := range lat {
			l := r.Lat
			t.Append(r.Config.Op, r.Config.MsgSizeBytes, l.Samples, us(l.Min), us(l.P50), usf(l.Mean), usf(l.Stdev),
				us(l.P90), us(l.P99), us(l.P99_9), us(l.P99_99), us(l.Max), note(r))
		}
		if err := t.Render(); err != nil {
			return err
		}
	}
	return nil
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
	if r.Error != "" {
		s += "error"
	}
	return s
}
