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
	err := newRootCmd().Execute()
	if err != nil {
		fmt.Fprintln(os.Stderr, "rdmabench:", err)
	}
	os.Exit(exitCode(err))
}

// exitCode is 0 for success, 2 for bad usage (a *flagError), 1 for anything else.
func exitCode(err error) int {
	var fe *flagError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &fe):
		return 2
	}
	return 1
}
