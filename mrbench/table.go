package mrbench

import (
	"fmt"
	"io"

	"github.com/rdmabench/rdmabench/report"
	"github.com/rdmabench/rdmabench/result"
)

// Table writes the document for people: a line on the device, the memlock limit and
// relaxed ordering when it was off, a row per size and mode (percentiles the samples do not support show "-"), then the
// errors of the failed rows.
func Table(w io.Writer, d Document) error { return Show(w, d, report.FormatTable) }

// Show writes the document in f: FormatTable as Table; FormatPlain as one header line
// and a line per size and mode (the size in bytes, one word a cell), the line on the
// device under it ("mr:") and the errors ("error:").
func Show(w io.Writer, d Document, f report.Format) error {
	lim := "unlimited"
	if d.MemlockBytes >= 0 {
		lim = result.FormatSize(int(d.MemlockBytes))
	}
	if d.CAPIPCLock {
		lim += " (not applied: CAP_IPC_LOCK)"
	}
	ro := ""
	if !d.Config.PCIeRelaxedOrdering {
		ro = ", without relaxed ordering"
	}
	line := fmt.Sprintf("%s port %d: ibv_reg_mr / ibv_dereg_mr%s, %d times each; memlock %s", orDash(d.Device.Name), d.Device.Port, ro, d.Config.Iterations, lim)
	plain := f == report.FormatPlain
	size, errPrefix := "size", "  error:"
	if plain {
		size, errPrefix = "bytes", "error:"
	} else {
		fmt.Fprintln(w, line)
	}
	t := report.NewTab(w, f, size, "mode", "pages", "reg p50 us", "reg p99 us", "reg mean us", "dereg p50 us", "dereg p99 us", "dereg mean us", "reg GiB/s", "note")
	var errs []string
	for _, r := range d.Rows {
		note := ""
		switch {
		case r.Skipped != "":
			note = "skipped: " + r.Skipped
		case r.Error != "":
			note = "failed"
			errs = append(errs, fmt.Sprintf("%s %s: %s", result.FormatSize(r.SizeBytes), r.Mode, r.Error))
		}
		ok := r.Reg.Samples > 0
		gib := "-"
		if ok && r.RegGiBps > 0 {
			gib = fmt.Sprintf("%.2f", r.RegGiBps)
		}
		var sz any = result.FormatSize(r.SizeBytes)
		if plain {
			sz = r.SizeBytes
		}
		t.Append(sz, r.Mode, r.Pages,
			usp(r.Reg.P50), usp(r.Reg.P99), mean(r.Reg), usp(r.Dereg.P50), usp(r.Dereg.P99), mean(r.Dereg), gib, note)
	}
	if err := t.Render(); err != nil {
		return err
	}
	if plain {
		fmt.Fprintln(w, "mr: "+line)
	}
	for _, e := range errs {
		if _, err := fmt.Fprintln(w, errPrefix, e); err != nil {
			return err
		}
	}
	return nil
}

func usp(ns *int64) string {
	if ns == nil {
		return "-"
	}
	return fmt.Sprintf("%.2f", float64(*ns)/1e3)
}

func mean(l result.Latency) string {
	if l.Samples == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", l.Mean/1e3)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
