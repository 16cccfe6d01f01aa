package result_test

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/result"
)

// csvBase is a result of what the base columns carry, as CSV gives it back.
func csvBase(op string) result.Result {
	return result.Result{SchemaVersion: result.SchemaVersion, Config: result.Config{Op: op, Test: result.BW, MsgSizeBytes: 65536, NumQPs: 1, SQDepth: 128, PostList: 1, CQMod: 1},
		LatKind: "completion_under_load"}
}

// csvParts are results with each part the later columns carry (in) and what CSV gives
// back of them (back), with the cells they write.
func csvParts() (in, back []result.Result, cells []map[string]string) {
	add := func(r, b result.Result, c map[string]string) {
		in, back, cells = append(in, r), append(back, b), append(cells, c)
	}
	peer := result.Peer{Server: "10.0.0.2:18515", Messages: 10, Bytes: 655360, BWGbps: 1.5}

	r, b := csvBase("write"), csvBase("write")
	r.Config.Peers, r.Config.Sync, b.Config.Peers, b.Config.Sync = 3, "stream", 3, "stream"
	r.Fan = &result.Fan{Peers: []result.Peer{peer, peer, peer}, MinPeerGbps: 1.5, JainFairness: 0.875, Fairness: result.FairnessUneven,
		FairnessSpreadMessages: ptr(400.0), FairnessEdgeMessages: 257, RegisteredBytes: 1 << 20}
	b.Fan = &result.Fan{Peers: []result.Peer{}, MinPeerGbps: 1.5, JainFairness: 0.875, Fairness: result.FairnessUneven,
		FairnessSpreadMessages: r.Fan.FairnessSpreadMessages, FairnessEdgeMessages: 257} // 2 x sq_depth 128 + cq_mod 1
	add(r, b, map[string]string{"peers": "3", "sync": "stream", "landing": "", "fan_min_peer_gbit_per_s": "1.5",
		"fan_jain_fairness": "0.875", "fan_fairness": "uneven", "fan_fairness_spread_messages": "400", "mr_regs": "", "baseline_bw_gbit_per_s": "", "bw_sum_gbit_per_s": ""})

	r, b = csvBase("read"), csvBase("read")
	r.Config.Peers, r.Config.Sync, r.Config.Landing = 2, "rounds", "shared"
	b.Config = r.Config
	r.Fan = &result.Fan{Peers: []result.Peer{peer, peer}, MinPeerGbps: 0.5, JainFairness: 1, Rounds: 7}
	b.Fan = &result.Fan{Peers: []result.Peer{}, MinPeerGbps: 0.5, JainFairness: 1}
	add(r, b, map[string]string{"peers": "2", "sync": "rounds", "landing": "shared", "fan_jain_fairness": "1", "fan_fairness": "", "fan_fairness_spread_messages": ""})

	r, b = csvBase("write"), csvBase("write")
	r.Config.MR, b.Config.MR = "per-io", "per-io"
	r.MR = &result.MRRun{Mode: "per-io", Regs: 2000, Deregs: 2000, DeregsAfterWindow: 3, RegNSTotal: 900, DeregNSTotal: 100, WindowShare: 0.25}
	b.MR = &result.MRRun{Mode: "per-io", Regs: 2000, WindowShare: 0.25}
	add(r, b, map[string]string{"peers": "", "mr": "per-io", "mr_regs": "2000", "mr_hits": "0", "mr_misses": "0", "mr_window_share": "0.25", "fan_fairness": ""})

	r, b = csvBase("write"), csvBase("write")
	r.Config.MR, b.Config.MR = "cache", "cache"
	r.MR = &result.MRRun{Mode: "cache", Regs: 10, Deregs: 10, Hits: 1990, Misses: 10, WindowShare: 0.0125}
	b.MR = &result.MRRun{Mode: "cache", Regs: 10, Hits: 1990, Misses: 10, WindowShare: 0.0125}
	add(r, b, map[string]string{"mr": "cache", "mr_regs": "10", "mr_hits": "1990", "mr_misses": "10", "mr_window_share": "0.0125"})

	r, b = csvBase("read"), csvBase("read")
	r.Config.Baseline, b.Config.Baseline = "tcp", "tcp"
	r.Baseline = &result.Baseline{Transport: "tcp", Messages: 1000, Bytes: 65536000, DurationNS: 1e8, BWGbps: 5.24288, MsgRateMpps: 0.01, RDMAOverTCP: 2.5}
	b.Baseline = &result.Baseline{Transport: "tcp", BWGbps: 5.24288, RDMAOverTCP: 2.5}
	add(r, b, map[string]string{"baseline": "tcp", "baseline_bw_gbit_per_s": "5.24288", "rdma_over_tcp": "2.5", "baseline_error": ""})

	r, b = csvBase("write"), csvBase("write")
	r.Config.Baseline, b.Config.Baseline = "tcp", "tcp"
	r.Baseline = &result.Baseline{Transport: "tcp", Messages: 12, Bytes: 786432, DurationNS: 5e6, Error: "tcp baseline: connection reset, by peer"}
	b.Baseline = &result.Baseline{Transport: "tcp", Error: r.Baseline.Error}
	add(r, b, map[string]string{"baseline_bw_gbit_per_s": "0", "rdma_over_tcp": "0", "baseline_error": r.Baseline.Error})

	r, b = csvBase("write"), csvBase("write")
	r.Config.Bidirectional, b.Config.Bidirectional = true, true
	r.Config.QPTimeout, b.Config.QPTimeout = 20, 20
	r.Reverse = &result.Direction{Messages: 2000, Bytes: 131072000, DurationNS: 4e9, BWGbps: 0.25, MsgRateMpps: 0.0005}
	r.BWSumGbps, b.BWSumGbps = 0.5, 0.5
	b.Reverse = &result.Direction{BWGbps: 0.25}
	add(r, b, map[string]string{"bidirectional": "true", "qp_timeout": "20", "bw_sum_gbit_per_s": "0.5", "reverse_bw_gbit_per_s": "0.25", "baseline": "", "mr": "", "paused": "false"})

	// Paused (pause frames moved during the run), not tainted: a file from before the
	// column reads it as not paused.
	r, b = csvBase("read"), csvBase("read")
	r.Paused, b.Paused = true, true
	add(r, b, map[string]string{"paused": "true", "tainted": "false"})
	return in, back, cells
}

