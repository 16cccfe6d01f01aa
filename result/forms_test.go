package result

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"strings"
	"testing"
	"time"
)

// fixture reads testdata/results.ndjson: a verified bandwidth run, a latency run with
// every percentile, a failed run.
func fixture(t *testing.T) []Result {
	t.Helper()
	f, err := os.Open("testdata/results.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rs, err := ReadAll(f)
	if err != nil || len(rs) != 3 {
		t.Fatalf("fixture: %d results, %v", len(rs), err)
	}
	return rs
}

func encode(t *testing.T, newEncoder func(w *bytes.Buffer) Encoder, rs []Result) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteAll(newEncoder(&buf), rs); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestJSONFormsReadBack(t *testing.T) {
	rs := fixture(t)
	arr, _ := json.Marshal(rs)
	for name, doc := range map[string][]byte{
		"indented":  encode(t, func(w *bytes.Buffer) Encoder { return NewJSONEncoder(w) }, rs),
		"ndjson":    encode(t, func(w *bytes.Buffer) Encoder { return NewNDJSONEncoder(w) }, rs),
		"array":     arr,
		"two forms": append(append([]byte{}, arr...), encode(t, func(w *bytes.Buffer) Encoder { return NewNDJSONEncoder(w) }, rs)...),
	} {
		got, err := ReadAll(bytes.NewReader(doc))
		if err != nil || len(got)%len(rs) != 0 || len(got) == 0 {
			t.Fatalf("%s: %d results, %v", name, len(got), err)
		}
		for i := range got {
			if a, b := jsonOf(t, got[i]), jsonOf(t, rs[i%len(rs)]); a != b {
				t.Errorf("%s: result %d changed:\n%s\n%s", name, i, a, b)
			}
		}
	}
	nd := encode(t, func(w *bytes.Buffer) Encoder { return NewNDJSONEncoder(w) }, rs)
	if n := bytes.Count(nd, []byte("\n")); n != len(rs) {
		t.Errorf("NDJSON: %d lines for %d results", n, len(rs))
	}
}

// Every form a reader accepts has its schema version checked, result by result, and
// the error says where, what it found and what this rdmabench reads.
func TestReadAllChecksTheVersionOfEveryForm(t *testing.T) {
	rec := func(v int) string { r := fixture(t)[0]; r.SchemaVersion = v; return jsonOf(t, r) }
	good := rec(3)
	csvRow := func(v string) string {
		return strings.Join(CSVHeader, ",") + "\n" + v + strings.Repeat(",", len(CSVHeader)-1) + "\n"
	}
	for _, tc := range []struct {
		name, doc string
		want      []string // in the error
		before    int      // results returned with it
	}{
		{"one object", rec(99), []string{"line 1", "schema_version 99", "reads schema_version 3"}, 0},
		{"version 1", "\n\n" + rec(1), []string{"line 3", "schema_version 1;", "reads schema_version 3"}, 0},
		{"array", "[" + good + "," + rec(99) + "]", []string{"line 1", "element 1 of an array", "schema_version 99", "reads schema_version 3"}, 0},
		{"array later", good + "\n" + "[" + good + ",\n" + rec(4) + "]", []string{"line 2", "element 1 of an array", "schema_version 4", "reads schema_version 3"}, 1},
		{"ndjson", good + "\n" + good + "\n" + rec(99) + "\n" + good + "\n", []string{"line 3", "schema_version 99", "reads schema_version 3"}, 2},
		{"no version", good + "\n{}\n", []string{"line 2", "no schema_version", "reads schema_version 3"}, 1},
		{"null in an array", `[null]`, []string{"element 0", "no schema_version"}, 0},
		{"cut short", good + "\n" + good + "\n" + `{"schema_version":3,"op`, []string{"line 3", "unexpected EOF"}, 2},
		{"csv", csvRow("99"), []string{"line 2", "schema_version 99", "reads schema_version 3"}, 0},
	} {
		got, err := ReadAll(strings.NewReader(tc.doc))
		if err == nil {
			t.Errorf("%s: %s must be refused", tc.name, tc.doc)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not say %q", tc.name, err, w)
			}
		}
		if len(got) != tc.before {
			t.Errorf("%s: %d results before the error, want %d", tc.name, len(got), tc.before)
		}
		for _, r := range got {
			if r.SchemaVersion != SchemaVersion {
				t.Errorf("%s: returned a result of schema_version %d", tc.name, r.SchemaVersion)
			}
		}
	}
}

