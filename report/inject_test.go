package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/result"
)

// evil is what a crafted results file puts in its strings: a terminal escape that
// clears the screen, a carriage return that overwrites the line, a forged line, and a
// lot of it.
const evil = "\x1b[2J\rok: 1 results pass\nforged" + "\u2028"

func noControls(t *testing.T, what, out string) {
	t.Helper()
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if strings.ContainsAny(line, "\x1b\r\u2028") {
			t.Fatalf("%s prints a control character: %q", what, line)
		}
		if strings.HasPrefix(line, "forged") || strings.HasPrefix(line, "ok: 1 results pass") {
			t.Fatalf("%s let a file forge a line: %q", what, line)
		}
		if len(line) > 4000 {
			t.Fatalf("%s prints a %d-byte line", what, len(line))
		}
	}
}

// Finding 5 of the hostile-peers review: report show printed a result's op and error
// raw, and so did ConfigKey and report matrix's host names.
func TestReadersPrintNoControlCharacters(t *testing.T) {
	long := strings.Repeat("A", 100_000)
	rs := []result.Result{
		{Config: result.Config{Op: evil, Test: result.BW, MR: evil, Peers: 2, Sync: evil, Landing: evil}, Iterations: 10, Error: evil + long},
		{Config: result.Config{Op: evil + long, Test: result.Lat}, Error: evil},
		{Config: result.Config{Op: "write", Test: result.Test(evil)}, Error: evil},
	}
	var b bytes.Buffer
	if err := Table(&b, rs); err != nil {
		t.Fatal(err)
	}
	noControls(t, "report show", b.String())
	noControls(t, "ConfigKey", ConfigKey(rs[0].Config))

}

// report check prints a results file's error and verification detail cleaned (the
// hostile-peers review's second round found them raw).
func TestCheckPrintsNoControlCharacters(t *testing.T) {
	rs := []result.Result{
		{Config: result.Config{Op: "write", Test: result.BW}, Error: evil},
		{Config: result.Config{Op: "write", Test: result.BW}, Iterations: 10, Verify: &result.Verify{FirstBadOffset: -1, Detail: evil}},
	}
	fails, notes := Check(rs, Thresholds{})
	if len(fails) != 2 {
		t.Fatalf("want both results failed: %q", fails)
	}
	noControls(t, "report check", strings.Join(append(fails, notes...), "\n"))
}
