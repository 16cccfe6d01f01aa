// Package verbs is rdmabench's only cgo package: it owns every libibverbs resource
// (device context, PD, MR, CQ, QP and the C-allocated buffers) and runs the timed
// post/poll loops in C, one cgo call per measurement. Built without cgo it compiles
// and every entry point returns ErrUnsupported.
package verbs

import (
	"errors"
	"fmt"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/rdmabench/rdmabench/plan"
	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/verbs/qp"
)

// ErrUnsupported is returned by every entry point of a build without cgo.
var ErrUnsupported = errors.New("rdmabench was built without cgo (CGO_ENABLED=0): RDMA verbs are unavailable; rebuild with CGO_ENABLED=1 and libibverbs-dev installed")

// ErrNoDevice means libibverbs found no RDMA device.
var ErrNoDevice = errors.New("no RDMA device found: load a NIC driver (mlx5_ib ...), or create a Soft-RoCE device with 'modprobe rdma_rxe && rdma link add rxe0 type rxe netdev eth0', or run in the test bed (test/rxevm/run)")

// DeviceInfo describes one RDMA device as `rdmabench devices` shows it.
type DeviceInfo struct {
	Name         string `json:"name"`
	Driver       string `json:"driver"`
	Transport    string `json:"transport"`
	Model        string `json:"model"`
	NodeGUID     string `json:"node_guid"`
	FirmwareVer  string `json:"fw_ver"`
	VendorID     uint32 `json:"vendor_id"`
	VendorPartID uint32 `json:"vendor_part_id"`
	MaxQPWR      int    `json:"max_qp_wr"`
	MaxCQE       int    `json:"max_cqe"`
	MaxQPRdAtom  int    `json:"max_qp_rd_atom"` // READs a QP answers at once (responder)
	// MaxQPInitRdAtom is the READs a QP may have outstanding as the initiator.
	MaxQPInitRdAtom int        `json:"max_qp_init_rd_atom"`
	MaxMRSize       uint64     `json:"max_mr_size"`
	Ports           []PortInfo `json:"ports"`
}

// PortInfo is one port of a device.
type PortInfo struct {
	Port      int     `json:"port"`
	State     string  `json:"state"`
	PhysState string  `json:"phys_state"`
	LinkLayer string  `json:"link_layer"`
	ActiveMTU int     `json:"active_mtu_bytes"`
	MaxMTU    int     `json:"max_mtu_bytes"`
	LID       uint16  `json:"lid"`
	Width     int     `json:"width_lanes"`
	LaneGbps  float64 `json:"lane_speed_gbit_per_s"`
	RateGbps  float64 `json:"rate_gbit_per_s"`
	// MaxMsgSize is the largest message the port sends (ibv_port_attr.max_msg_sz).
	MaxMsgSize uint32     `json:"max_msg_sz"`
	GIDs       []GIDEntry `json:"gids"`
}

// GIDEntry is one valid entry of a port's GID table.
type GIDEntry struct {
	Index  int    `json:"index"`
	GID    string `json:"gid"`
	Type   string `json:"type"` // "IB", "RoCE v1" or "RoCE v2"
	Netdev string `json:"netdev,omitempty"`
}

// VerbError names the verb and the phase that failed: "ibv_modify_qp(RTR): invalid argument".
type VerbError struct {
	Verb  string
	Phase string
	Err   error
}

