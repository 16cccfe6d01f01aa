// Package result is rdmabench's one result type: what a measurement produced, with a
// schema version, stable snake_case keys and units in the names. Reports read results;
// they never re-run anything.
package result

import (
	"time"

	"github.com/rdmabench/rdmabench/counters"
	"github.com/rdmabench/rdmabench/host"
)

// Version is rdmabench's version, set by cmd/rdmabench: results carry it, and so do the
// hellos of a session.
var Version = "dev"

// SchemaVersion changes whenever a key changes meaning or disappears.
const SchemaVersion = 3

// Test is a plan's kind of test.
type Test string

// The kinds of test: bandwidth and message rate, a latency histogram, and a region of
// the server's memory held for the Go API (package rdma), which is no measurement.
const (
	BW     Test = "bw"
	Lat    Test = "lat"
	Region Test = "region"
)

// Config is the test plan: everything the client sends the server and both sides use.
type Config struct {
	Op               string  `json:"op"`   // "write" or "read"
	Test             Test    `json:"test"` // BW or Lat
	MsgSizeBytes     int     `json:"msg_size_bytes"`
	Iterations       uint64  `json:"iterations"`        // per QP; ignored when DurationS > 0
	DurationS        float64 `json:"duration_s"`        // bandwidth tests: run for this long
	WarmupIterations uint64  `json:"warmup_iterations"` // run before measuring, not counted
	SQDepth          int     `json:"sq_depth"`
	PostList         int     `json:"post_list"`
	CQMod            int     `json:"cq_mod"` // signal every Nth WR
	BufOffsetBytes   int     `json:"buf_offset_bytes"`
	Hugepages        bool    `json:"hugepages"`
	InlineBytes      int     `json:"inline_bytes"` // WRITE: inline messages up to this size
	MTUBytes         int     `json:"mtu_bytes"`    // requested path MTU; 0 = the ports' active MTU
	// QPTimeout is the QPs' local ACK timeout exponent (perftest's -u): a requester
	// retransmits after 4.096 us x 2^QPTimeout without an acknowledgement; 0 means 14
	// (67 ms), perftest's default.
	QPTimeout int `json:"qp_timeout,omitempty"`
	// OutsNum (perftest's -o) caps the READs each of the client's QPs keeps
	// outstanding below what both devices allow (max_rd_atom then says what was used);
	// 0: no cap, perftest's default. A WRITE test ignores it, as perftest does.
	OutsNum int `json:"outs_num,omitempty"`
	// PostAPI is how the client's loops handed WRs to the send queue: "wr" (the
	// extended QP API, ibv_wr_start .. ibv_wr_complete: one doorbell per post list) or
	// "legacy" (ibv_post_send). --post-api auto, the default, is perftest's choice for
	// the client's device (wr on mlx5, EFA and HNS); the server's loops post as its own
	// device's default.
	PostAPI string `json:"post_api,omitempty"`
	NumQPs  int    `json:"num_qps"`
	Verify  bool   `json:"verify"`
	// Bandwidth tests: sleep on completion events instead of busy-polling, with the CQ
	// moderated (ibv_modify_cq) to an event per count completions or per usec.
	CompletionEvents  bool `json:"completion_events"`
	CQModerationCount int  `json:"cq_moderation_count"`
	CQModerationUS    int  `json:"cq_moderation_usec"`
	// Counters says which NIC counters the run reads around its measured phase: "auto"
	// (every counter in JSON, the classified ones flagged), "all", "off", or a
	// comma-separated list of names.
	Counters string `json:"counters,omitempty"`
	// IntervalS (bandwidth tests): report the throughput every this many seconds of the
	// measured phase, as it goes (0: not).
	IntervalS float64 `json:"interval_s,omitempty"`
	// Bidirectional (bandwidth tests, perftest's -b): the server drives the same traffic
	// towards the client at the same time.
	Bidirectional bool `json:"bidirectional,omitempty"`
	// Baseline (bandwidth tests, --baseline): after the RDMA run, the client measures
	// the same transfer over this transport ("tcp") between the same hosts.
	Baseline string `json:"baseline,omitempty"`
	// Fan-out / fan-in (a client of several servers, one QP each): Sync is "stream"
	// (each QP keeps its queue full) or "rounds" (one message to or from every server,
	// then wait for all); Landing (READ) is "per-peer" (a landing region per server)
	// or "shared" (one region every server's data lands in). Peers is the number of
	// servers; 0 for a test against one.
	Sync    string `json:"sync,omitempty"`
	Landing string `json:"landing,omitempty"`
	Peers   int    `json:"peers,omitempty"`
	// MR (bandwidth tests, --mr) is where the WRs' lkeys come from: absent for pool
	// (the buffer registered once before the run), "per-io" (each WR registers its
	// slot in the timed loop and deregisters it at its completion) or "cache" (an LRU
	// of MRCache registrations keyed by address and length). See MRRun.
	MR      string `json:"mr,omitempty"`
	MRCache int    `json:"mr_cache,omitempty"`
	// Threads (bandwidth tests, --threads) is how many loop threads drive the QPs,
	// each its own CQ and its own block of the QPs (-q 5 --threads 2: QPs 0-2 and 3-4);
	// absent or 1: one thread. CPUList (--cpu) is the CPUs the client's loop threads
	// were pinned to, as given; the result's Threads says where each one ran.
	Threads int    `json:"threads,omitempty"`
	CPUList string `json:"cpu_list,omitempty"`
	// PCIeRelaxedOrdering: both sides registered the test's memory with
	// IBV_ACCESS_RELAXED_ORDERING, which lets the NIC's PCIe writes pass each other,
	// as perftest does by default since 2020. bench's Defaults sets it from
	// DisablePCIeRelaxed and the test: on, except for the WRITE latency test, whose
	// last-byte polling needs its bytes to land in order (perftest's ib_write_lat
	// leaves it off too). Absent: off, as in every result of rdmabench before the field.
	// A device that does not support it registers without it.
	PCIeRelaxedOrdering bool `json:"pcie_relaxed_ordering,omitempty"`
	// DisablePCIeRelaxed is --disable-pcie-relaxed (perftest's
	// --disable_pcie_relaxed): the user turned relaxed ordering off.
	DisablePCIeRelaxed bool `json:"disable_pcie_relaxed,omitempty"`
	// SL (--sl, perftest's -S) is the service level both sides' QPs were given at RTR
	// (ah_attr.sl: on RoCE, mlx5 maps it to the Ethernet priority, PCP); TrafficClass
	// (--tclass) is their GRH's traffic class (RoCE: the IP header's DSCP and ECN bits,
	// DSCP = tclass >> 2). Absent: 0, perftest's default.
	SL           int `json:"sl,omitempty"`
	TrafficClass int `json:"traffic_class,omitempty"`
}

