package verbs

import "testing"

// TestDeviceReadDepths: a device's READ initiator is limited by its
// max_qp_init_rd_atom (and the peer), its responder by its max_qp_rd_atom: a device
// whose two limits differ tells them apart.
func TestDeviceReadDepths(t *testing.T) {
	d := DeviceInfo{MaxQPInitRdAtom: 2, MaxQPRdAtom: 16}
	if i, r := d.ReadDepths(8); i != 2 || r != 16 {
		t.Errorf("init_rd_atom 2, rd_atom 16, peer 8: initiator %d responder %d, want 2 and 16", i, r)
	}
	d = DeviceInfo{MaxQPInitRdAtom: 64, MaxQPRdAtom: 4}
	if i, r := d.ReadDepths(8); i != 8 || r != 4 {
		t.Errorf("init_rd_atom 64, rd_atom 4, peer 8: initiator %d responder %d, want 8 and 4", i, r)
	}
}
