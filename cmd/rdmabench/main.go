// Command rdmabench measures RDMA WRITE and READ between two hosts.
package main

import (
	"errors"
	"fmt"
	"os"
	"runtime"
)

// version is set at build time: -ldflags "-X main.version=..."
var version = "0.1.0-dev"

func main() {
	// The Go side never needs two CPUs: the timed loops run in C on one locked thread.
	// A second P only adds scheduler wake-ups on cores the NIC's completion path (or
	// Soft-RoCE's kernel work) may need. $GOMAXPROCS still wins.
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1)
	}
	cmd := newRootCmd()
	err := cmd.Execute()
	if err == nil {
		return
	}
	fmt.Fprintln(os.Stderr, "rdmabench:", err)
	var fe *flagError
	if errors.As(err, &fe) {
		os.Exit(2)
	}
	os.Exit(1)
}
