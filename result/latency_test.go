package result

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

func TestNewLatencyExactMoments(t *testing.T) {
	samples := []int64{1000, 2000, 3000, 4000, 100000}
	l, enc, err := NewLatency(samples)
	if err != nil {
		t.Fatal(err)
	}
	if l.Samples != 5 || l.Min != 1000 || l.Max != 100000 {
		t.Fatalf("count/min/max: %+v", l)
	}
	if l.Mean != 22000 {
		t.Fatalf("mean = %v, want 22000", l.Mean)
	}
	// population stdev of the samples, computed by hand
	want := math.Sqrt((21000.0*21000 + 20000.0*20000 + 19000.0*19000 + 18000.0*18000 + 78000.0*78000) / 5)
	if math.Abs(l.Stdev-want) > 1e-6 {
		t.Fatalf("stdev = %v, want %v", l.Stdev, want)
	}
	if l.P50 < 2990 || l.P50 > 3010 {
		t.Fatalf("p50 = %d, want ~3000", l.P50)
	}
	h, err := DecodeHistogram(enc)
	if err != nil {
		t.Fatal(err)
	}
	if h.TotalCount() != 5 || h.ValueAtQuantile(50) != l.P50 {
		t.Fatalf("decoded histogram: count %d p50 %d", h.TotalCount(), h.ValueAtQuantile(50))
	}
}

func TestNewLatencyEmpty(t *testing.T) {
	l, enc, err := NewLatency(nil)
	if err != nil || l.Samples != 0 || enc != "" {
		t.Fatalf("empty: %+v %q %v", l, enc, err)
	}
}

func TestSetThroughputUnits(t *testing.T) {
	var r Result
	r.SetThroughput(1000, 65536, 1e9) // 65.536 MB in one second
	if math.Abs(r.BWGbps-0.524288) > 1e-9 || r.BWMiBps != 62.5 || r.MsgRateMpps != 0.001 {
		t.Fatalf("units: %v Gb/s %v MiB/s %v Mpps", r.BWGbps, r.BWMiBps, r.MsgRateMpps)
	}
}

func TestReadAllForms(t *testing.T) {
	var buf bytes.Buffer
	r := Result{SchemaVersion: SchemaVersion, Config: Config{Op: "write"}}
	WriteJSON(&buf, r)
	WriteJSON(&buf, r)
	got, err := ReadAll(&buf)
	if err != nil || len(got) != 2 {
		t.Fatalf("ndjson/concatenated: %d %v", len(got), err)
	}
	got, err = ReadAll(strings.NewReader(`[{"schema_version":1},{"schema_version":1}]`))
	if err != nil || len(got) != 2 {
		t.Fatalf("array: %d %v", len(got), err)
	}
	if _, err := ReadAll(strings.NewReader(`{"schema_version":99}`)); err == nil {
		t.Fatal("a future schema version must be refused")
	}
}

func TestSchemaAcceptsAResultAndRefusesDrift(t *testing.T) {
	samples := []int64{1500, 1600, 1700}
	l, h, _ := NewLatency(samples)
	r := Result{SchemaVersion: SchemaVersion, Config: Config{Op: "write", Test: "bw", MsgSizeBytes: 64, SQDepth: 1, PostList: 1, CQMod: 1, NumQPs: 1},
		LatKind: "completion_under_load", Lat: l, Histogram: h, Verify: &Verify{Side: "server", OK: true, FirstBadOffset: -1}}
	var buf bytes.Buffer
	WriteJSON(&buf, r)
	if err := Validate(buf.Bytes()); err != nil {
		t.Fatalf("a result must validate: %v", err)
	}
	drift := strings.Replace(buf.String(), `"bw_gbit_per_s"`, `"bw_gbps"`, 1)
	if err := Validate([]byte(drift)); err == nil {
		t.Fatal("a renamed key must fail validation")
	}
}
