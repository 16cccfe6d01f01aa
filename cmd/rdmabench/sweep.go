package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/rdmabench/rdmabench/bench"
	"github.com/rdmabench/rdmabench/bench/ops"
	"github.com/rdmabench/rdmabench/plan"
	"github.com/rdmabench/rdmabench/profiles"
	"github.com/rdmabench/rdmabench/report"
	htmlreport "github.com/rdmabench/rdmabench/report/html"
	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/sweep"
	"github.com/rdmabench/rdmabench/verbs/qp"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
)

type sweepOptions struct {
	clientOptions
	Ops           []string
	Profile       string
	Search        string
	Objective     string
	MaxP99        time.Duration
	Resolution    float64 // asked for (--resolution); 0: what the budget buys
	Repeat        int
	Budget        time.Duration
	PointDuration float64
	MaxDuration   float64 // --point-duration-max; 0: four times the point duration
	Records       string  // --records (--results): the records stream
	Resume        string
	QPs           int
	Threads       int
	CPUList       string
	QPTimeout     int
	Counters      string
	Events        result.Config // completion events and CQ moderation for every point
	Fabric        result.Config // --disable-pcie-relaxed, --sl and --tclass for every point
	HTML          string        // --html FILE: the HTML report of the stream and the tuned report
	MR            []string      // --mr A,B: compare two registration modes size by size (C2)
	Sizes         []int         // --sizes for --mr (default: the profile's)
	Baseline      string        // --baseline tcp with --mr
	Verbose       bool          // --verbose: the whole tuned report, not the tuned table and its summary
}

