package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/rdmabench/rdmabench/bench"
	"github.com/rdmabench/rdmabench/bench/read"
	"github.com/rdmabench/rdmabench/bench/write"
	"github.com/rdmabench/rdmabench/oob"
	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/verbs"
	"github.com/spf13/cobra"
)

var ops = map[string]bench.Op{"write": write.Op, "read": read.Op}

// clientOptions are what every client command shares: where the server is, which
// local device, and where results go.
type clientOptions struct {
	Server  string
	TCPPort int
	Local   bench.Local
	Token   string
	Timeout time.Duration
	Clock   string
	Out     outputs
}

func addClientFlags(cmd *cobra.Command, o *clientOptions) {
	addLocalFlags(cmd, &o.Local)
	f := cmd.Flags()
	f.IntVarP(&o.TCPPort, "port", "p", oob.DefaultPort, "server's TCP port")
	f.StringVar(&o.Token, "token", "", "the server's shared secret (default $RDMABENCH_TOKEN)")
	f.DurationVar(&o.Timeout, "timeout", 30*time.Second, "bound on each handshake step")
	f.StringVar(&o.Clock, "clock", "auto", "timed-loop tick source: auto (TSC on x86-64), tsc or monotonic")
	f.StringVar(&o.Out.JSON, "json", "", "write results as JSON to FILE ('-' for stdout)")
	f.StringVar(&o.Out.CSV, "csv", "", "write results as CSV to FILE ('-' for stdout)")
}

func (o *clientOptions) dial(ctx context.Context) (*bench.Client, error) {
	switch o.Clock {
	case "auto", "tsc":
		verbs.SetClock(true)
	case "monotonic":
		verbs.SetClock(false)
	default:
		return nil, flagErrorf("--clock %q: want auto, tsc or monotonic", o.Clock)
	}
	if o.Token == "" {
		o.Token = os.Getenv("RDMABENCH_TOKEN")
	}
	return bench.Dial(ctx, net.JoinHostPort(o.Server, strconv.Itoa(o.TCPPort)), o.Local, o.Token, o.Timeout)
}

type testOptions struct {
	clientOptions
	Op     bench.Op
	Config result.Config
	warmup int64
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
	o := &testOptions{Op: ops[op], Config: result.Config{Op: op, Test: test}}
	what := map[string]string{"bw": "bandwidth and message rate (with completion latency under load)", "lat": "latency histogram"}[test]
	cmd := &cobra.Command{
		Use:   test + " SERVER",
		Short: fmt.Sprintf("Measure %s %s", op, what),
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Server = args[0]
			bench.Defaults(&o.Config)
			o.Config.WarmupIterations = bench.DefaultWarmup(o.Config)
			if o.warmup >= 0 {
				o.Config.WarmupIterations = uint64(o.warmup)
			}
			if err := bench.Validate(o.Config); err != nil {
				return &flagError{err}
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
	cmd.Flags().Int64Var(&o.warmup, "warmup", -1, "warm-up iterations before measuring (default: a tenth of --iters; 0: none)")
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
		addEventFlags(cmd, c)
	}
	f.IntVarP(&c.SQDepth, "tx-depth", "t", 0, "send queue depth: WRs in flight (default 128 for bw, 16 for lat)")
	f.IntVarP(&c.CQMod, "cq-mod", "Q", 0, "signal every Nth WR (default min(100, tx-depth))")
	f.Var(sizeValue{&c.BufOffsetBytes}, "offset", "buffer offset from a 4 KiB page boundary, bytes")
	f.BoolVar(&c.Hugepages, "hugepages", false, "back buffers with 2 MiB hugepages")
	f.Var(sizeValue{&c.InlineBytes}, "inline", "WRITE: send messages up to this size inline")
	f.IntVarP(&c.MTUBytes, "mtu", "m", 0, "path MTU (default: the smaller active MTU of both ports)")
}

func addEventFlags(cmd *cobra.Command, c *result.Config) {
	f := cmd.Flags()
	f.BoolVar(&c.CompletionEvents, "events", false, "sleep on completion events instead of busy-polling the CQ")
	f.IntVar(&c.CQModerationCount, "cq-moderation", 0, "with --events: moderate the CQ (ibv_modify_cq) to an event per N completions")
	f.IntVar(&c.CQModerationUS, "cq-moderation-usec", 0, "with --events: ... or per this many microseconds")
}

func testRun(o *testOptions) error {
	return o.session(func(ctx context.Context, c *bench.Client) error {
		r, err := c.Run(ctx, o.Op, o.Config)
		if r.Iterations == 0 && err != nil {
			return err // nothing was measured
		}
		return errors.Join(err, o.Out.write([]result.Result{r}))
	})
}

// session connects to the server and runs fn; Ctrl-C or SIGTERM cancels fn's context,
// which stops a measurement early and keeps what it measured.
func (o *clientOptions) session(fn func(context.Context, *bench.Client) error) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
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
