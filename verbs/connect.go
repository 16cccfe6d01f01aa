//go:build linux && cgo

package verbs

/*
#include "rb.h"
*/
import "C"

import (
	"fmt"
	"net"
	"unsafe"

	"github.com/rdmabench/rdmabench/plan"
	"github.com/rdmabench/rdmabench/verbs/qp"
)

// respDepth is this side's responder READ depth, what its endpoint offers.
func (s *Session) respDepth() int {
	_, r := s.dev.Info.ReadDepths(255)
	return r
}

// Local is what the peer needs to connect to this side.
func (s *Session) Local() qp.Endpoint {
	e := qp.Endpoint{
		PSNs: s.psns, LID: s.dev.Port.LID, GID: s.gids[0].GID, GIDIndex: s.gids[0].Index,
		GIDType: s.gids[0].Type, GIDNetdev: s.gids[0].Netdev, LinkLayer: s.dev.Port.LinkLayer, MTU: s.dev.Port.ActiveMTU,
		RdAtom: s.respDepth(), Addr: uint64(uintptr(s.buf)), RKey: uint32(s.mr.rkey),
		Len: uint64(s.spec.BufSize),
	}
	for _, qp := range s.qps {
		e.QPNs = append(e.QPNs, uint32(qp.qp_num))
	}
	return e
}

// Connect takes the QPs to RTR and RTS against the peer's endpoint, which offers as
// many QPs as this side has.
func (s *Session) Connect(r qp.Endpoint, mtu int) error {
	return s.ConnectPeers([]qp.Endpoint{r}, mtu)
}

