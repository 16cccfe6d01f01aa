// Package bench runs rdmabench tests: a client that drives a whole run from one command
// line, and a server that follows the client's plan. What differs between WRITE and
// READ lives in bench/write and bench/read, as an Op.
package bench

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/rdmabench/rdmabench/internal/text"
	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/verbs"
)

// Op is what one RDMA operation brings to the engine.
type Op struct {
	Name verbs.Op
	// ServerSpec and ClientSpec size each side's buffer and say what access the peer gets.
	ServerSpec func(c result.Config) verbs.Spec
	ClientSpec func(c result.Config) verbs.Spec
	// ClientLatency is the op's latency rule at the client: it measures the rounds r
	// names, each as the op defines a round and its sample (LatKind names it), against
	// an rdmabench server or a perftest one. Every client goes through it.
	ClientLatency func(s Session, c result.Config, r LatRounds) (verbs.LatResult, error)
	// ServerLatency is the server's half of a latency test; it runs until s.Stop().
	// nil when the server is passive (one-sided READ).
	ServerLatency func(s Session, c result.Config, timeout time.Duration) error
	// LatKind names what a latency sample of this op's latency test is.
	LatKind string
	// ToServer: the data flows from the client's buffer to the server's (WRITE); the
	// client fills the source and the server checks what arrived. Otherwise (READ)
	// the server fills and the client checks.
	ToServer bool
	// Payload: the op's requests carry its data, so small messages can go inline
	// (--inline; WRITE). A READ request carries none.
	Payload bool
	// Landings: where a run against several servers lands their data at the client,
	// the default first (READ: per-peer, shared); nil when the data goes to the
	// servers (WRITE sends one source region to every server).
	Landings []string
	// What perftest does for this op when a flag is left unset: BWIterations is its
	// bandwidth tests' --iters; LatInline, whether its latency test goes inline on the
	// devices it knows (DefaultInline).
	BWIterations uint64
	LatInline    bool
	// Requests is the responder's counter of this op's requests (rx_write_requests),
	// which the counters check against the messages completed.
	Requests string
	// LatOrdered: this op's latency test polls the last byte of each message that
	// arrives, so its memory must see the bytes land in order: no PCIe relaxed ordering
	// (WRITE's ping-pong; perftest's ib_write_lat leaves it off too).
	LatOrdered bool
}

// LatRounds is the rounds a ClientLatency call measures, and the peer it plays them
// with.
type LatRounds struct {
	First, N uint64        // rounds First..First+N-1
	Timeout  time.Duration // a round that waits on the peer longer fails
	// Perftest: the peer is a plain perftest server (ib_write_lat, ib_read_lat), whose
	// rounds the op plays as perftest's client does.
	Perftest bool
}

