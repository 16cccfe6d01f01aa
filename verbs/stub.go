//go:build !linux || !cgo

package verbs

import (
	"net"

	"github.com/rdmabench/rdmabench/plan"
	"github.com/rdmabench/rdmabench/verbs/qp"
)

// Without cgo every entry point fails with ErrUnsupported; the types exist so that
// the rest of rdmabench builds (and its pure-Go tests run) with CGO_ENABLED=0.

var SysfsRoot = "/sys"

func SetClock(bool, string)                                 {}
func Clock() string                                         { return "" }
func ClockNote() string                                     { return "" }
func Devices() ([]DeviceInfo, error)                        { return nil, ErrUnsupported }
func Open(name string, port, gidIndex int) (*Device, error) { return nil, ErrUnsupported }

type Device struct {
	Info DeviceInfo
	Port PortInfo
	GID  GIDEntry
}

func (d *Device) Close() error                      { return nil }
func (d *Device) GIDFor(net.IP) (GIDEntry, string)  { return d.GID, "" }
func (d *Device) NewSession(Spec) (*Session, error) { return nil, ErrUnsupported }

type Session struct{}

func (s *Session) Local() qp.Endpoint                           { return qp.Endpoint{} }
func (s *Session) Connect(qp.Endpoint, int) error               { return ErrUnsupported }
func (s *Session) ConnectPeers([]qp.Endpoint, int) error        { return ErrUnsupported }
func (s *Session) PathMTU() int                                 { return 0 }
func (s *Session) RdAtom() int                                  { return 0 }
func (s *Session) MaxInline() int                               { return 0 }
func (s *Session) Bytes() []byte                                { return nil }
func (s *Session) Fill(seed uint32, off, n int)                 {}
func (s *Session) Check(seed uint32, off, n int) int64          { return -1 }
func (s *Session) Digest(off, n int) [32]byte                   { return [32]byte{} }
func (s *Session) Stop()                                        {}
func (s *Session) Abort()                                       {}
func (s *Session) Close() error                                 { return nil }
func (s *Session) Bandwidth(BWParams) (BWResult, error)         { return BWResult{}, ErrUnsupported }
func (s *Session) PingPong(PingPongParams) (LatResult, error)   { return LatResult{}, ErrUnsupported }
func (s *Session) ReadLatency(ReadLatParams) (LatResult, error) { return LatResult{}, ErrUnsupported }
func (s *Session) MemNode() *int                                { return nil }
func (s *Session) Threads() int                                 { return 1 }
func AllowedCPUs() ([]int, error)                               { return nil, ErrUnsupported }

// QShift is rb.h's RB_QSHIFT (the cgo build reads it from there).
const QShift = plan.QShift
