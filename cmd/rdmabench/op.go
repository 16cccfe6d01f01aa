package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/rdmabench/rdmabench/bench"
	"github.com/rdmabench/rdmabench/bench/ops"
	"github.com/rdmabench/rdmabench/oob"
	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/verbs"
	"github.com/spf13/cobra"
)

// clientOptions are what every client command shares: where the server is, which
// local device, and where results go.
type clientOptions struct {
	Server    string
	TCPPort   int
	Local     bench.Local
	Token     string
	TokenFile string
	Timeout   time.Duration
	Clock     string
	Out       outputs
}

func addClientFlags(cmd *cobra.Command, o *clientOptions) {
	addLocalFlags(cmd, &o.Local)
	f := cmd.Flags()
	f.IntVarP(&o.TCPPort, "port", "p", oob.DefaultPort, "server's TCP port")
	f.StringVar(&o.Token, "token", "", "the server's shared secret (visible in ps: prefer --token-file or $RDMABENCH_TOKEN)")
	f.StringVar(&o.TokenFile, "token-file", "", "read the server's shared secret from FILE")
	f.DurationVar(&o.Timeout, "timeout", 30*time.Second, "bound on each handshake step")
	f.StringVar(&o.Clock, "clock", "auto", "timed-loop tick source: auto (the TSC where the CPU has constant_tsc and nonstop_tsc and the kernel offers it as a clocksource, else CLOCK_MONOTONIC_RAW), tsc or monotonic")
	f.StringVar(&o.Out.JSON, "json", "", "write results as JSON to FILE ('-' for stdout)")
	f.StringVar(&o.Out.CSV, "csv", "", "write results as CSV to FILE ('-' for stdout)")
}

// applyClock sets the timed loops' tick source from --clock, with the note every
// result carries about it:
//
//	auto       the TSC where the CPU and the kernel vouch for it (verbs.ClockVerdict),
//	           else CLOCK_MONOTONIC_RAW
//	tsc        the TSC (x86-64 only), noting what the verdict had against it
//	monotonic  CLOCK_MONOTONIC_RAW
func applyClock(flag string) error {
	switch flag {
	case "auto":
		verbs.SetClock(verbs.ClockVerdict("/"))
	case "tsc":
		note, ok := verbs.ForcedTSCNote("/")
		if !ok {
			return flagErrorf("--clock tsc: %s; use auto or monotonic", note)
		}
		verbs.SetClock(true, note)
	case "monotonic":
		verbs.SetClock(false, verbs.MonotonicNote)
	default:
		return flagErrorf("--clock %q: want auto, tsc or monotonic", flag)
	}
	return nil
}

func (o *clientOptions) dial(ctx context.Context) (*bench.Client, error) {
	addrs, err := bench.SplitServers(o.Server, o.TCPPort)
	switch {
	case err != nil:
		return nil, flagErrorf("SERVER: %v", err)
	case len(addrs) > 1:
		return nil, flagErrorf("SERVER %q: this command takes one server (several are for write bw and read bw)", o.Server) // text: local (the command line)
	}
	if err := o.prepare(); err != nil {
		return nil, err
	}
	return bench.Dial(ctx, addrs[0], o.Local, o.Token, o.Timeout)
}

// prepare checks --timeout, sets the clock and reads the token.
func (o *clientOptions) prepare() error {
	if o.Timeout <= 0 {
		return flagErrorf("--timeout %v: want a positive duration (it bounds every wait on the server and the peer)", o.Timeout)
	}
	if err := applyClock(o.Clock); err != nil {
		return err
	}
	tok, err := token(o.Token, o.TokenFile)
	if err != nil {
		return err
	}
	o.Token = tok
	return nil
}

type testOptions struct {
	clientOptions
	Op           bench.Op
	Config       result.Config
	IntervalFile string // --interval lines, NDJSON ("-": stdout)
	warmup       int64
}

func newCmdOp(name string) *cobra.Command {
	cmd := &cobra.Command{
		Use:   name,
		Short: fmt.Sprintf("RDMA %s tests against an rdmabench server", map[string]string{"write": "WRITE", "read": "READ"}[name]),
	}
	cmd.AddCommand(newCmdTest(name, "bw", nil), newCmdTest(name, "lat", nil))
	return cmd
}

