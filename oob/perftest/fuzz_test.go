package perftest

import (
	"bytes"
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
