// Package perftest speaks perftest's out-of-band exchange: the TCP conversation with
// which ib_write_bw, ib_read_bw, ib_write_lat and ib_read_lat set up their QPs and
// report, as src/perftest_communication.c of perftest 6.06 (Debian 12's perftest
// 4.5-0.17) writes it. It is plain Go, like package oob: the messages and their order,
// not the tests.
//
// The conversation, after the TCP connection (the client writes each exchange first,
// the server reads first):
//
//	version     16 bytes: "6.06" and NULs
//	sys data    4 bytes each: cycle buffer, then cache line size (big-endian int32)
//	MTU         2 bytes: the active MTU's enum value as text, NUL ("5\0" is 4096)
//	            (6.28+: the parameter negotiation, NegotiateSize bytes, only between
//	            two peers that both announce 6.28 or later)
//	keys        per QP: a key message (LID form 59 bytes, GID form 108), twice
//	            (before and after the QPs are connected), then once more as a barrier
//	run         bandwidth: nothing; latency: nothing
//	end         a barrier (key message), the bandwidth report (client to server),
//	            a barrier and "done\0"
//
// Every read is exact: a short or malformed message is an error naming what arrived.
package perftest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"

	"github.com/rdmabench/rdmabench/internal/text"
)

// DefaultPort is perftest's TCP port.
const DefaultPort = 18515

// Version is the perftest version rdmabench announces: the exchange it speaks. Peers
// from 5.70 (the oldest 6.06 accepts) to 6.29 accept it; announcing it, rdmabench never
// triggers 6.28's parameter negotiation.
const Version = "6.06"

// Message sizes.
const (
	VersionSize   = 16
	KeySize       = 59  // the LID form (InfiniBand without -x)
	KeySizeGID    = 108 // the GID form (RoCE, or InfiniBand with -x)
	KeySizeDV     = 76  // 6.2x with --data_validation: not spoken
	KeySizeGIDDV  = 125 // 6.2x with --data_validation: not spoken
	mtuSize       = 2   // peers from 5.31
	doneMsg       = "done\x00"
	minPeer       = 5.70 // the oldest peer 6.06 talks to
	negotiateFrom = 6.28
)

// Dest is a key message: one QP's address and its buffer, as perftest's pingpong_dest.
type Dest struct {
	LID      uint16
	OutReads int    // the READs this side takes outstanding (perftest's -o)
	QPN      uint32 // 24 bits
	PSN      uint32 // 24 bits
	RKey     uint32
	VAddr    uint64
	GID      [16]byte
	SRQN     uint32
}

// Marshal is the key message: the GID form when gid, else the LID form. Both are
// NUL-terminated text, as perftest's sprintf leaves them.
func (d Dest) Marshal(gid bool) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "%04x:%04x:%06x:%06x:%08x:%016x", d.LID, d.OutReads, d.QPN, d.PSN, d.RKey, d.VAddr)
	if !gid {
		fmt.Fprintf(&b, ":%08x", d.SRQN)
		return pad(b.String(), KeySize)
	}
	for _, x := range d.GID {
		fmt.Fprintf(&b, ":%02x", x)
	}
	fmt.Fprintf(&b, ":%08x:", d.SRQN)
	return pad(b.String(), KeySizeGID)
}

// pad is s NUL-terminated in a message of n bytes (s fits: the fields are fixed width
// for values in range).
func pad(s string, n int) []byte {
	out := make([]byte, n)
	copy(out, s)
	return out
}

