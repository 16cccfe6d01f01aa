package rdma

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"sync"
	"time"

	"github.com/rdmabench/rdmabench/bench"
	"github.com/rdmabench/rdmabench/rdma/internal/fake"
	"github.com/rdmabench/rdmabench/rdma/internal/provider"
	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/verbs"
	"github.com/rdmabench/rdmabench/verbs/qp"
)

// Loopback is an in-memory RDMA fabric, for tests and examples: its devices register Go
// memory, WRITE and READ are copies between them, and its servers are rdmabench's
// own server code (the region protocol, tokens, beats) over that fabric. It needs no
// RDMA device and no cgo. Completions keep the verbs' rules: in order per QP, bounded
// send queues, errors that move a QP to the error state.
type Loopback struct {
	f *fake.Fabric

	mu      sync.Mutex
	n       int
	cancels []context.CancelFunc
	served  []chan error
}

// NewLoopback returns an empty fabric.
func NewLoopback() *Loopback { return &Loopback{f: fake.New()} }

// Device opens a new device on the fabric.
func (l *Loopback) Device() *Device {
	l.mu.Lock()
	name := fmt.Sprintf("loop%d", l.n)
	l.n++
	l.mu.Unlock()
	return newDevice(l.f.Device(name))
}

// Listen starts an rdmabench server on the fabric, listening on a free TCP port of
// 127.0.0.1, and returns its address. token is the server's shared secret ("" for
// none). The server holds one region at a time, as 'rdmabench server' does.
func (l *Loopback) Listen(token string) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	if err := l.Serve(ln, token); err != nil {
		ln.Close()
		return "", err
	}
	return ln.Addr().String(), nil
}

// Serve runs an rdmabench server on the fabric that accepts clients on ln, until Close.
func (l *Loopback) Serve(ln net.Listener, token string) error {
	l.mu.Lock()
	name := fmt.Sprintf("loop%d", l.n)
	l.n++
	l.mu.Unlock()
	sv := &bench.Server{
		Engine: loopEngine{l.f.Device(name)}, Token: token, MaxBuffer: 1<<31 + 1<<20,
		Timeout: 5 * time.Second, Log: log.New(io.Discard, "", 0),
	}
	if err := sv.Open(); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sv.Serve(ctx, ln) }()
	l.mu.Lock()
	l.cancels = append(l.cancels, cancel)
	l.served = append(l.served, done)
	l.mu.Unlock()
	return nil
}

// Close stops the fabric's servers and waits for them.
func (l *Loopback) Close() error {
	l.mu.Lock()
	cancels, served := l.cancels, l.served
	l.cancels, l.served = nil, nil
	l.mu.Unlock()
	for _, c := range cancels {
		c()
	}
	var errs []error
	for _, s := range served {
		if err := <-s; err != nil && !errors.Is(err, net.ErrClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// loopEngine serves rdmabench's server (package bench) from a fake device: regions
// only, since the timed loops are verbs' C code.
type loopEngine struct{ d *fake.Device }

func (e loopEngine) Open(bench.Local) (bench.Device, error) { return e, nil }
func (e loopEngine) Identity() result.Device                { return e.d.Identity() }
func (loopEngine) Clock() (string, string)                  { return "none", "" }
func (e loopEngine) Close() error                           { return nil }

func (e loopEngine) NewSession(spec verbs.Spec) (bench.Session, error) {
	s, err := e.d.NewSession(spec)
	if err != nil {
		return nil, err
	}
	return loopSession{s}, nil
}

type loopSession struct{ provider.Session }

var errLoopback = errors.New("the loopback fabric serves region plans only")

func (s loopSession) ConnectPeers(rs []qp.Endpoint, mtu int) error {
	if len(rs) != 1 {
		return errLoopback
	}
	return s.Session.Connect(rs[0])
}
func (loopSession) PathMTU() int                        { return 4096 }
func (loopSession) RdAtom() int                         { return 16 }
func (loopSession) MaxInline() int                      { return 0 }
func (loopSession) Fill(seed uint32, off, n int)        {}
func (loopSession) Check(seed uint32, off, n int) int64 { return -1 }
func (loopSession) Stop()                               {}
func (s loopSession) Digest(off, n int) [32]byte        { return sha256.Sum256(s.Bytes()[off : off+n]) }
func (loopSession) Bandwidth(verbs.BWParams) (verbs.BWResult, error) {
	return verbs.BWResult{}, errLoopback
}
func (loopSession) PingPong(verbs.PingPongParams) (verbs.LatResult, error) {
	return verbs.LatResult{}, errLoopback
}
func (loopSession) ReadLatency(verbs.ReadLatParams) (verbs.LatResult, error) {
	return verbs.LatResult{}, errLoopback
}
