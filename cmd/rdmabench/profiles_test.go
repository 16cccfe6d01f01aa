package main

import (
	"testing"

	"github.com/rdmabench/rdmabench/profiles"
)

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