func newCmdTest(op, test string, runF func(*testOptions) error) *cobra.Command {
	o := &testOptions{Op: ops.All[op], Config: result.Config{Op: op, Test: result.Test(test), InlineBytes: bench.InlineAuto}}
	what := map[string]string{"bw": "bandwidth and message rate (with completion latency under load)", "lat": "latency histogram"}[test]
	cmd := &cobra.Command{
		Use:   test + " SERVER",
		Short: fmt.Sprintf("Measure %s %s", op, what),
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Server = args[0]
			if addrs, err := bench.SplitServers(o.Server, o.TCPPort); err != nil {
				return flagErrorf("SERVER: %v", err)
			} else if len(addrs) > 1 {
				o.Config.Peers = len(addrs) // a fan-out / fan-in run
			}
			if err := checkQPTimeout(cmd, o.Config.QPTimeout); err != nil {
				return err
			}
			ops.Defaults(&o.Config)
			o.Config.WarmupIterations = bench.DefaultWarmup(o.Config)
			if cmd.Flags().Changed("warmup") {
				if o.warmup < 0 {
					return flagErrorf("--warmup %d: want 0 (none) or more", o.warmup)
				}
				o.Config.WarmupIterations = uint64(o.warmup)
			}
			if err := ops.Validate(o.Config); err != nil {
				return &flagError{err}
			}
			if err := o.Out.check(); err != nil {
				return err
			}
			o.Out.Stdout, o.Out.Stderr = cmd.OutOrStdout(), cmd.ErrOrStderr()
			if runF != nil {
				return runF(o)
			}
			return testRun(o)
		},
	}
	addClientFlags(cmd, &o.clientOptions)
	addConfigFlags(cmd, &o.Config, test)
	cmd.Flags().Int64Var(&o.warmup, "warmup", 0, "warm-up iterations before measuring (default: a tenth of --iters, or with --duration twice --tx-depth, at least 16; 0: none)")
	if test == "bw" {
		cmd.Flags().StringVar(&o.IntervalFile, "interval-file", "", "where the --interval lines go (default, or '-': stdout)")
	}
	return cmd
}

func addConfigFlags(cmd *cobra.Command, c *result.Config, test string) {
	f := cmd.Flags()
	f.VarP(sizeValue{&c.MsgSizeBytes}, "size", "s", "message size (units: 2, 4K, 64K, 1M); default 64K for bw, 2 for lat")
	f.Uint64VarP(&c.Iterations, "iters", "n", 0, "messages per QP (default 5000 for bw, 1000 for lat)")
	if test == "bw" {
		f.Float64VarP(&c.DurationS, "duration", "D", 0, "run for this many seconds instead of --iters")
		f.IntVarP(&c.NumQPs, "qps", "q", 1, "number of QPs")
		f.IntVarP(&c.PostList, "post-list", "l", 1, "WRs chained per ibv_post_send")
		f.BoolVar(&c.Verify, "verify", false, "fill the source with a pattern and check the bytes that arrived")
		f.BoolVarP(&c.Bidirectional, "bidirectional", "b", false, "both sides drive the same traffic at once (perftest's -b): each direction's numbers and their sum")
		f.StringVar(&c.Baseline, "baseline", "", "after the RDMA run, measure the same transfer (messages, size, direction) over this transport between the same hosts and report RDMA's Gb/s over its: tcp (the kernel's TCP stack, to the address of the control connection)")
		f.Float64Var(&c.IntervalS, "interval", 0, "every this many seconds of the measured run, an NDJSON line: messages, bytes, Gb/s, Mpps and the NIC counters that moved (0.1 s or more; the result keeps the smallest and largest interval)")
		f.StringVar(&c.Sync, "sync", "", "with several servers: stream (the default: every QP keeps its queue full) or rounds (one message to or from every server, then wait for all; the latency is a round's)")
		f.StringVar(&c.Landing, "landing", "", "READ from several servers: per-peer (the default: a landing region per server) or shared (one region every server's data lands in)")
		f.StringVar(&c.MR, "mr", "", "where each WR's memory registration comes from: pool (the default: the buffer, registered once before the run), per-io (the timed loop registers each WR's slot before posting it and deregisters it at its completion; every WR signalled: --cq-mod 1) or cache (an LRU of --mr-cache registrations keyed by address and length, as UCX's registration cache); per-io and cache take one QP, --post-list 1, one server, no --events, no -b; the result counts the registrations and the share of the time they took")
		f.IntVar(&c.MRCache, "mr-cache", 0, "with --mr cache: the most registrations the cache holds (default: 16 or --tx-depth, the larger); at least --tx-depth, as every WR in flight holds one")
		addEventFlags(cmd, c)
	}
	f.IntVarP(&c.SQDepth, "tx-depth", "t", 0, "send queue depth: WRs in flight (default 128 for bw, 1 for lat)")
	f.IntVarP(&c.CQMod, "cq-mod", "Q", 0, "signal every Nth WR (default, as perftest: the post list if longer than 1, else 1 for bw messages over 8K without --events, else 100; at most tx-depth)")
	f.Var(sizeValue{&c.BufOffsetBytes}, "offset", "buffer offset from a 4 KiB page boundary, bytes")
	f.BoolVar(&c.Hugepages, "hugepages", false, "back buffers with 2 MiB hugepages")
	f.Var(inlineValue{&c.InlineBytes}, "inline", "WRITE: send messages up to this size inline; auto: perftest's default for the device (220 for WRITE latency on ConnectX and the NICs perftest knows, its own size on a few, 0 for bandwidth tests and for devices it does not know, such as rxe)")
	f.IntVarP(&c.MTUBytes, "mtu", "m", 0, "path MTU (default: the smaller active MTU of both ports)")
	addQPTimeoutFlag(cmd, &c.QPTimeout)
	addCountersFlag(cmd, &c.Counters)
}

