package profiles

import (
	"slices"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/counters"
)

func TestEmbeddedProfilesParse(t *testing.T) {
	all, err := All()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range all {
		names = append(names, p.Name)
	}
	if strings.Join(names, ",") != "bnxt_re,cx5,cx6,cx7,efa,irdma,rxe" {
		t.Fatalf("profiles: %v", names)
	}
}

func TestDetect(t *testing.T) {
	for want, id := range map[string][3]any{
		"cx5":     {"mlx5_core", uint32(0x02c9), uint32(4119)},
		"cx6":     {"mlx5_core", uint32(0x02c9), uint32(4125)},
		"rxe":     {"rxe", uint32(0xffffff), uint32(0)},
		"cx7":     {"mlx5_core", uint32(0x02c9), uint32(4129)},
		"bnxt_re": {"bnxt_en", uint32(0x14e4), uint32(0x1760)},
		"irdma":   {"ice", uint32(0x8086), uint32(0x1592)},
		"efa":     {"efa", uint32(0x1d0f), uint32(0xefa2)},
	} {
		p, err := Detect(id[0].(string), id[1].(uint32), id[2].(uint32))
		if err != nil || p.Name != want {
			t.Errorf("Detect(%v) = %q, %v; want %s", id, p.Name, err, want)
		}
	}
	// BlueField-3's ConnectX-7 port; an X722 under i40e; libibverbs' "unknown" driver.
	for want, id := range map[string][3]any{
		"cx7":     {"mlx5_core", uint32(0x02c9), uint32(41692)},
		"irdma":   {"i40e", uint32(0x8086), uint32(0x37d0)},
		"bnxt_re": {"unknown", uint32(0x14e4), uint32(0x16d7)},
	} {
		p, err := Detect(id[0].(string), id[1].(uint32), id[2].(uint32))
		if err != nil || p.Name != want {
			t.Errorf("Detect(%v) = %q, %v; want %s", id, p.Name, err, want)
		}
	}
	// Parts with the profile of the closest generation (issue 35): ConnectX-8, cx7's;
	// the ConnectX family VF (0x101e) that cloud VMs show and BlueField-2, cx6's.
	for part, want := range map[uint32]string{4131: "cx7", 4126: "cx6", 41686: "cx6"} {
		if p, err := Detect("mlx5_core", 0x02c9, part); err != nil || p.Name != want {
			t.Errorf("Detect(mlx5_core, part %d) = %q, %v; want %s", part, p.Name, err, want)
		}
	}
	if _, err := Detect("bnxt_re", 0x14e4, 5); err == nil || !strings.Contains(err.Error(), "--profile") {
		t.Fatalf("unknown NIC must say how to pick a profile: %v", err)
	}
	// The right IDs under another driver are not that NIC.
	if p, err := Detect("mlx5_core", 0x14e4, 0x1760); err == nil {
		t.Fatalf("bnxt IDs under mlx5_core matched %s", p.Name)
	}
}

// Each part's nominal rate is its model's; a part no model lists takes the profile's.
func TestModelRates(t *testing.T) {
	for _, c := range []struct {
		profile string
		part    uint32
		model   string // "" when no model lists the part
		gbps    float64
	}{
		{"cx6", 4123, "ConnectX-6", 200},
		{"cx6", 4124, "ConnectX-6 VF", 200},
		{"cx6", 4125, "ConnectX-6 Dx", 100},
		{"cx6", 4127, "ConnectX-6 Lx", 50},
		{"cx7", 4129, "ConnectX-7", 400},
		{"cx7", 41692, "BlueField-3 (ConnectX-7)", 200},
		{"cx7", 4131, "ConnectX-8", 800},
		{"cx6", 4126, "ConnectX family VF", 25},
		{"cx6", 41686, "BlueField-2 (ConnectX-6 Dx)", 100},
		{"bnxt_re", 0x16d7, "BCM57414", 25},
		{"bnxt_re", 0x1750, "BCM57508", 200},
		{"bnxt_re", 0x1751, "BCM57504", 200},
		{"bnxt_re", 0x1760, "BCM57608", 400},
		{"bnxt_re", 0x1807, "", 25}, // a VF
		{"irdma", 0x1592, "E810-C", 100},
		{"irdma", 0x159b, "E810-XXV", 25},
		{"irdma", 0x37d0, "X722", 10},
		{"irdma", 0x188b, "", 25}, // E823-C QSFP: the board decides
		{"efa", 0xefa1, "EFA (0xefa1)", 100},
		{"cx5", 4119, "", 100}, // no models: the profile's rate
		{"rxe", 0, "", 10},
	} {
		p, err := Load(c.profile)
		if err != nil {
			t.Fatal(err)
		}
		m, ok := p.Model(c.part)
		if ok != (c.model != "") || m.Name != c.model || p.LinkGbpsFor(c.part) != c.gbps {
			t.Errorf("%s part 0x%x: model %q (%v), %g Gb/s; want %q, %g", c.profile, c.part, m.Name, ok, p.LinkGbpsFor(c.part), c.model, c.gbps)
		}
	}
	for name, want := range map[string][2]float64{"cx6": {25, 200}, "cx7": {200, 800}, "bnxt_re": {10, 400}, "irdma": {1, 100},
		"efa": {100, 100}, "cx5": {100, 100}, "rxe": {10, 10}} {
		p, _ := Load(name)
		if lo, hi := p.LinkGbpsRange(); lo != want[0] || hi != want[1] {
			t.Errorf("%s: rates %g-%g, want %g-%g", name, lo, hi, want[0], want[1])
		}
	}
	// Every model of every profile has a name, parts its match lists, and a rate.
	all, _ := All()
	for _, p := range all {
		for _, m := range p.Models {
			for _, id := range m.PartIDs {
				if d, err := Detect(p.Match.Drivers[0], p.Match.VendorIDs[0], id); err != nil || d.Name != p.Name {
					t.Errorf("%s: model %s part 0x%x detects as %q: %v", p.Name, m.Name, id, d.Name, err)
				}
			}
		}
	}
}