func (e *VerbError) Error() string {
	if e.Phase != "" {
		return fmt.Sprintf("%s(%s): %v", e.Verb, e.Phase, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.Verb, e.Err)
}

func (e *VerbError) Unwrap() error { return e.Err }

// CompletionError is a work completion with an error status.
type CompletionError struct {
	Status string // e.g. IBV_WC_REM_ACCESS_ERR
	Detail string // libibverbs' text for the status
	// Opcode only for a successful completion (an unexpected one): ibv_poll_cq(3) defines
	// only wr_id, status, qp_num and vendor_err for a failed one.
	Opcode string
	WRID   uint64
	// VendorErr is the NIC's syndrome (perftest prints it too); QPNum the local QP.
	VendorErr uint32
	QPNum     uint32
	// Unexpected: the completion was for no WR the loop had outstanding.
	Unexpected bool
}

func (e *CompletionError) Error() string {
	what := "work completion failed"
	if e.Unexpected {
		what = "unexpected work completion (for no outstanding WR)"
	}
	op := ""
	if e.Opcode != "" {
		op = ", opcode " + e.Opcode
	}
	return fmt.Sprintf("%s: %s (%s) on QP 0x%x, wr_id %d%s, vendor error 0x%x", what, e.Status, e.Detail, e.QPNum, e.WRID, op, e.VendorErr)
}

// TimeoutError is a loop that saw no progress from the peer for its timeout.
type TimeoutError struct {
	Phase string
	Wait  string // what the loop waited for
	After time.Duration
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("%s: no progress for %v waiting for %s: the peer or the network stopped answering (raise --timeout if the link is just slow)", e.Phase, e.After, e.Wait)
}

// Model names a NIC from its identity, the way perftest users know it.
func Model(driver string, vendorID, partID uint32) string {
	switch {
	case driver == "rxe" || (vendorID == 0xffffff && partID == 0):
		return "Soft-RoCE (rxe)"
	case driver == "siw":
		return "Soft-iWARP (siw)"
	case vendorID == 0x02c9 || vendorID == 0x15b3:
		if m, ok := mellanox[partID]; ok {
			return m
		}
		return fmt.Sprintf("Mellanox/NVIDIA part %d", partID)
	}
	return fmt.Sprintf("vendor 0x%x part %d", vendorID, partID)
}

var mellanox = map[uint32]string{
	4115: "ConnectX-4", 4116: "ConnectX-4 VF", 4117: "ConnectX-4 Lx", 4118: "ConnectX-4 Lx VF",
	4119: "ConnectX-5", 4120: "ConnectX-5 VF", 4121: "ConnectX-5 Ex", 4122: "ConnectX-5 Ex VF",
	4123: "ConnectX-6", 4124: "ConnectX-6 VF", 4125: "ConnectX-6 Dx", 4126: "ConnectX family VF",
	4127: "ConnectX-6 Lx", 4129: "ConnectX-7", 4131: "ConnectX-8",
	41682: "BlueField", 41686: "BlueField-2", 41692: "BlueField-3",
}

// Op is the RDMA operation a test measures.
type Op string

const (
	Write Op = "write"
	Read  Op = "read"
)

// Spec says what one test needs from one side: the QPs, the buffer and the access the
// peer gets to it.
type Spec struct {
	NumQP       int
	SQDepth     int
	BufSize     int  // bytes used by the test (from Offset)
	Offset      int  // byte offset of the test region from a page boundary
	Huge        bool // back the buffer with 2 MiB hugepages
	RemoteWrite bool // the peer may RDMA WRITE into the buffer
	RemoteRead  bool // the peer may RDMA READ from it
	InlineSize  int  // max inline data for WRITE
	QPTimeout   int  // local ACK timeout exponent: 4.096 us x 2^n before a retransmission; 0: plan.DefaultQPTimeout (plan.QPTimeout)
	Events      bool // create the CQ with a completion channel (bandwidth loops sleep on it)
	ModCount    int  // CQ moderation (ibv_modify_cq): an event per this many completions ...
	ModPeriodUS int  // ... or after this many microseconds
	// PostAPI is how the loops hand WRs to the send queue: PostWR or PostLegacy; ""
	// or PostAuto, plan.DefaultPostAPI for the device's driver.
	PostAPI string
	// Threads (0 or 1: one) splits the QPs into that many contiguous blocks
	// (qp.Split), each with a CQ of its own, for bandwidth loops that run on as many
	// threads at once. Completion events need one thread.
	Threads int
	// CPUs are the CPUs the loop threads may run on (nil: not pinned): with SplitCPUs
	// a CPU each where there are enough, else all of them shared (qp.CPUSets).
	CPUs      []int
	SplitCPUs bool
	// MemNode, when set, is the NUMA node the buffer's pages are bound to
	// (preferred: see rb_mmap); Session.MemNode says whether the kernel took it.
	MemNode *int
	// RelaxedOrdering registers the buffer (and, with --mr per-io or cache, every
	// registration the loop makes) with IBV_ACCESS_RELAXED_ORDERING: the NIC may let its
	// PCIe writes to that memory pass each other. See Access.
	RelaxedOrdering bool
	// SL (0-15) and TrafficClass (0-255) go into every QP's address vector at RTR:
	// ah_attr.sl, and ah_attr.grh.traffic_class where the connection uses a GRH. See
	// RTRAddress.
	SL, TrafficClass int
	// MsgSize, when set, is the largest message the loops send: checked against the
	// port's max_msg_sz.
	MsgSize int
	// GIDs are the QPs' source GIDs (Device.GIDFor: a connection's local address):
	// one for every QP, or one per QP; none, the device's GID.
	GIDs []GIDEntry
}

// ReadDepths are the READ limits of a QP of this device towards a peer whose
// responder takes peerResp READs at once (its endpoint's max_rd_atom): qp.ReadDepths
// of this device's max_qp_init_rd_atom (the initiator's limit) and max_qp_rd_atom (the
// responder's).
func (d DeviceInfo) ReadDepths(peerResp int) (initiator, responder int) {
	return qp.ReadDepths(d.MaxQPInitRdAtom, d.MaxQPRdAtom, peerResp)
}

// The post APIs (--post-api) are the plan's: verbs names them for its sessions.
const (
	PostAuto   = plan.PostAuto   // perftest's choice for the device (plan.DefaultPostAPI)
	PostWR     = plan.PostWR     // the extended QP API: ibv_wr_start .. ibv_wr_complete, one doorbell per chain
	PostLegacy = plan.PostLegacy // ibv_post_send
)

// ResolvePostAPI turns "" and PostAuto into plan.DefaultPostAPI(driver) and refuses a
// name it does not know.
func ResolvePostAPI(api, driver string) (string, error) {
	switch api {
	case "", PostAuto:
		return plan.DefaultPostAPI(driver), nil
	case PostWR, PostLegacy:
		return api, nil
	}
	return "", fmt.Errorf("--post-api %q: want auto, wr (the extended QP API, ibv_wr_*) or legacy (ibv_post_send)", api)
}

// Layout is where a bandwidth loop's messages go: each QP has its own region in each
// buffer, LSlots (local) and RSlots (remote) message slots Stride bytes apart, and WR
// number i of a QP moves slot i % LSlots to slot i % RSlots (or back, for READ).
type Layout struct {
	LSlots, RSlots, Stride int
	// SharedLocal: every QP sends from (or lands in) the same local region, region 0.
	SharedLocal bool
}

// LocalRegions is how many local regions nqp QPs use.
func (l Layout) LocalRegions(nqp int) int {
	if l.SharedLocal {
		return 1
	}
	return nqp
}

// BWParams drives a bandwidth loop.
type BWParams struct {
	Op     Op
	Size   int
	Layout Layout
	// LocalOffset and RemoteOffset place the layout's slots in the two buffers (a
	// bidirectional test keeps a source and a destination region in each).
	LocalOffset, RemoteOffset int
	Iters                     uint64        // per QP
	Duration                  time.Duration // duration mode: post until this long after the call; Iters is then ignored
	SQDepth                   int
	PostList                  int
	CQMod                     int
	Inline                    bool
	Events                    bool // sleep on completion events (the session must have Spec.Events)
	// Progress, when set, is called every Interval from another goroutine with the WRs
	// completed so far (all QPs), as the loop counts them, until the loop returns.
	Interval time.Duration
	Progress func(completed uint64)
	Timeout  time.Duration // fail when no completion arrives for this long; 0 = never
	// Rounds runs rounds instead of a stream: one signalled WR on every QP, then wait
	// for all of them (Iters counts rounds; SQDepth, PostList, CQMod do not apply).
	Rounds bool
	// PerQP records each QP's latency samples too (BWResult.PerQPLat).
	PerQP bool
	// MR is where the WRs' lkeys come from: "" or MRModePool, the session's buffer;
	// MRModePerIO or MRModeCache, registrations the loop makes itself, in its timed
	// window (rb_bw_mr, see rb.h and CheckMR), with BWResult.MR counting them. MRCache
	// is the cache's size in registrations.
	MR      string
	MRCache int
}

// Check says whether p can run on a session of nqp QPs, bufSize bytes of buffer and
// send queues of maxSQDepth WRs: a layout whose slots hold the message and fit the
// buffer, moderation and post lists within the send queue, and MR modes the loop
// supports (CheckMR). The real loops and the test engine both refuse with it.
func (p BWParams) Check(nqp, bufSize, maxSQDepth int) error {
	l := p.Layout
	if p.Size < 1 || l.Stride < p.Size || l.LSlots < 1 || l.RSlots < 1 {
		return fmt.Errorf("bandwidth loop: message size %d, slots %d/%d of %d bytes: not a layout", p.Size, l.LSlots, l.RSlots, l.Stride)
	}
	if need := p.LocalOffset + l.LocalRegions(nqp)*l.LSlots*l.Stride; p.LocalOffset < 0 || p.RemoteOffset < 0 || need > bufSize {
		return fmt.Errorf("bandwidth loop: %d regions x %d slots x %d bytes from offset %d exceed the %d-byte buffer", l.LocalRegions(nqp), l.LSlots, l.Stride, p.LocalOffset, bufSize)
	}
	if !p.Rounds && (p.CQMod < 1 || p.CQMod > p.SQDepth || p.PostList < 1 || p.PostList > p.SQDepth || p.SQDepth > maxSQDepth) {
		return fmt.Errorf("need 1 <= cq-mod (%d) <= sq-depth (%d) and 1 <= post-list (%d) <= sq-depth, sq-depth <= %d", p.CQMod, p.SQDepth, p.PostList, maxSQDepth)
	}
	return p.CheckMR(nqp)
}

// Samples is every latency sample of one loop: the histogram (ns) and exact moments.
type Samples struct {
	Hist    *hdrhistogram.Histogram
	Moments result.Moments
	// Backwards counts samples whose end stamp came before their start (a clock that
	// is not monotonic across CPUs); they are in neither the histogram nor the moments.
	Backwards uint64
}

// BWResult is what a bandwidth loop measured.
type BWResult struct {
	Completed   uint64   // WRs completed, all QPs
	PerQP       []uint64 // WRs completed per QP
	PerQPLastNS []int64  // per QP: the first post to its last completion
	Events      uint64   // completion events waited for
	DurationNS  int64    // first post to last completion
	// SteadyWRs in SteadyNS: the WRs completed while every queue was kept full, from the
	// first completion to the last one before posting stopped (rb_bw_args.steady_*): the
	// link's rate without the queues' fill and drain. Several loop threads: the sum of
	// their rates, as all their steady WRs over the time that rate takes. 0, 0: no such
	// window (the run posted its queues once; the rounds loop; registrations in the loop).
	SteadyWRs uint64
	SteadyNS  int64
	Lat       Samples   // post to completion of each signalled WR; rounds: each round's time
	PerQPLat  []Samples // with BWParams.PerQP: per QP (rounds: a round's start to its completion)
	Rounds    uint64    // rounds completed (BWParams.Rounds)
	MR        *MRStats  // BWParams.MR per-io or cache: the loop's registrations; nil otherwise
	// Threads is each loop thread's part, in block order: one entry for a session of
	// one thread (and for the rounds loop and registrations in the loop).
	Threads []ThreadRun
}

// PingPongParams drives the WRITE ping-pong.
type PingPongParams struct {
	Initiator    bool
	Size         int
	First, Iters uint64 // rounds First .. First+Iters-1
	SQDepth      int
	CQMod        int
	Inline       bool
	Timeout      time.Duration // fail when the peer is silent this long in a round; 0 = never
	OneWay       bool          // samples are half of each round trip (perftest's write_lat)
	// Against perftest's write_lat: the round byte is perftest's count, and a responder
	// samples from each answer to the next message (perftest's server sends first).
	Perftest bool
}

// ReadLatParams drives the READ latency loop.
type ReadLatParams struct {
	Size    int
	Iters   uint64
	Timeout time.Duration
}

// LatResult is what a latency loop measured.
type LatResult struct {
	Done       uint64  // rounds completed
	DurationNS int64   // initiator: first post to the last answer seen
	Lat        Samples // initiator: one per round
	CPUs       []int   // the CPUs the loop was pinned to (nil: not pinned)
	RanOn      []int   // the CPUs it was on when it started and ended
}
