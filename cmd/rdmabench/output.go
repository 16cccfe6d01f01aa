package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/rdmabench/rdmabench/report"
	"github.com/rdmabench/rdmabench/result"
)

// write writes every requested form. The table goes to stdout unless a machine
// format claimed stdout ('-'), then to stderr. A failure to write one form does not
// stop the others.
func (o outputs) write(rs []result.Result) error {
	tableTo := o.Stdout
	if o.JSON == "-" || o.CSV == "-" {
		tableTo = o.Stderr
	}
	errs := []error{report.Table(tableTo, rs)}
	if o.JSON != "" {
		errs = append(errs, o.to(o.JSON, func(w io.Writer) error {
			if len(rs) == 1 {
				return result.WriteJSON(w, rs[0])
			}
			for _, r := range rs {
				if err := result.WriteJSON(w, r); err != nil {
					return err
				}
			}
			return nil
		}))
	}
	if o.CSV != "" {
		errs = append(errs, o.to(o.CSV, func(w io.Writer) error { return report.WriteCSV(w, rs) }))
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
