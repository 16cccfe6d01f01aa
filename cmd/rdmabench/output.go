package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/rdmabench/rdmabench/report"
	"github.com/rdmabench/rdmabench/result"
)

// write writes results in every requested form.
func (o outputs) write(rs []result.Result) error {
	return o.emit(func(w io.Writer) error { return report.Table(w, rs) },
		func(w io.Writer) error { return result.WriteAll(result.NewJSONEncoder(w), rs) },
		func(w io.Writer) error { return result.WriteAll(result.NewCSVEncoder(w), rs) })
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
