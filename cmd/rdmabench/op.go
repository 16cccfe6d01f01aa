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
	"github.com/rdmabench/rdmabench/plan"
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
	f.StringVar(&o.Clock, "clock", "auto", "timed-loop tick source: auto (the TSC where the CPU has constant_tsc and nonstop_tsc and the kernel chose tsc as its clocksource, or offers it with tsc=reliable on its command line, else CLOCK_MONOTONIC_RAW; clock_note says which), tsc or monotonic")
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
	// perftest's flags (compat.go)
	All      bool            // -a: every size from 2 B to 8 MiB
	Plans    []result.Config // -a: the plan of each size, defaults filled in
	Infinite bool            // --run_infinitely
	CPUFreq  bool            // -F: accepted; nothing to do
	Perftest string          // --perftest HOST: the server is perftest's (perftest.go)
}

func newCmdOp(name string) *cobra.Command {
	cmd := &cobra.Command{
		Use:   name,
		Short: fmt.Sprintf("RDMA %s tests against an rdmabench server", map[string]string{"write": "WRITE", "read": "READ"}[name]),
		Example: fmt.Sprintf(`  rdmabench %[1]s bw -d mlx5_0 host-a
  rdmabench %[1]s lat -d mlx5_0 host-a`, name),
	}
	cmd.AddCommand(newCmdTest(name, "bw", nil), newCmdTest(name, "lat", nil))
	return cmd
}

// runInfinitelyS is --run_infinitely's --duration when none is given: the longest a
// server with the default --max-test-time (10 min) and --timeout (30 s) follows.
const runInfinitelyS = 570

func newCmdTest(op, test string, runF func(*testOptions) error) *cobra.Command {
	o := &testOptions{Op: ops.All[op], Config: result.Config{Op: op, Test: result.Test(test), InlineBytes: plan.InlineAuto}}
	what := map[string]string{"bw": "bandwidth and message rate (with completion latency under load)", "lat": "latency histogram"}[test]
	perftest := map[string]string{"writebw": "ib_write_bw", "readbw": "ib_read_bw", "writelat": "ib_write_lat", "readlat": "ib_read_lat"}[op+test]
	cmd := &cobra.Command{
		Use:   test + " SERVER",
		Short: fmt.Sprintf("Measure %s %s", op, what),
		Long: fmt.Sprintf(`Measure %s %s
against 'rdmabench server' on SERVER: perftest's %s loop, defaults and short flags.
perftest's long names are accepted too (--ib-dev, --qp, --post_list, --inline_size,
--report_gbits, --run_infinitely: '_' or '-'); a perftest flag rdmabench does not
implement is refused with what to do instead (docs/usage.md: the flag map).`, op, what, perftest),
		Example: testExample(op, test),
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.server(args); err != nil {
				return err
			}
			if err := o.check(cmd); err != nil {
				return err
			}
			o.Out.Stdout, o.Out.Stderr = cmd.OutOrStdout(), cmd.ErrOrStderr()
			if runF != nil {
				return runF(o)
			}
			if o.Perftest != "" {
				return perftestClientRun(o)
			}
			return testRun(o)
		},
	}
	addClientFlags(cmd, &o.clientOptions)
	addPerftestFlag(cmd, o)
	addConfigFlags(cmd, &o.Config, test)
	f := cmd.Flags()
	f.Int64Var(&o.warmup, "warmup", 0, "warm-up iterations before measuring (default: a tenth of --iters, or with --duration "+
		"twice --tx-depth, at least 16; 0: none)")
	f.BoolVarP(&o.All, "all", "a", false, "run every message size from 2 B to 8 MiB, doubling, as perftest's -a: a result each, "+
		"one session")
	f.BoolVarP(&o.CPUFreq, "cpu-freq", "F", false, "accepted for perftest's command lines, which need it to run with CPU frequency "+
		"scaling on; rdmabench does not use the CPU's frequency: it times with --clock and converts ticks at a rate measured over "+
		"the loop itself")
	addFormatFlag(cmd, &o.Out)
	f.StringVar(&o.Out.Output, "output", "", map[string]string{
		"bw":  "print only this number, as perftest: bandwidth (MiB/s, or Gb/s with --report_gbits) or message_rate (Mpps)",
		"lat": "print only this number, as perftest: latency (the mean, us)"}[test])
	if test == "bw" {
		f.BoolVar(&o.Out.Gbits, "report-gbits", false, "--format perftest and --output bandwidth in Gb/s instead of MiB/s "+
			"(the other formats show Gb/s)")
		f.BoolVar(&o.Infinite, "run-infinitely", false, fmt.Sprintf("run until Ctrl-C or SIGTERM, an --interval line every 5 s "+
			"unless --interval says otherwise; the result measured until then is kept and written. --duration still bounds "+
			"the run (default %d s: the most a server with the default --max-test-time follows)", runInfinitelyS))
		f.StringVar(&o.IntervalFile, "interval-file", "", "where the --interval lines go (default, or '-': stdout)")
	}
	addPerftestFlags(cmd)
	return cmd
}

