package bench

import (
	"fmt"
	"net"

	"github.com/rdmabench/rdmabench/internal/text"
	"github.com/rdmabench/rdmabench/verbs/qp"
)

// A client's endpoint says where the server's QPs send: on RoCE its GID is an IP
// address, and the server's RDMA traffic (READ responses, the WRITE latency responder's
// answers, a bidirectional test's own stream, ACKs) goes there, whatever address the
// control connection came from. A client could so aim the server's traffic at another
// host. Two rules bound that:
//   - a bidirectional plan, where the server streams on its own, needs a server with a
//     token (admitPlan);
//   - with --peer-gid-check (Server.PeerGIDCheck), a RoCE endpoint whose GID is not
//     the control connection's address is refused. It is off by default: where the
//     control connection runs over another network than RoCE (a management network, or
//     a host whose connections leave from another address than its RDMA device's), the
//     addresses differ for good reason.

// checkPeerGID says what is wrong with ep for a client whose control connection came
// from from, on a port of linkLayer (this server's, never the one the peer claims): nil
// when ep's GID is from's address, or the port is InfiniBand (LID-routed within the
// subnet, no IP to aim at).
func checkPeerGID(from net.Addr, linkLayer string, ep qp.Endpoint) error {
	if linkLayer == "InfiniBand" {
		return nil
	}
	ta, ok := from.(*net.TCPAddr)
	if !ok {
		return fmt.Errorf("--peer-gid-check: the control connection from %s has no IP address to compare the endpoint's GID with", text.Quote(from.String()))
	}
	gid := net.ParseIP(ep.GID)
	switch {
	case gid == nil:
		return fmt.Errorf("--peer-gid-check: the endpoint's GID %s is not an address", text.Quote(ep.GID))
	case gid.IsLinkLocalUnicast():
		return fmt.Errorf("--peer-gid-check: the endpoint's GID %s is link-local (RoCE v1, or a v2 link-local GID): the client must use a GID of the address it connects from (-x)", gid)
	case !gid.Equal(ta.IP):
		return fmt.Errorf("--peer-gid-check: the endpoint's GID is %s, but the control connection came from %s: this server sends RDMA traffic only to the client's own address (connect from the address of the RDMA device's GID, or pick that GID with -x)", gid, ta.IP)
	}
	return nil
}
