package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/rdmabench/rdmabench/internal/text"
	"github.com/rdmabench/rdmabench/report"
	"github.com/rdmabench/rdmabench/result"
)

// write writes results in every requested form. --json is one JSON document (the
// result, or an array of several), or NDJSON (a compact line each) when its file is
// named *.ndjson.
func (o outputs) write(rs []result.Result) error {
	asJSON := func(w io.Writer) error { return result.WriteJSONDocument(w, rs) }
	if strings.HasSuffix(o.JSON, ".ndjson") {
		asJSON = func(w io.Writer) error { return result.WriteAll(result.NewNDJSONEncoder(w), rs) }
	}
	return o.emit(func(w io.Writer) error { err := report.Table(w, rs); baselineLines(w, rs); return err },
		asJSON,
		func(w io.Writer) error { return result.WriteAll(result.NewCSVEncoder(w), rs) })
}

// baselineLines writes, under the table, each result's --baseline: the other
// transport's rate for the same transfer and RDMA's Gb/s over it, or why it failed.
// A result file is input: its strings are cleaned.
func baselineLines(w io.Writer, rs []result.Result) {
	for _, r := range rs {
		b := r.Baseline
		if b == nil {
			continue
		}
		what := fmt.Sprintf("baseline: %s: %s", report.ConfigKey(r.Config), text.Clean(b.Transport, 16))
		if b.Error != "" {
			fmt.Fprintf(w, "%s FAILED: %s\n", what, text.Clean(strings.ReplaceAll(b.Error, "\n", "; "), 500))
			continue
		}
		line := fmt.Sprintf("%s %.3f Gb/s, %.4f Mpps (%d messages in %.3f ms)", what, b.BWGbps, b.MsgRateMpps, b.Messages, float64(b.DurationNS)/1e6)
		if b.RDMAOverTCP > 0 {
			line += fmt.Sprintf("; RDMA %.3f Gb/s = %.2fx %s", r.BWGbps, b.RDMAOverTCP, text.Clean(b.Transport, 16))
		}
		fmt.Fprintln(w, line)
	}
}

// emit writes the table to the terminal and the machine forms where the flags say. The
// table goes to stdout unless a machine form claimed stdout ('-'), then to stderr. A
// failure to write one form does not stop the others.
func (o outputs) emit(table, asJSON, asCSV func(io.Writer) error) error {
	tableTo := o.Stdout
	if o.JSON == "-" || o.CSV == "-" {
		tableTo = o.Stderr
	}
	errs := []error{table(tableTo)}
	if o.JSON != "" {
		errs = append(errs, o.to(o.JSON, asJSON))
	}
	if o.CSV != "" {
		errs = append(errs, o.to(o.CSV, asCSV))
	}
	return errors.Join(errs...)
}

func (o outputs) to(path string, fn func(io.Writer) error) error {
	if path == "-" {
		return fn(o.Stdout)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("cannot write results: %w", err)
	}
	if err := fn(f); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Close()
}

// check refuses a command line that sends two forms to stdout: neither would parse.
func (o outputs) check() error {
	if o.JSON == "-" && o.CSV == "-" {
		return flagErrorf("--json - and --csv -: only one can go to stdout")
	}
	return nil
}
