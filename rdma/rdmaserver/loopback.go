package rdmaserver

import (
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"log"
	"net"
	"time"

	"github.com/rdmabench/rdmabench/bench"
	"github.com/rdmabench/rdmabench/counters"
	"github.com/rdmabench/rdmabench/rdma/internal/fake"
	"github.com/rdmabench/rdmabench/rdma/internal/loophook"
	"github.com/rdmabench/rdmabench/rdma/internal/provider"
	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/verbs"
	"github.com/rdmabench/rdmabench/verbs/qp"
)

func init() { loophook.Serve = serveLoopback }

// serveLoopback runs rdmabench's server on a Loopback fabric's device: regions only,
// as 'rdmabench server' holds them, one at a time.
func serveLoopback(dev *fake.Device, ln net.Listener, token string) (stop func() error, err error) {
	sv := &bench.Server{
		Engine: loopEngine{dev}, Token: token, MaxBuffer: 1<<31 + 1<<20,
		Timeout: 5 * time.Second, Log: log.New(io.Discard, "", 0),
	}
	if err := sv.Open(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sv.Serve(ctx, ln) }()
	return func() error {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, net.ErrClosed) {
			return err
		}
		return nil
	}, nil
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
	return s.Session.Connect(rs[0], mtu)
}
func (loopSession) PathMTU() int                        { return 4096 }
func (loopSession) MemNode() *int                       { return nil }
func (loopSession) RdAtom() int                         { return 16 }
func (loopSession) MaxInline() int                      { return 0 }
func (loopSession) Fill(seed uint32, off, n int)        {}
func (loopSession) Check(seed uint32, off, n int) int64 { return -1 }
func (loopSession) Stop()                               {}
func (loopSession) Abort()                              {}
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

// Counters: the loopback fabric has no NIC, so no counters.
func (loopEngine) Counters() (counters.Snapshot, error) {
	return counters.Snapshot{}, errors.New("the loopback fabric has no NIC counters")
}