func testExample(op, test string) string {
	p := map[string]string{"writebw": "ib_write_bw", "readbw": "ib_read_bw", "writelat": "ib_write_lat", "readlat": "ib_read_lat"}[op+test]
	if test == "lat" {
		return fmt.Sprintf(`  rdmabench %[1]s lat -d mlx5_0 host-a
  rdmabench %[1]s lat -d mlx5_0 host-a -a --format perftest     # %[2]s -a
  rdmabench %[1]s lat -d mlx5_0 host-a -s 64 -n 100000 --json lat.json`, op, p)
	}
	return fmt.Sprintf(`  rdmabench %[1]s bw -d mlx5_0 host-a -s 64K -D 10 --json bw.json
  rdmabench %[1]s bw -d mlx5_0 -x 3 -a -F -q 2 --report_gbits host-a     # %[2]s's flags
  rdmabench %[1]s bw -d mlx5_0 host-a --run_infinitely --interval 1     # until Ctrl-C
  rdmabench %[1]s bw -d mlx5_0 host-a --format plain | awk 'NR > 1 {print $9}'     # Gb/s`, op, p)
}

// check checks a test command's flags and turns them into plans, before any device is
// opened: a value that cannot be right is a usage error naming its flag.
func (o *testOptions) check(cmd *cobra.Command) error {
	if err := refusePerftestFlags(cmd); err != nil {
		return err
	}
	if err := checkNotZero(cmd, "size", "iters", "tx-depth", "qps", "post-list", "cq-mod", "duration", "mtu", "threads"); err != nil {
		return err
	}
	if err := checkPorts(o.TCPPort, o.Local.Port); err != nil {
		return err
	}
	test, fl := string(o.Config.Test), cmd.Flags()
	addrs, err := bench.SplitServers(o.Server, o.TCPPort)
	if err != nil {
		return flagErrorf("SERVER: %v", err)
	} else if len(addrs) > 1 {
		o.Config.Peers = len(addrs) // a fan-out / fan-in run
	}
	if err := checkQPTimeout(cmd, o.Config.QPTimeout); err != nil {
		return err
	}
	if err := checkPostAPI(cmd, &o.Config.PostAPI); err != nil {
		return err
	}
	if err := checkOutput(o.Out.Output, test); err != nil {
		return err
	}
	switch {
	case o.All && fl.Changed("size"):
		return flagErrorf("-a/--all runs every size from 2 B to 8 MiB: drop --size")
	case o.All && o.Config.Peers > 0:
		return flagErrorf("-a/--all takes one server (SERVER %q names %d)", o.Server, o.Config.Peers) // text: local (the command line)
	case o.All && o.Config.Baseline != "":
		return flagErrorf("-a/--all with --baseline: measure the baseline one size at a time")
	case o.Infinite && o.All:
		return flagErrorf("--run_infinitely runs one size until interrupted: drop -a")
	case o.Infinite && fl.Changed("iters"):
		return flagErrorf("--run_infinitely runs until interrupted: drop --iters")
	case o.Infinite && o.Config.CompletionEvents:
		return flagErrorf("--run_infinitely polls the CQ (as perftest's): drop --events")
	case o.Infinite && o.Config.Baseline != "":
		return flagErrorf("--run_infinitely with --baseline: the baseline needs a run that ends; drop --baseline")
	}
	if o.Infinite {
		if !fl.Changed("duration") {
			o.Config.DurationS = runInfinitelyS
		}
		if !fl.Changed("interval") {
			o.Config.IntervalS = 5 // perftest's default period
		}
	}
	base := o.Config // before the defaults: -a fills them in per size
	ops.Defaults(&o.Config)
	o.Config.WarmupIterations = plan.DefaultWarmup(o.Config)
	if fl.Changed("warmup") {
		if o.warmup < 0 {
			return flagErrorf("--warmup %d: want 0 (none) or more", o.warmup)
		}
		o.Config.WarmupIterations = uint64(o.warmup)
	}
	if err := ops.Validate(o.Config); err != nil {
		return &flagError{err}
	}
	if o.All {
		for _, size := range allSizes() {
			c := base
			c.MsgSizeBytes = size
			ops.Defaults(&c)
			c.WarmupIterations = o.Config.WarmupIterations
			if !fl.Changed("warmup") {
				c.WarmupIterations = plan.DefaultWarmup(c)
			}
			if err := ops.Validate(c); err != nil {
				return flagErrorf("-a/--all at %s: %v", result.FormatSize(size), err)
			}
			o.Plans = append(o.Plans, c)
		}
		o.Config = o.Plans[0]
	}
	return o.Out.check()
}

