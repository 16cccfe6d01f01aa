package verbs

// The data path of package rdma: WR and WC are the Go twins of rb_post.h's rb_pwr and
// rb_pwc. A Queue (post.go) keeps arrays of them in C memory; Go fills and reads them
// through slices over that memory, and one cgo call posts or polls a whole array.

// WR is one RDMA WRITE or READ work request: LAddr/LKey/Len name the local memory,
// RAddr/RKey the remote memory.
type WR struct {
	WRID   uint64
	LAddr  uint64
	RAddr  uint64
	Len    uint32
	LKey   uint32
	RKey   uint32
	Opcode uint8 // WRWrite or WRRead
	Flags  uint8 // WRSignaled
	_      [2]byte
}

// WR opcodes and flags (rb_post.h's RB_PWR_*).
const (
	WRWrite    = 0
	WRRead     = 1
	WRSignaled = 1
)

// WC is one work completion.
type WC struct {
	WRID      uint64
	Status    uint32 // ibv_wc_status: WCSuccess, ...
	Opcode    uint32 // ibv_wc_opcode; undefined when Status is an error
	VendorErr uint32
	QPNum     uint32
	ByteLen   uint32
	_         uint32
}

// Work completion statuses and opcodes (enum ibv_wc_status and ibv_wc_opcode; post.go
// checks them against libibverbs' values at compile time).
const (
	WCSuccess      = 0
	WCLocLenErr    = 1
	WCLocProtErr   = 4
	WCWRFlushErr   = 5
	WCRemAccessErr = 10
	WCRemOpErr     = 11
	WCRetryExcErr  = 12

	WCOpRDMAWrite = 1
	WCOpRDMARead  = 2
)

// Err is the completion as an error (nil when it succeeded). opcode names the WR as the
// caller posted it: a failed completion's own opcode field is undefined.
func (wc *WC) Err(opcode string) error {
	if wc.Status == WCSuccess {
		return nil
	}
	name, detail := wcStatusText(int(wc.Status))
	return &CompletionError{Status: name, Detail: detail, Opcode: opcode, WRID: wc.WRID, VendorErr: wc.VendorErr, QPNum: wc.QPNum}
}