// Defaults fills what the user left unset, the way perftest would (perftest's
// perftest_parameters.h defaults, 4.5 and later, and the adjustments of force_dependecies() in
// perftest_parameters.c):
//
//   - size 64 KiB for bw, 2 B for lat;
//   - iterations 5000 for WRITE bw (DEF_ITERS_WB), 1000 otherwise (DEF_ITERS);
//   - tx depth 128 for bw (DEF_TX_BW), 1 for lat (DEF_TX_LAT);
//   - post list 1, one QP;
//   - CQ moderation, when not given: the post list when that is longer than 1 ("Post
//     List requested - CQ moderation will be the size of the post list"); else 1 for
//     bandwidth messages over 8 KiB without completion events (perftest disables
//     moderation above MSG_SIZE_CQ_MOD_LIMIT, 8192 B, unless -e); else 100
//     (DEF_CQ_MOD); never more than the tx depth.
//
// PCIe relaxed ordering is on unless --disable-pcie-relaxed, as perftest (since 2020)
// registers every MR, except for a latency test whose op polls the last byte
// (LatOrdered: WRITE), as ib_write_lat. --sl and --tclass are 0, as perftest's.
//
// --inline defaults to InlineAuto, resolved per device by ResolveInline. --mr, which
// perftest lacks: per-io signals every WR (cq-mod 1 when not given), cache holds 16
// registrations (--mr-cache), and pool, the default, is recorded as no --mr at all.
func (op Op) Defaults(c *result.Config) {
	c.Op = string(op.Name)
	if c.Threads == 1 {
		c.Threads = 0 // one thread, as without --threads: the plan says so once
	}
	if c.Test == "" {
		c.Test = result.BW
	}
	if c.MsgSizeBytes == 0 {
		c.MsgSizeBytes = 65536
		if c.Test == result.Lat {
			c.MsgSizeBytes = 2
		}
	}
	if c.Iterations == 0 {
		c.Iterations = 1000
		if c.Test == result.BW && op.BWIterations > 0 {
			c.Iterations = op.BWIterations
		}
	}
	if c.SQDepth == 0 {
		c.SQDepth = 128
		if c.Test == result.Lat {
			c.SQDepth = 1
		}
	}
	if c.PostList == 0 {
		c.PostList = 1
	}
	if c.QPTimeout == verbs.DefaultQPTimeout {
		c.QPTimeout = 0 // the default, said one way (one configuration key)
	}
	if c.CQMod == 0 {
		switch {
		case c.Sync == "rounds": // every WR of a round is signalled
			c.CQMod = 1
		case c.MR == verbs.MRModePerIO: // each WR's MR goes at its completion
			c.CQMod = 1
		case c.Test == result.BW && c.PostList > 1:
			c.CQMod = c.PostList
		case c.Test == result.BW && c.MsgSizeBytes > cqModSizeLimit && !c.CompletionEvents:
			c.CQMod = 1
		default:
			c.CQMod = 100
		}
		c.CQMod = min(c.CQMod, c.SQDepth)
	}
	if c.NumQPs == 0 {
		c.NumQPs = 1
	}
	c.PCIeRelaxedOrdering = !c.DisablePCIeRelaxed && !(c.Test == result.Lat && op.LatOrdered)
	if c.MR == verbs.MRModePool { // the default: results of the same plan read the same
		c.MR = ""
	}
	if c.MR == verbs.MRModeCache && c.MRCache == 0 {
		c.MRCache = max(DefaultMRCache, c.SQDepth) // room for every WR in flight
	}
	if c.Peers > 0 { // several servers (Fan)
		if c.Sync == "" {
			c.Sync = "stream"
		}
		if c.Landing == "" && len(op.Landings) > 0 {
			c.Landing = op.Landings[0]
		}
	}
}

// cqModSizeLimit is perftest's MSG_SIZE_CQ_MOD_LIMIT: above it, a bandwidth test
// without -Q signals every WR.
const cqModSizeLimit = 8192

// DefaultWarmup is the warm-up used when the user gives none: a tenth of the run.
func DefaultWarmup(c result.Config) uint64 {
	if c.DurationS > 0 {
		return min(uint64(max(16, 2*c.SQDepth)), MaxWarmup)
	}
	return min(max(16, c.Iterations/10), MaxWarmup)
}

// MaxSQDepth bounds --tx-depth above every device's max_qp_wr we know (rxe has 2^20,
// mlx5 2^15), so that the plan's queue memory is always computable.
const MaxSQDepth = 1 << 20

// MaxThreads bounds --threads: a loop thread per core of the largest hosts.
const MaxThreads = 256

// InlineAuto is --inline's default: the inline size perftest would use on the device
// (see ResolveInline). It lives in the plan only until the client has opened its device.
const InlineAuto = -1

// ResolveInline turns an InlineAuto plan into perftest's default inline size for the
// client's device; any other value is the user's and stays.
func (op Op) ResolveInline(c *result.Config, dev result.Device) {
	if c.InlineBytes == InlineAuto {
		c.InlineBytes = op.DefaultInline(*c, dev)
	}
}

// ResolvePostAPI turns --post-api auto (or none) into perftest's choice for the
// client's device (verbs.DefaultPostAPI); wr and legacy are the user's and stay.
func ResolvePostAPI(c *result.Config, dev result.Device) {
	if c.PostAPI == "" || c.PostAPI == verbs.PostAuto {
		c.PostAPI = verbs.DefaultPostAPI(dev.Driver)
	}
}