// checkNotZero refuses an explicit 0 for each named flag: left out, such a flag means
// "the default", and a 0 given on purpose would quietly mean that too (-s 0 ran 64 KiB).
func checkNotZero(cmd *cobra.Command, names ...string) error {
	for _, name := range names {
		f := cmd.Flags().Lookup(name)
		if f == nil || !f.Changed {
			continue
		}
		if v, err := strconv.ParseFloat(f.Value.String(), 64); err == nil && v == 0 {
			return flagErrorf("--%s 0: want more than 0 (leave --%s out for the default)", name, name)
		}
	}
	return nil
}

// checkPorts refuses a TCP port (--port) or a device port (--ib-port) out of range.
func checkPorts(tcp, ib int) error {
	if tcp < 1 || tcp > 65535 {
		return flagErrorf("--port %d: want a TCP port, 1 to 65535", tcp)
	}
	if ib < 1 || ib > 255 {
		return flagErrorf("--ib-port %d: want a device port, 1 to 255 ('rdmabench devices' lists them)", ib)
	}
	return nil
}

func addConfigFlags(cmd *cobra.Command, c *result.Config, test string) {
	f := cmd.Flags()
	f.VarP(sizeValue{&c.MsgSizeBytes}, "size", "s", map[string]string{"bw": "message size (units: 2, 4K, 64K, 1M; default 64K)",
		"lat": "message size (units: 2, 4K, 64K, 1M; default 2)"}[test])
	iters := uint64(1000)
	if op := ops.All[c.Op]; test == "bw" && op.BWIterations > 0 {
		iters = op.BWIterations
	}
	f.Uint64VarP(&c.Iterations, "iters", "n", 0, fmt.Sprintf("messages per QP (default %d, as perftest's)", iters))
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
		addThreadsFlag(cmd, &c.Threads)
	}
	addCPUFlag(cmd, &c.CPUList)
	f.IntVarP(&c.SQDepth, "tx-depth", "t", 0, "send queue depth: WRs in flight (default 128 for bw, 1 for lat)")
	f.IntVarP(&c.CQMod, "cq-mod", "Q", 0, "signal every Nth WR (default, as perftest: the post list if longer than 1, else 1 for bw messages over 8K without --events, else 100; at most tx-depth)")
	f.Var(sizeValue{&c.BufOffsetBytes}, "offset", "buffer offset from a 4 KiB page boundary, bytes")
	f.BoolVar(&c.Hugepages, "hugepages", false, "back buffers with 2 MiB hugepages")
	f.VarP(inlineValue{&c.InlineBytes}, "inline", "I", "WRITE: send messages up to this size inline; auto: perftest's default for the device (220 for WRITE latency on ConnectX and the NICs perftest knows, its own size on a few, 0 for bandwidth tests and for devices it does not know, such as rxe)")
	f.IntVarP(&c.MTUBytes, "mtu", "m", 0, "path MTU (default: the smaller active MTU of both ports)")
	addQPTimeoutFlag(cmd, &c.QPTimeout)
	addFabricFlags(cmd, c)
	f.IntVarP(&c.OutsNum, "outs", "o", 0, "READ: the most READs each QP keeps outstanding, as perftest's -o/--outs_num "+
		"(default: what both devices allow, max_qp_rd_atom; the result's max_rd_atom says what was used); WRITE ignores it, as perftest")
	f.StringVar(&c.PostAPI, "post-api", verbs.PostAuto, "how the loops post WRs: wr (the extended QP API, ibv_wr_start .. ibv_wr_complete, one doorbell per post list), legacy (ibv_post_send) or auto (perftest's choice: wr on mlx5, EFA and HNS, legacy elsewhere); the result's post_api says which ran")
	f.Bool("use-old-post-send", false, "perftest's --use_old_post_send: --post-api legacy")
	_ = f.MarkHidden("use-old-post-send")
	addCountersFlag(cmd, &c.Counters)
}

