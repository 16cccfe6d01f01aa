package qp

import "testing"

// TestCQEntries: the CQ holds a whole send queue of completions for every QP, not for
// one (a CQ sized for one QP overflows when several signal every WR).
func TestCQEntries(t *testing.T) {
	for _, tc := range []struct{ nqp, depth int }{{1, 1}, {1, 128}, {4, 128}, {16, 1024}} {
		if got := CQEntries(tc.nqp, tc.depth); got < tc.nqp*tc.depth || got > tc.nqp*tc.depth+1 {
			t.Errorf("%d QPs x depth %d: a %d-entry CQ, want %d or %d", tc.nqp, tc.depth, got, tc.nqp*tc.depth, tc.nqp*tc.depth+1)
		}
	}
}

// TestReadDepths: the initiator takes the smaller of its device's max_qp_init_rd_atom
// and the peer's max_qp_rd_atom, never the larger, and never the device's
// max_qp_rd_atom; every value fits the QP attribute's 8 bits and is at least 1.
func TestReadDepths(t *testing.T) {
	for _, tc := range []struct{ initMax, respMax, peer, wantInit, wantResp int }{
		{16, 16, 4, 4, 16},        // the peer answers fewer: that many
		{4, 16, 16, 4, 16},        // this device initiates fewer: that many
		{2, 128, 128, 2, 128},     // init_rd_atom, not rd_atom, limits the initiator
		{128, 2, 128, 128, 2},     // ... and rd_atom the responder
		{300, 300, 300, 255, 255}, // 8-bit fields
		{16, 16, 0, 1, 16},        // a peer offering none still gets one
		{0, 0, 8, 1, 1},
	} {
		gi, gr := ReadDepths(tc.initMax, tc.respMax, tc.peer)
		if gi != tc.wantInit || gr != tc.wantResp {
			t.Errorf("init_rd_atom %d, rd_atom %d, peer %d: initiator %d responder %d, want %d and %d",
				tc.initMax, tc.respMax, tc.peer, gi, gr, tc.wantInit, tc.wantResp)
		}
	}
}
