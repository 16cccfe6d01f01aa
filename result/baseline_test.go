package result_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/result"
)

// A result with a TCP baseline, measured or failed, is a result of the schema; a
// baseline that drifts from it is not.
func TestSchemaAcceptsABaseline(t *testing.T) {
	ok := result.Baseline{Transport: "tcp"}
	ok.SetThroughput(5000, 65536, 40_000_000)
	ok.Compare(25)
	if ok.Bytes != 5000*65536 || ok.BWGbps < 65.5 || ok.BWGbps > 65.6 || ok.MsgRateMpps != 0.125 || ok.RDMAOverTCP < 0.38 || ok.RDMAOverTCP > 0.39 {
		t.Fatalf("throughput and ratio: %+v", ok)
	}
	failed := result.Baseline{Transport: "tcp", Messages: 12, Bytes: 12*65536 + 100, DurationNS: 5000, Error: "TCP baseline: the server closed the connection"}
	failed.Compare(25)
	if failed.RDMAOverTCP != 0 {
		t.Fatalf("a failed baseline has no ratio: %+v", failed)
	}
	for _, b := range []result.Baseline{ok, failed} {
		r := result.Result{SchemaVersion: result.SchemaVersion, Config: result.Config{Op: "write", Test: result.BW, MsgSizeBytes: 65536, SQDepth: 128, PostList: 1, CQMod: 1, NumQPs: 1, Baseline: "tcp"},
			Iterations: 5000, Bytes: 5000 * 65536, DurationNS: 1e8, BWGbps: 25, LatKind: "completion_under_load", Baseline: &b}
		var buf bytes.Buffer
		result.WriteJSON(&buf, r)
		if err := result.Validate(buf.Bytes()); err != nil {
			t.Fatalf("a result with a baseline must validate: %v\n%s", err, buf.Bytes())
		}
		applied := 0
		for _, drift := range []string{
			strings.Replace(buf.String(), `"transport": "tcp"`, `"transport": "udp"`, 1),
			strings.Replace(buf.String(), `"baseline": "tcp"`, `"baseline": "ib"`, 1),
			strings.Replace(buf.String(), `"duration_ns": 5000`, `"duration_s": 5000`, 1),
			strings.Replace(buf.String(), `"rdma_over_tcp"`, `"ratio"`, 1),
		} {
			if drift == buf.String() {
				continue // that key is not in this one
			}
			applied++
			if err := result.Validate([]byte(drift)); err == nil {
				t.Fatalf("drift must fail validation:\n%s", drift)
			}
		}
		if applied < 3 {
			t.Fatalf("only %d of the drifts applied to\n%s", applied, buf.Bytes())
		}
	}
}
