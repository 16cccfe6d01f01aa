package counters

import (
	"errors"
	"net"
	"slices"
	"strings"
	"testing"
)

// The drivers' names, classed by pattern: pause frames (not their durations or
// transitions), the port's discards and errors, ECN marks; per-queue and host-stack
// counters, packet counts and FEC-corrected bits are info.
func TestEthtoolClass(t *testing.T) {
	for _, c := range []struct {
		class Class
		names string
	}{
		{Pause, "rx_pause_ctrl_phy tx_pause_ctrl_phy rx_prio3_pause tx_prio3_pause rx_global_pause rx_pause_frames " +
			"tx_pfc_frames rx_pfc_ena_frames_pri3 rx_pfc_xon2xoff_frames_pri3 continuous_pause_events link_xoff_rx.nic " +
			"rx_priority_3_xoff.nic tx_priority_3_xoff.nic port.link_xoff_rx"},
		{Error, "rx_discards_phy tx_discards_phy rx_crc_errors_phy rx_symbol_err_phy tx_errors_phy link_down_events_phy " +
			"rx_prio3_buf_discard rx_prio3_cong_discard tx_pause_storm_error_events rx_stat_discard tx_stat_error " +
			"rx_fcs_err_frames rx_discard_packets_cos3 rx_fec_uncorrectable_blocks rx_dropped.nic rx_crc_errors.nic " +
			"illegal_bytes.nic tx_dropped_link_down.nic port.rx_dropped mac_local_faults.nic"},
		{Congestion, "rx_prio3_marked"},
		{Info, "rx_packets tx_queue_dropped rx_xdp_drop rx_wqe_err rx_out_of_buffer rx_packets_phy rx_corrected_bits_phy " +
			"rx_err_lane_0_phy rx_prio3_pause_duration rx_prio3_pause_transition pfc_pri3_rx_duration_us pfc_pri3_rx_transitions " +
			"resume_pause_events rx_fec_corrected_blocks [0]:_rx_discards rx0_xdp_drop tx1_dropped ch0_events " +
			"rx_queue_0_drops tx_queue_0_xdp_xmit_errors rx_dropped rx_priority_3_xon.nic peer_ifindex rx_total_discard_pkts"},
	} {
		for _, n := range strings.Fields(c.names) {
			n = strings.ReplaceAll(n, "_rx_discards", " rx_discards") // "[0]: rx_discards"
			if got := EthtoolClass(n); got != c.class {
				t.Errorf("EthtoolClass(%q) = %s, want %s", n, got, c.class)
			}
		}
	}
	for _, n := range []string{"rx_pause_ctrl_phy", "rx_prio3_pause", "link_xoff_rx.nic", "rx_pfc_ena_frames_pri3", "port.link_xoff_rx"} {
		if !PauseReceived(n) {
			t.Errorf("%s counts pauses received", n)
		}
	}
	for _, n := range []string{"tx_pause_ctrl_phy", "tx_prio3_pause", "link_xoff_tx.nic", "continuous_pause_events"} {
		if PauseReceived(n) {
			t.Errorf("%s does not count pauses received", n)
		}
	}
}

