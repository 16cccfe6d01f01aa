// Package provider is the seam under package rdma: what rdma needs from an RDMA
// device. Package rdma implements it over package verbs (libibverbs through cgo);
// package fake implements it in memory, for tests, examples and builds without cgo.
package provider

import (
	"time"

	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/verbs"
	"github.com/rdmabench/rdmabench/verbs/qp"
)

// Provider is an opened device and port.
type Provider interface {
	// Identity is the device as hellos name it.
	Identity() result.Device
	// Register registers size bytes (zeroed, off the Go heap for a real device) with
	// access (verbs.Spec.Access: local write, the remote access asked for, relaxed
	// ordering).
	Register(size, access int) (Memory, error)
	// NewSession creates a CQ, spec.NumQP RC QPs of spec.SQDepth sharing it, and a
	// buffer of spec.BufSize bytes with the remote access spec asks for.
	NewSession(spec verbs.Spec) (Session, error)
	Close() error
}

// Memory is registered memory.
type Memory interface {
	Addr() uint64
	LKey() uint32
	RKey() uint32
	Bytes() []byte
	Close() error
}

// Session is one connection's queues: QPs, their CQ and the session's own buffer.
type Session interface {
	// Local is what the peer needs to connect (QPNs, PSNs, GID and the buffer); Connect
	// takes the QPs to RTS against the peer's endpoint; Close destroys the QPs (no WR
	// moves memory after it returns), the CQ and the buffer.
	qp.Queues
	// Bytes is the session's buffer.
	Bytes() []byte
	// WRs is the post list: fill WRs()[:n], then Post(qp, n) posts them to QP qp as one
	// post list. A failed Post says how many of them (a prefix) the QP took.
	// A WR of length 0 names no memory (a zero-length WRITE: a signalled cover).
	WRs() []verbs.WR
	Post(qp, n int) (posted int, err error)
	// Fail moves QP qp to the error state: its outstanding WRs, signalled or not, and
	// any posted later complete with IBV_WC_WR_FLUSH_ERR, each with a completion.
	Fail(qp int) error
	// WCs is the completion array that Poll and Wait fill. Poll does not block; Wait
	// sleeps until completions arrive or timeout passes (0 completions).
	WCs() []verbs.WC
	Poll() (int, error)
	Wait(timeout time.Duration) (int, error)
}
