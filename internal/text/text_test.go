package text

import (
	"strings"
	"testing"
)

func TestQuoteAndClean(t *testing.T) {
	if q := Quote("a\"b\n"); q != `"a\"b\n"` {
		t.Fatalf("Quote: %s", q)
	}
	if c := Clean(`device "x" not found`, 100); c != `device "x" not found` {
		t.Fatalf("Clean must leave printable text alone: %s", c)
	}
	if c := Clean("a\r\x1b[2J\u2028b", 100); strings.ContainsAny(c, "\r\x1b\u2028") {
		t.Fatalf("Clean must escape control characters: %q", c)
	}
	if c := truncate(strings.Repeat("é", 10), 5); c != "éé... (16 more bytes)" {
		t.Fatalf("truncate must cut on a rune boundary and say how much: %q", c)
	}
}
