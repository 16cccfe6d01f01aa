// Command rdmabench measures RDMA WRITE and READ between two hosts.
package main

import (
	"errors"
	"fmt"
	"os"
)

// version is set at build time: -ldflags "-X main.version=..."
var version = "0.1.0-dev"

func main() {
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
