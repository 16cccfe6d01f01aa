package bench

import (
	"slices"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/counters"
	"github.com/rdmabench/rdmabench/result"
)

// run is one side's counters over a run: the fixture tree read twice, the second
// time with bump added to the named counters (any scope).
func run(t *testing.T, root, dev string, bump map[string]uint64) *counters.Deltas {
	t.Helper()
	before, err := counters.Take("../counters/testdata/"+root, dev, 1)
	if err != nil {
		t.Fatal(err)
	}
	after := before
	after.Counters = nil
	for _, c := range before.Counters {
		if d, ok := bump[c.Name]; ok && c.Value != nil {
			v := *c.Value + d
			c.Value = &v
			delete(bump, c.Name)
		}
		after.Counters = append(after.Counters, c)
	}
	for n := range bump {
		t.Fatalf("%s has no counter %s", root, n)
	}
	d, err := counters.Delta(before, after)
	if err != nil {
		t.Fatal(err)
	}
	return &d
}

// The taint verdicts on recorded counter trees of ConnectX-6 (mlx5), BCM57608
// (bnxt_re), E810 (irdma) and Soft-RoCE: errors and discards taint; congestion is
// reported per million packets and does not; pause frames mark the run paused, and
// taint when the side that sends the data received them.
func TestTaintVerdicts(t *testing.T) {
	cx6 := result.Device{Name: "mlx5_1", Driver: "mlx5_core", VendorID: 0x02c9, VendorPartID: 4125, LinkLayer: "Ethernet"}
	bnxt := result.Device{Name: "bnxt_re0", Driver: "bnxt_en", VendorID: 0x14e4, VendorPartID: 0x1760, LinkLayer: "Ethernet"}
	e810 := result.Device{Name: "irdma0", Driver: "ice", VendorID: 0x8086, VendorPartID: 0x1592, LinkLayer: "Ethernet"}
	rxe := result.Device{Name: "rxe0", Driver: "rxe", VendorID: 0xffffff, LinkLayer: "Ethernet"}
	// A healthy CX-6 WRITE: a million packets each way, DCQCN at work (CNPs, ECN marks).
	healthy := func() map[string]uint64 {
		return map[string]uint64{"port_xmit_packets": 1000000, "port_rcv_packets": 1000000, "port_xmit_data": 16 << 20,
			"np_cnp_sent": 1200, "rp_cnp_handled": 900, "np_ecn_marked_roce_packets": 1500, "rx_write_requests": 2000}
	}
	with := func(m map[string]uint64, kv ...any) map[string]uint64 {
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = uint64(kv[i+1].(int))
		}
		return m
	}
	for _, c := range []struct {
		name           string
		op             string
		test           result.Test
		dev            result.Device
		root, rdma     string
		client, server map[string]uint64
		tainted        bool
		paused         bool
		flags          string // the flags, each "side class counter taints"
	}{
		{"cx6 healthy with CNPs", "write", result.BW, cx6, "mlx5", "mlx5_1", healthy(), healthy(), false, false,
			"local congestion np_cnp_sent -, local congestion np_ecn_marked_roce_packets -, local congestion rp_cnp_handled -, " +
				"remote congestion np_cnp_sent -, remote congestion np_ecn_marked_roce_packets -, remote congestion rp_cnp_handled -"},
		{"cx6 pauses received by the WRITE's sender", "write", result.BW, cx6, "mlx5", "mlx5_1",
			with(map[string]uint64{}, "rx_pause_ctrl_phy", 40, "rx_prio3_pause", 40), with(map[string]uint64{}, "tx_prio3_pause", 40), true, true,
			"local pause rx_pause_ctrl_phy taints, local pause rx_prio3_pause taints, remote pause tx_prio3_pause -"},
		{"cx6 pauses received by the WRITE's receiver", "write", result.BW, cx6, "mlx5", "mlx5_1",
			with(map[string]uint64{}, "tx_prio3_pause", 7), with(map[string]uint64{}, "rx_prio3_pause", 7), false, true,
			"local pause tx_prio3_pause -, remote pause rx_prio3_pause -"},
		{"cx6 pauses received by the READ's responder", "read", result.BW, cx6, "mlx5", "mlx5_1",
			nil, with(map[string]uint64{}, "rx_prio3_pause", 7), true, true, "remote pause rx_prio3_pause taints"},
		{"cx6 pauses in a latency test", "write", result.Lat, cx6, "mlx5", "mlx5_1",
			nil, with(map[string]uint64{}, "rx_prio3_pause", 1), true, true, "remote pause rx_prio3_pause taints"},
		{"cx6 discards", "write", result.BW, cx6, "mlx5", "mlx5_1", with(healthy(), "rx_discards_phy", 3), nil, true, false,
			"local congestion np_cnp_sent -, local congestion np_ecn_marked_roce_packets -, local congestion rp_cnp_handled -, local error rx_discards_phy taints"},
		{"bnxt_re PFC to the sender", "write", result.BW, bnxt, "bnxt_re", "bnxt_re0",
			with(map[string]uint64{}, "rx_pfc_ena_frames_pri3", 12, "rx_pfc_frames", 12), nil, true, true,
			"local pause rx_pfc_ena_frames_pri3 taints, local pause rx_pfc_frames taints"},
		{"bnxt_re CoS discards", "read", result.BW, bnxt, "bnxt_re", "bnxt_re0",
			with(map[string]uint64{}, "rx_discard_packets_cos3", 2, "rx_ecn_marked_pkts", 5), nil, true, false,
			"local congestion rx_ecn_marked_pkts -, local error rx_discard_packets_cos3 taints"},
		{"irdma XOFF to the sender, and CNPs", "write", result.BW, e810, "irdma", "irdma0",
			with(map[string]uint64{}, "link_xoff_rx.nic", 3, "cnpHandled", 4), nil, true, true,
			"local congestion cnpHandled -, local pause link_xoff_rx.nic taints"},
		{"irdma port drops", "write", result.BW, e810, "irdma", "irdma0", with(map[string]uint64{}, "rx_dropped.nic", 1), nil, true, false,
			"local error rx_dropped.nic taints"},
		{"Soft-RoCE RNR NAKs", "write", result.BW, rxe, "rxe-6.1", "rxe0",
			with(map[string]uint64{}, "sent_pkts", 1000, "rcvd_pkts", 1000, "rcvd_rnr_err", 2), with(map[string]uint64{}, "sent_pkts", 1000, "rcvd_pkts", 1000), false, false,
			"local congestion rcvd_rnr_err -"},
		{"Soft-RoCE retries", "write", result.BW, rxe, "rxe-6.1", "rxe0",
			with(map[string]uint64{}, "sent_pkts", 1000, "rcvd_pkts", 1000, "retry_exceeded_err", 1), with(map[string]uint64{}, "sent_pkts", 1000, "rcvd_pkts", 1000), true, false,
			"local error retry_exceeded_err taints"},
	} {
		r := &result.Result{Config: result.Config{Op: c.op, Test: c.test}, Iterations: 2000}
		r.Client, r.ServerDevice = c.dev, c.dev
		r.Client.Host, r.ServerDevice.Host = "a", "b"
		var local, remote *counters.Deltas
		if c.client != nil || c.server != nil {
			local, remote = run(t, c.root, c.rdma, c.client), run(t, c.root, c.rdma, c.server)
		}
		judge(r, "rx_"+c.op+"_requests", local, remote, nil)
		var got []string
		for _, f := range r.CountersFlags {
			taints := "-"
			if f.Taints {
				taints = "taints"
			}
			got = append(got, f.Side+" "+string(f.Class)+" "+f.Counter+" "+taints)
		}
		if r.Tainted != c.tainted || r.Paused != c.paused || strings.Join(got, ", ") != c.flags {
			t.Errorf("%s: tainted %v paused %v, flags\n got %s\nwant %s", c.name, r.Tainted, r.Paused, strings.Join(got, ", "), c.flags)
		}
		if !slices.Contains(r.Counters.Notes, PortWideNote) {
			t.Errorf("%s: notes %q", c.name, r.Counters.Notes)
		}
		for _, f := range r.CountersFlags {
			if f.Class == counters.Congestion && f.Side == "local" && c.dev.Name == "mlx5_1" && f.PerMillionPkts == nil {
				t.Errorf("%s: %s has no rate", c.name, f)
			}
		}
	}
}

// A congestion counter's rate is per million of the same port's packets: 1200 CNPs
// over 2,000,000 packets is 600 per million.
func TestCongestionPerMillion(t *testing.T) {
	cx6 := result.Device{Name: "mlx5_1", Driver: "mlx5_core", VendorID: 0x02c9, VendorPartID: 4125, LinkLayer: "Ethernet", Host: "a"}
	r := &result.Result{Config: result.Config{Op: "write", Test: result.BW}, Client: cx6}
	judge(r, "rx_write_requests", run(t, "mlx5", "mlx5_1", map[string]uint64{"port_xmit_packets": 1500000, "port_rcv_packets": 500000, "np_cnp_sent": 1200}), nil, nil)
	if len(r.CountersFlags) != 1 || r.Tainted || r.CountersFlags[0].PerMillionPkts == nil || *r.CountersFlags[0].PerMillionPkts != 600 {
		t.Fatalf("%+v", r.CountersFlags)
	}
	if s := r.CountersFlags[0].String(); s != "local congestion counter np_cnp_sent (hw_port) +1200 (600 per million packets)" {
		t.Error(s)
	}
}
