// Package bench runs rdmabench tests: a client that drives a whole run from one command
// line, and a server that follows the client's plan (whose rules are package plan's).
// What differs between WRITE and READ lives in bench/write and bench/read, as an Op.
package bench

import (
	"fmt"
	"time"

	"github.com/rdmabench/rdmabench/internal/text"
	"github.com/rdmabench/rdmabench/plan"
	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/verbs"
)

// Op is what one RDMA operation brings to the engine: the facts the plan's rules read
// (plan.Op: its name, payload, landings and perftest's defaults for it, with the rules
// themselves, Defaults, Validate, DefaultInline and ResolveInline), and how its sessions
// are sized and its latency test runs.
type Op struct {
	plan.Op
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
	// Requests is the responder's counter of this op's requests (rx_write_requests),
	// which the counters check against the messages completed.
	Requests string
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

// InlineUsed says whether s posts c's messages inline: the plan asks (plan.Inline) and
// the QP takes messages of that size. What the loops do and what results record.
func InlineUsed(c result.Config, s Session) bool {
	return plan.Inline(c) && s.MaxInline() >= c.MsgSizeBytes
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

// PlanRules reads a plan as a server does: its operation among ops (a region plan is
// the Go API's, by its own rules), its defaults filled in, and the operation's rules
// checked. The server's limits (--max-buffer, --max-test-time, a token) come after.
func PlanRules(ops map[string]Op, cfg result.Config) (Op, result.Config, error) {
	op, ok := ops[cfg.Op]
	_, known := plan.Ops[cfg.Op]
	switch {
	case cfg.Test == result.Region:
		op = regionOp
	case !ok && !known:
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

// Spec is the common shape of a side's session for a plan.
func Spec(c result.Config, bufSize int, remoteWrite, remoteRead bool, sqDepth int) verbs.Spec {
	s := verbs.Spec{
		NumQP: c.NumQPs, SQDepth: sqDepth, BufSize: bufSize, Offset: c.BufOffsetBytes,
		Huge: c.Hugepages, RemoteWrite: remoteWrite, RemoteRead: remoteRead, QPTimeout: c.QPTimeout,
		PostAPI: c.PostAPI, Threads: c.Threads, MsgSize: c.MsgSizeBytes,
		RelaxedOrdering: c.PCIeRelaxedOrdering, SL: c.SL, TrafficClass: c.TrafficClass,
	}
	if plan.Inline(c) {
		s.InlineSize = c.InlineBytes
	}
	return s
}