func newCmdSweep(runF func(*sweepOptions) error) *cobra.Command {
	o := &sweepOptions{}
	cmd := &cobra.Command{
		Use: "sweep SERVER",
		Example: "  rdmabench sweep -d mlx5_0 host-a --json tuned.json --csv tuned.csv\n" +
			"  rdmabench sweep -d mlx5_0 host-a --ops write --budget 5m --resolution 0.05\n" +
			"  rdmabench sweep -d mlx5_0 host-a --resume sweep-cx6-20250101-120000.ndjson",
		Short: "Sweep size, SQ depth, alignment, moderation and post list; report the tuned parameters",
		Long: `Sweep the parameters that decide RDMA performance against a running 'rdmabench server',
for WRITE and for READ, and print the tuned-parameter table: the optimum of each
operation next to the tuning article's hand-made values (docs/claims.md), with a
verdict per parameter, and the values found equal to the best ("32 (32-512 equal)");
under it, per operation, the resolution, the noise, the budget used, and the gain over
perftest's defaults and over the article's configuration (with its 95% interval,
"equal" or "cannot tell"). --verbose prints the whole report: the measurements with
their intervals, the optimum per objective, the comparisons left open and the search's
notes; --json and --html hold all of it.

Every measured point is appended to the records stream (--records, NDJSON, one result
per line) as soon as it is measured; --resume FILE continues an interrupted sweep without
re-measuring the points already in FILE. The default search (descent) walks one
dimension at a time from the profile's start point and refines locally; --search grid
measures every point of the profile's grid. Descent moves only when re-measuring, in
interleaved pairs, says the new point is significantly better.

Every comparison is decided at a resolution R: equal within +-R, or better by more
than the noise allows. First a probe measures the start point against perftest's
defaults in interleaved rounds, and from their noise and --budget the sweep says what
R the budget buys, and what a finer one would cost; or, given --resolution, what that
costs. Then the contenders (the best points, the chosen point's one-parameter
neighbours, the article's values) are measured together, round after round, until
every comparison is decided at R (an interval of the paired ratio, its error spent
over the looks and the contenders) or --budget is spent, and the cheapest point equal
to the best is chosen. The chosen point, the article's configuration and perftest's
defaults are then measured afresh, --repeat rounds, for the gains (median, 95%
interval). What even R left undecided is reported as "cannot tell". The budget holds:
no run starts once it is spent.

A point runs --point-duration seconds and is compared on its steady window (every queue
full: no fill, no drain); one with too little of one runs longer, up to
--point-duration-max, and is flagged queue-bound if even that is not enough. Tainted
runs (NIC counters moved) count as measured: a point's taint rate is part of it.
A resumed sweep charges the budget with the recorded runs' time, so it takes the same
decisions; a stream that does not match the sweep (its points, in their order, or its
settings: duration, warm-up, counters, QPs, threads, MTU, ...) is an error.`,
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
			return sweepRun(o)
		},
	}
	addClientFlags(cmd, &o.clientOptions)
	f := cmd.Flags()
	f.Lookup("json").Usage = "write the tuned-parameter report as JSON to FILE ('-' for stdout)"
	f.Lookup("csv").Usage = "write the tuned-parameter table as CSV to FILE ('-' for stdout)"
	f.StringSliceVar(&o.Ops, "ops", []string{"write", "read"}, "operations to sweep")
	f.StringVar(&o.Profile, "profile", "", "NIC profile name or YAML file (default: detected from the device)")
	f.StringVar(&o.Search, "search", "descent", "descent (few points) or grid (every point)")
	f.StringVar(&o.Objective, "objective", "bw", "what the search maximises: bw, rate, p99 or bw-p99")
	f.DurationVar(&o.MaxP99, "max-p99", 0, "latency bound for --objective bw-p99 (e.g. 500us); also reported")
	f.Float64Var(&o.Resolution, "resolution", 0, "decide every comparison at +- this fraction (0.05: 5%) and say what it costs (default: the finest the --budget buys at the noise the probe measures)")
	f.Float64Var(&o.Resolution, "tolerance", 0, "the old name of --resolution")
	_ = f.MarkDeprecated("tolerance", "use --resolution")
	f.IntVar(&o.Repeat, "repeat", 6, "runs of the chosen configuration and of each reference, after the choice (made even; with fewer, the gains' intervals cover the truth less often where runs are sometimes tainted)")
	f.DurationVar(&o.Budget, "budget", 15*time.Minute, "time per operation; when spent, what is undecided is reported as such (0: no limit)")
	f.Float64Var(&o.PointDuration, "point-duration", 0, "seconds per point (default: the profile's)")
	f.Float64Var(&o.MaxDuration, "point-duration-max", 0, "the longest a point is run for its queue (default: four times --point-duration)")
	addRecordsFlag(cmd, &o.Records, "records stream, NDJSON: every run, one result a line (default sweep-<profile>-<time>.ndjson, with --mr mr-<profile>-<time>.ndjson; --results is the same flag)")
	f.StringVar(&o.Resume, "resume", "", "continue the sweep whose records stream is FILE, appending to it")
	f.IntVarP(&o.QPs, "qps", "q", 1, "number of QPs")
	addThreadsFlag(cmd, &o.Threads)
	addCPUFlag(cmd, &o.CPUList)
	addQPTimeoutFlag(cmd, &o.QPTimeout)
	addCountersFlag(cmd, &o.Counters)
	addEventFlags(cmd, &o.Events)
	addFabricFlags(cmd, &o.Fabric)
	f.StringVar(&o.HTML, "html", "", "also write the HTML report (curves, heat maps, latency, the tuned table) to FILE, as 'report html' draws it")
	f.StringSliceVar(&o.MR, "mr", nil, "instead of tuning, compare two registration modes size by size (the article's C2): pool,per-io or pool,cache; the table gives B over A per size with its 95% interval and the break-even size")
	f.Var(sizeListValue{&o.Sizes}, "sizes", "with --mr: message sizes (default: the profile's)")
	f.StringVar(&o.Baseline, "baseline", "", "with --mr: tcp also measures each size over TCP, in the same rounds, and judges B against it")
	// table by default: the test bed's e2e reads the boxed table ("message size").
	addTableFormatFlag(cmd, &o.Out.Format, string(report.FormatTable))
	f.BoolVar(&o.Verbose, "verbose", false, "print the whole tuned report: the measurements with their intervals, the optimum per objective, the comparisons left open, the probe, the search's effort, taint and queue-bound points (by default: the tuned table and a few lines)")
	return cmd
}

