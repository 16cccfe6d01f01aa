package perftest

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"math"
	"net"
	"strings"
	"testing"
	"time"
)

// The fixtures are written out by hand from perftest 6.06's formats
// (src/perftest_communication.h: KEY_PRINT_FMT, KEY_PRINT_FMT_GID; xchg_bw_reports;
// check_mtu; check_sys_data), not produced by the code under test.

func nulPad(s string, n int) []byte { b := make([]byte, n); copy(b, s); return b }

var gidDest = Dest{LID: 0, OutReads: 16, QPN: 0x11, PSN: 0xa1b2c3, RKey: 0x1234, VAddr: 0x7f0000001000,
	GID: [16]byte{10: 0xff, 11: 0xff, 12: 10, 13: 0, 14: 0, 15: 1}}

const gidFixture = "0000:0010:000011:a1b2c3:00001234:00007f0000001000:" +
	"00:00:00:00:00:00:00:00:00:00:ff:ff:0a:00:00:01:00000000:"

func TestKeyMessageGIDForm(t *testing.T) {
	if len(gidFixture)+1 != KeySizeGID {
		t.Fatalf("fixture is %d bytes with its NUL", len(gidFixture)+1)
	}
	want := nulPad(gidFixture, KeySizeGID)
	if got := gidDest.Marshal(true); !bytes.Equal(got, want) {
		t.Fatalf("Marshal:\n got %q\nwant %q", got, want)
	}
	d, err := ParseDest(want, true)
	if err != nil || d != gidDest {
		t.Fatalf("ParseDest = %+v, %v; want %+v", d, err, gidDest)
	}
	if !d.V4Mapped() || d.IP().String() != "10.0.0.1" {
		t.Fatalf("GID %v: v4-mapped %v", d.IP(), d.V4Mapped())
	}
}

func TestKeyMessageLIDForm(t *testing.T) {
	const fixture = "0007:0004:000102:000003:00000a0b:0000000000400000:00000000"
	if len(fixture)+1 != KeySize {
		t.Fatalf("fixture is %d bytes with its NUL", len(fixture)+1)
	}
	want := Dest{LID: 7, OutReads: 4, QPN: 0x102, PSN: 3, RKey: 0xa0b, VAddr: 0x400000}
	if got := want.Marshal(false); !bytes.Equal(got, nulPad(fixture, KeySize)) {
		t.Fatalf("Marshal: got %q", got)
	}
	d, err := ParseDest(nulPad(fixture, KeySize), false)
	if err != nil || d != want {
		t.Fatalf("ParseDest = %+v, %v", d, err)
	}
}

func TestKeyMessageRefusals(t *testing.T) {
	good := nulPad(gidFixture, KeySizeGID)
	cases := map[string][]byte{
		"short":              good[:100],
		"LID form as GID":    nulPad("0007:0004:000102:000003:00000a0b:0000000000400000:00000000", KeySizeGID),
		"no NUL":             bytes.Repeat([]byte{'a'}, KeySizeGID),
		"QPN over 24 bits":   nulPad(strings.Replace(gidFixture, ":000011:", ":1000011:", 1), KeySizeGID),
		"not hexadecimal":    nulPad(strings.Replace(gidFixture, "a1b2c3", "a1b2zz", 1), KeySizeGID),
		"missing last colon": nulPad(strings.TrimSuffix(gidFixture, ":"), KeySizeGID),
	}
	for name, msg := range cases {
		if _, err := ParseDest(msg, true); err == nil {
			t.Errorf("%s: accepted %q", name, msg)
		}
	}
}

func TestVersionMessage(t *testing.T) {
	want := append([]byte("6.06"), make([]byte, 12)...)
	if got := EncodeVersion(Version); !bytes.Equal(got, want) {
		t.Fatalf("EncodeVersion = %q", got)
	}
	s, v, err := ParseVersion(append([]byte("6.29"), make([]byte, 12)...))
	if err != nil || s != "6.29" || v != 6.29 {
		t.Fatalf("ParseVersion = %q %v %v", s, v, err)
	}
	if s, v, err := ParseVersion(append([]byte("6.10.1-rc"), make([]byte, 7)...)); err != nil || s != "6.10.1-rc" || v != 6.10 {
		t.Fatalf("ParseVersion(6.10.1-rc) = %q %v %v; want atof's 6.10", s, v, err)
	}
	if _, _, err := ParseVersion([]byte("RDMB\x00\x04hello....")); err == nil {
		t.Fatal("an rdmabench frame was taken for a version")
	}
	if err := CheckPeerVersion(5.60); err == nil || !strings.Contains(err.Error(), "5.70") {
		t.Fatalf("5.60 accepted or refused without perftest's reason: %v", err)
	}
}