// DefaultInline is the inline size perftest picks when -I is not given, in
// ctx_set_max_inline() of perftest_parameters.c (the devices come from its
// ib_dev_name(), the sizes from perftest_parameters.h):
//
//   - a device perftest does not recognise gets 0: "Device not recognized to implement
//     inline feature". That includes Soft-RoCE (rxe: vendor 0xffffff, part 0) and
//     Soft-iWARP (siw), whatever the test;
//   - bandwidth tests get 0, and so does READ (no payload in the request);
//   - WRITE latency gets DEF_INLINE_WRITE, 220 B, on ConnectX and the other devices
//     perftest knows, except those it sizes itself: Broadcom NetXtreme 96, Amazon EFA
//     32, QLogic E4 (qedr) 128, Alibaba eRDMA 96, HiSilicon HNS 32, Intel (vendor
//     0x8086) 48 for part 14289 (i40iw) and 101 for the others (irdma).
//
// perftest recognises most devices by vendor_part_id alone, whatever the vendor ID
// (only Chelsio and Intel are told by their vendor ID), and so does this.
func (op Op) DefaultInline(c result.Config, dev result.Device) int {
	if !op.LatInline || c.Test != result.Lat {
		return 0
	}
	switch dev.Driver {
	case "rxe", "siw":
		return 0
	}
	switch dev.VendorID {
	case 0x1425: // Chelsio: T4, T5, T6 by the part ID's top nibble
		switch dev.VendorPartID >> 12 {
		case 4, 5, 6, 10, 11:
			return defInlineWrite
		}
		return 0
	case 0x8086:
		if dev.VendorPartID == 14289 {
			return 48
		}
		return 101
	}
	if n, ok := perftestLatInline[dev.VendorPartID]; ok {
		return n
	}
	return 0
}

// defInlineWrite is perftest's DEF_INLINE_WRITE.
const defInlineWrite = 220

