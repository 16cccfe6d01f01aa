package plan

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"

	"github.com/rdmabench/rdmabench/internal/text"
	"github.com/rdmabench/rdmabench/result"
)

// MaxSQDepth bounds --tx-depth above every device's max_qp_wr we know (rxe has 2^20,
// mlx5 2^15), so that the plan's queue memory is always computable.
const MaxSQDepth = 1 << 20

// MaxThreads bounds --threads: a loop thread per core of the largest hosts.
const MaxThreads = 256

// MaxPeers bounds the servers of one fan-out / fan-in run.
const MaxPeers = 64

// QShift is rb.h's RB_QSHIFT: a bandwidth loop's wr_id keeps the QP index above this
// many bits, so a QP's WRs are numbered below 2^QShift (verbs checks the two agree).
const QShift = 48

// Bounds Validate keeps plans within.
const (
	// MaxDurationS bounds --duration: 10^6 s (11.6 days) is longer than any measurement
	// needs, and even 10 Tb/s for that long counts bytes well within 64 bits.
	MaxDurationS = 1e6
	// MaxWarmup bounds --warmup: a warm-up is not measured, and 10^9 iterations per QP
	// is more than any cache or TLB needs to warm.
	MaxWarmup = 1_000_000_000
)

// Validate says what is wrong with a plan, naming the flag to change. It takes a plan
// after Defaults: zero means "default" only before.
//
// Post list and moderation need only 1 <= post-list <= tx-depth and 1 <= cq-mod <=
// tx-depth: the bandwidth loop posts the part of a chain that fits in the send queue,
// so every such combination completes. perftest refuses more up front, because its
// loop posts whole chains: --iters must be a multiple of --post-list, and --post-list
// a multiple of an explicit --cq-mod; rdmabench accepts those plans.
func (op Op) Validate(c Config) error {
	if c.Test == result.Region {
		return validateRegion(c)
	}
	if err := op.validateRun(c); err != nil {
		return err
	}
	switch {
	case (c.CompletionEvents || c.CQModerationCount > 0 || c.CQModerationUS > 0) && c.Test != result.BW:
		return fmt.Errorf("--events and --cq-moderation apply to bandwidth tests")
	case (c.CQModerationCount > 0 || c.CQModerationUS > 0) && !c.CompletionEvents:
		return fmt.Errorf("--cq-moderation moderates completion events: add --events")
	case c.CQModerationCount < 0 || c.CQModerationCount > 65535 || c.CQModerationUS < 0 || c.CQModerationUS > 65535:
		return fmt.Errorf("--cq-moderation and --cq-moderation-usec: want 0 to 65535")
	case c.CQModerationCount > maxSignalled(c) && c.CQModerationUS == 0:
		// The CQ would never gather that many: without a period, every wait would end
		// at the loop's own 100 ms wake-up, which is not what was asked.
		return fmt.Errorf("--cq-moderation %d: at most %d completions can be outstanding (--qps %d x --tx-depth %d / --cq-mod %d, rounded up), so an event per %d never comes: want %d or fewer, or add --cq-moderation-usec",
			c.CQModerationCount, maxSignalled(c), c.NumQPs, c.SQDepth, c.CQMod, c.CQModerationCount, maxSignalled(c))
	case c.Verify && c.Test != result.BW:
		return fmt.Errorf("--verify applies to bandwidth tests")
	case c.InlineBytes < InlineAuto:
		return fmt.Errorf("--inline %d: want auto or a size from 0", c.InlineBytes)
	case c.InlineBytes > 0 && !op.Payload:
		return fmt.Errorf("--inline applies to WRITE; %s carries no payload in the request", strings.ToUpper(op.Name))
	case c.MTUBytes != 0 && (c.MTUBytes < 256 || c.MTUBytes > 4096 || c.MTUBytes&(c.MTUBytes-1) != 0):
		return fmt.Errorf("--mtu %d: want 256, 512, 1024, 2048 or 4096", c.MTUBytes)
	case c.PostAPI != "" && c.PostAPI != PostAuto && c.PostAPI != PostWR && c.PostAPI != PostLegacy:
		return fmt.Errorf("--post-api %q: want auto (perftest's choice for the device), wr (the extended QP API, ibv_wr_*) or legacy (ibv_post_send)", c.PostAPI)
	case c.Threads < 0 || c.Threads > MaxThreads:
		return fmt.Errorf("--threads %d: want 1 to %d loop threads", c.Threads, MaxThreads)
	case c.Threads > 1 && c.Test != result.BW:
		return fmt.Errorf("--threads applies to bandwidth tests; a latency test runs one QP on one thread")
	case c.Threads > c.NumQPs:
		return fmt.Errorf("--threads %d with %d QPs: every loop thread drives QPs of its own; raise --qps to %d or more", c.Threads, c.NumQPs, c.Threads)
	case c.Threads > 1 && (c.CompletionEvents || c.Peers > 0):
		return fmt.Errorf("--threads with --events or several servers: not supported (the threads would share one completion channel, or one QP per server)")
	case c.CPUList != "" && c.Peers > 0:
		return fmt.Errorf("--cpu with several servers: not supported yet (a run against several servers places its loop by default)")
	case c.OutsNum < 0 || c.OutsNum > 255:
		return fmt.Errorf("--outs %d: want 1 to 255 READs outstanding per QP (0 or absent: what both devices allow)", c.OutsNum)
	case c.OutsNum > 0 && (c.Bidirectional || c.Peers > 0):
		return fmt.Errorf("--outs with -b or several servers: the cap is the client's alone, which those tests' other initiators would not keep")
	case c.QPTimeout < 0 || c.QPTimeout > 31:
		return fmt.Errorf("--qp-timeout %d: want 1 to 31 (a retransmission after 4.096 us x 2^N without an acknowledgement; perftest's default is %d, 67 ms)", c.QPTimeout, DefaultQPTimeout)
	case c.IntervalS != 0 && (c.Test != result.BW || math.IsNaN(c.IntervalS) || c.IntervalS < 0.1 || c.IntervalS > MaxDurationS):
		return fmt.Errorf("--interval %gs: bandwidth tests take an interval of 0.1 s or more", c.IntervalS)
	case c.Bidirectional && (c.Test != result.BW || c.Verify):
		return fmt.Errorf("-b/--bidirectional applies to bandwidth tests, without --verify")
	case c.Baseline != "" && c.Baseline != "tcp":
		return fmt.Errorf("--baseline %s: want tcp (the only baseline so far)", text.Quote(c.Baseline))
	case c.Baseline != "" && (c.Test != result.BW || c.Bidirectional):
		return fmt.Errorf("--baseline applies to bandwidth tests, without -b/--bidirectional")
	case len(c.Counters) > 1024:
		return fmt.Errorf("--counters: a list of at most 1024 characters")
	}
	if err := validateFabric(c); err != nil {
		return err
	}
	if err := op.validateFan(c); err != nil {
		return err
	}
	if err := validateMR(c); err != nil {
		return err
	}
	return ValidateCounters(c.Counters)
}

