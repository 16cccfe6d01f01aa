// Package rdmaserver is rdmabench's server for Go programs: Serve runs on a real
// device what 'rdmabench server' runs, and linking the package lets a Loopback fabric
// (package rdma) serve too. Package rdma is the client library and links no server:
// a program or test that serves on a Loopback imports this package, for its side
// effect if nothing else:
//
//	import _ "github.com/rdmabench/rdmabench/rdma/rdmaserver"
package rdmaserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"time"

	"github.com/rdmabench/rdmabench/bench"
	"github.com/rdmabench/rdmabench/bench/ops"
	"github.com/rdmabench/rdmabench/verbs"
)

// Config says which device a server uses and how it admits clients.
type Config struct {
	Device   string // "" : the first device with an ACTIVE port
	Port     int    // default 1
	GIDIndex int    // -1: the GID rdmabench would pick (set it: 0 is an index)
	Token    string // the shared secret clients must prove ("" for none)
	// MaxBuffer bounds the memory one client's plan makes the server register
	// (default 1 GiB); Timeout bounds each handshake step and a client's silence
	// (default 30 s); MaxTestTime bounds how long one client holds a region or runs a
	// test (default 10 min).
	MaxBuffer   int64
	Timeout     time.Duration
	MaxTestTime time.Duration
	Log         *log.Logger // nil: discard
}

// ErrUnsupported is what Serve wraps in a build without cgo or off Linux.
var ErrUnsupported = verbs.ErrUnsupported

// Serve is the listening side: it serves rdmabench clients on l, the same server as
// 'rdmabench server' (regions for rdma.Device.Dial, and the CLI's write and read
// tests), until ctx is done. One client's test or region at a time; the others wait or
// are told to retry.
func Serve(ctx context.Context, l net.Listener, cfg Config) error {
	if cfg.Port == 0 {
		cfg.Port = 1
	}
	if cfg.MaxBuffer == 0 {
		cfg.MaxBuffer = 1 << 30
	}
	if cfg.Log == nil {
		cfg.Log = log.New(io.Discard, "", 0)
	}
	sv := &bench.Server{
		Local: bench.Local{Device: cfg.Device, Port: cfg.Port, GIDIndex: cfg.GIDIndex}, Token: cfg.Token,
		MaxBuffer: cfg.MaxBuffer, Timeout: cfg.Timeout, MaxTestTime: cfg.MaxTestTime, Log: cfg.Log,
		Ops: ops.All,
	}
	if err := sv.Open(); err != nil {
		if errors.Is(err, verbs.ErrUnsupported) {
			return fmt.Errorf("rdmaserver: %w", err)
		}
		return err
	}
	defer sv.Close()
	return sv.Serve(ctx, l)
}
