package htmlreport

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/hunt"
	"github.com/rdmabench/rdmabench/result"
)

// TestHuntSection: a hunt's records stream is an input of its own: the page lists its
// findings (class, minimal set, effect, counters, both command lines) and draws nothing
// else for it; a stream with no finding says so.
func TestHuntSection(t *testing.T) {
	var b bytes.Buffer
	rec := hunt.NewRecorder(&b)
	cfg := result.Config{Op: "write", Test: result.BW, MsgSizeBytes: 65536, SQDepth: 128, PostList: 1, CQMod: 8, NumQPs: 1, QPTimeout: 14, DurationS: 0.4}
	for i := range 3 {
		if err := rec(hunt.Record{Kind: hunt.KindPoint, Measurement: &hunt.Measurement{Seq: i + 1, Phase: "search", Config: cfg, BWGbps: 0.1}}); err != nil {
			t.Fatal(err)
		}
	}
	f := hunt.Finding{ID: "F1", Class: hunt.Counters, Key: "completer_retry_err", Minimal: true, Runs: 3, PausedRuns: 2,
		Set:           []hunt.Condition{{Dim: hunt.DimQPTimeout, Op: "=", Values: []string{"14"}}},
		Effect:        hunt.Effect{Metric: "counter_delta", Median: 4, Min: 2, Max: 9, Runs: 3, Text: "completer_retry_err +4 a run (3 runs: 2-9)"},
		CountersMoved: []string{"local error completer_retry_err"}, ReproConfig: cfg,
		Command: "rdmabench write bw -s 64K -u 14 -d rxe1 10.0.0.1", PerftestCommand: "ib_write_bw -s 65536 -u 14 -d rxe1 10.0.0.1"}
	if err := rec(hunt.Record{Kind: hunt.KindFinding, Finding: &f}); err != nil {
		t.Fatal(err)
	}
	ss, err := Build([]File{{Path: "hunt-rxe.ndjson", Data: b.Bytes()}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 1 || ss[0].Hunt == nil || len(ss[0].Hunt.Findings) != 1 || ss[0].Hunt.Runs != 3 {
		t.Fatalf("series %+v", ss)
	}
	var page bytes.Buffer
	if err := Write(&page, ss, Options{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`id="hunt"`, "Anomalies found by rdmabench hunt", "1 findings in 3 runs", "counters (completer_retry_err)",
		"qp_timeout = 14", "a run (3 runs: 2-9)", "local error completer_retry_err; paused in 2 of its 3 runs", "rdmabench write bw -s 64K -u 14 -d rxe1 10.0.0.1", "ib_write_bw -s 65536 -u 14"} {
		if !strings.Contains(page.String(), want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	// Cut short by a crash: what came before is shown, and the torn line named.
	torn := append(bytes.Clone(b.Bytes()), []byte(`{"kind":"point","seq":4,"pha`)...)
	if ss, err = Build([]File{{Path: "torn.ndjson", Data: torn}}, nil); err != nil || len(ss) != 1 || ss[0].Hunt == nil {
		t.Fatalf("a torn stream: %v %+v", err, ss)
	}
	page.Reset()
	if err := Write(&page, ss, Options{}); err != nil || !strings.Contains(page.String(), "line 5") || !strings.Contains(page.String(), "qp_timeout = 14") {
		t.Errorf("a torn stream: %v; the page names line 5: %v", err, strings.Contains(page.String(), "line 5"))
	}
	// No finding: the table says so.
	var none bytes.Buffer
	hunt.NewRecorder(&none)(hunt.Record{Kind: hunt.KindPoint, Measurement: &hunt.Measurement{Seq: 1, Phase: "search", Config: cfg}})
	ss, err = Build([]File{{Path: "quiet.ndjson", Data: none.Bytes()}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	page.Reset()
	if err := Write(&page, ss, Options{}); err != nil || !strings.Contains(page.String(), "no anomaly was confirmed") {
		t.Errorf("a hunt without findings: %v, page has 'no anomaly was confirmed': %v", err, strings.Contains(page.String(), "no anomaly was confirmed"))
	}
}

// TestHuntLaterVersion: a records stream of a later schema_version is a hunt's that this
// rdmabench cannot read: the report says so, naming the file and both versions, rather
// than taking it for another kind of input.
func TestHuntLaterVersion(t *testing.T) {
	v := hunt.SchemaVersion + 1
	later := []byte(fmt.Sprintf(`{"kind":"point","seq":1,"phase":"search","new_field":1,"schema_version":%d}`, v) + "\n")
	_, err := Build([]File{{Path: "later.ndjson", Data: later}}, nil)
	if err == nil || !strings.Contains(err.Error(), "later.ndjson") || !strings.Contains(err.Error(), fmt.Sprintf("schema_version %d", v)) ||
		!strings.Contains(err.Error(), fmt.Sprintf("reads schema_version %d", hunt.SchemaVersion)) {
		t.Fatalf("a later version's stream: %v", err)
	}
}