// ConnectPeers takes the QPs to RTR and RTS: against one endpoint that offers as many
// QPs as this side has, or against one endpoint per QP, each offering one (QP i to
// peer i: fan-out and fan-in). The path MTU is the smallest active MTU of all sides
// (and mtu, when mtu > 0); the READs this side keeps outstanding, the smaller of its
// max_qp_init_rd_atom and each peer's max_qp_rd_atom (RdAtom reports the smallest).
func (s *Session) ConnectPeers(rs []qp.Endpoint, mtu int) error {
	type path struct {
		qp.Endpoint
		gid       []byte
		qp        int // the QP offered for this one
		mtu, atom int // what both ends of this connection settle on
	}
	var paths []path
	switch {
	case len(rs) == 1 && len(rs[0].QPNs) == len(s.qps) && len(rs[0].PSNs) == len(s.qps):
		for i := range s.qps {
			paths = append(paths, path{Endpoint: rs[0], qp: i})
		}
	case len(rs) == len(s.qps) && len(rs) > 1:
		for i, r := range rs {
			if len(r.QPNs) != 1 || len(r.PSNs) != 1 {
				return fmt.Errorf("peer %d offers %d QPs; with one QP per peer each must offer one", i+1, len(r.QPNs))
			}
			paths = append(paths, path{Endpoint: r})
		}
	case len(rs) == 1:
		return fmt.Errorf("peer offers %d QPs, this side has %d", len(rs[0].QPNs), len(s.qps))
	default:
		return fmt.Errorf("%d peers for %d QPs: connect one peer, or one peer per QP", len(rs), len(s.qps))
	}
	// Each connection's path MTU is what its peer computes too: the smaller active MTU
	// of the two ends (and mtu); with several peers they may differ. PathMTU and RdAtom
	// report the smallest.
	mine := s.dev.Port.ActiveMTU
	if mtu > 0 {
		mine = min(mine, mtu)
	}
	// READs: qp.ReadDepths, per connection (this side's endpoint offers destMax).
	destMax := s.respDepth()
	s.mtu, s.rdAtom = mine, 255
	for i := range paths {
		r := &paths[i]
		if r.LinkLayer != s.dev.Port.LinkLayer {
			return fmt.Errorf("link layer mismatch: this side is %s, the peer is %q", s.dev.Port.LinkLayer, r.LinkLayer)
		}
		if g := s.gids[i]; s.dev.Port.LinkLayer == "Ethernet" && r.GIDType != g.Type {
			return fmt.Errorf("GID type mismatch: this side uses %s (GID index %d), the peer %q (GID index %d): pick matching GIDs with -x on both sides", g.Type, g.Index, r.GIDType, r.GIDIndex)
		}
		if r.gid = net.ParseIP(r.GID).To16(); r.gid == nil {
			return fmt.Errorf("peer sent an invalid GID %q", r.GID)
		}
		r.mtu = min(mine, r.MTU)
		r.atom, _ = s.dev.Info.ReadDepths(r.RdAtom)
		s.mtu, s.rdAtom = min(s.mtu, r.mtu), min(s.rdAtom, r.atom)
	}
	s.rdAtom = max(1, s.rdAtom)
	s.remotes, s.onePeer = nil, len(rs) == 1
	for _, r := range paths {
		s.remotes = append(s.remotes, remote{addr: r.Addr, key: r.RKey, len: r.Len})
	}
	av, err := s.spec.RTRAddress(s.dev.Port.LinkLayer, s.dev.pinned)
	if err != nil {
		return err
	}
	for i, qp := range s.qps {
		r := paths[i]
		rgid, sgid := r.gid, s.gids[i]
		if err := s.modify(qp, "RTR", func(a *C.struct_ibv_qp_attr) C.int {
			a.qp_state = C.IBV_QPS_RTR
			a.path_mtu = mtuEnum(r.mtu)
			a.dest_qp_num = C.uint32_t(r.QPNs[r.qp])
			a.rq_psn = C.uint32_t(r.PSNs[r.qp])
			a.max_dest_rd_atomic = C.uint8_t(destMax)
			a.min_rnr_timer = 12
			a.ah_attr.dlid = C.uint16_t(r.LID)
			a.ah_attr.port_num = C.uint8_t(s.dev.Port.Port)
			a.ah_attr.sl = C.uint8_t(av.SL)
			if av.Global {
				a.ah_attr.is_global = 1
				copy((*[16]byte)(unsafe.Pointer(&a.ah_attr.grh.dgid))[:], rgid)
				a.ah_attr.grh.sgid_index = C.uint8_t(sgid.Index)
				a.ah_attr.grh.hop_limit = C.uint8_t(av.HopLimit)
				a.ah_attr.grh.traffic_class = C.uint8_t(av.TrafficClass)
			}
			return C.IBV_QP_STATE | C.IBV_QP_AV | C.IBV_QP_PATH_MTU | C.IBV_QP_DEST_QPN |
				C.IBV_QP_RQ_PSN | C.IBV_QP_MAX_DEST_RD_ATOMIC | C.IBV_QP_MIN_RNR_TIMER
		}); err != nil {
			return fmt.Errorf("%w: %s", err, RTRHint(s.dev.Port.LinkLayer, sgid, s.dev.Port.LID, r.Endpoint))
		}
		if err := s.modify(qp, "RTS", func(a *C.struct_ibv_qp_attr) C.int {
			a.qp_state = C.IBV_QPS_RTS
			a.timeout = C.uint8_t(plan.QPTimeout(max(s.spec.QPTimeout, 0))) // below 1: the default
			a.retry_cnt = 7
			a.rnr_retry = 7
			a.sq_psn = C.uint32_t(s.psns[i])
			a.max_rd_atomic = C.uint8_t(r.atom)
			return C.IBV_QP_STATE | C.IBV_QP_TIMEOUT | C.IBV_QP_RETRY_CNT | C.IBV_QP_RNR_RETRY |
				C.IBV_QP_SQ_PSN | C.IBV_QP_MAX_QP_RD_ATOMIC
		}); err != nil {
			return err
		}
	}
	return nil
}

// PathMTU and RdAtom are the values Connect settled on (the smallest of its connections').
func (s *Session) PathMTU() int { return s.mtu }
func (s *Session) RdAtom() int  { return s.rdAtom }
