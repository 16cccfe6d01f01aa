package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/rdmabench/rdmabench/bench"
	"github.com/rdmabench/rdmabench/oob"
	"github.com/rdmabench/rdmabench/report"
	"github.com/rdmabench/rdmabench/result"
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
		return flagErrorf("--mr %v: want two different modes, e.g. pool,per-io", o.MR)
	case o.Resume != "":
		return flagErrorf("--resume continues a tuning sweep; a --mr comparison is measured afresh")
	case o.HTML != "":
		return flagErrorf("--html draws a tuning sweep; a --mr comparison is a table (--json, --csv)")
	case o.Baseline != "" && o.Baseline != "tcp":
		return flagErrorf("--baseline %q: want tcp", o.Baseline)
	}
	for _, m := range o.MR {
		c := o.modeConfig("write", m)
		if err := bench.Validate(c); err != nil {
			return &flagError{fmt.Errorf("--mr %s: %w", m, err)}
		}
	}
	return nil
}

// modeConfig is what every run of a --mr comparison shares: one QP, one signalled WR
// at a time in the queue's window (cq-mod 1, post list 1: per-io needs them, and the
// pool is measured the same way so that registration is the only difference).
func (o *sweepOptions) modeConfig(op, mode string) result.Config {
	c := result.Config{Op: op, Test: "bw", MsgSizeBytes: 4096, PostList: 1, CQMod: 1, NumQPs: 1, Counters: o.Counters, QPTimeout: o.QPTimeout}
	if mode != "pool" {
		c.MR = mode
	}
	bench.Defaults(&c)
	return c
}

// compareModes runs sweep --mr A,B: per operation, every size measured in both modes
// in interleaved rounds, B over A judged per size, and the break-even size.
func (o *sweepOptions) compareModes(ctx context.Context, c *bench.Client) error {
	prof, err := o.profile(c)
	if err != nil {
		return err
	}
	path := o.Results
	if path == "" {
		path = fmt.Sprintf("mr-%s-%s.ndjson", prof.Name, time.Now().Format("20060102-150405"))
	}
	stream, err := openStream(path)
	if err != nil {
		return err
	}
	defer stream.Close()
	dur := o.PointDuration
	if dur <= 0 {
		dur = prof.PointDurationS
	}
	mode := func(m string) string {
		if m == "pool" {
			return ""
		}
		return m
	}
	measure := sweep.SessionMeasurer(func(ctx context.Context, cfg result.Config) (result.Result, error) {
		r, err := c.Run(ctx, ops[cfg.Op], cfg)
		if err == nil && cfg.Baseline == "tcp" && !r.Interrupted {
			// A failed baseline stays in r.Baseline.Error: the RDMA run is still a
			// measurement of its mode. Only a lost session ends the comparison.
			if berr := tcpBaseline(ctx, c, &r); berr != nil && oob.Lost(berr) {
				err = berr
			}
		}
		return r, err
	})
	record := sweep.StreamRecorder(stream)
	var outs []sweep.ModeOutcome
	var errs []error
	for _, op := range o.Ops {
		sizes := o.Sizes
		if len(sizes) == 0 {
			sizes = prof.Grid[op]["msg_size_bytes"]
		}
		base := o.modeConfig(op, "pool")
		base.DurationS, base.WarmupIterations = dur, prof.WarmupIterations
		fmt.Fprintf(o.Out.Stderr, "sweep --mr: %s, %s against %s at %d sizes, %d rounds each, %.2g s per run, results -> %s\n",
			op, o.MR[1], o.MR[0], len(sizes), o.Repeat, dur, path)
		out, err := sweep.CompareModes(ctx, measure, record, sweep.Modes{Op: op, Base: base, Sizes: sizes,
			A: mode(o.MR[0]), B: mode(o.MR[1]), Repeat: o.Repeat, Tolerance: modeTolerance(o.Resolution), Budget: o.Budget, TCP: o.Baseline == "tcp"})
		outs = append(outs, out)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", op, err))
			break
		}
		if ctx.Err() != nil {
			break
		}
	}
	errs = append(errs, o.Out.emit(func(w io.Writer) error { return report.ModesTable(w, outs) },
		func(w io.Writer) error { return report.WriteModesJSON(w, outs) },
		func(w io.Writer) error { return report.ModesCSV(w, outs) }))
	if ctx.Err() != nil {
		errs = append(errs, errors.New("interrupted"))
	}
	return errors.Join(errs...)
}

// modeTolerance is the equality band of a registration-mode comparison: the asked
// --resolution, or 2%.
func modeTolerance(r float64) float64 {
	if r > 0 {
		return r
	}
	return 0.02
}
