//go:build !linux || !cgo

package verbs

import (
	"time"
)

// Without cgo (or off Linux) the data path exists so that package rdma builds and its
// in-memory provider runs; every entry point on a device returns ErrUnsupported.

// MR is memory registered with a device's protection domain.
type MR struct {
	Addr uint64
	LKey uint32
	RKey uint32
}

func (d *Device) RegisterMR(size, access int) (*MR, error) {
	return nil, ErrUnsupported
}
func (m *MR) Bytes() []byte { return nil }
func (m *MR) Len() int      { return 0 }
func (m *MR) Close() error  { return nil }

// Queue is a session's post list and completion array.
type Queue struct{}

func (s *Session) NewQueue(maxPost, maxPoll int) (*Queue, error) { return nil, ErrUnsupported }
func (q *Queue) WRs() []WR                                       { return nil }
func (q *Queue) WCs() []WC                                       { return nil }
func (q *Queue) Post(qp, n int) (int, error)                     { return 0, ErrUnsupported }
func (q *Queue) Fail(qp int) error                               { return ErrUnsupported }
func (q *Queue) Poll() (int, error)                              { return 0, ErrUnsupported }
func (q *Queue) Wait(time.Duration) (int, error)                 { return 0, ErrUnsupported }
func (q *Queue) Close()                                          {}

// wcStatusText is a status's name and text; the cgo build asks libibverbs for the text.
func wcStatusText(s int) (string, string) { return wcStatusName(s), wcStatusDetail(s) }
