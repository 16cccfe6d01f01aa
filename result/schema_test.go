package result_test

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/result"
)

func ramp(n int) []int64 {
	s := make([]int64, n)
	for i := range s {
		s[i] = int64(i+1) * 1000
	}
	return s
}

func TestSchemaAcceptsAResultAndRefusesDrift(t *testing.T) {
	for _, n := range []int{3, 1000} { // percentiles null, and p99 set
		l, h, _ := result.NewLatency(result.FromSamples(ramp(n)))
		r := result.Result{SchemaVersion: result.SchemaVersion, Config: result.Config{Op: "write", Test: result.BW, MsgSizeBytes: 64, SQDepth: 1, PostList: 1, CQMod: 1, NumQPs: 1},
			LatKind: "completion_under_load", Clock: "tsc", ClockNote: "TSC: constant and nonstop", ClockBackwards: 2, Lat: l, Histogram: h,
			Verify: &result.Verify{Side: "server", Slots: 4, CheckedBytes: 256, OK: true, FirstBadOffset: -1}}
		var buf bytes.Buffer
		result.WriteJSON(&buf, r)
		if err := result.Validate(buf.Bytes()); err != nil {
			t.Fatalf("%d samples: a result must validate: %v", n, err)
		}
		fan := r
		fan.Config.Peers, fan.Config.Sync, fan.LatKind = 2, "rounds", "round"
		fan.Fan = &result.Fan{JainFairness: 0.98, MinPeerGbps: 1, Rounds: 7, RegisteredBytes: 4096, ServerRegisteredBytes: 4096,
			Peers: []result.Peer{{Server: "a:18515", Messages: 7, Bytes: 448, DurationNS: 100, BWGbps: 1, Lat: l, Verify: r.Verify}, {Server: "b:18515", Lat: l}}}
		var fb bytes.Buffer
		result.WriteJSON(&fb, fan)
		if err := result.Validate(fb.Bytes()); err != nil {
			t.Fatalf("%d samples: a fan result must validate: %v", n, err)
		}
		if err := result.Validate(bytes.Replace(fb.Bytes(), []byte(`"jain_fairness"`), []byte(`"fairness"`), 1)); err == nil {
			t.Fatal("a fan result without jain_fairness must fail validation")
		}
		mr := r
		mr.Config.MR, mr.Config.MRCache = "cache", 16
		mr.DurationNS = 1000
		mr.MR = &result.MRRun{Mode: "cache", Regs: 4, Deregs: 4, DeregsAfterWindow: 4, Hits: 996, Misses: 4, RegNSTotal: 40, DeregNSTotal: 0}
		mr.MR.SetShare(mr.DurationNS)
		var mb bytes.Buffer
		result.WriteJSON(&mb, mr)
		if err := result.Validate(mb.Bytes()); err != nil || mr.MR.WindowShare != 0.04 {
			t.Fatalf("%d samples: a result with mr must validate: %v (share %v)", n, err, mr.MR.WindowShare)
		}
		for _, drift := range []string{`"window_share"`, `"mr_cache": 16`} {
			bad := bytes.Replace(mb.Bytes(), []byte(drift), []byte(strings.Replace(drift, "_", "-", 1)), 1)
			if err := result.Validate(bad); err == nil {
				t.Fatalf("a result with mr must fail validation with %s renamed", drift)
			}
		}
		for _, drift := range []string{
			strings.Replace(buf.String(), `"bw_gbit_per_s"`, `"bw_gbps"`, 1),
			strings.Replace(buf.String(), `"clock_backwards_samples"`, `"samples_dropped"`, 1),
			strings.Replace(buf.String(), `"schema_version": 3`, `"schema_version": 1`, 1),
		} {
			if err := result.Validate([]byte(drift)); err == nil {
				t.Fatalf("drift must fail validation:\n%s", drift)
			}
		}
	}
}

// What the readers return is a result of the schema, whatever the form it came in
// (CSV gives the columns it has; the rest is zero, which the schema allows).
func TestEveryFormReadsBackIntoTheSchema(t *testing.T) {
	for _, file := range []string{"testdata/results.ndjson", "testdata/results.csv"} {
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		rs, err := result.ReadAll(f)
		f.Close()
		if err != nil || len(rs) != 3 {
			t.Fatalf("%s: %d results, %v", file, len(rs), err)
		}
		for i, r := range rs {
			var buf bytes.Buffer
			result.WriteJSON(&buf, r)
			if err := result.Validate(buf.Bytes()); err != nil {
				t.Errorf("%s: result %d does not validate: %v\n%s", file, i, err, buf.Bytes())
			}
		}
	}
}

// Every results fixture in the repository is what the schema describes: the readers
// refuse anything else, so a fixture that drifted would test nothing.
func TestFixturesPassTheSchema(t *testing.T) {
	for _, file := range []string{"testdata/results.ndjson", "../report/html/testdata/gen1.ndjson", "../report/html/testdata/gen2.ndjson", "../report/html/testdata/demo4-sweep.ndjson"} {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
			if err := result.Validate(line); err != nil {
				t.Errorf("%s line %d: %v", file, i+1, err)
			}
		}
	}
}

// A reader refuses a record the schema rejects, naming the field (finding 9 of the
// hostile-peers review: the readers took what the schema refused).
func TestReadersRefuseWhatTheSchemaRejects(t *testing.T) {
	data, err := os.ReadFile("testdata/results.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	good := string(bytes.SplitN(data, []byte("\n"), 2)[0])
	for _, tc := range []struct{ from, to, field string }{
		{`"op":"write"`, `"op":"send"`, "field /config/op"},
		{`"bw_gbit_per_s":`, `"bw_gbit_per_s":-1,"x":`, "field /bw_gbit_per_s"},
		{`"tainted":false`, `"tainted":"no"`, "tainted"},
		{`"iterations_done":`, `"iterations_done_":`, "iterations_done"},
	} {
		bad := strings.Replace(good, tc.from, tc.to, 1)
		if bad == good {
			t.Fatalf("the fixture has no %s", tc.from)
		}
		_, err := result.ReadAll(strings.NewReader(bad))
		if err == nil || !strings.Contains(err.Error(), tc.field) || !strings.Contains(err.Error(), "line 1") {
			t.Errorf("%s: want the reader to refuse it naming %s, got %v", tc.to, tc.field, err)
		}
	}
}
