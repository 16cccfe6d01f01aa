//go:build !linux || !cgo

package verbs

import (
	"strconv"
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

func (d *Device) RegisterMR(size int, remoteWrite, remoteRead bool) (*MR, error) {
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

// wcStatusText is libibverbs' name and text (ibv_wc_status_str) for a status; the cgo
// build asks libibverbs.
func wcStatusText(s int) (string, string) {
	if s >= 0 && s < len(wcStatusStub) {
		return wcStatusStub[s][0], wcStatusStub[s][1]
	}
	return "status " + strconv.Itoa(s), "unknown"
}

var wcStatusStub = [...][2]string{
	{"IBV_WC_SUCCESS", "success"},
	{"IBV_WC_LOC_LEN_ERR", "local length error"},
	{"IBV_WC_LOC_QP_OP_ERR", "local QP operation error"},
	{"IBV_WC_LOC_EEC_OP_ERR", "local EE context operation error"},
	{"IBV_WC_LOC_PROT_ERR", "local protection error"},
	{"IBV_WC_WR_FLUSH_ERR", "Work Request Flushed Error"},
	{"IBV_WC_MW_BIND_ERR", "memory management operation error"},
	{"IBV_WC_BAD_RESP_ERR", "bad response error"},
	{"IBV_WC_LOC_ACCESS_ERR", "local access error"},
	{"IBV_WC_REM_INV_REQ_ERR", "remote invalid request error"},
	{"IBV_WC_REM_ACCESS_ERR", "remote access error"},
	{"IBV_WC_REM_OP_ERR", "remote operation error"},
	{"IBV_WC_RETRY_EXC_ERR", "transport retry counter exceeded"},
	{"IBV_WC_RNR_RETRY_EXC_ERR", "RNR retry counter exceeded"},
	{"IBV_WC_LOC_RDD_VIOL_ERR", "local RDD violation error"},
	{"IBV_WC_REM_INV_RD_REQ_ERR", "remote invalid RD request"},
	{"IBV_WC_REM_ABORT_ERR", "aborted error"},
	{"IBV_WC_INV_EECN_ERR", "invalid EE context number"},
	{"IBV_WC_INV_EEC_STATE_ERR", "invalid EE context state"},
	{"IBV_WC_FATAL_ERR", "fatal error"},
	{"IBV_WC_RESP_TIMEOUT_ERR", "response timeout error"},
	{"IBV_WC_GENERAL_ERR", "general error"},
	{"IBV_WC_TM_ERR", "TM error"},
	{"IBV_WC_TM_RNDV_INCOMPLETE", "TM software rendezvous"},
}
