package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
)

func TestLoopback(t *testing.T) {
	var out, errs bytes.Buffer
	if err := run(context.Background(), []string{"--loopback", "3", "--size", "200000"}, &out, &errs); err != nil {
		t.Fatalf("%v\n%s", err, errs.String())
	}
	if !strings.Contains(out.String(), "match") {
		t.Fatalf("output: %s", out.String())
	}
}

func TestNoServer(t *testing.T) {
	var out, errs bytes.Buffer
	if err := run(context.Background(), nil, &out, &errs); err == nil || !strings.Contains(errs.String(), "usage:") {
		t.Fatalf("want usage and an error, got %v", err)
	}
}

func TestTokenFile(t *testing.T) {
	tok := t.TempDir() + "/token"
	if err := os.WriteFile(tok, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errs bytes.Buffer
	if err := run(context.Background(), []string{"--loopback", "2", "--size", "1000", "--token-file", tok}, &out, &errs); err != nil {
		t.Fatal(err)
	}
}