// addFabricFlags are what a test asks of the PCIe bus and the fabric: relaxed ordering
// (perftest's --disable_pcie_relaxed), the service level (perftest's -S/--sl) and the
// traffic class (--tclass); the plan takes them to the server, and both sides apply
// them (docs/usage.md, "On a real fabric").
func addFabricFlags(cmd *cobra.Command, c *result.Config) {
	f := cmd.Flags()
	f.BoolVar(&c.DisablePCIeRelaxed, "disable-pcie-relaxed", false, "register both sides' memory without PCIe relaxed ordering "+
		"(IBV_ACCESS_RELAXED_ORDERING), as perftest's --disable_pcie_relaxed; by default it is on, as perftest's, except for "+
		"'write lat', whose ping-pong polls the last byte of each message; a device without it ignores it")
	f.IntVarP(&c.SL, "sl", "S", 0, "service level of both sides' QPs, 0 to 15 (ah_attr.sl, as perftest's -S): on InfiniBand the "+
		"subnet's SL-to-VL mapping, on RoCE the Ethernet priority (PCP) mlx5 sends with")
	f.IntVar(&c.TrafficClass, "tclass", 0, "traffic class of both sides' QPs, 0 to 255 (the GRH's, as perftest's --tclass): on RoCE "+
		"the IP header's TOS byte, DSCP << 2 | ECN (DSCP 26: --tclass 104); InfiniBand without a GRH cannot carry it")
}

// checkFabric is the range check of --sl and --tclass for a command that makes its
// plans later (sweep): the test commands' plans are checked whole (ops.Validate).
func checkFabric(c result.Config) error {
	if c.SL < 0 || c.SL > 15 {
		return flagErrorf("--sl %d: want a service level from 0 to 15", c.SL)
	}
	if c.TrafficClass < 0 || c.TrafficClass > 255 {
		return flagErrorf("--tclass %d: want a traffic class from 0 to 255", c.TrafficClass)
	}
	return nil
}

func addThreadsFlag(cmd *cobra.Command, p *int) {
	cmd.Flags().IntVar(p, "threads", 1, "loop threads: the QPs split into this many blocks, each with its own CQ and its own C loop on its own thread, started together; one window over all of them, each thread's share in the result (at most --qps; not with --events or several servers)")
}