func TestParseRefusesBadModels(t *testing.T) {
	good, _ := embedded.ReadFile("cx6.yaml")
	for want, bad := range map[string]string{
		"field speed not found":              strings.Replace(string(good), "{name: ConnectX-6 Lx,", "{speed: 1, name: ConnectX-6 Lx,", 1),
		"is not in match.vendor_part_ids":    strings.Replace(string(good), "part_ids: [4127]", "part_ids: [4127, 4129]", 1),
		"in both model ConnectX-6 and model": strings.Replace(string(good), "part_ids: [4124]", "part_ids: [4123]", 1),
		"needs a positive link_gbit_per_s":   strings.Replace(string(good), "part_ids: [4127], link_gbit_per_s: 50", "part_ids: [4127], link_gbit_per_s: 0", 1),
		"lists no part_ids":                  strings.Replace(string(good), "part_ids: [4127]", "part_ids: []", 1),
		"models[3] has no name":              strings.Replace(string(good), "name: ConnectX-6 Lx", `name: " "`, 1),
	} {
		if _, err := Parse([]byte(bad), "test"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want an error containing %q, got %v", want, err)
		}
	}
}

func TestParseRefusesBadProfiles(t *testing.T) {
	good, _ := embedded.ReadFile("rxe.yaml")
	for want, bad := range map[string]string{
		"not on the grid": strings.Replace(string(good), "write: {msg_size_bytes: 65536, sq_depth: 128", "write: {msg_size_bytes: 65536, sq_depth: 100", 1),
		"ascending":       strings.Replace(string(good), "sq_depth: [8, 32, 128, 512]", "sq_depth: [512, 8, 32, 128]", 1),
		"field":           string(good) + "\nbogus: 1\n",
		// plan.Point can hold every dimension; a start holds the swept ones.
		"start sets mtu_bytes, peers": strings.Replace(string(good), "write: {msg_size_bytes: 65536,", "write: {mtu_bytes: 1024, peers: 1, msg_size_bytes: 65536,", 1),
		// A 0 would be measured as perftest's default and recorded as 0.
		"cq_mod 0: want 1 to": strings.Replace(string(good), "cq_mod: [1, 8, 64]", "cq_mod: [0, 8, 64]", 1),
	} {
		if _, err := Parse([]byte(bad), "test"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want an error containing %q, got %v", want, err)
		}
	}
}

