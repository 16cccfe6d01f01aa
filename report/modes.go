package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"github.com/rdmabench/rdmabench/internal/text"
	"io"
	"strings"

	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/sweep"
)

// ratioCell is a ratio's median with its 95% interval ("-" without a pair).
func ratioCell(r *sweep.Ratio) string {
	switch {
	case r == nil || r.N == 0:
		return "-"
	case r.Low == nil:
		return fmt.Sprintf("%.3f (1 pair)", r.Median)
	}
	return fmt.Sprintf("%.3f [%.3f, %.3f]", r.Median, *r.Low, *r.High)
}

// verdictCell says what a comparison decided in words.
func verdictCell(v sweep.Relation, b, a string) string {
	switch v {
	case sweep.Worse:
		return b + " slower"
	case sweep.Better:
		return b + " faster"
	case sweep.Equal:
		return "equal"
	case sweep.Undecided:
		return "cannot tell"
	}
	return "-"
}

// ModesTable writes sweep --mr comparisons (the tuning article's C2): per size both modes'
// Gb/s, B over A with its interval and verdict, TCP where measured, and the break-even.
func ModesTable(w io.Writer, outs []sweep.ModeOutcome) error { return ModesShow(w, outs, FormatTable) }

// ModesShow writes sweep --mr comparisons in f: FormatTable as ModesTable, FormatPlain
// a plain table per operation (one header line, a line per size, one word a cell) with
// the same lines under it.
func ModesShow(w io.Writer, outs []sweep.ModeOutcome, f Format) error {
	for _, o := range outs {
		// A modes file is input: its strings are cleaned before they are printed.
		o.Op, o.A, o.B = text.Clean(o.Op, 16), text.Clean(o.A, 16), text.Clean(o.B, 16)
		o.BreakEvenNote, o.TCPBreakEvenNote = text.Clean(o.BreakEvenNote, 500), text.Clean(o.TCPBreakEvenNote, 500)
		tcp := false
		for _, r := range o.Rows {
			tcp = tcp || r.TCP != nil
		}
		h := []string{"op", "bytes", "pairs", o.A + " Gb/s", o.B + " Gb/s", o.B + "/" + o.A + " [95%]", "verdict"}
		if tcp {
			h = append(h, "tcp Gb/s", o.B+"/tcp [95%]", "vs tcp")
		}
		t := NewTab(w, f, h...)
		for _, r := range o.Rows {
			measured := r.Pairs > 0
			row := []any{o.Op, r.Size, r.Pairs, ifMeasured(measured, f3(r.A)), ifMeasured(measured, f3(r.B)), ratioCell(&r.BOverA), verdictCell(r.Verdict, o.B, o.A)}
			if tcp {
				tg := "-"
				if r.TCP != nil {
					tg = f3(*r.TCP)
				}
				row = append(row, tg, ratioCell(r.BOverTCP), verdictCell(r.TCPVerdict, o.B, "tcp"))
			}
			t.Append(row...)
		}
		if err := t.Render(); err != nil {
			return err
		}
		fmt.Fprintf(w, "break-even (%s): %s\n", o.Op, o.BreakEvenNote) // text: cleaned above
		if o.TCPBreakEvenNote != "" {
			fmt.Fprintf(w, "against tcp (%s): %s\n", o.Op, o.TCPBreakEvenNote) // text: cleaned above
		}
		for _, r := range o.Rows {
			for _, f := range r.Failed {
				fmt.Fprintf(w, "failed: %s %s: %s\n", o.Op, result.FormatSize(r.Size), text.Clean(strings.ReplaceAll(f, "\n", "; "), 500)) // text: cleaned above
			}
		}
		switch {
		case o.Interrupted:
			fmt.Fprintf(w, "%s: interrupted: the sizes above are all that was measured\n", o.Op) // text: cleaned above
		case o.BudgetSpent:
			fmt.Fprintf(w, "%s: --budget spent: the sizes above are all that was measured\n", o.Op) // text: cleaned above
		}
	}
	return nil
}

// WriteModesJSON writes the comparisons as one JSON document.
func WriteModesJSON(w io.Writer, outs []sweep.ModeOutcome) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(ModesDoc{SchemaVersion: ModesSchemaVersion, Kind: "mr_comparison", Comparisons: outs})
}

// ModesSchemaVersion is the version of sweep --mr's JSON (docs/schemas/sweep-modes.schema.json).
const ModesSchemaVersion = 1

// ModesDoc is what sweep --mr --json writes.
type ModesDoc struct {
	SchemaVersion int                 `json:"schema_version"`
	Kind          string              `json:"kind"` // "mr_comparison"
	Comparisons   []sweep.ModeOutcome `json:"comparisons"`
}

// ModesCSV writes one row per operation and size.
func ModesCSV(w io.Writer, outs []sweep.ModeOutcome) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"op", "a", "b", "msg_size_bytes", "pairs", "a_gbit_per_s", "b_gbit_per_s", "b_over_a", "b_over_a_low", "b_over_a_high", "verdict", "tcp_gbit_per_s", "b_over_tcp", "tcp_verdict", "break_even_bytes"})
	num := func(p *float64) string {
		if p == nil {
			return ""
		}
		return fmt.Sprintf("%g", *p)
	}
	for _, o := range outs {
		for _, r := range o.Rows {
			var bt string
			if r.BOverTCP != nil {
				bt = fmt.Sprintf("%g", r.BOverTCP.Median)
			}
			cw.Write([]string{o.Op, o.A, o.B, fmt.Sprint(r.Size), fmt.Sprint(r.Pairs), fmt.Sprintf("%g", r.A), fmt.Sprintf("%g", r.B),
				fmt.Sprintf("%g", r.BOverA.Median), num(r.BOverA.Low), num(r.BOverA.High), string(r.Verdict), num(r.TCP), bt, string(r.TCPVerdict), fmt.Sprint(o.BreakEven)})
		}
	}
	cw.Flush()
	return cw.Error()
}
