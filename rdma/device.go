package rdma

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rdmabench/rdmabench/rdma/internal/provider"
	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/verbs"
)

var (
	// ErrClosed resolves the ops still in flight when their connection closes, and
	// every op posted after.
	ErrClosed = errors.New("rdma: the connection is closed: the operation was not known to complete")
	// ErrUnsupported is what Open wraps in a build without cgo or off Linux.
	ErrUnsupported = verbs.ErrUnsupported
	// ErrRange is an op outside the remote region or a buffer that cannot be posted.
	ErrRange = errors.New("rdma: out of range")
	// ErrDeviceClosed is what Dial and NewPool wrap on a closed device.
	ErrDeviceClosed = errors.New("rdma: the device is closed")
)

// DeviceInfo describes an RDMA device and the port in use: Name (e.g. "mlx5_0"),
// Driver, Model (the NIC as its users know it, e.g. "Soft-RoCE (rxe)"), VendorID,
// VendorPartID, FirmwareVer and NodeGUID; Port, LinkLayer ("InfiniBand" or "Ethernet"),
// RateGbps and ActiveMTU (bytes); the GID in use, GIDIndex and GIDType ("IB",
// "RoCE v1" or "RoCE v2"); and Host, the name of the machine it is in. It is the
// same type as rdmabench's device records (package result), whose JSON it marshals to.
type DeviceInfo = result.Device

// Device is an opened RDMA device and port: it registers memory (Pool) and dials
// servers (Dial). Pools and connections of one device share its protection domain,
// so any of its buffers can go to any of its connections.
type Device struct {
	p provider.Provider

	// life is held for reading by a Dial from its session until the connection is
	// tracked, and by NewPool until the pool is; Close holds it to set closed. So
	// Close never meets a connection or pool half made, nor one made after it.
	life   sync.RWMutex
	mu     sync.Mutex // pools, conns
	closed bool       // written under both life and mu
	pools  map[*Pool]struct{}
	conns  map[*Conn]struct{}
	// noRelaxed: DisablePCIeRelaxed was called.
	noRelaxed atomic.Bool
}

// Open opens the named device (or, with name "", the first one whose port is ACTIVE)
// and its port, with GID index gidIndex (-1: the one perftest would pick: on RoCE an
// IPv4-mapped RoCE v2 GID when there is one, on InfiniBand the first).
func Open(name string, port, gidIndex int) (*Device, error) {
	d, err := verbs.Open(name, port, gidIndex)
	if err != nil {
		if errors.Is(err, verbs.ErrUnsupported) {
			return nil, fmt.Errorf("rdma: %w", err)
		}
		return nil, err
	}
	return newDevice(verbsProvider{d}), nil
}

func newDevice(p provider.Provider) *Device {
	return &Device{p: p, pools: map[*Pool]struct{}{}, conns: map[*Conn]struct{}{}}
}

// Identity describes the device and its port: what a server it dials is told about
// this client (Conn.Server is the server's).
func (d *Device) Identity() DeviceInfo { return d.p.Identity() }

// DisablePCIeRelaxed turns PCIe relaxed ordering off for the memory registered from
// now on: the pools made after it, and the regions of the servers dialled after it,
// as rdmabench's --disable-pcie-relaxed does on both sides of a test. By default both
// are registered with IBV_ACCESS_RELAXED_ORDERING, as perftest and rdmabench's
// bandwidth tests register theirs: the NIC's PCIe writes into the memory may pass each
// other (an op still resolves only at its completion, which PCIe orders after its
// data), which some hosts need for line rate. A device without it ignores it.
func (d *Device) DisablePCIeRelaxed() { d.noRelaxed.Store(true) }

// relaxed says whether memory registered now gets PCIe relaxed ordering.
func (d *Device) relaxed() bool { return !d.noRelaxed.Load() }

// Close closes the device's connections (as Conn.Close does), then its pools, buffers
// out or not (their memory becomes invalid), then the device. It waits for the Dials
// in progress to finish or fail; later Dials and NewPools fail with ErrDeviceClosed.
func (d *Device) Close() error {
	d.life.Lock()
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		d.life.Unlock()
		return nil
	}
	d.closed = true
	conns, pools := d.conns, d.pools
	d.conns, d.pools = nil, nil
	d.mu.Unlock()
	d.life.Unlock()
	var errs []error
	for c := range conns {
		errs = append(errs, c.Close())
	}
	for p := range pools {
		errs = append(errs, p.close(true))
	}
	return errors.Join(append(errs, d.p.Close())...)
}

func (d *Device) isClosed() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.closed
}

func (d *Device) forget(c *Conn, p *Pool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.conns, c)
	delete(d.pools, p)
}

// verbsProvider is the provider over libibverbs (package verbs).
type verbsProvider struct{ d *verbs.Device }

func (v verbsProvider) Identity() result.Device { return v.d.Identity() }

// GIDFor is the GID of a control connection's local address (verbs.GIDChooser).
func (v verbsProvider) GIDFor(local net.IP) (verbs.GIDEntry, string) { return v.d.GIDFor(local) }

func (v verbsProvider) Register(size, access int) (provider.Memory, error) {
	m, err := v.d.RegisterMR(size, access)
	if err != nil {
		return nil, err
	}
	return verbsMemory{m}, nil
}

// pollBatch is how many completions one poll takes.
const pollBatch = 64

func (v verbsProvider) NewSession(spec verbs.Spec) (provider.Session, error) {
	// Package verbs words these limits for rdmabench's command line.
	info := v.d.Info
	if spec.SQDepth > info.MaxQPWR {
		return nil, fmt.Errorf("a send queue depth of %d is above %s's max_qp_wr %d: lower Config.SQDepth", spec.SQDepth, info.Name, info.MaxQPWR)
	}
	if cqe := spec.SQDepth*spec.NumQP + 1; cqe > info.MaxCQE {
		return nil, fmt.Errorf("%d QPs with a send queue depth of %d need a %d-entry completion queue, above %s's max_cqe %d: lower Config.QPs or Config.SQDepth", spec.NumQP, spec.SQDepth, cqe, info.Name, info.MaxCQE)
	}
	spec.Events = true // the poller sleeps on the completion channel
	s, err := v.d.NewSession(spec)
	if err != nil {
		return nil, err
	}
	q, err := s.NewQueue(spec.SQDepth, pollBatch)
	if err != nil {
		s.Close()
		return nil, err
	}
	return &verbsSession{Session: s, q: q}, nil
}

func (v verbsProvider) Close() error { return v.d.Close() }

type verbsMemory struct{ m *verbs.MR }

func (m verbsMemory) Addr() uint64  { return m.m.Addr }
func (m verbsMemory) LKey() uint32  { return m.m.LKey }
func (m verbsMemory) RKey() uint32  { return m.m.RKey }
func (m verbsMemory) Bytes() []byte { return m.m.Bytes() }
func (m verbsMemory) Close() error  { return m.m.Close() }

type verbsSession struct {
	*verbs.Session
	q *verbs.Queue
}

func (s *verbsSession) WRs() []verbs.WR             { return s.q.WRs() }
func (s *verbsSession) WCs() []verbs.WC             { return s.q.WCs() }
func (s *verbsSession) Post(qp, n int) (int, error) { return s.q.Post(qp, n) }
func (s *verbsSession) Poll() (int, error)          { return s.q.Poll() }
func (s *verbsSession) Fail(qp int) error           { return s.q.Fail(qp) }
func (s *verbsSession) Wait(d time.Duration) (int, error) {
	return s.q.Wait(d)
}

func (s *verbsSession) Close() error {
	s.q.Close()
	return s.Session.Close()
}