func addQPTimeoutFlag(cmd *cobra.Command, p *int) {
	cmd.Flags().IntVarP(p, "qp-timeout", "u", 0, "QP timeout exponent, as perftest's -u: a WR is sent again after 4.096 us x 2^N without an acknowledgement (1 to 31; default 14, 67 ms); applies to both sides' QPs")
}

// checkQPTimeout refuses an explicit --qp-timeout 0: the IB spec's "no timeout", which
// rdmabench does not offer (the rest of the range is the plan's to check).
func checkQPTimeout(cmd *cobra.Command, v int) error {
	if cmd.Flags().Changed("qp-timeout") && v == 0 {
		return flagErrorf("--qp-timeout 0: want 1 to 31 (0 would mean never retransmit)")
	}
	return nil
}

func addCountersFlag(cmd *cobra.Command, p *string) {
	cmd.Flags().StringVar(p, "counters", "", "NIC counters read on both sides around the measured phase: auto, the default (all in JSON; tables show the error/congestion flags), all (tables also list every counter that moved), off, or a comma-separated list of names")
}

// inlineValue is --inline: "auto" (bench.InlineAuto) or a size.
type inlineValue struct{ p *int }

func (v inlineValue) String() string {
	if v.p == nil || *v.p == bench.InlineAuto {
		return "auto"
	}
	return strconv.Itoa(*v.p)
}

func (v inlineValue) Set(s string) error {
	if s == "auto" {
		*v.p = bench.InlineAuto
		return nil
	}
	return sizeValue(v).Set(s)
}

func (v inlineValue) Type() string { return "auto|size" }

func addEventFlags(cmd *cobra.Command, c *result.Config) {
	f := cmd.Flags()
	f.BoolVar(&c.CompletionEvents, "events", false, "sleep on completion events instead of busy-polling the CQ")
	f.IntVar(&c.CQModerationCount, "cq-moderation", 0, "with --events: moderate the CQ (ibv_modify_cq) to an event per N completions")
	f.IntVar(&c.CQModerationUS, "cq-moderation-usec", 0, "with --events: ... or per this many microseconds")
}

func testRun(o *testOptions) error {
	if o.Config.Peers > 0 {
		addrs, _ := bench.SplitServers(o.Server, o.TCPPort) // checked in RunE
		return fanRun(o, addrs)
	}
	return o.session(func(ctx context.Context, c *bench.Client) error {
		// The result is written whatever happened: a failed run's JSON carries its
		// error and whatever was measured before it, so that a pipeline sees why.
		var lines io.Writer
		if o.Config.IntervalS > 0 {
			lines = o.Out.Stdout
			if o.Out.JSON == "-" || o.Out.CSV == "-" { // stdout carries the result
				lines = o.Out.Stderr
			}
			if o.IntervalFile != "" && o.IntervalFile != "-" {
				f, err := os.Create(o.IntervalFile)
				if err != nil {
					return fmt.Errorf("--interval-file: %w", err)
				}
				defer f.Close()
				lines = f
			}
			enc := json.NewEncoder(lines)
			c.OnInterval = func(l result.Interval) { enc.Encode(intervalLine{docsSchemaVersion, l}) }
		}
		r, err := c.Run(ctx, o.Op, o.Config)
		if err == nil && r.Config.Baseline == "tcp" && !r.Interrupted {
			err = tcpBaseline(ctx, c, &r)
		}
		return errors.Join(err, o.Out.write([]result.Result{r}))
	})
}

// tcpBaseline (--baseline tcp) measures the RDMA run's transfer over TCP: the messages
// the run completed (all QPs), of its size, so its bytes exactly. A failed baseline
// keeps the RDMA numbers, says why in r.Baseline.Error, and is the command's error.
func tcpBaseline(ctx context.Context, c *bench.Client, r *result.Result) error {
	msgs := r.Iterations
	if size := uint64(r.Config.MsgSizeBytes); size > 0 {
		msgs = min(msgs, r.Bytes/size) // never more than the RDMA run moved
	}
	// TCP may be far slower than the RDMA run (small messages, a slow host): its bound
	// grows with the run, at least the default.
	c.BaselineLimit = max(bench.DefaultBaselineLimit, 100*time.Duration(r.DurationNS))
	b, err := c.TCPBaseline(ctx, r.Config, msgs)
	b.Compare(r.BWGbps)
	r.Baseline = b
	return err
}

// session connects to the server and runs fn; Ctrl-C or SIGTERM cancels fn's context,
// which stops a measurement early and keeps what it measured.
func (o *clientOptions) session(fn func(context.Context, *bench.Client) error) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// After the first signal, a second one ends the process at once (the default).
	context.AfterFunc(ctx, stop)
	c, err := o.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	return fn(ctx, c)
}

// outputs sends results where the flags say, and a table to the terminal.
type outputs struct {
	JSON, CSV      string
	Stdout, Stderr io.Writer
}