// check checks the flags of rdmabench sweep.
func (o *sweepOptions) check(cmd *cobra.Command) error {
	for _, op := range o.Ops {
		if _, ok := ops.All[op]; !ok {
			return flagErrorf("--ops: unknown operation %q (want write, read)", op)
		}
	}
	if _, err := sweep.ParseObjective(o.Objective, o.MaxP99); err != nil {
		return &flagError{err}
	}
	if o.Search != "descent" && o.Search != "grid" {
		return flagErrorf("--search %q: want descent or grid", o.Search)
	}
	switch {
	case o.Repeat < 2:
		return flagErrorf("--repeat %d: want 2 or more (an interval needs two runs)", o.Repeat)
	case !(o.Resolution >= 0 && o.Resolution < 1):
		name := "--resolution"
		if cmd.Flags().Changed("tolerance") && !cmd.Flags().Changed("resolution") {
			name = "--tolerance" // the flag the user gave
		}
		return flagErrorf("%s %g: want a fraction in (0, 1), e.g. 0.05 for +-5%%, or 0 for what the budget buys", name, o.Resolution)
	case o.Budget < 0:
		return flagErrorf("--budget %v: want a duration, or 0 for no limit", o.Budget)
	case !(o.PointDuration >= 0):
		return flagErrorf("--point-duration %g: want seconds, not negative (0: the profile's)", o.PointDuration)
	case !(o.MaxDuration >= 0):
		return flagErrorf("--point-duration-max %g: want seconds, not negative (0: four times --point-duration)", o.MaxDuration)
	}
	if err := checkNotZero(cmd, "qps"); err != nil {
		return err
	}
	if o.Threads < 1 || o.Threads > o.QPs {
		return flagErrorf("--threads %d with --qps %d: want 1 to --qps (every loop thread drives QPs of its own)", o.Threads, o.QPs)
	}
	if o.CPUList != "" {
		if _, err := qp.ParseCPUList(o.CPUList); err != nil {
			return flagErrorf("--cpu: %v", err)
		}
	}
	if err := checkPorts(o.TCPPort, o.Local.Port); err != nil {
		return err
	}
	if o.Profile != "" {
		if _, err := profiles.Load(o.Profile); err != nil {
			return flagErrorf("--profile %s: %v ('rdmabench profiles' lists them)", o.Profile, err)
		}
	}
	if err := plan.ValidateCounters(o.Counters); err != nil {
		return &flagError{err}
	}
	if err := checkQPTimeout(cmd, o.QPTimeout); err != nil {
		return err
	}
	if o.QPTimeout < 0 || o.QPTimeout > 31 {
		return flagErrorf("--qp-timeout %d: want 1 to 31", o.QPTimeout)
	}
	if err := checkFabric(o.Fabric); err != nil {
		return err
	}
	if err := o.checkModes(cmd); err != nil {
		return err
	}
	records, err := recordsFlag(cmd)
	if err != nil {
		return err
	}
	if o.Resume != "" && o.Records != "" && o.Resume != o.Records {
		return flagErrorf("--resume appends to the file it resumes: drop %s", records)
	}
	if o.Resume != "" {
		if _, err := os.Stat(o.Resume); err != nil {
			return flagErrorf("--resume %s: %v (give the records stream of the sweep to continue)", o.Resume, errors.Unwrap(err))
		}
	}
	if err := checkFormat(o.Out.Format, report.TableFormats); err != nil {
		return err
	}
	return o.Out.check()
}

func sweepRun(o *sweepOptions) error {
	// The report files first: a path that cannot be written is found before the sweep.
	if err := o.Out.openResults(); err != nil {
		return err
	}
	defer o.Out.close()
	if len(o.MR) > 0 {
		return o.session(o.compareModes)
	}
	return o.session(o.sweep)
}

// profile is --profile, or the profile of the client's device.
func (o *sweepOptions) profile(c *bench.Client) (profiles.Profile, error) {
	if o.Profile != "" {
		return profiles.Load(o.Profile)
	}
	d := c.Device()
	return profiles.Detect(d.Driver, d.VendorID, d.VendorPartID)
}

