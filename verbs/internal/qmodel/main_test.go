//go:build linux && cgo

package qmodel

import (
	"fmt"
	"os"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	start := time.Now()
	code := m.Run()
	if testing.Verbose() {
		fmt.Printf("qmodel: %d loop runs against the model in %v\n", Runs(), time.Since(start).Round(time.Millisecond))
	}
	os.Exit(code)
}
