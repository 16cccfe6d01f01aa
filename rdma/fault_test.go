package rdma

import (
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/rdmabench/rdmabench/rdma/internal/provider"
	"github.com/rdmabench/rdmabench/verbs"
)

// wprov wraps a provider to watch, and to bend, what package rdma does with it.
type wprov struct {
	provider.Provider
	onSess func(*wsess)
	open   *atomic.Int64 // sessions not closed
	early  *atomic.Bool  // the provider closed while a session was open
}

func newWprov(p provider.Provider, onSess func(*wsess)) wprov {
	return wprov{Provider: p, onSess: onSess, open: new(atomic.Int64), early: new(atomic.Bool)}
}

func (p wprov) NewSession(s verbs.Spec) (provider.Session, error) {
	in, err := p.Provider.NewSession(s)
	if err != nil {
		return nil, err
	}
	p.open.Add(1)
	w := &wsess{Session: in, open: p.open}
	if p.onSess != nil {
		p.onSess(w)
	}
	return w, nil
}

func (p wprov) Close() error {
	if p.open.Load() > 0 {
		p.early.Store(true)
	}
	return p.Provider.Close()
}

type wsess struct {
	provider.Session
	open      *atomic.Int64
	closed    atomic.Bool
	failed    atomic.Int64 // Fail calls
	onClose   func()
	partial   atomic.Int64 // the next post list of more than one WR: the QP takes this many, then ENOMEM
	failCover atomic.Bool  // a post of a zero-length WR fails
}

func (s *wsess) Close() error {
	if s.onClose != nil {
		s.onClose()
	}
	if !s.closed.Swap(true) {
		s.open.Add(-1)
	}
	return s.Session.Close()
}

func (s *wsess) Fail(qp int) error {
	s.failed.Add(1)
	return s.Session.Fail(qp)
}

func (s *wsess) Post(qp, n int) (int, error) {
	if n == 1 && s.WRs()[0].Len == 0 && s.failCover.Load() {
		return 0, &verbs.VerbError{Verb: "ibv_post_send", Err: syscall.ENOMEM}
	}
	if k := s.partial.Load(); n > 1 && k > 0 && s.partial.CompareAndSwap(k, 0) {
		got, _ := s.Session.Post(qp, int(k))
		return got, &verbs.VerbError{Verb: "ibv_post_send", Err: syscall.ENOMEM}
	}
	return s.Session.Post(qp, n)
}

// wrig is a loopback server and a device over a wrapped provider.
type wrig struct {
	lo   *Loopback
	addr string
	p    wprov
	dev  *Device
	pool *Pool
	ws   *wsess // the last session made
}

func newWrig(t *testing.T) *wrig {
	t.Helper()
	r := &wrig{lo: NewLoopback()}
	var err error
	if r.addr, err = r.lo.Listen(""); err != nil {
		t.Fatal(err)
	}
	r.p = newWprov(r.lo.f.Device("w"), func(s *wsess) { r.ws = s })
	r.dev = newDevice(r.p)
	if r.pool, err = r.dev.NewPool(8, 16); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		r.lo.f.Release()
		r.dev.Close()
		r.lo.Close()
		if v := r.lo.f.Violations(); len(v) > 0 {
			t.Errorf("verbs rules broken: %v", v)
		}
	})
	return r
}

func (r *wrig) buf(t *testing.T, fill byte) Buffer {
	t.Helper()
	b, err := r.pool.Get()
	if err != nil {
		t.Fatal(err)
	}
	for i := range b.Bytes() {
		b.Bytes()[i] = fill
	}
	return b
}

// The limits of the device are worded for the API, not for rdmabench's command line.
func TestDeviceLimitsWording(t *testing.T) {
	v := verbsProvider{&verbs.Device{Info: verbs.DeviceInfo{Name: "dev0", MaxQPWR: 64, MaxCQE: 100}}}
	for _, spec := range []verbs.Spec{{NumQP: 1, SQDepth: 128, BufSize: 1}, {NumQP: 4, SQDepth: 64, BufSize: 1}} {
		_, err := v.NewSession(spec)
		if err == nil || strings.Contains(err.Error(), "--") || !strings.Contains(err.Error(), "Config.") {
			t.Fatalf("%+v: %v", spec, err)
		}
	}
}