// resumable opens the NDJSON stream a long command (what: sweep, hunt) appends to as it
// goes: --resume's, after read has read it, else --records, else a new file named after
// the command, the profile and the time.
func resumable(what, profile, records, resume string, read func(io.Reader) error) (*os.File, string, error) {
	path := records
	if resume != "" {
		path = resume
		f, err := os.Open(path)
		if err == nil {
			err = read(f)
			f.Close()
		}
		if err != nil {
			return nil, "", fmt.Errorf("--resume %s: %w (a line cut short by a crash can be deleted)", path, err)
		}
	}
	if path == "" {
		path = fmt.Sprintf("%s-%s-%s.ndjson", what, profile, time.Now().Format("20060102-150405"))
	}
	f, err := openStream(path)
	return f, path, err
}

// openStream opens the records stream at path for appending.
func openStream(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("cannot open the records stream: %w", err)
	}
	return f, nil
}

func (o *sweepOptions) sweep(ctx context.Context, c *bench.Client) error {
	prof, err := o.profile(c)
	if err != nil {
		return err
	}
	var prior []sweep.Recorded
	stream, path, err := resumable("sweep", prof.Name, o.Records, o.Resume, func(r io.Reader) (err error) {
		prior, err = sweep.ReadStream(r)
		return err
	})
	if err != nil {
		return err
	}
	defer stream.Close()
	obj, _ := sweep.ParseObjective(o.Objective, o.MaxP99)
	opts := o.planOptions(prof, obj)
	dur, maxDur := opts.Durations()
	fmt.Fprintf(o.Out.Stderr, "sweep: profile %s (%s), %s search, objective %s, %.2g s per point (up to %.2g s for a deep queue), results -> %s",
		prof.Name, prof.Source, o.Search, obj.Describe(), dur, maxDur, path)
	if len(prior) > 0 {
		fmt.Fprintf(o.Out.Stderr, " (resuming: %d results)", len(prior))
	}
	fmt.Fprintln(o.Out.Stderr)
	if obj.NeedsP99() {
		// Points are timed, so their sample count is not known in advance (see
		// sweep.WithP99Samples): say up front why a point may not be a candidate.
		fmt.Fprintf(o.Out.Stderr, "sweep: objective %s needs a p99, which needs %d signalled completions in a point's %.2g s; a point with fewer is not a candidate (--point-duration gives more)\n",
			obj, result.MinSamples(0.99), dur)
	}
	runner := sweep.NewRunner(bench.Measurer{Client: c, Ops: ops.All}, sweep.StreamRecorder(stream), prior)
	prog := newProgress(o.Out.Stderr)
	runner.Progress = prog.event
	runner.Notice = func(op, line string) { prog.notice(op + ": " + line) }
	outcomes := map[string]sweep.Outcome{}
	var errs []error
	for _, op := range o.Ops {
		p := opts.Plan(op)
		prog.start(op)
		out, err := runner.Run(ctx, p)
		prog.done()
		outcomes[op] = out
		if err != nil {
			errs = append(errs, fmt.Errorf("%s sweep: %w", op, err))
			var lost *sweep.SessionLostError
			if errors.As(err, &lost) {
				break
			}
		}
		fmt.Fprintf(o.Out.Stderr, "sweep: %s: %d points (%d runs, %d reused) of a %d-point grid in %.0f s%s\n",
			op, out.Points, out.Runs, out.Reused, out.GridPoints, out.ElapsedS, map[bool]string{true: ", interrupted"}[out.Interrupted])
		if ctx.Err() != nil {
			break
		}
	}
	t := report.NewTuned(prof, outcomes, c.Device(), c.ServerDevice(), version)
	errs = append(errs, writeTuned(o.Out, t, o.Verbose))
	if o.HTML != "" {
		errs = append(errs, o.writeHTML(path, t))
	}
	if ctx.Err() != nil {
		fmt.Fprintf(o.Out.Stderr, "sweep: interrupted; continue with: rdmabench sweep --resume %s %s\n", path, o.Server) // text: local (the command line)
	}
	return errors.Join(errs...)
}

// writeHTML writes --html: the HTML report of the records stream and the tuned report.
func (o *sweepOptions) writeHTML(stream string, t report.Tuned) error {
	b, err := os.ReadFile(stream)
	if err != nil {
		return fmt.Errorf("--html: %w", err)
	}
	var tuned bytes.Buffer
	if err := report.WriteTunedJSON(&tuned, t); err != nil {
		return fmt.Errorf("--html: %w", err)
	}
	files := []htmlreport.File{{Path: stream, Data: b}, {Path: "tuned.json", Data: tuned.Bytes()}}
	if _, err := writeHTML(o.HTML, files, nil, ""); err != nil {
		return fmt.Errorf("--html %s: %w", o.HTML, err)
	}
	fmt.Fprintf(o.Out.Stderr, "sweep: HTML report in %s\n", o.HTML)
	return nil
}