// The CSV encoder writes what report.WriteCSV wrote (testdata/results.csv is its
// output for the fixture), and reads it back.
func TestCSVForm(t *testing.T) {
	rs := fixture(t)
	golden, err := os.ReadFile("testdata/results.csv")
	if err != nil {
		t.Fatal(err)
	}
	got := encode(t, func(w *bytes.Buffer) Encoder { return NewCSVEncoder(w) }, rs)
	if !bytes.Equal(got, golden) {
		t.Fatalf("CSV differs from testdata/results.csv:\n%s", got)
	}
	back, err := ReadAll(bytes.NewReader(golden))
	if err != nil || len(back) != len(rs) {
		t.Fatalf("CSV reads back as %d results: %v", len(back), err)
	}
	if again := encode(t, func(w *bytes.Buffer) Encoder { return NewCSVEncoder(w) }, back); !bytes.Equal(again, golden) {
		t.Fatalf("CSV -> results -> CSV changed:\n%s", again)
	}
	// The columns come back; what CSV does not hold is zero.
	lat := back[1]
	if lat.Lat.P99_99 == nil || *lat.Lat.P99_99 != *rs[1].Lat.P99_99 || math.Abs(lat.Lat.Mean-rs[1].Lat.Mean) > 1e-6*rs[1].Lat.Mean || !lat.Time.Equal(rs[1].Time.Truncate(time.Second)) ||
		lat.Client.Model != rs[1].Client.Model || lat.Histogram != "" || lat.Client.RateGbps != 0 || !lat.Interrupted || lat.ClockBackwards != 3 {
		t.Errorf("latency run from CSV: %+v", lat)
	}
	if v := back[0].Verify; v == nil || !v.OK || v.Side != "server" || v.FirstBadOffset != -1 || back[0].Lat.P90 != nil {
		t.Errorf("verified run from CSV: %+v %+v", v, back[0].Lat)
	}
	if v := back[2].Verify; v == nil || v.OK || v.Side != "client" || back[2].Error != rs[2].Error || back[2].Lat.Samples != 0 {
		t.Errorf("failed run from CSV: %+v %q", v, back[2].Error)
	}
	// A CSV of nothing is its header.
	if empty := encode(t, func(w *bytes.Buffer) Encoder { return NewCSVEncoder(w) }, nil); string(empty) != strings.Join(CSVHeader, ",")+"\n" {
		t.Errorf("empty CSV: %q", empty)
	}
}

func TestCSVRefusesWhatItCannotHold(t *testing.T) {
	golden, err := os.ReadFile("testdata/results.csv")
	if err != nil {
		t.Fatal(err)
	}
	head, rows, _ := strings.Cut(string(golden), "\n")
	for _, tc := range []struct{ doc, want string }{
		{strings.Replace(head, "bw_mib_per_s", "bw_mibps", 1) + "\n" + rows, `column 23 is "bw_mibps", want "bw_mib_per_s"`},
		{head + ",extra\n", "78 columns, want 77"},
		{strings.Join(CSVHeader[:64], ",") + ",extra\n", `column 65 is "extra", want "outs_num"`},
		{strings.Join(CSVHeader[:72], ",") + ",extra\n", `column 73 is "extra", want "qp_fairness"`},
		{strings.Join(CSVHeader[:csvBaseColumns-1], ",") + "\n", `column 44 is none, want "tainted"`},
		{strings.Join(CSVHeader[:csvBaseColumns], ",") + ",extra\n", `column 45 is "extra", want "peers"`},
		{head + "\n" + strings.Replace(rows, ",0.256,", ",NaN,", 1), "line 2: column bw_gbit_per_s"},
		{head + "\n" + strings.Replace(rows, "2026-05-01T12:00:00+02:00", "yesterday", 1), "line 2: column time"},
		{head + "\n" + strings.Replace(rows, ",true,false,", ",yes,false,", 1), "line 2: column verify_ok"},
		{head + "\n2,short\n", "wrong number of fields"},
	} {
		if _, err := ReadAll(strings.NewReader(tc.doc)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("want an error with %q, got %v", tc.want, err)
		}
	}
}

// A type that embeds a Result is a Record: the JSON forms keep its own keys, and
// ReadJSON checks its version as any result's.
func TestRecordsKeepTheirKeys(t *testing.T) {
	type line struct {
		Result
		WallNS int64 `json:"sweep_wall_ns,omitempty"`
	}
	base := fixture(t)[0]
	in := []line{{base, 7}, {base, 0}}
	var buf bytes.Buffer
	e := NewNDJSONEncoder(&buf)
	for _, l := range in {
		if err := e.Encode(l); err != nil {
			t.Fatal(err)
		}
	}
	if !strings.Contains(buf.String(), `"sweep_wall_ns":7}`+"\n") {
		t.Fatalf("NDJSON lost the record's key:\n%s", buf.String())
	}
	out, err := ReadJSON[line](bytes.NewReader(buf.Bytes()))
	if err != nil || len(out) != 2 || out[0].WallNS != 7 || out[0].Config.Op != "write" {
		t.Fatalf("read back: %+v %v", out, err)
	}
	nine := base
	nine.SchemaVersion = 9
	if _, err := ReadJSON[line](strings.NewReader(jsonOf(t, line{base, 1}) + "\n" + jsonOf(t, line{nine, 1}))); err == nil ||
		!strings.Contains(err.Error(), "line 2: result has schema_version 9; this rdmabench reads schema_version 3") {
		t.Fatalf("want the version refused, got %v", err)
	}
	var c bytes.Buffer
	if err := WriteAll(NewCSVEncoder(&c), []Result{in[0].Result}); err != nil || strings.Contains(c.String(), "sweep_wall_ns") {
		t.Fatalf("CSV: %v\n%s", err, c.String())
	}
}
