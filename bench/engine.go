package bench

import (
	"net"

	"github.com/rdmabench/rdmabench/counters"
	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/verbs"
	"github.com/rdmabench/rdmabench/verbs/qp"
)

// Engine opens RDMA devices for the client and the server. Verbs, the cgo layer over
// libibverbs, is the one rdmabench runs on; tests use a fake (bench/benchtest), so that the
// whole protocol and both state machines run without a NIC.
type Engine interface {
	Open(l Local) (Device, error)
}

// Device is an opened device, bound to one port and GID.
type Device interface {
	// Identity is what a hello and a result say about the device and its host.
	Identity() result.Device
	// Clock names the timed loops' tick source and why it was chosen.
	Clock() (name, note string)
	// Counters reads the port's counters (package counters, from sysfs).
	Counters() (counters.Snapshot, error)
	NewSession(verbs.Spec) (Session, error)
	Close() error
}

// Session is one test's resources on one side: QPs, a CQ and a registered buffer.
type Session interface {
	// The lifecycle every side's queues share with package rdma's: Local, Connect
	// (to one endpoint that offers as many QPs), Close.
	qp.Queues
	// ConnectPeers connects the QPs to one endpoint that offers as many, or QP i to
	// endpoint i (one QP each: a client of several servers).
	ConnectPeers(remotes []qp.Endpoint, mtu int) error
	PathMTU() int
	RdAtom() int
	MaxInline() int
	// Fill writes a verification pattern; Check returns the offset of the first byte
	// that differs from it, or -1.
	Fill(seed uint32, off, n int)
	Check(seed uint32, off, n int) int64
	// Digest is the SHA-256 of the buffer's n bytes from off.
	Digest(off, n int) [32]byte
	// MemNode is the NUMA node the buffer was bound to (Spec.MemNode), nil if none.
	MemNode() *int
	// The timed loops, each one cgo call.
	Bandwidth(verbs.BWParams) (verbs.BWResult, error)
	PingPong(verbs.PingPongParams) (verbs.LatResult, error)
	ReadLatency(verbs.ReadLatParams) (verbs.LatResult, error)
	// Stop makes the loop in progress return soon, once what it has in flight has
	// completed; Abort makes it return at once, flushing what is in flight, for a peer
	// that is gone. Both are safe from any goroutine.
	Stop()
	Abort()
}

// Verbs is the engine over libibverbs (without cgo, Open returns verbs.ErrUnsupported).
var Verbs Engine = verbsEngine{}

type verbsEngine struct{}

func (verbsEngine) Open(l Local) (Device, error) {
	d, err := verbs.Open(l.Device, l.Port, l.GIDIndex)
	if err != nil {
		return nil, err
	}
	return verbsDevice{d}, nil
}

type verbsDevice struct{ d *verbs.Device }

func (v verbsDevice) Identity() result.Device { return v.d.Identity() }

func (verbsDevice) Clock() (string, string) { return verbs.Clock(), verbs.ClockNote() }

func (v verbsDevice) Counters() (counters.Snapshot, error) {
	return counters.Take("/", v.d.Info.Name, v.d.Port.Port)
}

func (v verbsDevice) NewSession(s verbs.Spec) (Session, error) {
	sess, err := v.d.NewSession(s)
	if err != nil {
		return nil, err
	}
	return sess, nil
}

func (v verbsDevice) Close() error { return v.d.Close() }

// GIDFor is the GID of a control connection's local address (GIDChooser).
func (v verbsDevice) GIDFor(local net.IP) (verbs.GIDEntry, string) { return v.d.GIDFor(local) }
