package main

import (
	"fmt"
	"io"
	"runtime"

	"github.com/rdmabench/rdmabench/oob"
	"github.com/rdmabench/rdmabench/result"
	"github.com/spf13/cobra"
)

type versionOptions struct {
	Out io.Writer
}

func newCmdVersion(runF func(*versionOptions) error) *cobra.Command {
	o := &versionOptions{}
	return &cobra.Command{
		Use:     "version",
		Short:   "Print the version, the protocol version and the result schema version",
		Example: "  rdmabench version\n  rdmabench --version",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Out = cmd.OutOrStdout()
			if runF != nil {
				return runF(o)
			}
			return versionRun(o)
		},
	}
}

func versionRun(o *versionOptions) error {
	_, err := fmt.Fprintln(o.Out, versionLine())
	return err
}

// versionLine is what 'rdmabench version' and 'rdmabench --version' print.
func versionLine() string {
	return fmt.Sprintf("rdmabench %s (protocol %d, result schema %d, %s %s/%s)",
		version, oob.Version, result.SchemaVersion, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
