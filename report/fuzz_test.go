package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"io"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/result"
)

// fuzzResults are real results: a verified bandwidth run, a latency run with every
// percentile and its histogram, and a failed run.
func fuzzResults(tb testing.TB) []result.Result {
	dev := result.Device{Name: "rxe0", Driver: "rxe", Model: "Soft-RoCE (rxe)", VendorID: 0xffffff, NodeGUID: "f870:25ff:febf:b0ac",
		Port: 1, LinkLayer: "Ethernet", RateGbps: 10, ActiveMTU: 1024, GIDIndex: 1, GIDType: "RoCE v2", Host: "host-a"}
	at := time.Date(2026, 5, 1, 12, 0, 0, 123456789, time.FixedZone("", 2*3600))

	bw := res("write", 65536, 0.256, 63060800)
	bw.ToolVersion, bw.Time, bw.Server, bw.Client, bw.ServerDevice = "v1.2.3", at, "10.0.0.1", dev, dev
	bw.Config.Iterations, bw.Config.WarmupIterations, bw.Config.Verify, bw.Config.InlineBytes = 2000, 200, true, 0
	bw.PathMTU, bw.MaxRdAtom, bw.WarmupDone, bw.LatKind, bw.Clock = 1024, 16, 200, "completion_under_load", "clock_monotonic_raw"
	bw.ClockNote = "TSC not used: the kernel marked it unstable"
	bw.SetThroughput(2000, 65536, 4_096_000_000)
	bw.Verify = &result.Verify{Side: "server", Slots: 128, CheckedBytes: 128 * 65536, OK: true, FirstBadOffset: -1}

	samples := make([]int64, 100000)
	for i := range samples {
		samples[i] = 37000 + int64(i%997)*13 + int64(i/99991)*4_000_000
	}
	h, m := result.FromSamples(samples)
	l, enc, err := result.NewLatency(h, m)
	if err != nil {
		tb.Fatal(err)
	}
	lat := result.Result{SchemaVersion: result.SchemaVersion, ToolVersion: "v1.2.3", Time: at, Server: "10.0.0.1", Client: dev, ServerDevice: dev,
		Config:  result.Config{Op: "read", Test: result.Lat, MsgSizeBytes: 2, Iterations: 100000, WarmupIterations: 10000, SQDepth: 1, PostList: 1, CQMod: 1, NumQPs: 1},
		LatKind: "read_completion", Clock: "tsc", ClockBackwards: 3, Lat: l, Histogram: enc, Interrupted: true}
	lat.SetThroughput(100000, 2, 3_700_000_000)

	failed := res("read", 4096, 0, 0)
	failed.Iterations, failed.Lat, failed.Error = 0, result.Latency{}, "no progress for 5s: waiting for completions\non QP 0"
	failed.Verify = &result.Verify{Side: "client", FirstBadOffset: -1, Detail: "not verified: the run failed"}
	return []result.Result{bw, lat, failed}
}

