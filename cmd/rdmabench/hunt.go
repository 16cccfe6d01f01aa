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
	"github.com/rdmabench/rdmabench/plan"
	"github.com/rdmabench/rdmabench/profiles"
	"github.com/rdmabench/rdmabench/result"
	"github.com/spf13/cobra"
)

type huntOptions struct {
	clientOptions
	// Servers: the servers given where there are several (SERVER... or a,b,c), as given;
	// Server is then the first, the session's. A fan-out point of k runs against the
	// first k.
	Servers       []string
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
		Use: "hunt SERVER [SERVER...]",
		Example: "  rdmabench hunt -d mlx5_0 host-a --budget 30m\n" +
			"  rdmabench hunt -d rxe1 10.0.0.1 --space 'size=64K,1M; qps=1,4' --budget 10m\n" +
			"  rdmabench hunt -d mlx5_0 host-a host-b host-c --budget 1h      # also fan-out to 2 and 3 servers\n" +
			"  rdmabench hunt -d mlx5_0 host-a --resume hunt-cx6-20250101-120000.ndjson",
		Short: "Search the configuration space for anomalies; reduce each to what triggers it",
		Long: `Search the configurations one rdmabench run can take (operation, message size, SQ depth,
post list, CQ moderation, QPs, buffer offset, MTU, QP timeout, --mr mode, -b) for
anomalies, against a running 'rdmabench server', as Collie (NSDI 2022) does for RDMA
NICs: throughput far below what the same operation and size reached elsewhere, error or
congestion counters that move, failed completions, latency tails far above the median,
and QPs, servers or directions served unevenly. Given several servers (SERVER a b c,
or a,b,c), it searches the fan-out too (dimension peers): a point runs against the
first server alone, or against the first k at once, one QP each, as 'write bw a,b,c'
runs.

The search is simulated annealing over an anomaly score. A run over a rule's bar is a
candidate, and a finding only when 3 of 3 fresh runs show it (a throughput candidate's
runs each paired with a fresh run of its reference). Each finding is then reduced to
its minimal set, the parameters and values it needs, and printed with its effect, the
counters that moved, a one-line rdmabench reproducer and, where perftest can express
it, the ib_* command line. Later points inside a known set are skipped.

Every run and every finding is appended to the records stream (NDJSON) as it is made;
--resume FILE continues a hunt without measuring again what FILE holds. --budget holds:
no run starts once it is spent. Ctrl-C ends the hunt and keeps what it found.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Server = strings.Join(args, ",") // check splits it
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
	f.Lookup("json").Usage = "write the hunt's outcome (findings, runs, budget) as JSON to FILE ('-' for stdout; docs/schemas/hunt.schema.json)"
	f.Lookup("csv").Usage = "not used by hunt (its records stream, --records, holds every run)"
	f.StringSliceVar(&o.Ops, "ops", []string{"write", "read"}, "operations to search")
	f.StringVar(&o.Profile, "profile", "", "NIC profile name or YAML file (default: detected from the device): its grid is the space, its hunt section the thresholds")
	f.StringVar(&o.Space, "space", "", "override dimensions of the space, e.g. 'size=64K,1M; sq_depth=64,1024; qps=1,4; mr=pool' (dimensions: "+spaceDims()+")")
	f.DurationVar(&o.Budget, "budget", 15*time.Minute, "the time the hunt's runs take (the sum of their wall times, as a sweep's budget), a resumed hunt's earlier runs included: no run starts once it is spent (0: no limit)")
	f.IntVar(&o.MaxRuns, "max-runs", 0, "the most runs, earlier ones included (0: no limit)")
	f.Uint64Var(&o.Seed, "seed", 1, "the search's random seed: the same seed and the same measurements make the same hunt")
	f.Float64Var(&o.PointDuration, "point-duration", 0, "seconds per run (default: the profile's point_duration_s)")
	addRecordsFlag(cmd, &o.Records, "records stream, NDJSON: every run and every finding (default hunt-<profile>-<time>.ndjson; docs/schemas/hunt-record.schema.json; --results is the same flag)")
	f.StringVar(&o.Resume, "resume", "", "continue the hunt whose records stream is FILE, appending to it")
	addCountersFlag(cmd, &o.Counters)
	return cmd
}

// check checks the flags of rdmabench hunt, and splits the servers (o.Server: every
// SERVER argument, comma-separated) into Server, the first, and Servers where there are
// several.
func (o *huntOptions) check(cmd *cobra.Command) error {
	if _, err := bench.SplitServers(o.Server, o.TCPPort); err != nil {
		return flagErrorf("SERVER: %v", err)
	}
	if words := strings.Split(o.Server, ","); len(words) > 1 {
		for i := range words {
			words[i] = strings.TrimSpace(words[i])
		}
		o.Server, o.Servers = words[0], words
	}
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
	case !(o.PointDuration >= 0) || o.PointDuration > plan.MaxDurationS:
		return flagErrorf("--point-duration %g: want seconds, 0 to %d (0: the profile's)", o.PointDuration, int(plan.MaxDurationS))
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
		if _, err := o.options(rxe, 0).SpaceFor(); err != nil {
			return flagErrorf("--space: %v", err)
		}
	}
	if err := plan.ValidateCounters(o.Counters); err != nil {
		return &flagError{err}
	}
	records, err := recordsFlag(cmd)
	if err != nil {
		return err
	}
	if o.Resume != "" && o.Records != "" && o.Resume != o.Records {
		return flagErrorf("--resume appends to the records it resumes: drop %s", records)
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
	ho := o.options(prof, c.Device().VendorPartID)
	p, err := hunt.NewPlan(ho)
	if err != nil {
		return flagErrorf("--space: %v", err)
	}
	measure := bench.Measurer{Client: c, Ops: ops.All}
	if len(o.Servers) > 1 {
		addrs, _ := bench.SplitServers(strings.Join(o.Servers, ","), o.TCPPort) // checked in check
		measure.Fan = bench.FanDialer(addrs, o.Local, o.Token, o.Timeout)
		// Every server answers before the hunt begins: one that cannot would fail every
		// fan-out's setup.
		f, err := measure.Fan(ctx, len(addrs))
		if err != nil {
			return err
		}
		f.Close()
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
	p.Prior = prior
	fmt.Fprintf(o.Out.Stderr, "hunt: profile %s (%s), %d configurations, %g s per run, budget %v, records -> %s",
		prof.Name, prof.Source, p.Space.Size(), ho.Duration(), o.Budget, path)
	if d, ok := p.Space.Dim(hunt.DimPeers); ok {
		fmt.Fprintf(o.Out.Stderr, ", peers %s of %s", strings.Join(d.Values, ","), strings.Join(o.Servers, ","))
	}
	if len(prior) > 0 {
		fmt.Fprintf(o.Out.Stderr, " (resuming: %d records)", len(prior))
	}
	fmt.Fprintln(o.Out.Stderr)
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
	}, huntJSON(out), nil)}
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

// huntJSON writes the outcome as --json has it: hunt.Outcome, its schema_version first
// (docs/schemas/hunt.schema.json).
func huntJSON(out hunt.Outcome) func(io.Writer) error {
	return func(w io.Writer) error {
		e := json.NewEncoder(w)
		e.SetIndent("", "  ")
		return e.Encode(out)
	}
}

// spaceDims lists the dimensions --space takes, as plan.Dims names them: "op, size,
// depth, ..., peers (1 to the servers given; optional), tclass (0 to 255; optional)"
// (an optional one is absent unless --space or several servers add it).
func spaceDims() string {
	var w []string
	for _, d := range plan.Dims {
		switch {
		case d.Key == hunt.DimPeers:
			w = append(w, d.Word+" (1 to the servers given; optional)")
		case d.Optional:
			w = append(w, fmt.Sprintf("%s (%d to %d; optional)", d.Word, d.Lo, d.Hi))
		default:
			w = append(w, d.Word)
		}
	}
	return strings.Join(w, ", ")
}

// huntValidate is the hunt's Plan.Validate: bench's rules for a plan, after its defaults
// (a fan-out's --sync and --landing among them).
func huntValidate(c result.Config) error { ops.Defaults(&c); return ops.Validate(c) }

// options are the flags as the hunt's options (hunt.NewPlan), on the profile prof of
// the device with part ID partID (its link rate); the records it resumes are the
// plan's to take once read.
func (o *huntOptions) options(prof profiles.Profile, partID uint32) hunt.Options {
	return hunt.Options{Profile: prof, VendorPartID: partID, Ops: o.Ops, Space: o.Space, Servers: o.Servers, Server: o.Server,
		Device: o.Local.Device, Port: o.Local.Port, GIDIndex: o.Local.GIDIndex,
		Budget: o.Budget, MaxRuns: o.MaxRuns, Seed: o.Seed, PointDurationS: o.PointDuration, Counters: o.Counters,
		Validate: huntValidate}
}
