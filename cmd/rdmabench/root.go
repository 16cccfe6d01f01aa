package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/rdmabench/rdmabench/bench"
	"github.com/spf13/cobra"
)

// flagError marks bad command-line usage: exit code 2 rather than 1.
type flagError struct{ err error }

func (e *flagError) Error() string { return e.err.Error() }
func (e *flagError) Unwrap() error { return e.err }

func flagErrorf(format string, a ...any) error { return &flagError{fmt.Errorf(format, a...)} }

func newRootCmd() *cobra.Command {
	bench.Version = version
	root := &cobra.Command{
		Use:           "rdmabench",
		Short:         "Measure RDMA WRITE and READ: bandwidth, message rate, latency histograms, tuned parameters",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &flagError{fmt.Errorf("%w (see '%s --help')", err, c.CommandPath())}
	})
	root.AddCommand(newCmdVersion(), newCmdDevices(nil), newCmdServer(nil), newCmdOp("write"), newCmdOp("read"),
		newCmdSweep(nil), newCmdProfiles(), newCmdReport())
	return root
}

// parseSize reads a byte count with an optional binary unit: 64K, 1M, 2G, 4KiB, 4096.
func parseSize(s string) (int, error) {
	t := strings.TrimSuffix(strings.TrimSuffix(strings.ToUpper(strings.TrimSpace(s)), "B"), "I")
	mult := 1
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'K':
			mult, t = 1<<10, t[:n-1]
		case 'M':
			mult, t = 1<<20, t[:n-1]
		case 'G':
			mult, t = 1<<30, t[:n-1]
		}
	}
	v, err := strconv.Atoi(t)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("invalid size %q: want a byte count such as 4096, 64K, 1M or 2G", s)
	}
	return v * mult, nil
}

// sizeValue is a pflag value that accepts units.
type sizeValue struct{ p *int }

func (v sizeValue) String() string {
	if v.p == nil {
		return "0"
	}
	return strconv.Itoa(*v.p)
}
func (v sizeValue) Set(s string) error {
	n, err := parseSize(s)
	if err != nil {
		return err
	}
	*v.p = n
	return nil
}
func (v sizeValue) Type() string { return "size" }
