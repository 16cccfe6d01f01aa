package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestLoopback(t *testing.T) {
	var out, errs bytes.Buffer
	if err := run(context.Background(), []string{"--loopback", "1", "--size", "200000", "--count", "500"}, &out, &errs); err != nil {
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