// perftestLatInline maps the vendor_part_ids perftest recognises to its WRITE latency
// inline size.
var perftestLatInline = func() map[uint32]int {
	m := map[uint32]int{}
	set := func(n int, parts ...uint32) {
		for _, p := range parts {
			m[p] = n
		}
	}
	set(defInlineWrite,
		25408, 25418, 25428, 25448, // ConnectX
		26418, 26428, 26438, 26448, 26458, 26468, 26478, // ConnectX-2
		4099, 4100, 4103, 4104, // ConnectX-3, ConnectX-3 Pro
		4113,       // Connect-IB
		4115, 4116, // ConnectX-4
		4117, 4118, // ConnectX-4 Lx
		4119, 4120, 4121, 4122, // ConnectX-5, ConnectX-5 Ex
		4123, 4124, 4125, 4126, 4127, // ConnectX-6, -6 Dx, VF, -6 Lx
		4129, 4131, // ConnectX-7, ConnectX-8
		41682, 41683, 41686, 41692, // BlueField, -2, -3
		1824,                              // Emulex Skyhawk
		32880, 32881, 32882, 32883, 32912, // QLogic (perftest's QLOGIC_AH)
		33136, 33168, // QLogic (QLOGIC_AHP)
	)
	set(128, 5684, 5700, 5716, 5718, 5734) // QLogic (QLOGIC_E4)
	set(96,                                // Broadcom NetXtreme
		5638, 5652, 5824, 5825, 5827, 5839, 5846, 5847, 5848, 5849, 5855, 5858, 5859,
		5861, 5867, 5869, 5871, 5872, 5873, 5968, 5984, 6169, 55296, 55298, 55300)
	set(32, 61344, 61345, 61346)                             // Amazon EFA
	set(96, 4223)                                            // Alibaba eRDMA
	set(32, 41506, 41507, 41508, 41509, 41510, 41512, 41519) // HiSilicon HNS
	return m
}()

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
func (op Op) Validate(c result.Config) error {
	if c.Test == result.Region {
		return validateRegion(c)
	}
	switch {
	case c.Op != string(op.Name):
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
	case c.NumQPs < 1 || c.NumQPs > 1024:
		return fmt.Errorf("--qps %d: want 1 to 1024", c.NumQPs)
	case c.NumQPs > 1 && c.Test == result.Lat:
		return fmt.Errorf("latency tests use one QP; drop --qps")
	case c.Iterations >= 1<<verbs.QShift:
		return fmt.Errorf("--iters %d: want fewer than 2^%d per QP (the loops number WRs in %d bits)", c.Iterations, verbs.QShift, verbs.QShift)
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
		return fmt.Errorf("--inline applies to WRITE; %s carries no payload in the request", strings.ToUpper(string(op.Name)))
	case c.MTUBytes != 0 && (c.MTUBytes < 256 || c.MTUBytes > 4096 || c.MTUBytes&(c.MTUBytes-1) != 0):
		return fmt.Errorf("--mtu %d: want 256, 512, 1024, 2048 or 4096", c.MTUBytes)
	case c.PostAPI != "" && c.PostAPI != verbs.PostAuto && c.PostAPI != verbs.PostWR && c.PostAPI != verbs.PostLegacy:
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
		return fmt.Errorf("--qp-timeout %d: want 1 to 31 (a retransmission after 4.096 us x 2^N without an acknowledgement; perftest's default is %d, 67 ms)", c.QPTimeout, verbs.DefaultQPTimeout)
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

// validateFabric checks what a plan asks of the fabric: the service level and the
// traffic class (relaxed ordering is a switch).
func validateFabric(c result.Config) error {
	switch {
	case c.SL < 0 || c.SL > 15:
		return fmt.Errorf("--sl %d: want a service level from 0 to 15 (on RoCE, the Ethernet priority the NIC sends with; 0 is the default)", c.SL)
	case c.TrafficClass < 0 || c.TrafficClass > 255:
		return fmt.Errorf("--tclass %d: want a traffic class from 0 to 255 (on RoCE, the IP header's DSCP << 2 | ECN: DSCP 26 is --tclass 104); 0 is the default", c.TrafficClass)
	}
	return nil
}

// A region plan asks the server for a buffer that the client's QPs may WRITE to and
// READ from as it likes (the public API, package rdma): MsgSizeBytes of zeros, NumQPs
// QPs, registered with relaxed ordering and connected with the service level and
// traffic class the plan asks for (Spec, without a message size: the region is no
// message). The server holds it until the client says done, then reports its SHA-256.
var regionOp = Op{
	ServerSpec: func(c result.Config) verbs.Spec {
		s := Spec(c, c.MsgSizeBytes, true, true, 1)
		s.MsgSize = 0
		return s
	},
}

// validateRegion checks a region plan (the Go API's Dial): an operation, a size, a
// number of QPs, a path MTU, the client's send-queue depth, relaxed ordering, the
// service level and the traffic class, and nothing else. A field a region does not
// take is refused by its name, not ignored.
func validateRegion(c result.Config) error {
	switch {
	case c.Op != "write" && c.Op != "read":
		return fmt.Errorf("unknown operation %s: want write or read", text.Quote(c.Op))
	case c.MsgSizeBytes < 1 || c.MsgSizeBytes > 1<<31:
		return fmt.Errorf("region of %d bytes: want 1 B to 2 GiB", c.MsgSizeBytes)
	case c.NumQPs < 1 || c.NumQPs > 1024:
		return fmt.Errorf("region with %d QPs: want 1 to 1024", c.NumQPs)
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

// firstSet is the JSON name of the first field of c that is not zero ("" for none).
func firstSet(c result.Config) string {
	v := reflect.ValueOf(c)
	for i := range v.NumField() {
		if !v.Field(i).IsZero() {
			name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
			return name
		}
	}
	return ""
}

// PlanRules reads a plan as a server does: its operation among ops (a region plan is
// the Go API's, by its own rules), its defaults filled in, and the operation's rules
// checked. The server's limits (--max-buffer, --max-test-time, a token) come after.
func PlanRules(ops map[string]Op, cfg result.Config) (Op, result.Config, error) {
	op, ok := ops[cfg.Op]
	switch {
	case cfg.Test == result.Region:
		op = regionOp
	case !ok && cfg.Op != string(verbs.Write) && cfg.Op != string(verbs.Read):
		return op, cfg, fmt.Errorf("invalid plan: unknown operation %s: want write or read", text.Quote(cfg.Op))
	case !ok:
		return op, cfg, fmt.Errorf("this server does not serve %s tests", text.Quote(cfg.Op))
	default:
		op.Defaults(&cfg)
	}
	if err := op.Validate(cfg); err != nil {
		return op, cfg, fmt.Errorf("invalid plan: %w", err)
	}
	return op, cfg, nil
}

// ServerBytes is the memory a plan makes the server register.
//
// It counts the buffer and the queues: every send-queue entry and completion-queue
// entry a plan makes the server's device allocate, at wqeBytes and cqeBytes each (about
// what mlx5 and rxe use), so that --qps and --tx-depth are bounded as the buffer is.
func ServerBytes(op Op, c result.Config) int64 { return sideBytes(op, c, true) }

// ClientBytes is the memory a plan makes its client register, counted as ServerBytes
// counts the server's: an agent running a plan as the client holds that much.
func ClientBytes(op Op, c result.Config) int64 { return sideBytes(op, c, false) }

func sideBytes(op Op, c result.Config, server bool) int64 {
	s := sessionSpec(op, c, server)
	queues := int64(s.NumQP) * int64(s.SQDepth)
	return int64(s.BufSize) + int64(s.Offset) + queues*wqeBytes + (queues+1)*cqeBytes
}

const wqeBytes, cqeBytes = 256, 64

// Inline says whether a plan's messages go inline. Only an op with a payload has an
// inline size above 0 (Validate sees to it).
func Inline(c result.Config) bool { return c.MsgSizeBytes <= c.InlineBytes }

// InlineUsed says whether s posts c's messages inline: the plan asks (Inline) and the
// QP takes messages of that size. What the loops do and what results record.
func InlineUsed(c result.Config, s Session) bool {
	return Inline(c) && s.MaxInline() >= c.MsgSizeBytes
}

// Spec is the common shape of a side's session for a plan.
func Spec(c result.Config, bufSize int, remoteWrite, remoteRead bool, sqDepth int) verbs.Spec {
	s := verbs.Spec{
		NumQP: c.NumQPs, SQDepth: sqDepth, BufSize: bufSize, Offset: c.BufOffsetBytes,
		Huge: c.Hugepages, RemoteWrite: remoteWrite, RemoteRead: remoteRead, QPTimeout: c.QPTimeout,
		PostAPI: c.PostAPI, Threads: c.Threads, MsgSize: c.MsgSizeBytes,
		RelaxedOrdering: c.PCIeRelaxedOrdering, SL: c.SL, TrafficClass: c.TrafficClass,
	}
	if Inline(c) {
		s.InlineSize = c.InlineBytes
	}
	return s
}

// validateFan checks what a run against several servers (Fan) allows; each server
// gets the same plan, with Peers set, and checks it too.
func (op Op) validateFan(c result.Config) error {
	switch {
	case c.Peers == 0 && (c.Sync != "" || c.Landing != ""):
		return fmt.Errorf("--sync and --landing apply to runs against several servers (SERVER a,b,c)")
	case c.Peers == 0:
		return nil
	case c.Peers < 0 || c.Peers > MaxPeers:
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
		return fmt.Errorf("--landing applies to READ (%s sends one source region to every server)", strings.ToUpper(string(op.Name)))
	case op.Landings != nil && !slices.Contains(op.Landings, c.Landing):
		return fmt.Errorf("--landing %s: want %s", text.Quote(c.Landing), strings.Join(op.Landings, " or "))
	case c.Verify && c.Landing == "shared":
		return fmt.Errorf("--verify with --landing shared: the shared region holds whichever server's message landed last; verify with --landing per-peer")
	}
	return nil
}

// maxSignalled is how many signalled WRs a bandwidth loop can have outstanding on its
// CQ: each QP holds up to the send queue's depth, one in every cq-mod signalled.
func maxSignalled(c result.Config) int {
	if c.CQMod < 1 {
		return c.NumQPs * c.SQDepth
	}
	return max(1, c.NumQPs) * ((c.SQDepth + c.CQMod - 1) / c.CQMod)
}
