package counters_test

import (
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/counters"
	"github.com/rdmabench/rdmabench/profiles"
)

// fixtures are the counter trees and the profile of each one's NIC.
var fixtures = []struct{ root, dev, profile string }{
	{"testdata/rxe-6.1", "rxe0", "rxe"},
	{"testdata/rxe-old", "rxe0", "rxe"},
	{"testdata/mlx5", "mlx5_1", "cx6"},
	{"testdata/mlx5", "mlx5_1", "cx5"},
	{"testdata/cx7", "mlx5_0", "cx7"},
	{"testdata/bnxt_re", "bnxt_re0", "bnxt_re"},
	{"testdata/irdma", "irdma0", "irdma"},
	{"testdata/efa", "efa_0", "efa"},
}

func takeWith(t *testing.T, root, dev, profile string) (counters.Snapshot, profiles.Profile) {
	t.Helper()
	s, err := counters.Take(root, dev, 1)
	if err != nil {
		t.Fatal(err)
	}
	p, err := profiles.Load(profile)
	if err != nil {
		t.Fatal(err)
	}
	return s, p
}

// Every counter of each fixture is named by its NIC's profile (info counts as named
// only when listed), so a class is a decision, not a default. The ethtool statistics
// are classed by their names' patterns (EthtoolClass), not by profiles.
func TestProfilesNameEveryFixtureCounter(t *testing.T) {
	for _, c := range fixtures {
		s, p := takeWith(t, c.root, c.dev, c.profile)
		cl := p.CounterClasses()
		for _, k := range s.Counters {
			if _, ok := cl[k.Name]; !ok && k.Scope != counters.Ethtool {
				t.Errorf("%s: profile %s does not name %s (%s)", c.root, c.profile, k.Name, k.Scope)
			}
		}
	}
}

// Every error, congestion and sanity counter the newer profiles name is in their
// fixture, spelled as the driver spells it: a misspelt name would never be judged.
func TestProfilesCountersExistInFixtures(t *testing.T) {
	for _, c := range fixtures {
		if strings.HasPrefix(c.profile, "rxe") || c.profile == "cx5" {
			continue // their lists span kernel versions no single fixture has
		}
		s, p := takeWith(t, c.root, c.dev, c.profile)
		have := map[string]bool{}
		for _, k := range s.Counters {
			have[k.Name] = true
		}
		for _, class := range counters.Classes[:3] {
			for _, n := range p.Counters[string(class)] {
				if !have[n] {
					t.Errorf("%s: profile %s's %s counter %s is not in the fixture", c.root, c.profile, class, n)
				}
			}
		}
	}
}

// The new fixtures read as their NICs show them.
func TestNewFixtures(t *testing.T) {
	for _, c := range []struct {
		root, dev, netdev string
		gbps              float64
		hwPort, hwDevice  int
		notes             string
	}{
		{"testdata/cx7", "mlx5_0", "ens2f0np0", 400, 29, 0, ""},
		{"testdata/bnxt_re", "bnxt_re0", "ens3f0np0", 400, 92, 0, "no PMA port counters"},
		{"testdata/irdma", "irdma0", "ens801f0np0", 100, 46, 0, "no PMA port counters"},
		{"testdata/efa", "efa_0", "", 100, 22, 12, "no PMA port counters"},
	} {
		s, err := counters.Take(c.root, c.dev, 1)
		if err != nil {
			t.Fatal(err)
		}
		n := map[counters.Scope]int{}
		for _, k := range s.Counters {
			n[k.Scope]++
			if k.Status != counters.OK && k.Name != "port_xmit_wait" { // N/A in the mlx5 tree cx7's copies
				t.Errorf("%s: %s %s", c.root, k.Name, k.Status)
			}
		}
		if s.State != "ACTIVE" || s.RateGbps != c.gbps || s.Netdev != c.netdev || n[counters.HWPort] != c.hwPort || n[counters.HWDevice] != c.hwDevice ||
			s.Lifespan == 0 || !strings.Contains(strings.Join(s.Notes, "; "), c.notes) {
			t.Errorf("%s: state %s, %g Gb/s, netdev %q, %d hw_port and %d hw_device counters, notes %q", c.root, s.State, s.RateGbps, s.Netdev,
				n[counters.HWPort], n[counters.HWDevice], s.Notes)
		}
	}
}

// A moved error or congestion counter is flagged with its class; moved sanity and info
// counters are not.
func TestNewProfilesFlagMovedCounters(t *testing.T) {
	for _, c := range []struct {
		root, dev, profile string
		bump               map[string]uint64 // counter -> increase
		want               string            // the flags, in the snapshot's order
	}{
		{"testdata/cx7", "mlx5_0", "cx7", map[string]uint64{"out_of_sequence": 3, "np_cnp_sent": 40, "rx_write_requests": 1000},
			"congestion counter np_cnp_sent (hw_port) +40; error counter out_of_sequence (hw_port) +3"},
		{"testdata/bnxt_re", "bnxt_re0", "bnxt_re", map[string]uint64{"to_retransmits": 2, "rx_ecn_marked_pkts": 9, "tx_pkts": 500, "active_qps": 1},
			"congestion counter rx_ecn_marked_pkts (hw_port) +9 (18000 per million packets); error counter to_retransmits (hw_port) +2"},
		{"testdata/irdma", "irdma0", "irdma", map[string]uint64{"ip4InDiscards": 1, "cnpHandled": 5, "InRdmaWrites": 100, "ip6InPkts": 4},
			"congestion counter cnpHandled (hw_port) +5 (1250000 per million packets); error counter ip4InDiscards (hw_port) +1"},
		{"testdata/efa", "efa_0", "efa", map[string]uint64{"retrans_timeout_events": 1, "retrans_pkts": 7, "cmds_err": 1, "rdma_read_bytes": 65536, "keep_alive_rcvd": 1},
			"congestion counter retrans_pkts (hw_port) +7; error counter retrans_timeout_events (hw_port) +1; error counter cmds_err (hw_device) +1"},
	} {
		before, p := takeWith(t, c.root, c.dev, c.profile)
		after := before
		after.Counters = nil
		for _, k := range before.Counters {
			if d, ok := c.bump[k.Name]; ok {
				v := *k.Value + d
				k.Value = &v
			}
			after.Counters = append(after.Counters, k)
		}
		d, err := counters.Delta(before, after)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, f := range counters.Classify(p.CounterClasses(), d) {
			got = append(got, f.String())
		}
		if strings.Join(got, "; ") != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.root, strings.Join(got, "; "), c.want)
		}
	}
}