// validateRun checks a plan's operation, test, sizes, counts, queue and offset: what
// every test's loop is built from.
func (op Op) validateRun(c Config) error {
	switch {
	case c.Op != op.Name:
		return fmt.Errorf("a plan for operation %s run as %s", text.Quote(c.Op), op.Name)
	case c.Test != result.BW && c.Test != result.Lat:
		return fmt.Errorf("unknown test %s: want bw or lat", text.Quote(string(c.Test)))
	case c.MsgSizeBytes < 1 || c.MsgSizeBytes > 1<<31:
		return fmt.Errorf("--size %d: want 1 B to 2 GiB", c.MsgSizeBytes)
	case math.IsNaN(c.DurationS) || math.IsInf(c.DurationS, 0):
		return fmt.Errorf("--duration %v: want a number of seconds", c.DurationS)
	case c.DurationS < 0:
		return fmt.Errorf("--duration %g: must not be negative", c.DurationS)
	case c.DurationS > MaxDurationS:
		return fmt.Errorf("--duration %g: want at most %g s (11.6 days)", c.DurationS, float64(MaxDurationS))
	case c.DurationS > 0 && c.Test == result.Lat:
		return fmt.Errorf("--duration applies to bandwidth tests; latency tests take --iters")
	case c.Iterations < 1:
		return fmt.Errorf("--iters %d: want at least 1", c.Iterations)
	case c.NumQPs < 1 || c.NumQPs > MaxQPs:
		return fmt.Errorf("--qps %d: want 1 to %d", c.NumQPs, MaxQPs)
	case c.NumQPs > 1 && c.Test == result.Lat:
		return fmt.Errorf("latency tests use one QP; drop --qps")
	case c.Iterations >= 1<<QShift:
		return fmt.Errorf("--iters %d: want fewer than 2^%d per QP (the loops number WRs in %d bits)", c.Iterations, QShift, QShift)
	// Below 2^48 per QP, times at most 1024 QPs, the message counts (warm-up included)
	// fit in 64 bits; the byte count may not.
	case c.Iterations*uint64(c.NumQPs) > math.MaxUint64/uint64(c.MsgSizeBytes):
		return fmt.Errorf("--size %d x --iters %d x --qps %d: the byte count overflows 64 bits", c.MsgSizeBytes, c.Iterations, c.NumQPs)
	case c.WarmupIterations > MaxWarmup:
		return fmt.Errorf("--warmup %d: want at most %d iterations", c.WarmupIterations, MaxWarmup)
	case c.SQDepth < 1 || c.SQDepth > MaxSQDepth:
		return fmt.Errorf("--tx-depth %d: want 1 to %d", c.SQDepth, MaxSQDepth)
	case c.PostList > 1 && c.Test == result.Lat:
		return fmt.Errorf("--post-list applies to bandwidth tests")
	case c.PostList < 1 || c.PostList > c.SQDepth:
		return fmt.Errorf("--post-list %d: want 1 to --tx-depth (%d)", c.PostList, c.SQDepth)
	case c.CQMod < 1 || c.CQMod > c.SQDepth:
		return fmt.Errorf("--cq-mod %d: want 1 to --tx-depth (%d), or the send queue fills with unsignalled WRs", c.CQMod, c.SQDepth)
	case c.BufOffsetBytes < 0 || c.BufOffsetBytes >= 1<<21:
		return fmt.Errorf("--offset %d: want 0 to 2 MiB-1", c.BufOffsetBytes)
	}
	return nil
}