// ParseDest reads a key message of the form gid says. Fields are hexadecimal, as
// perftest writes them; a field out of its range, a missing field or trailing bytes
// are errors.
func ParseDest(msg []byte, gid bool) (Dest, error) {
	want := KeySize
	if gid {
		want = KeySizeGID
	}
	if len(msg) != want {
		return Dest{}, fmt.Errorf("key message of %d bytes, want %d", len(msg), want)
	}
	s, _, ok := bytes.Cut(msg, []byte{0})
	if !ok {
		return Dest{}, fmt.Errorf("key message %q is not NUL-terminated", text.Clean(string(msg), 40))
	}
	fields := strings.Split(string(s), ":")
	n := 7
	if gid {
		n = 24 // six fields, 16 GID bytes, the SRQN and the empty field after its colon
	}
	if len(fields) != n || (gid && fields[n-1] != "") {
		return Dest{}, fmt.Errorf("key message %q: %d fields, want %d (a %s form): is the peer perftest, and do both sides use -x the same way?", text.Clean(string(s), 120), len(fields), n, map[bool]string{true: "GID", false: "LID"}[gid])
	}
	var d Dest
	var err error
	field := func(i, bits int) uint64 {
		if err != nil {
			return 0
		}
		var v uint64
		v, err = strconv.ParseUint(fields[i], 16, bits)
		if err != nil {
			err = fmt.Errorf("key message field %d %q: not a %d-bit hexadecimal number", i+1, text.Clean(fields[i], 20), bits)
		}
		return v
	}
	d.LID = uint16(field(0, 16))
	d.OutReads = int(field(1, 16))
	d.QPN = uint32(field(2, 24))
	d.PSN = uint32(field(3, 24))
	d.RKey = uint32(field(4, 32))
	d.VAddr = field(5, 64)
	if gid {
		for i := range d.GID {
			d.GID[i] = byte(field(6+i, 8))
		}
		d.SRQN = uint32(field(22, 32))
	} else {
		d.SRQN = uint32(field(6, 32))
	}
	return d, err
}

// IP is the GID as an address (RoCE v2's IPv4-mapped form, or IPv6).
func (d Dest) IP() net.IP { return net.IP(d.GID[:]) }

// V4Mapped says whether the GID is IPv4-mapped (perftest's ipv6_addr_v4mapped): both
// sides' must agree, or perftest stops with "Found Incompatibility issue with GID
// types".
func (d Dest) V4Mapped() bool {
	g := d.GID
	mapped := bytes.Equal(g[:10], make([]byte, 10)) && g[10] == 0xff && g[11] == 0xff
	mcast := g[0] == 0xff && g[1] == 0x0e && bytes.Equal(g[2:10], make([]byte, 8)) && g[10] == 0xff && g[11] == 0xff
	return mapped || mcast
}

// EncodeVersion is the 16-byte version message.
func EncodeVersion(v string) []byte { return pad(v, VersionSize) }

// ParseVersion reads a peer's version message: the text up to its first NUL, which
// must be a version number (perftest compares them with atof). It returns the text and
// its value.
func ParseVersion(msg []byte) (string, float64, error) {
	if len(msg) != VersionSize {
		return "", 0, fmt.Errorf("version message of %d bytes, want %d", len(msg), VersionSize)
	}
	s, _, _ := bytes.Cut(msg, []byte{0})
	// perftest reads it with atof: the number at its start counts ("6.10.1" is 6.10).
	num := s
	for i, dots := 0, 0; i < len(s); i++ {
		if s[i] == '.' {
			dots++
		}
		if (s[i] < '0' || s[i] > '9') && (s[i] != '.' || dots > 1) {
			num = s[:i]
			break
		}
	}
	v, err := strconv.ParseFloat(string(num), 64)
	if err != nil || v <= 0 || v > 100 {
		return "", 0, fmt.Errorf("version %q is not a perftest version: is the peer perftest (ib_write_bw and the like)?", text.Clean(string(s), 20))
	}
	return string(s), v, nil
}

// CheckPeerVersion refuses what perftest 6.06 refuses, with its reason.
func CheckPeerVersion(v float64) error {
	if v < minPeer {
		return fmt.Errorf("the peer runs perftest %.2f: perftest 6.06, whose exchange rdmabench speaks, is not compatible with versions older than 5.70", v)
	}
	return nil
}

// EncodeInt32 and ParseInt32 are the sys data's numbers (big-endian).
func EncodeInt32(v int32) []byte {
	return binary.BigEndian.AppendUint32(nil, uint32(v))
}

func ParseInt32(b []byte) int32 { return int32(binary.BigEndian.Uint32(b)) }

// MTU enum values (ibv_mtu) and their sizes.
var mtus = map[int]int{1: 256, 2: 512, 3: 1024, 4: 2048, 5: 4096}

// EncodeMTU is the MTU message for an MTU of bytes (256 to 4096).
func EncodeMTU(bytes int) ([]byte, error) {
	for e, b := range mtus {
		if b == bytes {
			return []byte{byte('0' + e), 0}, nil
		}
	}
	return nil, fmt.Errorf("active MTU %d bytes is not an IB MTU (256 to 4096)", bytes)
}

