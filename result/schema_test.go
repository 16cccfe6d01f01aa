package result_test

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/internal/schemacheck"
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
		if err := schemacheck.Validate(buf.Bytes()); err != nil {
			t.Fatalf("%d samples: a result must validate: %v", n, err)
		}
		fan := r
		fan.Config.Peers, fan.Config.Sync, fan.LatKind = 2, "rounds", "round"
		fan.Fan = &result.Fan{JainFairness: 0.98, MinPeerGbps: 1, Rounds: 7, RegisteredBytes: 4096, ServerRegisteredBytes: 4096,
			Peers: []result.Peer{{Server: "a:18515", Messages: 7, Bytes: 448, DurationNS: 100, BWGbps: 1, Lat: l, Verify: r.Verify}, {Server: "b:18515", Lat: l}}}
		var fb bytes.Buffer
		result.WriteJSON(&fb, fan)
		if err := schemacheck.Validate(fb.Bytes()); err != nil {
			t.Fatalf("%d samples: a fan result must validate: %v", n, err)
		}
		if err := schemacheck.Validate(bytes.Replace(fb.Bytes(), []byte(`"jain_fairness"`), []byte(`"fairness"`), 1)); err == nil {
			t.Fatal("a fan result without jain_fairness must fail validation")
		}
		mr := r
		mr.Config.MR, mr.Config.MRCache = "cache", 16
		mr.DurationNS = 1000
		mr.MR = &result.MRRun{Mode: "cache", Regs: 4, Deregs: 4, DeregsAfterWindow: 4, Hits: 996, Misses: 4, RegNSTotal: 40, DeregNSTotal: 0}
		mr.MR.SetShare(mr.DurationNS)
		var mb bytes.Buffer
		result.WriteJSON(&mb, mr)
		if err := schemacheck.Validate(mb.Bytes()); err != nil || mr.MR.WindowShare != 0.04 {
			t.Fatalf("%d samples: a result with mr must validate: %v (share %v)", n, err, mr.MR.WindowShare)
		}
		for _, drift := range []string{`"window_share"`, `"mr_cache": 16`} {
			bad := bytes.Replace(mb.Bytes(), []byte(drift), []byte(strings.Replace(drift, "_", "-", 1)), 1)
			if err := schemacheck.Validate(bad); err == nil {
				t.Fatalf("a result with mr must fail validation with %s renamed", drift)
			}
		}
		for _, drift := range []string{
			strings.Replace(buf.String(), `"bw_gbit_per_s"`, `"bw_gbps"`, 1),
			strings.Replace(buf.String(), `"clock_backwards_samples"`, `"samples_dropped"`, 1),
			strings.Replace(buf.String(), `"schema_version": 3`, `"schema_version": 1`, 1),
		} {
			if err := schemacheck.Validate([]byte(drift)); err == nil {
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
			if err := schemacheck.Validate(buf.Bytes()); err != nil {
				t.Errorf("%s: result %d does not validate: %v\n%s", file, i, err, buf.Bytes())
			}
		}
	}
}