func csvRecords(t *testing.T, doc []byte) [][]string {
	t.Helper()
	recs, err := csv.NewReader(bytes.NewReader(doc)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func sameResults(t *testing.T, what string, got, want []result.Result) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d results, want %d", what, len(got), len(want))
	}
	for i := range got {
		a, _ := json.Marshal(got[i])
		b, _ := json.Marshal(want[i])
		if !bytes.Equal(a, b) {
			t.Errorf("%s: result %d:\n got %s\nwant %s", what, i, a, b)
		}
	}
}

// The fan summary, registration counts, TCP baseline and bidirectional sum have their
// cells, empty where the part is absent, and read back as what CSV carries of them; so
// does whether the run was paused.
func TestCSVCarriesTheOptionalParts(t *testing.T) {
	in, want, cells := csvParts()
	var doc bytes.Buffer
	if err := result.WriteCSV(&doc, in); err != nil {
		t.Fatal(err)
	}
	recs := csvRecords(t, doc.Bytes())
	for i, c := range cells {
		for name, cell := range c {
			col := slices.Index(result.CSVHeader, name)
			if col < 0 {
				t.Fatalf("no column %s", name)
			}
			if got := recs[i+1][col]; got != cell {
				t.Errorf("result %d: %s is %q, want %q", i, name, got, cell)
			}
		}
	}
	back, err := result.ReadAll(bytes.NewReader(doc.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	sameResults(t, "CSV read back", back, want)
	var again bytes.Buffer
	if err := result.WriteCSV(&again, back); err != nil || !bytes.Equal(again.Bytes(), doc.Bytes()) {
		t.Fatalf("CSV -> results -> CSV changed (%v):\n%s\n%s", err, again.Bytes(), doc.Bytes())
	}
	for i, r := range back {
		var js bytes.Buffer
		if err := result.WriteJSON(&js, r); err != nil {
			t.Fatal(err)
		}
		if err := result.Validate(js.Bytes()); err != nil {
			t.Errorf("result %d from CSV does not validate: %v\n%s", i, err, js.Bytes())
		}
	}
}

// A CSV from before the later columns (the same schema_version, the first 44 of them)
// still reads, without the parts it has no cells for; so does one of some of them.
func TestCSVReadsTheColumnsBefore(t *testing.T) {
	in, want, _ := csvParts()
	var doc bytes.Buffer
	if err := result.WriteCSV(&doc, in); err != nil {
		t.Fatal(err)
	}
	recs := csvRecords(t, doc.Bytes())
	cut := func(n int) []byte {
		var b bytes.Buffer
		w := csv.NewWriter(&b)
		for _, rec := range recs {
			w.Write(rec[:n])
		}
		w.Flush()
		return b.Bytes()
	}
	old := cut(44)
	if head, _, _ := strings.Cut(string(old), "\n"); head != strings.Join(result.CSVHeader[:44], ",") || !strings.HasSuffix(head, ",tainted") {
		t.Fatalf("old header: %s", head)
	}
	back, err := result.ReadAll(bytes.NewReader(old))
	if err != nil {
		t.Fatal(err)
	}
	base := make([]result.Result, len(want))
	for i, w := range want {
		base[i] = csvBase(w.Config.Op)
	}
	sameResults(t, "old CSV", back, base)

	// Up to qp_timeout: the config, none of the parts.
	some := slices.Index(result.CSVHeader, "qp_timeout") + 1
	back, err = result.ReadAll(bytes.NewReader(cut(some)))
	if err != nil {
		t.Fatal(err)
	}
	for i := range base {
		base[i].Config = want[i].Config
	}
	sameResults(t, "CSV up to qp_timeout", back, base)
}

func ptr[T any](v T) *T { return &v }
