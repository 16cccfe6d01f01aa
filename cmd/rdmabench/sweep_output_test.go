package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/report"
)

// The sweep prints the tuned table and a few lines by default, the whole report with
// --verbose (what it printed before), in either format; --json and --csv are whole
// either way. report show prints a tuned report whole.
func TestSweepOutputVerbose(t *testing.T) {
	src := "../../report/html/testdata/demo4-tuned.json"
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	tu, _, err := report.ReadTuned(b)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, f := range []string{"table", "plain"} {
		show := func(verbose bool) (string, string) {
			var out bytes.Buffer
			js := filepath.Join(dir, "t.json")
			if err := writeTuned(outputs{Stdout: &out, Stderr: &out, Format: f, JSON: js}, tu, verbose); err != nil {
				t.Fatal(err)
			}
			doc, _ := os.ReadFile(js)
			return out.String(), string(doc)
		}
		short, shortJSON := show(false)
		whole, wholeJSON := show(true)
		var want, summary bytes.Buffer
		report.TunedShow(&want, tu, report.Format(f))
		report.TunedSummary(&summary, tu, report.Format(f))
		if whole != want.String() || short != summary.String() {
			t.Errorf("%s: --verbose must print the whole report, the default the summary:\n%s\n--verbose:\n%s", f, short, whole)
		}
		if len(strings.Split(short, "\n")) >= len(strings.Split(whole, "\n"))/2 {
			t.Errorf("%s: the default is not short:\n%s", f, short)
		}
		if shortJSON != wholeJSON || !strings.Contains(shortJSON, `"descent_steps"`) {
			t.Errorf("%s: --json must be whole either way", f)
		}
	}
	golden, err := os.ReadFile("../../report/testdata/demo4-tuned-verbose.txt")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	o := &reportShowOptions{Files: []string{src}, Out: outputs{Stdout: &out, Stderr: &out, Format: "table"}}
	if err := reportShowRun(o); err != nil || out.String() != string(golden) {
		t.Errorf("report show: %v\n%s", err, out.String())
	}
}
