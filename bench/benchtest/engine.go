// Package benchtest is an RDMA engine for tests, as httptest is a server for them:
// sessions whose QPs "connect" through an in-process fabric and whose loops move real
// bytes between Go buffers, so that the client, the server and the protocol between
// them (bench) run without a NIC or cgo.
//
// Nothing it returns is a measurement: every duration and latency is synthetic (a
// fixed cost per WR), and results carry the clock "fake".
package benchtest

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rdmabench/rdmabench/bench"
)

var (
	_ bench.Engine  = (*Engine)(nil)
	_ bench.Device  = (*Device)(nil)
	_ bench.Session = (*Session)(nil)
)

// Fabric joins engines: a session connects to the session that owns the remote QPs.
type Fabric struct {
	mu   sync.Mutex
	qps  map[uint32]*Session
	next uint32
}

// NewFabric returns an empty fabric.
func NewFabric() *Fabric { return &Fabric{qps: map[uint32]*Session{}, next: 0x100} }

// Engine is one side's device provider. Its fields inject faults; set them before use
// (or between tests: they are read when a call starts).
type Engine struct {
	Fabric *Fabric
	Name   string        // the device name (default "fake0")
	Cost   time.Duration // synthetic time per WR (default 1 µs)

	FailOpen    error // Open returns it
	FailSession error // NewSession returns it
	FailConnect error // Connect returns it
	// FailLoop makes every loop fail after half its work with this error (for example
	// a *verbs.CompletionError).
	FailLoop error
	// Stall makes every loop wait, as for a peer that stopped answering, until Stop or
	// the loop's timeout (then a *verbs.TimeoutError). It may change while loops run.
	Stall atomic.Bool
	// Corrupt flips a byte of the last message each bandwidth loop delivers.
	Corrupt atomic.Bool
	// Retries is added to the device's retry_exceeded_err counter by every loop (an
	// error counter in the rxe profile); Lose drops that many of every loop's packets
	// on their way to the peer (its rcvd_pkts falls short of this side's sent_pkts).
	Retries, Lose atomic.Uint64
	// NoCounters makes Counters fail, as on a device without sysfs counters.
	NoCounters atomic.Bool

	sent, rcvd, retries atomic.Uint64 // the device's counters

	mu       sync.Mutex
	sessions []*Session
}

// Open returns a device; l.Device "" or the engine's name opens it.
func (e *Engine) Open(l bench.Local) (bench.Device, error) {
	if e.FailOpen != nil {
		return nil, e.FailOpen
	}
	if l.Device != "" && l.Device != e.name() {
		return nil, fmt.Errorf("RDMA device %q not found; available: %s", l.Device, e.name())
	}
	port := l.Port
	if port == 0 {
		port = 1
	}
	return &Device{e: e, port: port}, nil
}

func (e *Engine) name() string {
	if e.Name == "" {
		return "fake0"
	}
	return e.Name
}

// Sessions returns the sessions created so far (open or closed).
func (e *Engine) Sessions() []*Session {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]*Session(nil), e.sessions...)
}