// Each driver's recorded statistics: the judged ones are kept, in the ethtool scope,
// and nothing per queue.
func TestEthtoolFixtures(t *testing.T) {
	for _, c := range []struct {
		root, dev string
		kept      int
		some      []string
	}{
		{"testdata/mlx5", "mlx5_1", 26, []string{"rx_pause_ctrl_phy", "tx_prio3_pause", "rx_discards_phy", "rx_prio3_marked", "tx_pause_storm_error_events"}},
		{"testdata/cx7", "mlx5_0", 26, []string{"rx_pause_ctrl_phy"}},
		{"testdata/bnxt_re", "bnxt_re0", 26, []string{"rx_pause_frames", "rx_pfc_ena_frames_pri3", "rx_discard_packets_cos3", "rx_stat_discard"}},
		{"testdata/irdma", "irdma0", 18, []string{"link_xoff_rx.nic", "rx_priority_3_xoff.nic", "rx_dropped.nic"}},
	} {
		s, err := Take(c.root, c.dev, 1)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, k := range s.Counters {
			if k.Scope == Ethtool {
				names = append(names, k.Name)
				if k.Status != OK || k.Value == nil || EthtoolClass(k.Name) == Info {
					t.Errorf("%s: %+v", c.root, k)
				}
			}
		}
		if len(names) != c.kept {
			t.Errorf("%s: %d ethtool counters kept, want %d: %v", c.root, len(names), c.kept, names)
		}
		for _, n := range c.some {
			if !slices.Contains(names, n) {
				t.Errorf("%s: %s not kept", c.root, n)
			}
		}
		for _, n := range names {
			if strings.HasPrefix(n, "[") || strings.Contains(n, "queue") || strings.HasPrefix(n, "ch0") {
				t.Errorf("%s: per-queue %s kept", c.root, n)
			}
		}
	}
	// A tree with no recorded statistics says so.
	s, err := Take("testdata/rxe-old", "rxe0", 1)
	if err != nil || !strings.Contains(strings.Join(s.Notes, "; "), "no ethtool statistics recorded for vethA") {
		t.Errorf("notes %q, %v", s.Notes, err)
	}
}

func TestReadEthtoolS(t *testing.T) {
	root := t.TempDir()
	write(t, root, "s", "NIC statistics:\n     rx_pause_ctrl_phy: 12\n     [3]: rx_discards: 4\n     garbage\n     x: -1\n     tx_prio3_pause: 18446744073709551615")
	got, err := ReadEthtoolS(root + "/s")
	want := []Stat{{"rx_pause_ctrl_phy", 12}, {"[3]: rx_discards", 4}, {"tx_prio3_pause", 1<<64 - 1}}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("got %v, %v", got, err)
	}
}

// The ioctl on this host's interfaces: statistics or errNoStats, never a crash or a
// nameless statistic.
func TestGStatsLive(t *testing.T) {
	ifs, err := net.Interfaces()
	if err != nil {
		t.Skip(err)
	}
	for _, i := range ifs {
		stats, err := gstats(i.Name)
		if err != nil && !errors.Is(err, errNoStats) {
			t.Logf("%s: %v", i.Name, err) // a driver may refuse; said, not fatal
			continue
		}
		for _, s := range stats {
			if s.Name == "" {
				t.Errorf("%s: a statistic without a name", i.Name)
			}
		}
		t.Logf("%s: %d statistics", i.Name, len(stats))
	}
	if _, err := gstats("no-such-netdev0"); err == nil {
		t.Error("an absent netdev must fail")
	}
}

// Packets: the first pair of packet counters a port has.
func TestPackets(t *testing.T) {
	d := func(kv ...any) Deltas {
		var out Deltas
		for i := 0; i < len(kv); i += 2 {
			v := kv[i+1].(int)
			u := uint64(v)
			out.Counters = append(out.Counters, Change{Name: kv[i].(string), Scope: HWPort, Status: OK, Delta: &u})
		}
		return out
	}
	for _, c := range []struct {
		d    Deltas
		want uint64
		ok   bool
	}{
		{d("port_xmit_packets", 100, "port_rcv_packets", 50, "sent_pkts", 7, "rcvd_pkts", 7), 150, true},
		{d("sent_pkts", 7, "rcvd_pkts", 8), 15, true},
		{d("tx_pkts", 1, "rx_pkts", 2), 3, true},
		{d("ip4OutPkts", 10, "ip4InPkts", 20, "ip6InPkts", 5), 35, true},
		{d("port_xmit_packets", 100), 0, false},
		{d(), 0, false},
	} {
		if got, ok := Packets(c.d); got != c.want || ok != c.ok {
			t.Errorf("%+v: %d %v, want %d %v", c.d.Counters, got, ok, c.want, c.ok)
		}
	}
}
