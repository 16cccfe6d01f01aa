package counters

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestParseClass(t *testing.T) {
	for _, c := range Classes {
		if k, err := ParseClass(string(c)); err != nil || k != c {
			t.Errorf("%s: %v", c, err)
		}
	}
	if _, err := ParseClass("errors"); err == nil || !strings.Contains(err.Error(), "want error, congestion, sanity, info") {
		t.Errorf("bad class: %v", err)
	}
}

func TestClassify(t *testing.T) {
	cl := Classification{"retry_exceeded_err": Error, "np_cnp_sent": Congestion, "sent_pkts": Sanity, "rdma_sends": Info,
		"rx_dropped": Congestion, "out_of_sequence": Error, "link_downed": Error}
	before := snap(ok(HWPort, "retry_exceeded_err", 1), ok(HWPort, "np_cnp_sent", 5), ok(HWPort, "sent_pkts", 0),
		ok(HWPort, "rdma_sends", 0), ok(HWPort, "unknown_err", 0), ok(Netdev, "rx_dropped", 2), ok(HWPort, "out_of_sequence", 9),
		ok(HWPort, "link_downed", 0))
	after := snap(ok(HWPort, "retry_exceeded_err", 1), ok(HWPort, "np_cnp_sent", 12), ok(HWPort, "sent_pkts", 100),
		ok(HWPort, "rdma_sends", 4), ok(HWPort, "unknown_err", 3), ok(Netdev, "rx_dropped", 2), ok(HWPort, "out_of_sequence", 1),
		Counter{Name: "link_downed", Scope: HWPort, Status: NotAvailable, Text: "N/A"})
	d, _ := Delta(before, after)
	flags := Classify(cl, d)
	var got []string
	for _, f := range flags {
		got = append(got, f.String())
	}
	// Unchanged, info, sanity, unknown and not-available counters are not flagged.
	want := "congestion counter np_cnp_sent (hw_port) +7; error counter out_of_sequence (hw_port) backwards"
	if strings.Join(got, "; ") != want {
		t.Errorf("flags:\n got %s\nwant %s", strings.Join(got, "; "), want)
	}
	flags[0].Side = "remote"
	if flags[0].String() != "remote congestion counter np_cnp_sent (hw_port) +7" {
		t.Error(flags[0].String())
	}
	b, _ := json.Marshal(flags[0])
	if string(b) != `{"counter":"np_cnp_sent","scope":"hw_port","side":"remote","class":"congestion","unit":"count","status":"ok","delta":7}` {
		t.Errorf("JSON: %s", b)
	}
	if cl.Of("unknown_err") != Info || Classification(nil).Of("x") != Info {
		t.Error("unknown counters are info")
	}
	var sanity []string
	for _, c := range Select(cl, d, Sanity) {
		sanity = append(sanity, c.Name)
	}
	if strings.Join(sanity, ",") != "sent_pkts" {
		t.Errorf("sanity: %v", sanity)
	}
}
