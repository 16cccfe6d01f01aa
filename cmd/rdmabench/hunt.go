package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/rdmabench/rdmabench/bench"
	"github.com/rdmabench/rdmabench/bench/ops"
	"github.com/rdmabench/rdmabench/hunt"
	"github.com/rdmabench/rdmabench/oob"
	"github.com/rdmabench/rdmabench/profiles"
	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/sweep"
	"github.com/spf13/cobra"
)

type huntOptions struct {
	clientOptions
	Ops           []string
	Profile       string
	Space         string
	Budget        time.Duration
	MaxRuns       int
	Seed          uint64
	PointDuration float64
	Records       string
	Resume        string
	Counters      string
}

func newCmdHunt(runF func(*huntOptions) error) *cobra.Command {
	o := &huntOptions{}
	cmd := &cobra.Command{
		Use: "hunt SERVER",
		Example: "  rdmabench hunt -d mlx5_0 host-a --budget 30m\n" +
			"  rdmabench hunt -d rxe1 10.0.0.1 --space 'size=64K,1M; qps=1,4' --budget 10m\n" +
			"  rdmabench hunt -d mlx5_0 host-a --resume hunt-cx6-20250101-120000.ndjson",
		Short: "Search the configuration space for anomalies; reduce each to what triggers it",
		Long: `Search the configurations one rdmabench run can take (operation, message size, SQ depth,
post list, CQ moderation, QPs, buffer offset, MTU, QP timeout, --mr mode, -b) for
anomalies, against a running 'rdmabench server', as Collie (NSDI 2022) does for RDMA
NICs: throughput far below what the same operation and size reached elsewhere, error or
congestion counters that move, failed completions, latency tails far above the median,
and peers or directions served unevenly.

The search is simulated annealing over an anomaly score. A run over a rule's bar is a
candidate, and a finding only when 3 of 3 fresh runs show it (a throughput candidate's
runs each paired with a fresh run of its reference). Each finding is then reduced to
its minimal set, the parameters and values it needs, and printed with its effect, the
counters that moved, a one-line rdmabench reproducer and, where perftest can express
it, the ib_* command line. Later points inside a known set are skipped.

Every run and every finding is appended to the records stream (NDJSON) as it is made;
--resume FILE continues a hunt without measuring again what FILE holds. --budget holds:
no run starts once it is spent. Ctrl-C ends the hunt and keeps what it found.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Server = args[0]
			if err := o.check(cmd); err != nil {
				return err
			}
			o.Out.Stdout, o.Out.Stderr = cmd.OutOrStdout(), cmd.ErrOrStderr()
			if runF != nil {
				return runF(o)
			}
			return o.session(o.hunt)
		},
	}
	addClientFlags(cmd, &o.clientOptions)
	f := cmd.Flags()
	f.Lookup("json").Usage = "write the hunt's outcome (findings, runs, budget) as JSON to FILE ('-' for stdout)"
	f.Lookup("csv").Usage = "not used by hunt (its records stream, --records, holds every run)"
	f.StringSliceVar(&o.Ops, "ops", []string{"write", "read"}, "operations to search")
	f.StringVar(&o.Profile, "profile", "", "NIC profile name or YAML file (default: detected from the device): its grid is the space, its hunt section the thresholds")
	f.StringVar(&o.Space, "space", "", "override dimensions of the space, e.g. 'size=64K,1M; sq_depth=64,1024; qps=1,4; mr=pool' (dimensions: op, size, sq_depth, post_list, cq_mod, qps, offset, mtu, qp_timeout, mr, bidirectional)")
	f.DurationVar(&o.Budget, "budget", 15*time.Minute, "the hunt's time, a resumed hunt's earlier runs included: no run starts once it is spent (0: no limit)")
	f.IntVar(&o.MaxRuns, "max-runs", 0, "the most runs, earlier ones included (0: no limit)")
	f.Uint64Var(&o.Seed, "seed", 1, "the search's random seed: the same seed and the same measurements make the same hunt")
	f.Float64Var(&o.PointDuration, "point-duration", 0, "seconds per run (default: the profile's point_duration_s)")
	f.StringVar(&o.Records, "records", "", "records stream, NDJSON: every run and every finding (default hunt-<profile>-<time>.ndjson)")
	f.StringVar(&o.Resume, "resume", "", "continue the hunt whose records stream is FILE, appending to it")
	addCountersFlag(cmd, &o.Counters)
	return cmd
}

// check checks the flags of rdmabench hunt.
func (o *huntOptions) check(cmd *cobra.Command) error {
	seen := map[string]bool{}
	for _, op := range o.Ops {
		if _, ok := ops.All[op]; !ok {
			return flagErrorf("--ops: unknown operation %q (want write, read)", op)
		}
		if seen[op] {
			return flagErrorf("--ops: %s given twice", op)
		}
		seen[op] = true
	}
	switch {
	case o.Budget < 0:
		return flagErrorf("--budget %v: want a duration, or 0 for no limit", o.Budget)
	case o.MaxRuns < 0:
		return flagErrorf("--max-runs %d: want a count, or 0 for no limit", o.MaxRuns)
	case !(o.PointDuration >= 0) || o.PointDuration > bench.MaxDurationS:
		return flagErrorf("--point-duration %g: want seconds, 0 to %d (0: the profile's)", o.PointDuration, int(bench.MaxDurationS))
	case o.Out.CSV != "":
		return flagErrorf("--csv: hunt writes no CSV; every run is in its records stream (--records)")
	case o.Counters == "off":
		return flagErrorf("--counters off: the hunt's counters rule reads them; give auto, all or a list")
	}
	if err := checkPorts(o.TCPPort, o.Local.Port); err != nil {
		return err
	}
	if o.Space != "" {
		// The syntax only: the values are checked against the device's profile later.
		rxe, _ := profiles.Load("rxe")
		if _, err := hunt.DefaultSpace(rxe, o.Ops...).Override(o.Space); err != nil {
			return flagErrorf("--space: %v", err)
		}
	}
	if err := bench.ValidateCounters(o.Counters); err != nil {
		return &flagError{err}
	}
	if o.Resume != "" && o.Records != "" && o.Resume != o.Records {
		return flagErrorf("--resume appends to the records it resumes: drop --records")
	}
	if o.Resume != "" {
		if _, err := os.Stat(o.Resume); err != nil {
			return flagErrorf("--resume %s: %v (give the records stream of the hunt to continue)", o.Resume, errors.Unwrap(err))
		}
	}
	return o.Out.check()
}

func (o *huntOptions) hunt(ctx context.Context, c *bench.Client) error {
	if err := o.Out.openResults(); err != nil {
		return err
	}
	defer o.Out.close()
	prof, err := (&sweepOptions{Profile: o.Profile}).profile(c)
	if err != nil {
		return err
	}
	space := hunt.DefaultSpace(prof, o.Ops...)
	if o.Space != "" {
		if space, err = space.Override(o.Space); err != nil {
			return flagErrorf("--space: %v", err)
		}
	}
	var prior []hunt.Record
	stream, path, err := resumable("hunt", prof.Name, o.Records, o.Resume, func(r io.Reader) (err error) {
		prior, err = hunt.ReadRecords(r)
		return err
	})
	if err != nil {
		return err
	}
	defer stream.Close()
	dur := o.PointDuration
	if dur == 0 {
		dur = prof.PointDurationS
	}
	counters := o.Counters
	if counters == "" {
		counters = "auto"
	}
	d := c.Device()
	p := hunt.Plan{
		Space: space,
		Base: result.Config{Test: result.BW, DurationS: dur, WarmupIterations: uint64(prof.WarmupIterations), Counters: counters,
			InlineBytes: bench.InlineAuto},
		Budget: o.Budget, MaxRuns: o.MaxRuns, Seed: o.Seed, Rules: hunt.RulesFor(prof),
		LinkGbps: prof.LinkGbpsFor(d.VendorPartID),
		Validate: func(c result.Config) error { ops.Defaults(&c); return ops.Validate(c) },
		Prior:    prior, Server: o.commandServer(),
	}
	fmt.Fprintf(o.Out.Stderr, "hunt: profile %s (%s), %d configurations, %g s per run, budget %v, records -> %s",
		prof.Name, prof.Source, space.Size(), dur, o.Budget, path)
	if len(prior) > 0 {
		fmt.Fprintf(o.Out.Stderr, " (resuming: %d records)", len(prior))
	}
	fmt.Fprintln(o.Out.Stderr)
	measure := sweep.SessionMeasurer(func(ctx context.Context, cfg result.Config) (result.Result, error) {
		return c.Run(ctx, ops.All[cfg.Op], cfg)
	})
	record := hunt.NewRecorder(stream)
	runs := 0
	out, herr := hunt.Run(ctx, measure, p, func(r hunt.Record) error {
		if r.Kind == hunt.KindFinding && r.Finding != nil {
			fmt.Fprintf(o.Out.Stderr, "hunt: finding %s: %s\n", r.Finding.Class, r.Finding.SetString())
		} else if runs++; runs%25 == 0 {
			fmt.Fprintf(o.Out.Stderr, "hunt: %d runs\n", runs)
		}
		return record(r)
	})
	errs := []error{o.Out.emit(func(w io.Writer) error {
		for _, line := range hunt.Summary(out) {
			if _, err := fmt.Fprintln(w, line); err != nil {
				return err
			}
		}
		return nil
	}, func(w io.Writer) error {
		e := json.NewEncoder(w)
		e.SetIndent("", "  ")
		return e.Encode(out)
	}, nil)}
	if herr != nil {
		errs = append(errs, fmt.Errorf("hunt: %w", herr))
	}
	if ctx.Err() != nil {
		fmt.Fprintf(o.Out.Stderr, "hunt: interrupted; continue with the same flags and --resume %s (drop --records)\n", path) // text: local (the command line)
	}
	if o.TCPPort != oob.DefaultPort {
		fmt.Fprintf(o.Out.Stderr, "hunt: the rdmabench reproducers need -p %d (the server's control port)\n", o.TCPPort)
	}
	if out.Runs == 0 && out.Reused == 0 && herr == nil && ctx.Err() == nil && !out.Exhausted {
		errs = append(errs, errors.New("hunt: no run was measured (is the budget or --max-runs too small for one run?)"))
	}
	return errors.Join(errs...)
}

// commandServer is the server as the findings' command lines give it (rdmabench's and
// perftest's alike): its address and, where they are not the defaults, this side's
// device, port and GID index. The control port is rdmabench's own (perftest's -p is
// another): a hunt on another port says so once.
func (o *huntOptions) commandServer() string {
	var b strings.Builder
	if o.Local.Device != "" {
		fmt.Fprintf(&b, "-d %s ", o.Local.Device)
	}
	if o.Local.Port != 1 {
		fmt.Fprintf(&b, "-i %d ", o.Local.Port)
	}
	if o.Local.GIDIndex >= 0 {
		fmt.Fprintf(&b, "-x %d ", o.Local.GIDIndex)
	}
	b.WriteString(o.Server)
	return b.String()
}
