package cli

import (
	"bytes"
	"strings"
	"testing"
)

func TestCompare(t *testing.T) {
	want := make([]byte, 100)
	Fill(want, 1)
	got := bytes.Clone(want)
	if err := Compare("h:1", got, want); err != nil {
		t.Fatal(err)
	}
	got[42]++
	err := Compare("h:1", got, want)
	if err == nil || !strings.Contains(err.Error(), "bytes differ: h:1") || !strings.Contains(err.Error(), "from byte 42 of 100") {
		t.Fatalf("want the first differing byte named, got %v", err)
	}
}

func TestFillDiffers(t *testing.T) {
	a, b := make([]byte, 13), make([]byte, 13)
	Fill(a, 1)
	Fill(b, 2)
	if bytes.Equal(a, b) {
		t.Fatal("two seeds, one pattern")
	}
}

func TestTokenFile(t *testing.T) {
	f, err := Parse("x", "", []string{"--token-file", "/nonexistent/token", "--loopback", "1"}, new(bytes.Buffer), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, _, err := f.Open(); err == nil || !strings.Contains(err.Error(), "--token-file") {
		t.Fatalf("want the token file's error, got %v", err)
	}
}