// FuzzShow is `rdmabench report show` on an arbitrary file: the tuned-report reader
// (ReadTuned: any JSON object with "ops", of its schema version), result.ReadAll, and the table, CSV and JSON of
// whatever ReadAll returned. Nothing may panic; every result ReadAll returns has this
// rdmabench's schema version; the CSV has the header and one full row per result; the
// JSON that --json writes reads back as the same results.
func FuzzShow(f *testing.F) {
	rs := fuzzResults(f)
	var one, ndjson bytes.Buffer
	if err := result.WriteJSON(&one, rs[0]); err != nil {
		f.Fatal(err)
	}
	f.Add(one.Bytes())
	for _, r := range rs {
		if err := json.NewEncoder(&ndjson).Encode(r); err != nil {
			f.Fatal(err)
		}
	}
	f.Add(ndjson.Bytes())
	arr, err := json.Marshal(rs)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(arr)
	old := bytes.Replace(one.Bytes(), []byte(`"schema_version": 3`), []byte(`"schema_version": 1`), 1)
	var c bytes.Buffer
	if err := result.WriteCSV(&c, rs); err != nil {
		f.Fatal(err)
	}
	f.Add(c.Bytes())                                           // CSV
	f.Add(old)                                                 // a version 1 file: refused
	f.Add(append(append([]byte("["), arr[1:]...), '{'))        // a truncated stream
	f.Add(append(append([]byte{}, ndjson.Bytes()...), old...)) // good results, then a bad one
	for _, s := range []string{``, `[]`, `null`, `{}`, `[null]`, `{"schema_version": 3}`, `[{"schema_version": 3},{"schema_version":3}]`,
		`{"schema_version": 3,"config":{"test":"lat"},"lat_ns":{"samples":1,"p50":null}}`,
		`{"schema_version": 3,"time":"10000-01-01T00:00:00Z"}`, `{"schema_version": 3,"bw_gbit_per_s":1e400}`,
		// Tuned reports (their format is report.Tuned's): what show takes for one.
		`{"ops":{}}`, `{"schema_version": 3,"ops":{}}`, `{"schema_version":3,"ops":{}}`, `{"schema_version":3,"objective":"bw","ops":{"write":{"op":"write","objective":"bw"},"read":{}}}`,
		`{"ops":{"write":{"op":"write"}},"reference":{"write":{"msg_size_bytes":[65536]}}}`,
		`{"schema_version":4,"profile":"rxe","ops":{"write":{"op":"write","verdicts":{"sq_depth":{"chosen":32,"equal_values":[512,32,7,128]}}}}}`,
	} {
		f.Add([]byte(s))
	}

	f.Fuzz(func(t *testing.T, data []byte) {
		// A tuned report: what ReadTuned takes for one, shown as show --json/--csv would.
		if tu, ok, err := ReadTuned(data); ok && err == nil {
			if tu.SchemaVersion != TunedSchemaVersion {
				t.Fatalf("tuned report of schema_version %d accepted", tu.SchemaVersion)
			}
			if err := TunedTable(io.Discard, tu); err != nil {
				t.Fatalf("tuned table: %v", err)
			}
			for _, f := range []Format{FormatTable, FormatPlain} {
				if err := TunedSummary(io.Discard, tu, f); err != nil {
					t.Fatalf("tuned summary (%s): %v", f, err)
				}
			}
			if err := TunedCSV(io.Discard, tu); err != nil {
				t.Fatalf("tuned CSV: %v", err)
			}
		}

		rs, err := result.ReadAll(bytes.NewReader(data))
		for i, r := range rs {
			if r.SchemaVersion != result.SchemaVersion {
				t.Fatalf("result %d of %d (error %v) has schema_version %d", i, len(rs), err, r.SchemaVersion)
			}
		}

		var tbl, c bytes.Buffer
		if err := Table(&tbl, rs); err != nil {
			t.Fatalf("table of %d results: %v", len(rs), err)
		}
		if err := result.WriteCSV(&c, rs); err != nil {
			t.Fatalf("CSV of %d results: %v", len(rs), err)
		}
		cr := csv.NewReader(&c)
		cr.FieldsPerRecord = len(result.CSVHeader)
		rows, cerr := cr.ReadAll()
		if cerr != nil || len(rows) != len(rs)+1 {
			t.Fatalf("CSV of %d results reads back as %d rows: %v\n%s", len(rs), len(rows), cerr, c.Bytes())
		}

		// show --json: one JSON document; it reads back the same, and the schema
		// accepts what the readers accepted.
		var js bytes.Buffer
		if err := result.WriteJSONDocument(&js, rs); err != nil {
			t.Fatalf("cannot write back results ReadAll accepted: %v", err)
		}
		if len(rs) > 0 && !json.Valid(js.Bytes()) {
			t.Fatalf("show --json of %d results is not one JSON document", len(rs))
		}
		back, err := result.ReadAll(bytes.NewReader(js.Bytes()))
		if err != nil || len(back) != len(rs) {
			t.Fatalf("show --json of %d results reads back as %d: %v", len(rs), len(back), err)
		}
		for i := range rs {
			a, _ := json.Marshal(rs[i])
			b, _ := json.Marshal(back[i])
			if !bytes.Equal(a, b) {
				t.Fatalf("result %d changed through show --json:\n%s\n%s", i, a, b)
			}
		}
	})
}
