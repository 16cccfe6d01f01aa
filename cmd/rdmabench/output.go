package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/mattn/go-isatty"
	"github.com/rdmabench/rdmabench/internal/text"
	"github.com/rdmabench/rdmabench/report"
	"github.com/rdmabench/rdmabench/result"
	"github.com/spf13/cobra"
)

// write writes results in every requested form. --json is one JSON document (the
// result, or an array of several), or NDJSON (a compact line each) when its file is
// named *.ndjson.
func (o outputs) write(rs []result.Result) error {
	asJSON := func(w io.Writer) error { return result.WriteJSONDocument(w, rs) }
	if strings.HasSuffix(o.JSON, ".ndjson") {
		asJSON = func(w io.Writer) error { return result.WriteAll(result.NewNDJSONEncoder(w), rs) }
	}
	return o.emit(func(w io.Writer) error { return o.show(w, rs) },
		asJSON,
		func(w io.Writer) error { return result.WriteAll(result.NewCSVEncoder(w), rs) })
}

// save writes rs to the --json and --csv files now (not to stdout, which gets them
// with the table at the end, from write): a command that measures several results
// calls it after each, so that what was measured is on disk before the next run.
func (o outputs) save(rs []result.Result) error {
	saved := o
	saved.Output, saved.Stdout, saved.Stderr, saved.interim = "", io.Discard, io.Discard, true
	if saved.JSON == "-" {
		saved.JSON = ""
	}
	if saved.CSV == "-" {
		saved.CSV = ""
	}
	return saved.write(rs)
}

// show writes what the terminal gets: --output's one number per result, else the
// results in --format, and the baselines under them. Results measured on a virtual
// clock say so (report.VirtualTime): in the table, or with --output on stderr, so that
// stdout stays one number a line.
func (o outputs) show(w io.Writer, rs []result.Result) error {
	if o.Output != "" {
		if report.VirtualClock(rs) && o.Stderr != nil {
			fmt.Fprintln(o.Stderr, report.VirtualTime)
		}
		for _, r := range rs {
			if _, err := fmt.Fprintln(w, outputNumber(o.Output, o.Gbits, r.BWGbps, r.MsgRateMpps, r.Lat.Mean)); err != nil {
				return err
			}
		}
		return nil
	}
	err := report.Show(w, rs, o.format(w), o.Gbits)
	baselineLines(w, rs)
	return err
}

// format is --format for the writer w: auto is a table on a terminal and plain
// elsewhere (a pipe, a file), so that a script reads columns without asking.
func (o outputs) format(w io.Writer) report.Format { return formatFor(w, o.Format) }

// formatFor is the --format value f for the writer w, for every command that shows a
// table: auto is a table on a terminal and plain elsewhere (a pipe, a file), so that a
// script reads columns without asking; "" is a table.
func formatFor(w io.Writer, f string) report.Format {
	switch f {
	case "", string(report.FormatTable):
		return report.FormatTable
	case "auto":
		if f, ok := w.(*os.File); ok && isatty.IsTerminal(f.Fd()) {
			return report.FormatTable
		}
		return report.FormatPlain
	}
	return report.Format(f)
}

// checkFormat refuses a --format that is not one of allowed.
func checkFormat(f string, allowed []string) error {
	if f != "" && !slices.Contains(allowed, f) {
		return flagErrorf("--format %q: want %s", f, strings.Join(allowed, ", "))
	}
	return nil
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
	if f := o.opened[path]; f != nil {
		if o.interim && !f.regular {
			return nil // a pipe or a device takes the final write only
		}
		return f.replace(fn)
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

// check refuses a command line that sends two forms to stdout (neither would parse),
// and a --format or --output that does not exist.
func (o outputs) check() error {
	if o.JSON == "-" && o.CSV == "-" {
		return flagErrorf("--json - and --csv -: only one can go to stdout")
	}
	return checkFormat(o.Format, report.Formats)
}

// outFile is a results file opened before the run (outputs.open).
type outFile struct {
	f       *os.File
	created bool // it did not exist before: close removes it if nothing was written
	written bool
	// regular: a plain file, which replace rewrites from its start. Anything else
	// (/dev/null, a pipe, /dev/stdout) cannot be rewound: it gets the final write
	// only, once.
	regular bool
}

// replace writes the file's whole content anew with fn.
func (o *outFile) replace(fn func(io.Writer) error) error {
	if !o.regular {
		o.written = true
		if err := fn(o.f); err != nil {
			return fmt.Errorf("writing %s: %w", o.f.Name(), err)
		}
		return nil
	}
	if err := o.f.Truncate(0); err != nil {
		return fmt.Errorf("writing %s: %w", o.f.Name(), err)
	}
	if _, err := o.f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("writing %s: %w", o.f.Name(), err)
	}
	o.written = true
	if err := fn(o.f); err != nil {
		return fmt.Errorf("writing %s: %w", o.f.Name(), err)
	}
	return nil
}

// open opens the files of flags (flag name: path; "" and "-" are not files) before a
// run, so that a path that cannot be written is a usage error (exit 2) found before
// any device is opened, not the loss of a long run's result after it. A file that
// exists is not truncated until there is a result to write into it; one that did not
// and gets nothing is removed again by close.
func (o *outputs) open(flags ...[2]string) error {
	if o.opened == nil {
		o.opened = map[string]*outFile{}
	}
	for _, fp := range flags {
		flag, path := fp[0], fp[1]
		if path == "" || path == "-" || o.opened[path] != nil {
			continue
		}
		_, statErr := os.Stat(path)
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644)
		if err != nil {
			o.close()
			return flagErrorf("%s %s: cannot write it: %v", flag, path, errors.Unwrap(err))
		}
		st, err := f.Stat()
		o.opened[path] = &outFile{f: f, created: statErr != nil, regular: err == nil && st.Mode().IsRegular()}
	}
	return nil
}

// openResults opens --json and --csv (open).
func (o *outputs) openResults() error {
	return o.open([2]string{"--json", o.JSON}, [2]string{"--csv", o.CSV})
}

// close closes the files open opened, removing those it created and nothing was
// written to.
func (o *outputs) close() error {
	var errs []error
	for path, f := range o.opened {
		errs = append(errs, f.f.Close())
		if f.created && !f.written {
			os.Remove(path)
		}
	}
	o.opened = nil
	return errors.Join(errs...)
}

// addFormatFlag adds --format, how result tables are shown.
func addFormatFlag(cmd *cobra.Command, o *outputs) {
	cmd.Flags().StringVar(&o.Format, "format", "auto", "how results are shown: table, plain (one header line, "+
		"space-separated, for awk), perftest (perftest's columns) or auto (a table on a terminal, else plain)")
}

// addTableFormatFlag adds --format to a command whose tables have no perftest form
// (report.TableFormats), def its default: auto, or table where a script of the test bed
// reads the boxed table.
func addTableFormatFlag(cmd *cobra.Command, p *string, def string) {
	cmd.Flags().StringVar(p, "format", def, "how tables are shown: table, plain (one header line, "+
		"space-separated, one word a cell, for awk) or auto (a table on a terminal, else plain)")
}
