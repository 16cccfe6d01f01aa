package verbs

import (
	"strings"
	"testing"
)

// What each MR of a test is registered with: local write always, the peer's remote
// access as the spec says, relaxed ordering when asked (and the loop's own
// registrations with --mr per-io or cache: local write, and relaxed ordering alike).
func TestAccessFlags(t *testing.T) {
	for _, tc := range []struct {
		spec       Spec
		want, loop int
	}{
		{Spec{}, AccessLocalWrite, AccessLocalWrite},
		{Spec{RemoteWrite: true}, AccessLocalWrite | AccessRemoteWrite, AccessLocalWrite},
		{Spec{RemoteRead: true, RelaxedOrdering: true}, AccessLocalWrite | AccessRemoteRead | AccessRelaxedOrdering, AccessLocalWrite | AccessRelaxedOrdering},
		{Spec{RemoteWrite: true, RemoteRead: true, RelaxedOrdering: true}, 1 | 2 | 4 | 1<<20, 1 | 1<<20},
	} {
		if got := tc.spec.Access(); got != tc.want {
			t.Errorf("%+v: access %s, want %s", tc.spec, AccessString(got), AccessString(tc.want))
		}
		if got := tc.spec.LoopAccess(); got != tc.loop {
			t.Errorf("%+v: loop access %s, want %s", tc.spec, AccessString(got), AccessString(tc.loop))
		}
	}
	if s := AccessString(AccessLocalWrite | AccessRelaxedOrdering); s != "local write|relaxed ordering" {
		t.Errorf("AccessString: %q", s)
	}
}

// The address vector at RTR: the SL always, a GRH with the traffic class on RoCE; a
// traffic class without a GRH (InfiniBand) is an error naming the flag, not dropped.
func TestRTRAddress(t *testing.T) {
	if a, err := (Spec{SL: 1, TrafficClass: 8}).RTRAddress("InfiniBand", true); err != nil || a != (RTRAddress{SL: 1, Global: true, TrafficClass: 8, HopLimit: 255}) {
		t.Errorf("InfiniBand with -x: %+v %v, want a GRH with the traffic class, hop limit 255", a, err)
	}
	a, err := Spec{SL: 3, TrafficClass: 96}.RTRAddress("Ethernet", false)
	if err != nil || a != (RTRAddress{SL: 3, Global: true, TrafficClass: 96, HopLimit: 255}) {
		t.Errorf("RoCE: %+v %v, want a GRH with the traffic class, hop limit 255 (perftest's)", a, err)
	}
	a, err = Spec{SL: 15}.RTRAddress("InfiniBand", false)
	if err != nil || a != (RTRAddress{SL: 15}) {
		t.Errorf("InfiniBand: %+v %v", a, err)
	}
	if _, err := (Spec{TrafficClass: 8}).RTRAddress("InfiniBand", false); err == nil || !strings.Contains(err.Error(), "--tclass 8 on InfiniBand") {
		t.Errorf("a traffic class without a GRH: %v", err)
	}
	for _, s := range []Spec{{SL: 16}, {SL: -1}, {TrafficClass: 256}, {TrafficClass: -1}} {
		if _, err := s.RTRAddress("Ethernet", false); err == nil {
			t.Errorf("%+v: no error", s)
		}
	}
}
