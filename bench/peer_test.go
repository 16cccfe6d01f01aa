package bench

import (
	"net"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/verbs/qp"
)

func TestCheckPeerGID(t *testing.T) {
	from := &net.TCPAddr{IP: net.ParseIP("10.0.0.2"), Port: 40000}
	from6 := &net.TCPAddr{IP: net.ParseIP("2001:db8::7"), Port: 40000}
	for _, tc := range []struct {
		from net.Addr
		ep   qp.Endpoint
		want string // "" : accepted
	}{
		{from, qp.Endpoint{LinkLayer: "Ethernet", GID: "0000:0000:0000:0000:0000:ffff:0a00:0002"}, ""},
		{from, qp.Endpoint{LinkLayer: "Ethernet", GID: "::ffff:10.0.0.2"}, ""},
		{from6, qp.Endpoint{LinkLayer: "Ethernet", GID: "2001:0db8:0000:0000:0000:0000:0000:0007"}, ""},
		{from, qp.Endpoint{LinkLayer: "InfiniBand", GID: "fe80:0000:0000:0000:0002:c903:0001:2345"}, ""},
		// aimed elsewhere
		{from, qp.Endpoint{LinkLayer: "Ethernet", GID: "0000:0000:0000:0000:0000:ffff:c000:0201"}, "came from 10.0.0.2"},
		{from6, qp.Endpoint{LinkLayer: "Ethernet", GID: "::ffff:10.0.0.2"}, "came from 2001:db8::7"},
		{from, qp.Endpoint{LinkLayer: "Ethernet", GID: "fe80::1"}, "link-local"},
		{from, qp.Endpoint{LinkLayer: "Ethernet", GID: "\x1b[2Jnot-a-gid"}, "is not an address"},
		{pipeAddr{}, qp.Endpoint{LinkLayer: "Ethernet", GID: "::ffff:10.0.0.2"}, "no IP address"},
	} {
		err := checkPeerGID(tc.from, tc.ep.LinkLayer, tc.ep)
		if (tc.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s from %s: %v, want %q", tc.ep.GID, tc.from, err, tc.want)
		}
		if err != nil && strings.ContainsRune(err.Error(), 0x1b) {
			t.Errorf("the refusal echoes a control character: %q", err)
		}
	}
	// A RoCE server checks the GID whatever link layer the peer claims.
	if err := checkPeerGID(from, "Ethernet", qp.Endpoint{LinkLayer: "InfiniBand", GID: "::ffff:192.0.2.1"}); err == nil {
		t.Fatal("an endpoint claiming InfiniBand skipped the check on a RoCE port")
	}
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }
