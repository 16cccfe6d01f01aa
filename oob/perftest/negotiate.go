package perftest

import (
	"encoding/binary"
	"fmt"
)

// Negotiate is the parameter negotiation perftest 6.28 and later exchange after the
// MTU, when both peers announce 6.28 or more (perftest_parameters_negotiate): the test
// as each side was started, which 6.28 compares field by field and refuses on any
// difference. rdmabench announces 6.06, so no peer sends it one; it is decoded to name
// a mismatch in fixtures and tools. The layout is x86-64's (4-byte ints, 8-byte
// aligned 64-bit fields), ints and sizes big-endian, the device attributes in the
// sender's byte order.
type Negotiate struct {
	TestMethod     int32 // 0 regular, 1 all sizes (-a), 2 infinitely
	ConnectionType int32 // 0 RC, 1 UC, 2 UD, 3 RawEth, 4 XRC, 5 DC, 6 SRD
	Verb           int32 // 0 SEND, 1 SEND_IMM, 2 WRITE, 3 WRITE_IMM, 4 READ, 5 ATOMIC
	Test           int32 // 0 LAT, 1 BW, 2 LAT_BY_BW, 3 FS_RATE
	AtomicType     int32
	TestType       int32 // 0 iterations, 1 duration
	ReportFmt      int32 // 0 Gb/s, 1 MB/s
	Size, Iters    uint64
	AESXTS         int32
	NumQPs         int32
	Duration       int32
	UseRDMACM      int32
	WriteWithImm   int32
	NoEnhReorder   int32
	SigOffload     int32
	DataValidation int32
	DeviceAttr     [DeviceAttrSize]byte // struct ibv_device_attr, host order
	// MLX5DVMask is sent only by a perftest built with mlx5dv (HasMLX5DV).
	MLX5DVMask uint64
	HasMLX5DV  bool
}

// Negotiation struct sizes: without and with perftest's mlx5dv field (a build option:
// two peers must agree on it, or their exchange desynchronises).
const (
	DeviceAttrSize   = 232
	NegotiateSize    = 312
	NegotiateSizeDV  = 320
	negotiateAttrOff = 80
)

var negotiateInts = []int{0, 4, 8, 12, 16, 20, 24, 48, 52, 56, 60, 64, 68, 72, 76}

func (n *Negotiate) ints() []*int32 {
	return []*int32{&n.TestMethod, &n.ConnectionType, &n.Verb, &n.Test, &n.AtomicType, &n.TestType, &n.ReportFmt,
		&n.AESXTS, &n.NumQPs, &n.Duration, &n.UseRDMACM, &n.WriteWithImm, &n.NoEnhReorder, &n.SigOffload, &n.DataValidation}
}

// Encode is the struct as perftest sends it.
func (n Negotiate) Encode() []byte {
	size := NegotiateSize
	if n.HasMLX5DV {
		size = NegotiateSizeDV
	}
	b := make([]byte, size)
	for i, p := range n.ints() {
		binary.BigEndian.PutUint32(b[negotiateInts[i]:], uint32(*p))
	}
	binary.BigEndian.PutUint64(b[32:], n.Size)
	binary.BigEndian.PutUint64(b[40:], n.Iters)
	copy(b[negotiateAttrOff:], n.DeviceAttr[:])
	if n.HasMLX5DV {
		binary.BigEndian.PutUint64(b[NegotiateSize:], n.MLX5DVMask)
	}
	return b
}

// ParseNegotiate reads the struct, of either size.
func ParseNegotiate(b []byte) (Negotiate, error) {
	var n Negotiate
	switch len(b) {
	case NegotiateSize:
	case NegotiateSizeDV:
		n.HasMLX5DV = true
		n.MLX5DVMask = binary.BigEndian.Uint64(b[NegotiateSize:])
	default:
		return n, fmt.Errorf("negotiation struct of %d bytes, want %d or %d", len(b), NegotiateSize, NegotiateSizeDV)
	}
	for i, p := range n.ints() {
		*p = int32(binary.BigEndian.Uint32(b[negotiateInts[i]:]))
	}
	n.Size = binary.BigEndian.Uint64(b[32:])
	n.Iters = binary.BigEndian.Uint64(b[40:])
	copy(n.DeviceAttr[:], b[negotiateAttrOff:])
	return n, nil
}

// VendorID and PartID are the device attributes' vendor_id and vendor_part_id (the
// sender's byte order; little-endian on x86-64).
func (n Negotiate) VendorID() uint32 { return binary.LittleEndian.Uint32(n.DeviceAttr[96:]) }
func (n Negotiate) PartID() uint32   { return binary.LittleEndian.Uint32(n.DeviceAttr[100:]) }

// Mismatch names the first field on which two sides' structs differ, as 6.28 refuses
// them ("" when they agree on the test).
func Mismatch(a, b Negotiate) string {
	names := []string{"test_method", "connection_type", "verb", "tst", "atomicType", "test_type", "report_fmt",
		"aes_xts", "num_of_qps", "duration", "use_rdma_cm", "use_write_with_imm", "no_enhanced_reorder", "sig_offload", "data_validation"}
	ai, bi := a.ints(), b.ints()
	for i := range ai {
		if i == 7 {
			switch {
			case a.Size != b.Size:
				return fmt.Sprintf("size (%d against %d)", a.Size, b.Size)
			case a.Iters != b.Iters:
				return fmt.Sprintf("iters (%d against %d)", a.Iters, b.Iters)
			}
		}
		if *ai[i] != *bi[i] {
			return fmt.Sprintf("%s (%d against %d)", names[i], *ai[i], *bi[i])
		}
	}
	return ""
}
