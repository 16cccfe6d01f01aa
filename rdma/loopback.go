package rdma

import (
	"errors"
	"fmt"
	"net"
	"sync"

	"github.com/rdmabench/rdmabench/rdma/internal/fake"
	"github.com/rdmabench/rdmabench/rdma/internal/loophook"
)

// Loopback is an in-memory RDMA fabric, for tests and examples: its devices register Go
// memory, WRITE and READ are copies between them, and its servers are rdmabench's
// own server code (the region protocol, tokens, beats) over that fabric. It needs no
// RDMA device and no cgo. Completions keep the verbs' rules: in order per QP, bounded
// send queues, errors that move a QP to the error state.
//
// Its servers are package rdmaserver's, which this package does not link: a program
// or test that calls Listen or Serve imports it,
//
//	import _ "github.com/rdmabench/rdmabench/rdma/rdmaserver"
type Loopback struct {
	f *fake.Fabric

	mu    sync.Mutex
	n     int
	stops []func() error
}

// NewLoopback returns an empty fabric.
func NewLoopback() *Loopback { return &Loopback{f: fake.New()} }

// Device opens a new device on the fabric.
func (l *Loopback) Device() *Device { return newDevice(l.f.Device(l.name())) }

func (l *Loopback) name() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n++
	return fmt.Sprintf("loop%d", l.n-1)
}

// ErrNoServer is what Listen and Serve return when package rdmaserver is not linked.
var ErrNoServer = errors.New(`rdma: a Loopback serves with rdmabench's server, which this program does not link: import _ "github.com/rdmabench/rdmabench/rdma/rdmaserver"`)

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
	if loophook.Serve == nil {
		return ErrNoServer
	}
	stop, err := loophook.Serve(l.f.Device(l.name()), ln, token)
	if err != nil {
		return err
	}
	l.mu.Lock()
	l.stops = append(l.stops, stop)
	l.mu.Unlock()
	return nil
}

// Close stops the fabric's servers and waits for them.
func (l *Loopback) Close() error {
	l.mu.Lock()
	stops := l.stops
	l.stops = nil
	l.mu.Unlock()
	var errs []error
	for _, stop := range stops {
		errs = append(errs, stop())
	}
	return errors.Join(errs...)
}
