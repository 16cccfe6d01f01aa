package qp

// The sizes the verbs layer gives a session's queues, in one place so that they are
// tested without a device (and the model of the queues, verbs/internal/qmodel, sizes
// its CQ with the same rule).

// CQEntries is the completion queue a session of nqp QPs, each with a send queue of
// sqDepth WRs, needs: every WR may be signalled (cq-mod 1), so the CQ holds a whole
// send queue per QP (and one more). A CQ cut shorter could overflow, which fails the
// QPs mid-run.
func CQEntries(nqp, sqDepth int) int { return nqp*sqDepth + 1 }

// ReadDepths are a QP's READ limits (both 8-bit fields of the QP's attributes, so
// 1 to 255): the initiator's (max_rd_atomic) is at most this device's
// max_qp_init_rd_atom and what the peer answers at once (its endpoint's max_rd_atom,
// peerResp); the responder's (max_dest_rd_atomic) is this device's max_qp_rd_atom, as
// much as any peer's initiator may send.
func ReadDepths(initMax, respMax, peerResp int) (initiator, responder int) {
	clamp := func(n int) int { return min(255, max(1, n)) }
	return clamp(min(initMax, peerResp)), clamp(respMax)
}