// Device identifies one side's NIC and port.
type Device struct {
	Name         string  `json:"name"`
	Driver       string  `json:"driver"`
	Model        string  `json:"model"`
	VendorID     uint32  `json:"vendor_id"`
	VendorPartID uint32  `json:"vendor_part_id"`
	FirmwareVer  string  `json:"fw_ver"`
	NodeGUID     string  `json:"node_guid"`
	Port         int     `json:"port"`
	LinkLayer    string  `json:"link_layer"`
	RateGbps     float64 `json:"rate_gbit_per_s"`
	ActiveMTU    int     `json:"active_mtu_bytes"`
	GIDIndex     int     `json:"gid_index"`
	GIDType      string  `json:"gid_type"`
	// GID is the address of the GID in use (RoCE: an IP address); GIDNote says why it
	// is not the GID of the control connection's local address, when it is not (no
	// RoCE v2 GID holds that address: loopback, another netdev, InfiniBand).
	GID     string `json:"gid,omitempty"`
	GIDNote string `json:"gid_note,omitempty"`
	Host    string `json:"host"`
	// HostFacts are what the host says about itself and this NIC (PCIe link, NUMA
	// node, CPU, governor, kernel, rdma-core, provider, firmware): see host.Facts.
	// Absent where they were not read; a fact absent inside is unknown, never zero.
	HostFacts *host.Facts `json:"host_facts,omitempty"`
}

