// Package plaintest checks plain tables (--format plain) in tests: one header line,
// then a line per row with as many fields as the header, and no box drawing.
package plaintest

import (
	"strings"
	"testing"
)

// Rows checks that out holds the plain table whose header line is head exactly once,
// followed by n lines of as many whitespace-separated fields as head has, and no box
// drawing; it returns those rows, split into fields.
func Rows(t testing.TB, out, head string, n int) [][]string {
	t.Helper()
	if strings.ContainsAny(out, "│┌└├─┼") {
		t.Errorf("box drawing in plain output:\n%s", out)
	}
	lines := strings.Split(out, "\n")
	at := -1
	for i, l := range lines {
		if l == head {
			if at >= 0 {
				t.Fatalf("header %q twice:\n%s", head, out)
			}
			at = i
		}
	}
	if at < 0 {
		t.Fatalf("no header line %q in:\n%s", head, out)
	}
	width := len(strings.Fields(head))
	if at+n >= len(lines) {
		t.Fatalf("want %d rows under %q:\n%s", n, head, out)
	}
	var rows [][]string
	for _, l := range lines[at+1 : at+1+n] {
		f := strings.Fields(l)
		if len(f) != width || strings.Join(f, " ") != l {
			t.Errorf("row %q: %d fields (one space apart), the header has %d:\n%s", l, len(f), width, out)
		}
		rows = append(rows, f)
	}
	return rows
}