func addCPUFlag(cmd *cobra.Command, p *string) {
	cmd.Flags().StringVar(p, "cpu", "", "pin the loop threads to these CPUs (a cpulist: 0-3,8): one CPU each where the list has one per thread, else the list shared (default: the CPUs of the NIC's NUMA node where sysfs gives one, else not pinned); the buffer goes to the NIC's node; the result's threads say where each ran")
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

// checkPostAPI refuses a --post-api it does not know and takes perftest's
// --use_old_post_send as --post-api legacy.
func checkPostAPI(cmd *cobra.Command, api *string) error {
	fl := cmd.Flags()
	if old, _ := fl.GetBool("use-old-post-send"); old {
		if fl.Changed("post-api") && *api != verbs.PostLegacy {
			return flagErrorf("--use_old_post_send (perftest's --post-api legacy) with --post-api %s: drop one of them", *api)
		}
		*api = verbs.PostLegacy
	}
	if _, err := verbs.ResolvePostAPI(*api, ""); err != nil {
		return &flagError{err}
	}
	return nil
}

func addCountersFlag(cmd *cobra.Command, p *string) {
	cmd.Flags().StringVar(p, "counters", "", "NIC counters read on both sides around the measured phase: auto, the default (all in JSON; tables show the error/congestion flags), all (tables also list every counter that moved), off, or a comma-separated list of names")
}

// inlineValue is --inline: "auto" (plan.InlineAuto) or a size.
type inlineValue struct{ p *int }

func (v inlineValue) String() string {
	if v.p == nil || *v.p == plan.InlineAuto {
		return "auto"
	}
	return strconv.Itoa(*v.p)
}

func (v inlineValue) Set(s string) error {
	if s == "auto" {
		*v.p = plan.InlineAuto
		return nil
	}
	return sizeValue(v).Set(s)
}

func (v inlineValue) Type() string { return "auto|size" }

func addEventFlags(cmd *cobra.Command, c *result.Config) {
	f := cmd.Flags()
	f.BoolVarP(&c.CompletionEvents, "events", "e", false, "sleep on completion events instead of busy-polling the CQ")
	f.IntVar(&c.CQModerationCount, "cq-moderation", 0, "with --events: moderate the CQ (ibv_modify_cq) to an event per N completions")
	f.IntVar(&c.CQModerationUS, "cq-moderation-usec", 0, "with --events: ... or per this many microseconds")
}

func testRun(o *testOptions) error {
	// The files first: a path that cannot be written is found before the run.
	if err := o.Out.openResults(); err != nil {
		return err
	}
	defer o.Out.close()
	var lines io.Writer
	if o.Config.IntervalS > 0 {
		lines = o.Out.Stdout
		if o.Out.JSON == "-" || o.Out.CSV == "-" || o.Out.Output != "" { // stdout carries the result
			lines = o.Out.Stderr
		}
		if o.IntervalFile != "" && o.IntervalFile != "-" {
			f, err := os.Create(o.IntervalFile)
			if err != nil {
				return flagErrorf("--interval-file %s: cannot write it: %v", o.IntervalFile, errors.Unwrap(err))
			}
			defer f.Close()
			lines = f
		}
	}
	if o.Config.Peers > 0 {
		addrs, _ := bench.SplitServers(o.Server, o.TCPPort) // checked in RunE
		return fanRun(o, addrs)
	}
	return o.session(func(ctx context.Context, c *bench.Client) error { return o.measure(ctx, c, lines) })
}

// measure runs the plans (one, or -a's) on c, the --interval lines going to lines
// (nil: none), and writes the results. Each result is written as soon as it exists,
// whatever happened: a failed run's JSON carries its error and whatever was measured
// before it, so that a pipeline sees why; with -a, the sizes measured so far are on
// disk before the next size runs. Ctrl-C ends the current run, keeps what it measured,
// and runs no more sizes.
func (o *testOptions) measure(ctx context.Context, c *bench.Client, lines io.Writer) error {
	plans := o.Plans // -a
	if len(plans) == 0 {
		plans = []result.Config{o.Config}
	}
	if lines != nil {
		enc := json.NewEncoder(lines)
		c.OnInterval = func(l result.Interval) { enc.Encode(intervalLine{docsSchemaVersion, l}) }
	}
	if o.Infinite {
		fmt.Fprintf(o.Out.Stderr, "rdmabench: --run_infinitely: measuring until Ctrl-C or SIGTERM (at most %g s)\n", o.Config.DurationS)
	}
	var rs []result.Result
	var errs []error
	for _, cfg := range plans {
		r, err := c.Run(ctx, o.Op, cfg)
		if err == nil && r.Config.Baseline == "tcp" && !r.Interrupted {
			err = c.Baseline(ctx, &r) // a failed baseline is the command's error
		}
		rs = append(rs, r)
		errs = append(errs, err)
		if len(plans) > 1 {
			errs = append(errs, o.Out.save(rs))
		}
		if err != nil || ctx.Err() != nil {
			break
		}
	}
	return errors.Join(append(errs, o.Out.write(rs))...)
}

// session connects to the server and runs fn; Ctrl-C or SIGTERM cancels fn's context,
// which stops a measurement early and keeps what it measured.
func (o *clientOptions) session(fn func(context.Context, *bench.Client) error) error {
	ctx, stop := interruptible()
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
	Format         string // --format: "" (a table), auto, table, plain or perftest
	Output         string // --output: only this number (perftest's), no table
	Gbits          bool   // --report_gbits: perftest's columns in Gb/s
	opened         map[string]*outFile
	interim        bool // save's write: not the last
}

// interruptible is a client's context: Ctrl-C or SIGTERM cancels it (a measurement then
// stops early and keeps what it measured); after the first signal, a second one ends
// the process at once (the default).
func interruptible() (context.Context, context.CancelFunc) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	context.AfterFunc(ctx, stop)
	return ctx, stop
}