// Latency is a latency distribution in nanoseconds. Samples, min, max, mean and stdev
// are exact (every sample, computed by the timed loop); percentiles come from the
// HdrHistogram (3 significant digits) and are nil (JSON null) where the sample count
// does not support them (see Supported).
type Latency struct {
	Samples uint64  `json:"samples"`
	Min     int64   `json:"min"`
	Max     int64   `json:"max"`
	Mean    float64 `json:"mean"`
	Stdev   float64 `json:"stdev"`
	P50     *int64  `json:"p50"`
	P90     *int64  `json:"p90"`
	P99     *int64  `json:"p99"`
	P99_9   *int64  `json:"p99_9"`
	P99_99  *int64  `json:"p99_99"`
}

// Verify is the outcome of --verify: the pattern checked after the transfer.
type Verify struct {
	Side           string `json:"side"`  // where the bytes were checked: "server" (WRITE) or "client" (READ)
	Slots          int    `json:"slots"` // message slots checked
	CheckedBytes   int    `json:"checked_bytes"`
	OK             bool   `json:"ok"`
	FirstBadOffset int64  `json:"first_bad_offset"` // -1 when OK
	Detail         string `json:"detail,omitempty"` // why it failed or was not done
}

// Result is one measurement.
type Result struct {
	SchemaVersion int       `json:"schema_version"`
	ToolVersion   string    `json:"tool_version"`
	Time          time.Time `json:"time"`
	Server        string    `json:"server"`
	Client        Device    `json:"client"`
	ServerDevice  Device    `json:"server_device"`
	Config        Config    `json:"config"`
	PathMTU       int       `json:"path_mtu_bytes"`
	MaxRdAtom     int       `json:"max_rd_atom"`
	InlineUsed    bool      `json:"inline_used"`

	WarmupDone  uint64  `json:"warmup_iterations_done"`
	Iterations  uint64  `json:"iterations_done"` // messages completed, all QPs
	DurationNS  int64   `json:"duration_ns"`
	Bytes       uint64  `json:"bytes"`
	BWGbps      float64 `json:"bw_gbit_per_s"` // 10^9 bits per second
	BWMiBps     float64 `json:"bw_mib_per_s"`  // 2^20 bytes per second
	MsgRateMpps float64 `json:"msg_rate_mpps"` // 10^6 messages per second
	// RampShare (bandwidth runs): the bytes the send queues hold at once (QPs x WRs
	// outstanding x message size; a READ's outstanding WRs are capped by max_rd_atom,
	// and a run of fewer iterations per QP than its depth holds only those) over the
	// bytes the run moved. The window runs from the first post to the last
	// completion: it opens with the queues filling before their first completion and
	// closes with them draining, and those are at most this share of it. A run of a few
	// queues' worth measures its ramp, not the link: a sweep lengthens a point until the
	// share is small against the resolution it decides at.
	RampShare *float64 `json:"ramp_share,omitempty"`
	// Steady (bandwidth runs): the link's rate with every queue kept full, without the
	// fill and drain the whole window has: the messages completed from the first
	// completion to the last one before posting stopped, over that time (several loop
	// threads: the sum of their rates). What a sweep compares. Absent where a run had no
	// such window (it posted its queues once and drained them; rounds; --mr per-io/cache).
	Steady *Steady `json:"steady,omitempty"`

	// LatKind says what each latency sample is: "one_way" (WRITE ping-pong RTT/2),
	// "read_completion" (one READ, post to completion) or "completion_under_load"
	// (bandwidth runs: post to completion of each signalled WR).
	LatKind   string `json:"lat_kind"`
	Clock     string `json:"clock"`                // "tsc" (calibrated per run against CLOCK_MONOTONIC_RAW) or "clock_monotonic_raw"
	ClockNote string `json:"clock_note,omitempty"` // why that clock: the TSC's evidence or why not the TSC, e.g. "TSC: constant_tsc and nonstop_tsc on every CPU; the kernel's clocksource is tsc"
	// ClockBackwards counts samples whose end stamp was before their start: counted
	// here, excluded from the statistics.
	ClockBackwards uint64  `json:"clock_backwards_samples"`
	Lat            Latency `json:"lat_ns"`    // all samples but those: none is dropped
	Histogram      string  `json:"histogram"` // HdrHistogram V2 compressed, base64
	CQEvents       uint64  `json:"cq_events"` // completion events slept on (completion_events)

	Verify      *Verify `json:"verify,omitempty"`
	Interrupted bool    `json:"interrupted"`
	Error       string  `json:"error,omitempty"`

	// Counters are the NIC's counters over the measured phase on both sides (port-wide:
	// other traffic on either port moves them too); Flags the error, congestion and
	// pause counters that moved, and the sanity checks that failed, each saying whether
	// it taints. A tainted result was measured while the NIC retransmitted, dropped or
	// miscounted, or while the side sending the data was held off by pause frames: it
	// is not the same number as a clean one. Congestion (CNPs, ECN marks, transmit
	// waits) is reported per million packets and does not taint: DCQCN at work is part
	// of what a run on a real fabric measures.
	Counters      *Counters       `json:"counters,omitempty"`
	CountersFlags []counters.Flag `json:"counters_flags,omitempty"`
	Tainted       bool            `json:"tainted"`
	// Paused: pause frames (PFC or 802.3x) moved on either side's port during the
	// measured phase; the flags of class pause have the counts.
	Paused bool `json:"paused,omitempty"`

	// Intervals (--interval) sums up the per-interval lines: a run that sagged half-way
	// shows it in a minimum far below the mean.
	Intervals *Intervals `json:"intervals,omitempty"`

	// Reverse (bidirectional tests) is what the server's loop moved towards the client
	// over the same measured phase; BWSumGbps is both directions together. The
	// top-level throughput is the client's direction.
	Reverse   *Direction `json:"reverse,omitempty"`
	BWSumGbps float64    `json:"bw_sum_gbit_per_s,omitempty"`
	// Baseline (--baseline tcp) is the same transfer measured over TCP after the RDMA
	// run; its error does not touch the RDMA numbers above.
	Baseline *Baseline `json:"baseline,omitempty"`

	// Fan-out / fan-in: see Fan.
	Fan *Fan `json:"fan,omitempty"`

	// Fleet (rdmabench fleet): which pair of the fleet this is.
	Fleet *FleetPair `json:"fleet,omitempty"`

	// MR (config mr per-io or cache) counts the registrations the measured loop made.
	MR *MRRun `json:"mr,omitempty"`

	// QPs (bandwidth runs of more than one QP against one server) is how the
	// messages divided among the client's QPs; Threads where the loop ran on threads
	// and CPUs (see Threads).
	QPs     *QPShares `json:"qps,omitempty"`
	Threads *Threads  `json:"threads,omitempty"`
}

