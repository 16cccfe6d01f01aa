package verbs

import "testing"

func TestPickGIDLikePerftest(t *testing.T) {
	p := PortInfo{LinkLayer: "Ethernet", GIDs: []GIDEntry{
		{Index: 0, GID: "fe80::1", Type: "RoCE v1"},
		{Index: 1, GID: "fe80::1", Type: "RoCE v2"},
		{Index: 2, GID: "192.0.2.7", Type: "RoCE v1"},
		{Index: 3, GID: "192.0.2.7", Type: "RoCE v2"},
	}}
	if g, _ := pickGID(p, -1); g.Index != 3 {
		t.Fatalf("want the RoCE v2 IPv4-mapped GID 3, got %d", g.Index)
	}
	if g, _ := pickGID(p, 2); g.Index != 2 {
		t.Fatalf("-x 2 must win, got %d", g.Index)
	}
	if _, err := pickGID(p, 9); err == nil {
		t.Fatal("an absent index must fail")
	}
	if _, err := pickGID(PortInfo{}, -1); err == nil {
		t.Fatal("an empty table must fail")
	}
}

func TestModel(t *testing.T) {
	for want, got := range map[string]string{
		"ConnectX-5":      Model("mlx5_core", 0x02c9, 4119),
		"ConnectX-6 Dx":   Model("mlx5_core", 0x02c9, 4125),
		"Soft-RoCE (rxe)": Model("rxe", 0xffffff, 0),
	} {
		if got != want {
			t.Errorf("got %q want %q", got, want)
		}
	}
}