func TestCounterClasses(t *testing.T) {
	for name, want := range map[string]map[string]counters.Class{
		"rxe": {"retry_exceeded_err": counters.Error, "rcvd_rnr_err": counters.Congestion, "sent_pkts": counters.Sanity,
			"ack_deffered": counters.Info, "rx_dropped": counters.Info, "nonesuch": counters.Info},
		"cx6": {"out_of_sequence": counters.Error, "np_cnp_sent": counters.Congestion, "port_xmit_data": counters.Sanity,
			"symbol_error": counters.Error, "rx_dropped": counters.Info, "lifespan": counters.Info},
		"cx5": {"rp_cnp_handled": counters.Congestion, "rx_write_requests": counters.Sanity, "local_ack_timeout_err": counters.Error},
		"cx7": {"out_of_sequence": counters.Error, "np_ecn_marked_roce_packets": counters.Congestion, "port_rcv_data": counters.Sanity},
		"bnxt_re": {"to_retransmits": counters.Error, "seq_err_naks_rcvd": counters.Error, "rx_roce_discards": counters.Error,
			"rnr_naks_rcvd": counters.Congestion, "rx_ecn_marked_pkts": counters.Congestion, "tx_bytes": counters.Sanity,
			"recoverable_errors": counters.Info, "active_qps": counters.Info},
		"irdma": {"ip4InDiscards": counters.Error, "RetransSegs": counters.Error, "cnpSent": counters.Congestion,
			"RxECNMrkd": counters.Congestion, "InRdmaWrites": counters.Sanity, "ip6InPkts": counters.Info},
		"efa": {"retrans_timeout_events": counters.Error, "impaired_remote_conn_events": counters.Error, "rx_drops": counters.Congestion,
			"retrans_pkts": counters.Congestion, "rdma_read_bytes": counters.Sanity, "send_bytes": counters.Info},
	} {
		p, err := Load(name)
		if err != nil {
			t.Fatal(err)
		}
		c := p.CounterClasses()
		for _, k := range counters.Classes[:3] {
			if len(p.Counters[string(k)]) == 0 {
				t.Errorf("%s lists no %s counters", name, k)
			}
		}
		for n, k := range want {
			if c.Of(n) != k {
				t.Errorf("%s: %s is %s, want %s", name, n, c.Of(n), k)
			}
		}
	}
}

func TestParseRefusesBadCounters(t *testing.T) {
	good, _ := embedded.ReadFile("rxe.yaml")
	for want, bad := range map[string]string{
		`unknown counter class "errors"`:           strings.Replace(string(good), "  error: [", "  errors: [", 1),
		"send_err is in both error and congestion": strings.Replace(string(good), "congestion: [", "congestion: [send_err, ", 1),
		"sent_pkts is listed twice in sanity":      strings.Replace(string(good), "sanity: [sent_pkts,", "sanity: [sent_pkts, sent_pkts,", 1),
		"an empty name in info":                    strings.Replace(string(good), "info: [", `info: ["", `, 1),
		"rdma_sends is in both sanity and info":    strings.Replace(string(good), "sanity: [", "sanity: [rdma_sends, ", 1),
	} {
		if _, err := Parse([]byte(bad), "test"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want an error containing %q, got %v", want, err)
		}
	}
	// The section is optional: every counter is then info.
	i := strings.Index(string(good), "# Counter classes")
	p, err := Parse(good[:i], "test")
	if err != nil || p.CounterClasses().Of("send_err") != counters.Info {
		t.Errorf("no counters section: %v", err)
	}
}

func TestHuntSection(t *testing.T) {
	rxe, _ := embedded.ReadFile("rxe.yaml")
	good := []byte(strings.Replace(string(rxe), "hunt:\n  qp_timeout: [14, 20]\n", "", 1))
	if p, err := Parse(rxe, "rxe"); err != nil || p.Hunt == nil || !slices.Equal(p.Hunt.QPTimeout, []int{14, 20}) {
		t.Fatalf("rxe's hunt section: %v, %+v", err, p.Hunt)
	}
	with := func(section string) []byte { return append(slices.Clone(good), []byte("\n"+section)...) }
	p, err := Parse(with("hunt:\n  low_throughput: 0.4\n  tail_ratio: 8\n  num_qps: [1, 4]\n  mtu_bytes: [1024]\n"), "test")
	if err != nil {
		t.Fatal(err)
	}
	if h := p.Hunt; h == nil || h.LowThroughput != 0.4 || h.TailRatio != 8 || !slices.Equal(h.NumQPs, []int{1, 4}) || !slices.Equal(h.MTUBytes, []int{1024}) {
		t.Errorf("hunt section read as %+v", p.Hunt)
	}
	if p, err := Parse(good, "test"); err != nil || p.Hunt != nil {
		t.Errorf("no hunt section: %v, %+v", err, p.Hunt)
	}
	for want, bad := range map[string]string{
		"low_throughput 1.5":       "hunt:\n  low_throughput: 1.5\n",
		"unfair_ratio -0.1":        "hunt:\n  unfair_ratio: -0.1\n",
		"tail_ratio 0.5":           "hunt:\n  tail_ratio: 0.5\n",
		"num_qps values must be":   "hunt:\n  num_qps: [4, 1]\n",
		"mtu_bytes 1500":           "hunt:\n  mtu_bytes: [1500]\n",
		"qp_timeout 40":            "hunt:\n  qp_timeout: [40]\n",
		"field nonesuch not found": "hunt:\n  nonesuch: 1\n",
	} {
		if _, err := Parse(with(bad), "test"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: want an error containing %q, got %v", bad, want, err)
		}
	}
}
