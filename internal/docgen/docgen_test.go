package docgen

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRegion(t *testing.T) {
	b, e := Markers("x")
	path := filepath.Join(t.TempDir(), "page.md")
	page := "# Page\n\nhand text\n" + b + "\nold\n" + e + "\nmore hand text\n"
	if err := os.WriteFile(path, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	err := Region(path, "x", []byte("new"), false)
	if err == nil || !strings.Contains(err.Error(), "stale") || !strings.Contains(err.Error(), "line 5") {
		t.Fatalf("a stale region: %v", err)
	}
	if err := Region(path, "x", []byte("new"), true); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	if want := "# Page\n\nhand text\n" + b + "\nnew\n" + e + "\nmore hand text\n"; string(got) != want {
		t.Fatalf("rewritten:\n%s\nwant:\n%s", got, want)
	}
	if err := Region(path, "x", []byte("new\n"), false); err != nil {
		t.Fatalf("an up-to-date region: %v", err)
	}
	if err := Region(path, "x", nil, true); err != nil {
		t.Fatal(err)
	}
	if err := Region(path, "x", nil, false); err != nil {
		t.Fatalf("an empty region: %v", err)
	}
	if err := Region(path, "y", nil, true); err == nil {
		t.Fatal("a region without markers was accepted")
	}
	os.WriteFile(path, []byte(e+"\n"+b+"\n"), 0o644)
	if err := Region(path, "x", nil, true); err == nil {
		t.Fatal("markers out of order were accepted")
	}
}

func TestFirstDiff(t *testing.T) {
	for _, c := range []struct {
		g, w   string
		line   int
		gl, wl string
	}{
		{"a\nb\nc", "a\nb\nc", 4, "", ""},
		{"a\nb\nc", "a\nx\nc", 2, "b", "x"},
		{"a\nb", "a\nb\nc", 3, "", "c"},
		{"x", "a", 1, "x", "a"},
	} {
		line, g, w := FirstDiff([]byte(c.g), []byte(c.w))
		if line != c.line || g != c.gl || w != c.wl {
			t.Errorf("FirstDiff(%q, %q) = %d %q %q, want %d %q %q", c.g, c.w, line, g, w, c.line, c.gl, c.wl)
		}
	}
}