// ParseMTU reads the MTU message: the peer's active MTU in bytes. perftest ignores a
// value outside 256-4096 (and keeps its own); so does this.
func ParseMTU(msg []byte) (int, bool) {
	s, _, _ := bytes.Cut(msg, []byte{0})
	e, err := strconv.Atoi(string(s))
	if err != nil {
		return 0, false
	}
	b, ok := mtus[e]
	return b, ok
}

// BWReport is what a bandwidth test's client sends the server at the end, which the
// server prints as its table: perftest's bw_report_data, in MB/s (2^20 bytes) or Gb/s
// as the peer's --report_gbits says, and Mpps.
type BWReport struct {
	Size    uint64
	Iters   uint64
	BWPeak  float64
	BWAvg   float64
	MsgRate float64
}

// The divisors of perftest's print_report_bw: the same bytes per second over 2^20 (its
// MB/sec, the default) or over 125000000 (Gb/s of 10^9 bits, --report_gbits).
const (
	mbyte = 1 << 20
	gbitB = 1e9 / 8
)

// Unit is the unit of BWAvg (and BWPeak): "MB/s" (2^20 bytes) or "Gb/s" (10^9 bits),
// told from the report itself, as a server is not told the client's --report_gbits
// (before 6.28's negotiation). perftest computes the average from the same bytes and
// time as the message rate (Mpps, 10^6 messages): BWAvg is Size x MsgRate x 10^6 over
// 2^20 or over 1.25 x 10^8, so that quotient is 2^20 or 1.25 x 10^8. "" where the
// report cannot say (no size, no rate) or its quotient is within a factor 2 of
// neither (not perftest's arithmetic).
func (r BWReport) Unit() string {
	if r.Size == 0 || !(r.MsgRate > 0) || !(r.BWAvg > 0) {
		return ""
	}
	f := float64(r.Size) * r.MsgRate * 1e6 / r.BWAvg
	switch {
	case f > mbyte/2 && f < mbyte*2:
		return "MB/s"
	case f > gbitB/2 && f < gbitB*2:
		return "Gb/s"
	}
	return ""
}

// AvgGbps is BWAvg in rdmabench's unit, Gb/s of 10^9 bits (MB/s x 2^20 x 8 / 10^9),
// and true; false where Unit cannot tell the report's unit.
func (r BWReport) AvgGbps() (float64, bool) {
	switch r.Unit() {
	case "MB/s":
		return r.BWAvg * mbyte * 8 / 1e9, true
	case "Gb/s":
		return r.BWAvg, true
	}
	return 0, false
}

// Encode is the report in the exchange's pieces, for a peer of version v: the size (8
// bytes), the iterations (8 bytes from 5.33, else 4), the peak, the average and the
// message rate (big-endian doubles). Each piece is one exchange.
func (r BWReport) Encode(v float64) [][]byte {
	iters := binary.BigEndian.AppendUint64(nil, r.Iters)
	if v < 5.33 {
		iters = binary.BigEndian.AppendUint32(nil, uint32(r.Iters))
	}
	f := func(x float64) []byte { return binary.BigEndian.AppendUint64(nil, math.Float64bits(x)) }
	return [][]byte{binary.BigEndian.AppendUint64(nil, r.Size), iters, f(r.BWPeak), f(r.BWAvg), f(r.MsgRate)}
}

// ReportSizes are the pieces' sizes for a peer of version v.
func ReportSizes(v float64) []int {
	if v < 5.33 {
		return []int{8, 4, 8, 8, 8}
	}
	return []int{8, 8, 8, 8, 8}
}

// ParseBWReport reads the pieces Encode writes.
func ParseBWReport(pieces [][]byte) (BWReport, error) {
	if len(pieces) != 5 {
		return BWReport{}, fmt.Errorf("bandwidth report of %d pieces, want 5", len(pieces))
	}
	var r BWReport
	r.Size = binary.BigEndian.Uint64(pieces[0])
	if len(pieces[1]) == 4 {
		r.Iters = uint64(binary.BigEndian.Uint32(pieces[1]))
	} else {
		r.Iters = binary.BigEndian.Uint64(pieces[1])
	}
	f := func(b []byte) float64 { return math.Float64frombits(binary.BigEndian.Uint64(b)) }
	r.BWPeak, r.BWAvg, r.MsgRate = f(pieces[2]), f(pieces[3]), f(pieces[4])
	for _, x := range []float64{r.BWPeak, r.BWAvg, r.MsgRate} {
		if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
			return r, errors.New("bandwidth report with a negative or non-finite rate")
		}
	}
	return r, nil
}