// validateFabric checks what a plan asks of the fabric: the service level and the
// traffic class (relaxed ordering is a switch).
func validateFabric(c Config) error {
	switch {
	case c.SL < 0 || c.SL > 15:
		return fmt.Errorf("--sl %d: want a service level from 0 to 15 (on RoCE, the Ethernet priority the NIC sends with; 0 is the default)", c.SL)
	case c.TrafficClass < 0 || c.TrafficClass > 255:
		return fmt.Errorf("--tclass %d: want a traffic class from 0 to 255 (on RoCE, the IP header's DSCP << 2 | ECN: DSCP 26 is --tclass 104); 0 is the default", c.TrafficClass)
	}
	return nil
}

// validateRegion checks a region plan (the Go API's Dial): an operation, a size, a
// number of QPs, a path MTU, the client's send-queue depth, relaxed ordering, the
// service level and the traffic class, and nothing else. A field a region does not
// take is refused by its name, not ignored.
func validateRegion(c Config) error {
	switch {
	case !known(c.Op):
		return fmt.Errorf("unknown operation %s: want write or read", text.Quote(c.Op))
	case c.MsgSizeBytes < 1 || c.MsgSizeBytes > 1<<31:
		return fmt.Errorf("region of %d bytes: want 1 B to 2 GiB", c.MsgSizeBytes)
	case c.NumQPs < 1 || c.NumQPs > MaxQPs:
		return fmt.Errorf("region with %d QPs: want 1 to %d", c.NumQPs, MaxQPs)
	case c.SQDepth < 0 || c.SQDepth > MaxSQDepth:
		return fmt.Errorf("region with a send-queue depth of %d: want 0 to %d", c.SQDepth, MaxSQDepth)
	case c.MTUBytes != 0 && (c.MTUBytes < 256 || c.MTUBytes > 4096 || c.MTUBytes&(c.MTUBytes-1) != 0):
		return fmt.Errorf("--mtu %d: want 256, 512, 1024, 2048 or 4096", c.MTUBytes)
	}
	if err := validateFabric(c); err != nil {
		return err
	}
	rest := c
	rest.Op, rest.Test, rest.MsgSizeBytes, rest.NumQPs, rest.SQDepth, rest.MTUBytes = "", "", 0, 0, 0, 0
	rest.PCIeRelaxedOrdering, rest.SL, rest.TrafficClass = false, 0, 0
	if name := firstSet(rest); name != "" {
		return fmt.Errorf("a region plan takes an operation, a size, a number of QPs, a send-queue depth, an MTU, relaxed ordering, a service level and a traffic class only, not %s", name)
	}
	return nil
}