// Direction is one direction of a bidirectional test.
type Direction struct {
	Messages    uint64  `json:"messages"`
	Bytes       uint64  `json:"bytes"`
	DurationNS  int64   `json:"duration_ns"`
	BWGbps      float64 `json:"bw_gbit_per_s"`
	MsgRateMpps float64 `json:"msg_rate_mpps"`
	Error       string  `json:"error,omitempty"`
}

// Interval is one --interval line: the messages completed in it (all QPs), as the
// measured loop counted them when the interval's wall-clock time was up, and the NIC
// counters that moved on this side.
//
// Ramp marks an interval that ended before the run's first completion: in it the loop
// only filled the send queue. The link carried bytes, but a message is counted only
// when its completion returns, and the first one returns only after its own trip: on a
// slow link, or a device that acknowledges a queue at a time, after nearly the whole
// queue's bytes (8 MiB at depth 128 x 64 KiB is 0.7 s at 12 MB/s). Its 0 is the ramp's,
// not the link's. A zero interval after the first completion is a real stall, and is
// no ramp; the interval in which the first completion returns counts as measured.
type Interval struct {
	Index       int              `json:"interval"`
	Ramp        bool             `json:"ramp,omitempty"`
	Start       time.Time        `json:"start"`
	DurationNS  int64            `json:"duration_ns"`
	Messages    uint64           `json:"messages"`
	Bytes       uint64           `json:"bytes"`
	BWGbps      float64          `json:"bw_gbit_per_s"`
	MsgRateMpps float64          `json:"msg_rate_mpps"`
	Counters    *counters.Deltas `json:"counters,omitempty"`
}

