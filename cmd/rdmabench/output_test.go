package main

import (
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/rdmabench/rdmabench/result"
)

// TestResultsToDevicesAndPipes: --json and --csv may name what cannot be rewound
// (/dev/null, a pipe): it gets the final write, once, and no error. (Regression: the
// file was truncated before each write, which /dev/null refuses.)
func TestResultsToDevicesAndPipes(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	pipe := "/dev/fd/" + itoa(int(w.Fd()))
	o := outputs{JSON: "/dev/null", CSV: pipe, Stdout: io.Discard, Stderr: io.Discard, Format: "plain"}
	if err := o.openResults(); err != nil {
		t.Fatal(err)
	}
	rs := []result.Result{{SchemaVersion: result.SchemaVersion, Config: result.Config{Op: "write", Test: result.BW, MsgSizeBytes: 64, NumQPs: 1}}}
	if err := o.save(rs); err != nil {
		t.Fatalf("an interim save: %v", err)
	}
	if err := o.write(rs); err != nil {
		t.Fatalf("the final write: %v", err)
	}
	o.close()
	w.Close()
	got, _ := io.ReadAll(r)
	want := 2 // the CSV header and one row, once
	if n := countLines(string(got)); n != want {
		t.Fatalf("the pipe got %d lines, want %d:\n%s", n, want, got)
	}
	// A regular file is rewritten whole by every save.
	file := filepath.Join(t.TempDir(), "r.csv")
	o = outputs{CSV: file, Stdout: io.Discard, Stderr: io.Discard, Format: "plain"}
	if err := o.openResults(); err != nil {
		t.Fatal(err)
	}
	o.save(rs)
	o.save(append(rs, rs[0]))
	o.close()
	if b, _ := os.ReadFile(file); countLines(string(b)) != 3 {
		t.Fatalf("the file holds:\n%s", b)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func countLines(s string) int {
	n := 0
	for _, c := range s {
		if c == '\n' {
			n++
		}
	}
	return n
}
