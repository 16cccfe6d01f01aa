package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/rdmabench/rdmabench/bench"
	"github.com/rdmabench/rdmabench/mrbench"
	"github.com/rdmabench/rdmabench/report"
	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/verbs"
	"github.com/spf13/cobra"
)

type mrOptions struct {
	Out, Err   io.Writer
	Local      bench.Local
	Sizes      []int
	Modes      []string
	Iterations int
	// NoRelaxed is --disable-pcie-relaxed: register without PCIe relaxed ordering.
	NoRelaxed bool
	JSON      string // a file, or "-" for stdout (the table then goes to stderr)
	Format    string // --format: auto, table or plain
	// Open and Limits are seams for tests (nil: the device's TimeMR, mrbench.Limits).
	// Open returns the timing function, the device's identity and what closes it.
	Open   func(bench.Local) (mrbench.Timer, mrbench.Device, func() error, error)
	Limits func() (memlock int64, ipcLock bool, err error)
}

func newCmdMR(runF func(*mrOptions) error) *cobra.Command {
	o := &mrOptions{Local: bench.Local{Port: 1, GIDIndex: -1}}
	var sizes, modes []string
	cmd := &cobra.Command{
		Use:     "mr [-d DEVICE] [--sizes 4K,64K] [--modes warm,cold] [-n 20] [--json FILE]",
		Example: "  rdmabench mr -d mlx5_0\n  rdmabench mr -d mlx5_0 --sizes 4K,1M --modes warm,cold -n 20 --json mr.json",
		Short:   "Measure what registering memory costs: ibv_reg_mr/ibv_dereg_mr per size and mode",
		Long: `Measure what registering memory costs, on one host: the latency of ibv_reg_mr and,
timed apart, of ibv_dereg_mr, n times per buffer size and mode, with the access a
benchmark's buffer gets (local write, remote write, remote read, and PCIe relaxed
ordering unless --disable-pcie-relaxed, as write and read register). Modes:

  warm  the same pages (mapped once and touched) registered and deregistered n times
  cold  a fresh anonymous mapping each time, not populated: the registration faults
        the pages in and pins them, so page faults and pinning are in the number
  huge  like warm, on 2 MiB hugepages; skipped when none are reserved
        (sysctl vm.nr_hugepages)
  odp   like warm, with IBV_ACCESS_ON_DEMAND; skipped when the device has no ODP

Per size and mode: reg and dereg latency (p50 from 20 samples, p99 from 1000, as
everywhere in rdmabench), registration throughput (size / mean reg time) and pages.
Registering pins memory against RLIMIT_MEMLOCK: a size above it fails its row
(raise it with 'ulimit -l'), the others go on. The run fails (exit 1) only when
every row failed or was skipped. --json writes the document (kind "mr").`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Sizes, o.Modes = nil, nil
			for _, s := range sizes {
				n, err := result.ParseSize(s)
				if err != nil {
					return flagErrorf("--sizes: %v", err)
				}
				if n < 1 {
					return flagErrorf("--sizes: %q: want at least 1 byte", s)
				}
				if slices.Contains(o.Sizes, n) {
					return flagErrorf("--sizes: %s given twice", result.FormatSize(n))
				}
				o.Sizes = append(o.Sizes, n)
			}
			if len(o.Sizes) == 0 {
				return flagErrorf("--sizes: want at least one size (4K,64K,1M,64M)")
			}
			for _, m := range modes {
				m = strings.ToLower(strings.TrimSpace(m))
				if !slices.Contains(mrbench.Modes, m) {
					return flagErrorf("--modes: unknown mode %q: want warm, cold, huge or odp", m)
				}
				if slices.Contains(o.Modes, m) {
					return flagErrorf("--modes: %s given twice", m)
				}
				o.Modes = append(o.Modes, m)
			}
			if len(o.Modes) == 0 {
				return flagErrorf("--modes: want at least one of warm, cold, huge, odp")
			}
			switch {
			case o.Iterations < 1 || o.Iterations > 1<<20:
				return flagErrorf("-n %d: want 1 to %d registrations per size and mode", o.Iterations, 1<<20)
			case o.Local.Port < 1:
				return flagErrorf("--ib-port %d: ports are numbered from 1", o.Local.Port)
			}
			if err := checkFormat(o.Format, report.TableFormats); err != nil {
				return err
			}
			o.Out, o.Err = cmd.OutOrStdout(), cmd.ErrOrStderr()
			if runF != nil {
				return runF(o)
			}
			return mrRun(o)
		},
	}
	addDeviceFlags(cmd, &o.Local)
	f := cmd.Flags()
	def := make([]string, len(mrbench.DefaultSizes))
	for i, s := range mrbench.DefaultSizes {
		def[i] = result.FormatSize(s)
	}
	f.StringSliceVar(&sizes, "sizes", def, "buffer sizes to register (units: 4K, 1M, 2G)")
	f.StringSliceVar(&modes, "modes", mrbench.Modes, "registration modes: warm, cold, huge, odp")
	f.IntVarP(&o.Iterations, "iterations", "n", 20, "registrations (and deregistrations) per size and mode")
	f.BoolVar(&o.NoRelaxed, "disable-pcie-relaxed", false, "register without PCIe relaxed ordering (IBV_ACCESS_RELAXED_ORDERING), "+
		"as write and read with --disable-pcie-relaxed; by default it is on, as a benchmark's buffers get it; a device without it ignores it")
	f.StringVar(&o.JSON, "json", "", "write the document as JSON to FILE ('-': stdout, the table then goes to stderr)")
	addTableFormatFlag(cmd, &o.Format, "auto")
	return cmd
}

// openMR opens the device for mr: its TimeMR is the timing function.
func openMR(l bench.Local) (mrbench.Timer, mrbench.Device, func() error, error) {
	d, err := verbs.Open(l.Device, l.Port, l.GIDIndex)
	if err != nil {
		return nil, mrbench.Device{}, nil, err
	}
	return d.TimeMR, mrbench.DeviceOf(d.Info, d.Port), d.Close, nil
}

func mrRun(o *mrOptions) error {
	if o.Open == nil {
		o.Open = openMR
	}
	if o.Limits == nil {
		o.Limits = mrbench.Limits
	}
	memlock, ipcLock, err := o.Limits()
	if err != nil {
		return fmt.Errorf("cannot read RLIMIT_MEMLOCK: %w", err)
	}
	timer, dev, closeDev, err := o.Open(o.Local)
	if err != nil {
		return err
	}
	if closeDev != nil {
		defer closeDev()
	}
	doc := mrbench.Run(mrbench.Options{
		Sizes: o.Sizes, Modes: o.Modes, Iterations: o.Iterations, Time: timer, Device: dev, DisablePCIeRelaxed: o.NoRelaxed,
		Memlock: memlock, IPCLock: ipcLock, PageSize: os.Getpagesize(), ToolVersion: version,
	})
	out := outputs{JSON: o.JSON, Format: o.Format, Stdout: o.Out, Stderr: o.Err}
	werr := out.emit(func(w io.Writer) error { return mrbench.Show(w, doc, out.format(w)) },
		func(w io.Writer) error {
			e := json.NewEncoder(w)
			e.SetIndent("", "  ")
			return e.Encode(doc)
		}, nil)
	if werr != nil {
		return werr
	}
	return doc.Err()
}
