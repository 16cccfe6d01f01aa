package main

import (
	"bytes"
	"testing"

	"github.com/rdmabench/rdmabench/internal/plaintest"
	"github.com/rdmabench/rdmabench/profiles"
)

// The list gives a family's nominal rate as the range its models span, and one figure
// where every part has the same rate.
func TestProfilesLinkRate(t *testing.T) {
	var out bytes.Buffer
	if err := profilesRun(&profilesOptions{Out: &out, Format: "plain"}); err != nil {
		t.Fatal(err)
	}
	all, err := profiles.All()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range plaintest.Rows(t, out.String(), "profile description drivers vendor_ids part_ids link_gbps grid_points_write", len(all)) {
		got[r[0]] = r[5]
	}
	for name, want := range map[string]string{"cx6": "50-200", "cx7": "200-400", "bnxt_re": "10-400", "irdma": "1-100",
		"cx5": "100", "efa": "100", "rxe": "10"} {
		if got[name] != want {
			t.Errorf("%s: link Gb/s %q, want %q", name, got[name], want)
		}
	}
}

func TestLinkRate(t *testing.T) {
	prof := func(gbps float64, parts []uint32, models ...profiles.Model) profiles.Profile {
		p := profiles.Profile{LinkGbps: gbps, Models: models}
		p.Match.VendorPartIDs = parts
		return p
	}
	for _, c := range []struct {
		p    profiles.Profile
		want string
	}{
		{prof(25, nil), "25"}, // no part IDs: the profile's own
		{prof(0.5, nil), "0.5"},
		{prof(100, []uint32{1, 2}, profiles.Model{Name: "a", PartIDs: []uint32{1}, LinkGbps: 12.5}), "12.5-100"}, // part 2: no model
		{prof(100, []uint32{1}, profiles.Model{Name: "a", PartIDs: []uint32{1}, LinkGbps: 200}), "200"},
	} {
		if got := linkRate(c.p); got != c.want {
			t.Errorf("%+v: %q, want %q", c.p, got, c.want)
		}
	}
}
