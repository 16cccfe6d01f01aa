package perftest

import (
	"bytes"
	"fmt"
	"testing"
)

// FuzzPeerMessages: whatever a peer sends in place of a key message, a version, an
// MTU, a report or a negotiation struct is refused or read, never a panic; a key
// message that reads writes back (perftest's form) to one that reads the same.
func FuzzPeerMessages(f *testing.F) {
	f.Add(gidDest.Marshal(true))
	f.Add(gidDest.Marshal(false))
	f.Add(EncodeVersion("6.06"))
	f.Add([]byte("5\x00"))
	f.Add(make([]byte, NegotiateSize))
	f.Add(bytes.Repeat([]byte{0xff}, 40))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, gid := range []bool{false, true} {
			n := KeySize
			if gid {
				n = KeySizeGID
			}
			msg := make([]byte, n)
			copy(msg, b)
			d, err := ParseDest(msg, gid)
			if err != nil {
				continue
			}
			back, err := ParseDest(d.Marshal(gid), gid)
			if err != nil || back != d {
				t.Fatalf("key message %q reads as %+v, which writes back as %+v (%v)", msg, d, back, err)
			}
		}
		v := make([]byte, VersionSize)
		copy(v, b)
		ParseVersion(v)
		ParseMTU(b)
		if len(b) >= 40 {
			ParseBWReport([][]byte{b[:8], b[8:16], b[16:24], b[24:32], b[32:40]})
		}
		ParseNegotiate(b)
	})
}

// FuzzServer: whatever a client sends after the MTU (in, cut where it ends: a hang-up),
// in the GID or the LID form, with or without WRITEs landed by its run, the server's
// machine ends, never panics, and answers only with its own QPs' keys and a report's
// zeros. A conversation it completes is one of perftest's: two key rounds of the QPs
// it announced and three of QP 0's more (a latency client's four, and read_lat's
// closing one), and the test it names agrees.
func FuzzServer(f *testing.F) {
	f.Fuzz(func(t *testing.T, in []byte, gid, written bool) {
		x := NewServer(gid, 6.06)
		sent, end, err, _ := playSome(t, x, in, written)
		if failed := x.Next().Kind == StepFailed; failed != (err != nil) || err != nil && (x.Err() != err || err.Error() == "") {
			t.Fatalf("stopped at step %d (failed %v) with error %v (Err %v)", end.Kind, failed, err, x.Err())
		}
		keys := 0
		for _, m := range sent {
			if d, err := ParseDest(m, gid); err == nil {
				i := int(d.QPN) - 0x200
				want := serverKey(max(i, 0))
				if !gid {
					want.GID = [16]byte{} // the LID form carries none
				}
				if i < 0 || i >= x.QPs() || d != want {
					t.Fatalf("sent a key that is no QP's of its own: %+v", d)
				}
				keys++
				continue
			}
			if (len(m) != 8 && len(m) != 4) || !bytes.Equal(m, make([]byte, len(m))) {
				t.Fatalf("sent %q", m)
			}
		}
		q := x.QPs()
		rep, reported := x.Report()
		switch end.Kind {
		case StepWriteLat:
			if q != 1 || keys != 4 || x.Test() != "write_lat" || reported {
				t.Fatalf("write_lat after %d QP, %d keys answered, test %q", q, keys, x.Test())
			}
		case StepDone:
			bw := x.Test() == fmt.Sprintf("write_bw, %d QP", q) || x.Test() == fmt.Sprintf("read_bw, %d QP", q)
			lat := x.Test() == "read_lat" && q == 1 && !reported
			if keys != 2*q+3 || !(bw && reported || lat) {
				t.Fatalf("done after %d QP, %d keys answered, test %q, report %+v (%v)", q, keys, x.Test(), rep, reported)
			}
		}
	})
}
