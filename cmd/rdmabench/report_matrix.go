package main

import (
	"fmt"
	"io"

	"github.com/rdmabench/rdmabench/fleet/pairs"
	"github.com/rdmabench/rdmabench/report"
	"github.com/rdmabench/rdmabench/result"
	"github.com/spf13/cobra"
)

type reportMatrixOptions struct {
	Files    []string
	Metric   string
	Outliers pairs.OutlierOpts
	Format   string // --format: auto, table or plain
	Out      io.Writer
}

// newCmdReportMatrix is `report matrix`: a fleet's results stream as a host x host table.
func newCmdReportMatrix(runF func(*reportMatrixOptions) error) *cobra.Command {
	o := &reportMatrixOptions{}
	cmd := &cobra.Command{
		Use:     "matrix FILE...",
		Example: "  rdmabench report matrix fleet.ndjson",
		Short:   "Show a fleet's results as a host x host table, bad pairs marked",
		Long: `Show the results stream of 'rdmabench fleet' as a host x host table (row: the client,
column: the server) of Gb/s or p50 latency, each pair judged against the fleet as the
coordinator judged it (with the retests the stream holds): '!' bad, '~' flaky (bad, then
good in a retest), '?' cannot tell (fewer than 3 pairs measured), '-' not run.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.Metric != "" && !pairs.ValidMetric(o.Metric) {
				return flagErrorf("--metric %q: want bw or lat", o.Metric)
			}
			if o.Outliers.MinBWFraction <= 0 || o.Outliers.MinBWFraction >= 1 || o.Outliers.MaxLatFactor <= 1 {
				return flagErrorf("--min-bw-fraction within (0, 1), --max-lat-factor above 1")
			}
			if err := checkFormat(o.Format, report.TableFormats); err != nil {
				return err
			}
			o.Files, o.Out = args, cmd.OutOrStdout()
			if runF != nil {
				return runF(o)
			}
			return reportMatrixRun(o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Metric, "metric", "", "bw or lat (default: the tests')")
	addOutlierFlags(cmd, &o.Outliers)
	addTableFormatFlag(cmd, &o.Format, "auto")
	return cmd
}

func addOutlierFlags(cmd *cobra.Command, o *pairs.OutlierOpts) {
	f := cmd.Flags()
	f.Float64Var(&o.MinBWFraction, "min-bw-fraction", pairs.DefaultMinBWFraction, "a pair below this fraction of the fleet's median bandwidth is bad")
	f.Float64Var(&o.MaxLatFactor, "max-lat-factor", pairs.DefaultMaxLatFactor, "a pair above this multiple of the fleet's median p50 latency is bad")
}

// fleetOutcome reads results files and rebuilds the fleet run they hold.
func fleetOutcome(files []string, opts pairs.OutlierOpts) (pairs.Outcome, []result.Result, error) {
	var all []result.Result
	for _, path := range files {
		rs, err := readResults(path)
		if err != nil {
			return pairs.Outcome{}, nil, err
		}
		all = append(all, rs...)
	}
	out, err := pairs.FromResults(all, opts)
	return out, all, err
}

func reportMatrixRun(o *reportMatrixOptions) error {
	out, all, err := fleetOutcome(o.Files, o.Outliers)
	if err != nil {
		return err
	}
	metric := o.Metric
	if metric == "" {
		metric = pairs.MetricBW
		for _, r := range all {
			if r.Fleet != nil && r.Config.Test == result.Lat {
				metric = pairs.MetricLat
			}
		}
	}
	if err := pairs.WriteMatrixFormat(o.Out, out.Hosts, pairs.Matrix(len(out.Hosts), out.Results, out.Verdicts, metric), metric, formatFor(o.Out, o.Format)); err != nil {
		return err
	}
	for _, v := range out.Verdicts {
		if !v.Good() {
			fmt.Fprintf(o.Out, "%d -> %d (%s -> %s): %s\n", v.A, v.B, out.Hosts[v.A], out.Hosts[v.B], v.Why) // text: cleaned (pairs.FromResults cleans the hosts; Why is built from cleaned text)
		}
	}
	return nil
}
