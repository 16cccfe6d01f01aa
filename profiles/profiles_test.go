package profiles

import (
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
	if strings.Join(names, ",") != "cx5,cx6,rxe" {
		t.Fatalf("profiles: %v", names)
	}
}

func TestDetect(t *testing.T) {
	for want, id := range map[string][3]any{
		"cx5": {"mlx5_core", uint32(0x02c9), uint32(4119)},
		"cx6": {"mlx5_core", uint32(0x02c9), uint32(4125)},
		"rxe": {"rxe", uint32(0xffffff), uint32(0)},
	} {
		p, err := Detect(id[0].(string), id[1].(uint32), id[2].(uint32))
		if err != nil || p.Name != want {
			t.Errorf("Detect(%v) = %q, %v; want %s", id, p.Name, err, want)
		}
	}
	if _, err := Detect("bnxt_re", 0x14e4, 5); err == nil || !strings.Contains(err.Error(), "--profile") {
		t.Fatalf("unknown NIC must say how to pick a profile: %v", err)
	}
}

func TestParseRefusesBadProfiles(t *testing.T) {
	good, _ := embedded.ReadFile("rxe.yaml")
	for want, bad := range map[string]string{
		"not on the grid": strings.Replace(string(good), "write: {msg_size_bytes: 65536, sq_depth: 128", "write: {msg_size_bytes: 65536, sq_depth: 100", 1),
		"ascending":       strings.Replace(string(good), "sq_depth: [8, 32, 128, 512]", "sq_depth: [512, 8, 32, 128]", 1),
		"field":           string(good) + "\nbogus: 1\n",
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