func TestMTUMessage(t *testing.T) {
	if got, err := EncodeMTU(4096); err != nil || !bytes.Equal(got, []byte("5\x00")) {
		t.Fatalf("EncodeMTU(4096) = %q %v", got, err)
	}
	if got, err := EncodeMTU(1024); err != nil || !bytes.Equal(got, []byte("3\x00")) {
		t.Fatalf("EncodeMTU(1024) = %q %v", got, err)
	}
	if _, err := EncodeMTU(1500); err == nil {
		t.Fatal("EncodeMTU(1500) accepted")
	}
	if b, ok := ParseMTU([]byte("4\x00")); !ok || b != 2048 {
		t.Fatalf("ParseMTU(4) = %d %v", b, ok)
	}
	for _, bad := range []string{"9\x00", "0\x00", "x\x00"} {
		if _, ok := ParseMTU([]byte(bad)); ok {
			t.Errorf("ParseMTU(%q) accepted", bad)
		}
	}
}

// A report's unit, told from the report (perftest's print_report_bw divides the same
// bytes by 2^20 for MB/sec, by 1.25 x 10^8 for --report_gbits' Gb/s, and the messages by
// 10^6 for Mpps), and its average in Gb/s of 10^9 bits, each by hand.
func TestBandwidthReportUnit(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    BWReport
		unit string
		gbps float64
	}{
		// 368 x 64 KiB a second: 23 x 2^20 B/s = 23.00 MB/sec; 23 x 1048576 x 8 / 10^9.
		{"23 MB/s", BWReport{Size: 65536, BWAvg: 23, MsgRate: 0.000368}, "MB/s", 0.192937984},
		{"the same run, --report_gbits", BWReport{Size: 65536, BWAvg: 0.192937984, MsgRate: 0.000368}, "Gb/s", 0.192937984},
		// 10^4 x 1 MiB a second: 10000 MB/sec = 83.88608 Gb/s.
		{"10000 MB/s", BWReport{Size: 1 << 20, BWAvg: 10000, MsgRate: 0.01}, "MB/s", 83.88608},
		{"83.89 Gb/s", BWReport{Size: 1 << 20, BWAvg: 83.88608, MsgRate: 0.01}, "Gb/s", 83.88608},
		// 5 x 10^6 x 2 B a second: 10^7 B/s = 9.5367431640625 MB/sec = 0.08 Gb/s.
		{"2 B at 5 Mpps", BWReport{Size: 2, BWAvg: 9.5367431640625, MsgRate: 5}, "MB/s", 0.08},
		{"2 B at 5 Mpps, --report_gbits", BWReport{Size: 2, BWAvg: 0.08, MsgRate: 5}, "Gb/s", 0.08},
		{"no size", BWReport{BWAvg: 23, MsgRate: 0.000368}, "", 0},
		{"no rate", BWReport{Size: 65536, BWAvg: 23}, "", 0},
		{"no bandwidth", BWReport{Size: 65536, MsgRate: 0.000368}, "", 0},
		{"not perftest's arithmetic", BWReport{Size: 65536, BWAvg: 1.25, MsgRate: 0.02}, "", 0},
	} {
		g, ok := tc.r.AvgGbps()
		if u := tc.r.Unit(); u != tc.unit || ok != (tc.unit != "") || math.Abs(g-tc.gbps) > 1e-9*tc.gbps {
			t.Errorf("%s: %q, %v Gb/s (%v); want %q, %v Gb/s", tc.name, u, g, ok, tc.unit, tc.gbps)
		}
	}
}

func TestBandwidthReportPieces(t *testing.T) {
	r := BWReport{Size: 65536, Iters: 5000, BWPeak: 1.5, BWAvg: 1.25, MsgRate: 0.02}
	want := []string{"0000000000010000", "0000000000001388", "3ff8000000000000", "3ff4000000000000", "3f947ae147ae147b"}
	got := r.Encode(6.06)
	for i := range want {
		if hex.EncodeToString(got[i]) != want[i] {
			t.Errorf("piece %d = %x, want %s", i, got[i], want[i])
		}
	}
	old := r.Encode(5.32)
	if hex.EncodeToString(old[1]) != "00001388" {
		t.Errorf("iterations for a 5.32 peer = %x, want 4 bytes", old[1])
	}
	back, err := ParseBWReport(got)
	if err != nil || back != r {
		t.Fatalf("ParseBWReport = %+v %v", back, err)
	}
	nan := append([][]byte{}, got...)
	nan[3] = []byte{0x7f, 0xf8, 0, 0, 0, 0, 0, 1}
	if _, err := ParseBWReport(nan); err == nil {
		t.Fatal("a NaN average was accepted")
	}
}

