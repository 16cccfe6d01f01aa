package verbs

import (
	"fmt"
	"strings"
)

// The access flags of a registration, libibverbs' values (session.go checks them
// against the header at build time, so that they cannot drift). They live here, in
// plain Go, so that what each MR of a test gets is a rule tests can read without a
// device.
const (
	AccessLocalWrite  = 1      // IBV_ACCESS_LOCAL_WRITE
	AccessRemoteWrite = 1 << 1 // IBV_ACCESS_REMOTE_WRITE
	AccessRemoteRead  = 1 << 2 // IBV_ACCESS_REMOTE_READ
	// AccessRelaxedOrdering is IBV_ACCESS_RELAXED_ORDERING (rdma-core 28 and later),
	// the first of libibverbs' optional access flags: a device or kernel that does not
	// support it registers the memory without it rather than failing (libibverbs drops
	// the optional flags the kernel does not take). On mlx5 it sets the memory key's
	// relaxed-ordering bits, so the NIC's PCIe writes into the MR, and its reads from
	// it, may be reordered by the root complex; whether the NIC may do so at all is the
	// PCIe Device Control register's Enable Relaxed Ordering bit (rdmabench doctor).
	AccessRelaxedOrdering = 1 << 20
)

// Access is what the session's buffer is registered with: local write (a READ lands
// in it), the remote access the peer gets, and relaxed ordering when the spec asks.
func (s Spec) Access() int {
	a := AccessLocalWrite
	if s.RemoteWrite {
		a |= AccessRemoteWrite
	}
	if s.RemoteRead {
		a |= AccessRemoteRead
	}
	if s.RelaxedOrdering {
		a |= AccessRelaxedOrdering
	}
	return a
}

// LoopAccess is what a bandwidth loop that registers in the loop (--mr per-io or
// cache) registers each WR's slot with: local write (rb.h's rb_bw_mr), and relaxed
// ordering when the spec asks, as the session's own buffer.
func (s Spec) LoopAccess() int {
	a := AccessLocalWrite
	if s.RelaxedOrdering {
		a |= AccessRelaxedOrdering
	}
	return a
}

// RTRAddress is the address vector's settings a QP of this spec gets at RTR beyond
// the peer's address: the service level; on a link that routes by GRH (RoCE: every
// packet has one), the GRH's traffic class and hop limit.
type RTRAddress struct {
	SL           uint8
	Global       bool // ah_attr.is_global: the QP's packets carry a GRH
	TrafficClass uint8
	HopLimit     uint8
}

// RTRAddress is what ibv_modify_qp(RTR) puts in ah_attr for a connection on a port of
// this link layer ("Ethernet" or "InfiniBand"), its GID pinned with -x or not (grh):
// perftest and rdmabench send a GRH on RoCE, and on InfiniBand only with -x (else it is
// routed by LID): a traffic class asked for on a connection without a GRH could not be
// sent, so it is an error, not ignored.
func (s Spec) RTRAddress(linkLayer string, pinned bool) (RTRAddress, error) {
	if s.SL < 0 || s.SL > 15 {
		return RTRAddress{}, fmt.Errorf("service level %d: want 0 to 15", s.SL)
	}
	if s.TrafficClass < 0 || s.TrafficClass > 255 {
		return RTRAddress{}, fmt.Errorf("traffic class %d: want 0 to 255", s.TrafficClass)
	}
	a := RTRAddress{SL: uint8(s.SL)}
	if global, hops := grh(linkLayer, pinned); global {
		a.Global, a.TrafficClass, a.HopLimit = true, uint8(s.TrafficClass), hops
	} else if s.TrafficClass != 0 {
		return RTRAddress{}, fmt.Errorf("--tclass %d on %s: the traffic class travels in the GRH, which this connection does not send (the subnet routes it by LID); pin a GID with -x to send one, or drop --tclass and use --sl for the service level", s.TrafficClass, linkLayer)
	}
	return a, nil
}

// AccessString names access flags for an error message: "local write|remote write|relaxed ordering".
func AccessString(a int) string {
	var names []string
	for _, f := range []struct {
		bit  int
		name string
	}{{AccessLocalWrite, "local write"}, {AccessRemoteWrite, "remote write"}, {AccessRemoteRead, "remote read"}, {AccessRelaxedOrdering, "relaxed ordering"}} {
		if a&f.bit != 0 {
			names = append(names, f.name)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, "|")
}
