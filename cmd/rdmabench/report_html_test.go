package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReportHTMLFlags(t *testing.T) {
	checkFlags(t, "report html", newCmdReportHTML, func() reportHTMLOptions { return reportHTMLOptions{Output: "report.html"} },
		func(o *reportHTMLOptions) { o.Out = nil },
		[]flagCase[reportHTMLOptions]{
			{args: []string{"a.ndjson"}, want: func(o *reportHTMLOptions) { o.Files = []string{"a.ndjson"} }},
			{args: []string{"cx5.ndjson", "cx6.ndjson", "-o", "gen.html", "--title", "CX5 vs CX6", "--label", "cx5,cx6"}, want: func(o *reportHTMLOptions) {
				o.Files, o.Output, o.Title, o.Labels = []string{"cx5.ndjson", "cx6.ndjson"}, "gen.html", "CX5 vs CX6", []string{"cx5", "cx6"}
			}},
			{args: []string{"--output", "x.html", "s.ndjson", "tuned.json"}, want: func(o *reportHTMLOptions) {
				o.Files, o.Output = []string{"s.ndjson", "tuned.json"}, "x.html"
			}},
			{args: nil, wantErr: "requires at least 1 arg(s)"},
			{args: []string{"a", "-o", ""}, wantErr: "--output: want a file name"},
			{args: []string{"a", "--label", "x,,y"}, wantErr: "an empty label"},
			{args: []string{"a", "--label", "x,y"}, wantErr: "--label: 2 labels for 1 files"},
			{args: []string{"a", "--json", "x"}, wantErr: "unknown flag: --json"},
		})
}

func TestReportHTMLRun(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "page.html")
	td := filepath.Join("..", "..", "report", "html", "testdata")
	var log bytes.Buffer
	o := &reportHTMLOptions{Files: []string{filepath.Join(td, "gen1.ndjson"), filepath.Join(td, "gen2.ndjson")}, Output: out, Labels: []string{"cx5", "cx6"}, Out: &log}
	if err := reportHTMLRun(o); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(out)
	if err != nil || !bytes.Contains(page, []byte("<title>rdmabench report</title>")) || bytes.Count(page, []byte("<svg")) != 8 ||
		!strings.Contains(log.String(), "wrote "+out+" (2 series)") {
		t.Fatalf("%v: %d charts\n%s", err, bytes.Count(page, []byte("<svg")), log.String())
	}
	// One label for two series: a usage error (exit 2), found once the inputs are read.
	o.Labels = []string{"only"}
	if err := reportHTMLRun(o); exitCode(err) != 2 || !strings.Contains(err.Error(), "1 given for 2 series") {
		t.Errorf("want a usage error, got exit %d: %v", exitCode(err), err)
	}
	// An input that cannot be read is an error naming the file.
	bad := filepath.Join(dir, "broken.ndjson")
	os.WriteFile(bad, []byte("{not json\n"), 0o644)
	for _, f := range []string{bad, filepath.Join(dir, "missing.json")} {
		o := &reportHTMLOptions{Files: []string{f}, Output: filepath.Join(dir, "never.html"), Out: &log}
		err := reportHTMLRun(o)
		var fe *flagError
		if err == nil || !strings.Contains(err.Error(), f) || errors.As(err, &fe) {
			t.Errorf("%s: want a run error naming the file, got %v", f, err)
		}
		if _, err := os.Stat(o.Output); err == nil {
			t.Errorf("%s: a page was written", f)
		}
	}
}