func TestNegotiateStruct(t *testing.T) {
	// perftest 6.28's struct on x86-64, by offset: seven ints, padding, size, iters,
	// eight ints, struct ibv_device_attr (232 bytes), and with mlx5dv a 64-bit mask.
	b := make([]byte, NegotiateSizeDV)
	be := binary.BigEndian
	be.PutUint32(b[8:], 2)  // verb WRITE
	be.PutUint32(b[12:], 1) // tst BW
	be.PutUint32(b[24:], 1) // report_fmt MBS
	be.PutUint64(b[32:], 65536)
	be.PutUint64(b[40:], 5000)
	be.PutUint32(b[52:], 2)                           // num_of_qps
	binary.LittleEndian.PutUint32(b[80+96:], 0x02c9)  // vendor_id (host order)
	binary.LittleEndian.PutUint32(b[80+100:], 0x101b) // vendor_part_id
	be.PutUint64(b[312:], 0x5)
	n, err := ParseNegotiate(b)
	if err != nil {
		t.Fatal(err)
	}
	if n.Verb != 2 || n.Test != 1 || n.ReportFmt != 1 || n.Size != 65536 || n.Iters != 5000 || n.NumQPs != 2 ||
		n.VendorID() != 0x02c9 || n.PartID() != 0x101b || !n.HasMLX5DV || n.MLX5DVMask != 5 {
		t.Fatalf("ParseNegotiate = %+v", n)
	}
	if got := n.Encode(); !bytes.Equal(got, b) {
		t.Fatal("Encode does not give back the fixture")
	}
	plain, err := ParseNegotiate(b[:NegotiateSize])
	if err != nil || plain.HasMLX5DV || len(plain.Encode()) != NegotiateSize {
		t.Fatalf("the struct without mlx5dv: %+v %v", plain, err)
	}
	if _, err := ParseNegotiate(b[:300]); err == nil {
		t.Fatal("a 300-byte struct was accepted")
	}
	other := n
	other.NumQPs = 1
	if m := Mismatch(n, other); !strings.Contains(m, "num_of_qps") {
		t.Fatalf("Mismatch = %q", m)
	}
	other = n
	other.Size = 8
	if m := Mismatch(n, other); !strings.HasPrefix(m, "size") {
		t.Fatalf("Mismatch = %q", m)
	}
	if m := Mismatch(n, n); m != "" {
		t.Fatalf("Mismatch of equal structs = %q", m)
	}
}

// TestExchangeOrder: the client writes first and the server reads first, so two
// Conns over a pipe (which does not buffer) complete every exchange.
func TestExchangeOrder(t *testing.T) {
	a, b := net.Pipe()
	cl := &Conn{NC: a, Client: true, Timeout: 5 * time.Second}
	sv := &Conn{NC: b, Timeout: 5 * time.Second}
	done := make(chan error, 1)
	go func() {
		if err := sv.Versions(); err != nil {
			done <- err
			return
		}
		_, _, err := sv.SysData(4096, 64)
		if err == nil {
			_, err = sv.MTU(1024)
		}
		if err == nil {
			_, err = sv.Keys("keys", gidDest, true)
		}
		done <- err
	}()
	if err := cl.Versions(); err != nil || cl.PeerVersion != Version {
		t.Fatal(err, cl.PeerVersion)
	}
	cycle, line, err := cl.SysData(8192, 64)
	if err != nil || cycle != 8192 || line != 64 {
		t.Fatal(cycle, line, err)
	}
	if mtu, err := cl.MTU(4096); err != nil || mtu != 1024 {
		t.Fatal(mtu, err)
	}
	d, err := cl.Keys("keys", Dest{QPN: 1}, true)
	if err != nil || d != gidDest {
		t.Fatal(d, err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestExchangeTimeoutSaysWhy(t *testing.T) {
	a, b := net.Pipe()
	defer b.Close()
	go func() { buf := make([]byte, 64); b.Read(buf) }() // takes the version, answers nothing
	cl := &Conn{NC: a, Client: true, Timeout: 100 * time.Millisecond}
	err := cl.Versions()
	if err == nil || !strings.Contains(err.Error(), "said nothing") {
		t.Fatalf("err = %v", err)
	}
}