// writeTuned writes the tuned report: to the terminal the tuned table and a few lines
// (report.TunedSummary), or with verbose the whole report (report.TunedShow); --json
// and --csv whole.
func writeTuned(out outputs, t report.Tuned, verbose bool) error {
	show := report.TunedSummary
	if verbose {
		show = report.TunedShow
	}
	return out.emit(func(w io.Writer) error { return show(w, t, out.format(w)) },
		func(w io.Writer) error { return report.WriteTunedJSON(w, t) },
		func(w io.Writer) error { return report.TunedCSV(w, t) })
}

// progress shows a bar with an ETA on a terminal, a plain line per point elsewhere.
type progress struct {
	w   io.Writer
	tty bool
	bar *progressbar.ProgressBar
	op  string
}

func newProgress(w io.Writer) *progress {
	f, ok := w.(*os.File)
	return &progress{w: w, tty: ok && isatty.IsTerminal(f.Fd())}
}

func (p *progress) start(op string) {
	p.op = op
	if p.tty {
		p.bar = progressbar.NewOptions(-1, progressbar.OptionSetWriter(p.w), progressbar.OptionSetDescription(op),
			progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(true), progressbar.OptionSetElapsedTime(true),
			progressbar.OptionFullWidth(), progressbar.OptionClearOnFinish(), progressbar.OptionThrottle(250*time.Millisecond))
	}
}

func (p *progress) event(e sweep.Event) {
	r := e.Result
	line := fmt.Sprintf("%s %s %s", e.Op, e.Phase, e.Point) // text: local (this sweep's plan)
	switch {
	case e.Reused:
		line += ": from the resumed stream"
	case r.Error != "":
		line += ": failed: " + r.Error
	case r.Lat.P99 == nil:
		line += fmt.Sprintf(": %.3f Gb/s, %.4f Mpps, no p99 (%d samples)", r.BWGbps, r.MsgRateMpps, r.Lat.Samples)
	default:
		line += fmt.Sprintf(": %.3f Gb/s, %.4f Mpps, p99 %.1f us", r.BWGbps, r.MsgRateMpps, float64(*r.Lat.P99)/1e3)
	}
	if r.Tainted {
		line += fmt.Sprintf(", tainted (%d NIC counters moved)", len(report.TaintFlags(r)))
	}
	if p.bar != nil {
		if p.bar.GetMax() != e.Expected && e.Expected > e.Measured {
			p.bar.ChangeMax(e.Expected)
		}
		p.bar.Describe(line)
		p.bar.Set(e.Measured)
		return
	}
	fmt.Fprintf(p.w, "[%d/~%d] %s\n", e.Measured, max(e.Expected, e.Measured), line)
}

// notice is one of the plan's statements, on a line of its own (above the bar).
func (p *progress) notice(line string) {
	if p.bar != nil {
		p.bar.Clear()
	}
	fmt.Fprintln(p.w, "sweep: "+line)
}

func (p *progress) done() {
	if p.bar != nil {
		p.bar.Finish()
		p.bar = nil
	}
}

// planOptions are the flags as a sweep's options, on the profile prof with the
// objective obj (--objective, --max-p99).
func (o *sweepOptions) planOptions(prof profiles.Profile, obj sweep.Objective) sweep.Options {
	return sweep.Options{Profile: prof, Search: o.Search, Objective: obj, MaxP99: o.MaxP99, Resolution: o.Resolution,
		Repeat: o.Repeat, Budget: o.Budget, PointDurationS: o.PointDuration, MaxDurationS: o.MaxDuration,
		QPs: o.QPs, Threads: o.Threads, CPUList: o.CPUList, QPTimeout: o.QPTimeout, Counters: o.Counters, Events: o.Events,
		Fabric: o.Fabric, Defaults: ops.Defaults} // perftest's defaults come from one place, as the tests use them
}