// known says whether name is an operation's (Ops).
func known(name string) bool {
	_, ok := Ops[name]
	return ok
}

// unknownOp is the error of a plan whose operation is not one of Ops.
func unknownOp(name string) error {
	return fmt.Errorf("unknown operation %q: want write or read", name)
}

// firstSet is the JSON name of the first field of c that is not zero ("" for none).
func firstSet(c Config) string {
	v := reflect.ValueOf(c)
	for i := range v.NumField() {
		if !v.Field(i).IsZero() {
			name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
			return name
		}
	}
	return ""
}

// validateFan checks what a run against several servers (Fan) allows; each server
// gets the same plan, with Peers set, and checks it too.
func (op Op) validateFan(c Config) error {
	switch {
	case c.Peers == 0 && (c.Sync != "" || c.Landing != ""):
		return fmt.Errorf("--sync and --landing apply to runs against several servers (SERVER a,b,c)")
	case c.Peers == 0:
		return nil
	case c.Peers < 0 || c.Peers == 1 || c.Peers > MaxPeers:
		return fmt.Errorf("%d servers: want 2 to %d", c.Peers, MaxPeers)
	case c.Test != result.BW:
		return fmt.Errorf("several servers: bandwidth tests only (--sync rounds gives the latency of a round)")
	case c.NumQPs != 1:
		return fmt.Errorf("several servers: one QP per server, drop --qps")
	case c.Bidirectional || c.IntervalS > 0 || c.Baseline != "":
		return fmt.Errorf("several servers: -b/--bidirectional, --interval and --baseline are for one server")
	case c.Sync != "stream" && c.Sync != "rounds":
		return fmt.Errorf("--sync %s: want stream or rounds", text.Quote(c.Sync))
	case c.Sync == "rounds" && (c.PostList != 1 || c.CQMod != 1 || c.CompletionEvents):
		return fmt.Errorf("--sync rounds posts one signalled WR per server and waits for all: --post-list, --cq-mod and --events do not apply")
	case op.Landings == nil && c.Landing != "":
		return fmt.Errorf("--landing applies to READ (%s sends one source region to every server)", strings.ToUpper(op.Name))
	case op.Landings != nil && !slices.Contains(op.Landings, c.Landing):
		return fmt.Errorf("--landing %s: want %s", text.Quote(c.Landing), strings.Join(op.Landings, " or "))
	case c.Verify && c.Landing == "shared":
		return fmt.Errorf("--verify with --landing shared: the shared region holds whichever server's message landed last; verify with --landing per-peer")
	}
	return nil
}

// maxSignalled is how many signalled WRs a bandwidth loop can have outstanding on its
// CQ: each QP holds up to the send queue's depth, one in every cq-mod signalled.
func maxSignalled(c Config) int {
	if c.CQMod < 1 {
		return c.NumQPs * c.SQDepth
	}
	return max(1, c.NumQPs) * ((c.SQDepth + c.CQMod - 1) / c.CQMod)
}
