package main

import (
	"fmt"
	"runtime"

	"github.com/rdmabench/rdmabench/oob"
	"github.com/rdmabench/rdmabench/result"
	"github.com/spf13/cobra"
)

func newCmdVersion() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, the protocol version and the result schema version",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintf(cmd.OutOrStdout(), "rdmabench %s (protocol %d, result schema %d, %s %s/%s)\n",
				version, oob.Version, result.SchemaVersion, runtime.Version(), runtime.GOOS, runtime.GOARCH)
		},
	}
}
