package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/rdmabench/rdmabench/bench"
	"github.com/rdmabench/rdmabench/bench/ops"
	"github.com/rdmabench/rdmabench/profiles"
	"github.com/rdmabench/rdmabench/report"
	"github.com/rdmabench/rdmabench/sweep"
	"github.com/spf13/cobra"
)

// checkModes checks --mr, --sizes and --baseline (sweep --mr A,B).
func (o *sweepOptions) checkModes(cmd *cobra.Command) error {
	if len(o.MR) == 0 {
		if cmd.Flags().Changed("sizes") || o.Baseline != "" {
			return flagErrorf("--sizes and --baseline go with --mr")
		}
		return nil
	}
	switch {
	case len(o.MR) != 2 || o.MR[0] == o.MR[1]:
		return flagErrorf("--mr %v: want two different modes, e.g. pool,per-io", o.MR) // text: local (the command line)
	case o.Resume != "":
		return flagErrorf("--resume continues a tuning sweep; a --mr comparison is measured afresh")
	case o.HTML != "":
		return flagErrorf("--html draws a tuning sweep; a --mr comparison is a table (--json, --csv)")
	case o.Verbose:
		return flagErrorf("--verbose prints a tuning sweep's whole report; a --mr comparison prints its table whole")
	case o.Baseline != "" && o.Baseline != "tcp":
		return flagErrorf("--baseline %q: want tcp", o.Baseline) // text: local (the command line)
	}
	mo := o.modesOptions(profiles.Profile{})
	for _, m := range o.MR {
		c := mo.Config("write", m)
		if err := ops.Validate(c); err != nil {
			return &flagError{fmt.Errorf("--mr %s: %w", m, err)}
		}
	}
	return nil
}

// modesOptions are the flags as a --mr comparison's options, on the profile prof.
func (o *sweepOptions) modesOptions(prof profiles.Profile) sweep.ModesOptions {
	return sweep.ModesOptions{Profile: prof, A: o.MR[0], B: o.MR[1], Sizes: o.Sizes, TCP: o.Baseline == "tcp",
		Repeat: o.Repeat, Resolution: o.Resolution, Budget: o.Budget, PointDurationS: o.PointDuration,
		Counters: o.Counters, QPTimeout: o.QPTimeout, Fabric: o.Fabric, Defaults: ops.Defaults}
}

// compareModes runs sweep --mr A,B: per operation, every size measured in both modes
// in interleaved rounds, B over A judged per size, and the break-even size.
func (o *sweepOptions) compareModes(ctx context.Context, c *bench.Client) error {
	prof, err := o.profile(c)
	if err != nil {
		return err
	}
	path := o.Records
	if path == "" {
		path = fmt.Sprintf("mr-%s-%s.ndjson", prof.Name, time.Now().Format("20060102-150405"))
	}
	stream, err := openStream(path)
	if err != nil {
		return err
	}
	defer stream.Close()
	// A failed baseline stays in r.Baseline.Error: the RDMA run is still a measurement of
	// its mode. Only a lost session ends the comparison (bench.Measurer).
	measure := bench.Measurer{Client: c, Ops: ops.All}
	record := sweep.StreamRecorder(stream)
	opts := o.modesOptions(prof)
	var outs []sweep.ModeOutcome
	var errs []error
	for _, op := range o.Ops {
		m := opts.Modes(op)
		fmt.Fprintf(o.Out.Stderr, "sweep --mr: %s, %s against %s at %d sizes, %d rounds each, %.2g s per run, results -> %s\n",
			op, o.MR[1], o.MR[0], len(m.Sizes), o.Repeat, m.Base.DurationS, path) // text: local (the command line)
		out, err := sweep.CompareModes(ctx, measure, record, m)
		outs = append(outs, out)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", op, err))
			break
		}
		if ctx.Err() != nil {
			break
		}
	}
	errs = append(errs, o.Out.emit(func(w io.Writer) error { return report.ModesShow(w, outs, o.Out.format(w)) },
		func(w io.Writer) error { return report.WriteModesJSON(w, outs) },
		func(w io.Writer) error { return report.ModesCSV(w, outs) }))
	if ctx.Err() != nil {
		errs = append(errs, errors.New("interrupted"))
	}
	return errors.Join(errs...)
}