// Intervals are the extremes of a run's full intervals after its ramp (the ramp's
// intervals, see Interval.Ramp, and the last, partial one are not counted). Count 0
// with ramp intervals: the run never left its ramp (lengthen it).
type Intervals struct {
	Count      int     `json:"count"`
	Ramp       int     `json:"ramp_intervals,omitempty"` // leading intervals that ended before the first completion
	MinBWGbps  float64 `json:"min_bw_gbit_per_s"`
	MaxBWGbps  float64 `json:"max_bw_gbit_per_s"`
	IntervalNS int64   `json:"interval_ns"`
}

// Counters are the deltas of each side's port counters over the measured phase, read
// after the counters' cache expired (see counters.Snapshot.Settle).
type Counters struct {
	Local  *counters.Deltas `json:"local,omitempty"`
	Remote *counters.Deltas `json:"remote,omitempty"`
	// Notes say why a side has none (no sysfs counters, the device not found there) and
	// what the sanity checks compared.
	Notes []string `json:"notes,omitempty"`
}

// SetRampShare sets RampShare for a bandwidth run of c that moved r.Bytes: each of its
// c.NumQPs send queues holds c.SQDepth WRs at once, its READs capped at rdAtom
// outstanding per QP (0: no cap known), and a run of c.Iterations per QP (no
// duration) below that depth never holds more than those. Nothing moved: no share.
func (r *Result) SetRampShare(c Config, rdAtom int) {
	if c.Test != BW || r.Bytes == 0 {
		return
	}
	wrs := max(c.SQDepth, 1)
	if c.Op == "read" && rdAtom > 0 {
		wrs = min(wrs, rdAtom)
	}
	if c.DurationS <= 0 && c.Iterations > 0 && c.Iterations < uint64(wrs) {
		wrs = int(c.Iterations) // a QP posts no more than its iterations
	}
	sh := float64(max(c.NumQPs, 1)) * float64(wrs) * float64(c.MsgSizeBytes) / float64(r.Bytes)
	r.RampShare = &sh
}

// Steady is a bandwidth run's steady window (Result.Steady).
type Steady struct {
	Messages    uint64  `json:"messages"`
	DurationNS  int64   `json:"duration_ns"`
	BWGbps      float64 `json:"bw_gbit_per_s"`
	MsgRateMpps float64 `json:"msg_rate_mpps"`
}

// SetSteady sets Steady from the messages completed in the steady window and its
// length; none when either is zero.
func (r *Result) SetSteady(msgs uint64, size int, durNS int64) {
	r.Steady = nil
	if msgs == 0 || durNS <= 0 {
		return
	}
	sec := float64(durNS) / 1e9
	r.Steady = &Steady{Messages: msgs, DurationNS: durNS, BWGbps: float64(msgs) * float64(size) * 8 / 1e9 / sec,
		MsgRateMpps: float64(msgs) / 1e6 / sec}
}

// SetThroughput fills bytes, bandwidth and message rate from a count and a duration.
func (r *Result) SetThroughput(msgs uint64, size int, durNS int64) {
	r.Iterations = msgs
	r.DurationNS = durNS
	r.Bytes = msgs * uint64(size)
	if durNS <= 0 {
		return
	}
	sec := float64(durNS) / 1e9
	r.BWGbps = float64(r.Bytes) * 8 / 1e9 / sec
	r.BWMiBps = float64(r.Bytes) / (1 << 20) / sec
	r.MsgRateMpps = float64(msgs) / 1e6 / sec
}
