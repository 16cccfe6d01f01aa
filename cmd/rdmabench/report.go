package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/rdmabench/rdmabench/report"
	"github.com/rdmabench/rdmabench/result"
	"github.com/spf13/cobra"
)

func newCmdReport() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "report",
		Short: "Read result files: show them, compare runs, check them in CI",
	}
	cmd.AddCommand(newCmdReportShow(), newCmdReportCompare(), newCmdReportCheck())
	return cmd
}

func readResults(path string) ([]result.Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rs, err := result.ReadAll(f)
	if err != nil {
		return rs, fmt.Errorf("%s: %w", path, err)
	}
	return rs, nil
}

func newCmdReportShow() *cobra.Command {
	var out outputs
	cmd := &cobra.Command{
		Use:   "show FILE...",
		Short: "Show results (JSON, NDJSON streams) or a tuned-parameter report as tables; convert with --json/--csv",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			out.Stdout, out.Stderr = cmd.OutOrStdout(), cmd.ErrOrStderr()
			var all []result.Result
			for _, a := range args {
				if t, ok := readTuned(a); ok {
					if err := writeTuned(out, t); err != nil {
						return err
					}
					continue
				}
				rs, err := readResults(a)
				if err != nil {
					return err
				}
				all = append(all, rs...)
			}
			if len(all) == 0 {
				return nil
			}
			return out.write(all)
		},
	}
	cmd.Flags().StringVar(&out.JSON, "json", "", "also write the results as JSON to FILE ('-' for stdout)")
	cmd.Flags().StringVar(&out.CSV, "csv", "", "also write the results as CSV to FILE ('-' for stdout)")
	return cmd
}

func readTuned(path string) (report.Tuned, bool) {
	var t report.Tuned
	b, err := os.ReadFile(path)
	if err != nil || json.Unmarshal(b, &t) != nil || t.Ops == nil {
		return t, false
	}
	return t, true
}

func newCmdReportCompare() *cobra.Command {
	return &cobra.Command{
		Use:   "compare A B [C...]",
		Short: "Compare runs or NIC generations side by side, aligned by configuration, with deltas against A",
		Args:  cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			var runs [][]result.Result
			var names []string
			for _, a := range args {
				rs, err := readResults(a)
				if err != nil {
					return err
				}
				runs = append(runs, rs)
				names = append(names, filepath.Base(a))
			}
			return report.Compare(cmd.OutOrStdout(), names, runs)
		},
	}
}

func newCmdReportCheck() *cobra.Command {
	var th report.Thresholds
	var baseline string
	cmd := &cobra.Command{
		Use:   "check FILE...",
		Short: "Check results against thresholds or a baseline; exit 1 with one line per failure",
		Long: `Check results against thresholds or a baseline, for CI: exit 0 when every result
passes, exit 1 with one line per failure (naming the configuration and the reason).

A p99 is only compared where the sample count supports it (at least 1000 samples; a
bandwidth test samples its signalled WRs, iterations x QPs / cq-mod): --max-p99 on a
result without one fails, as does a result that lacks the p99 its --baseline has. A
baseline without a p99 cannot be regressed from: that is printed as a NOTE.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if baseline != "" {
				b, err := readResults(baseline)
				if err != nil {
					return err
				}
				th.Baseline = b
			}
			var all []result.Result
			for _, a := range args {
				rs, err := readResults(a)
				if err != nil {
					return err
				}
				all = append(all, rs...)
			}
			fails, notes := report.Check(all, th)
			for _, n := range notes {
				fmt.Fprintln(cmd.OutOrStdout(), "NOTE", n)
			}
			for _, f := range fails {
				fmt.Fprintln(cmd.OutOrStdout(), "FAIL", f)
			}
			if len(fails) > 0 {
				return fmt.Errorf("%d of %d checks failed", len(fails), len(all))
			}
			fmt.Fprintf(cmd.OutOrStdout(), "ok: %d results pass\n", len(all))
			return nil
		},
	}
	f := cmd.Flags()
	f.Float64Var(&th.MinBWGbps, "min-bw", 0, "minimum bandwidth, Gb/s")
	f.Float64Var(&th.MinLinkFraction, "min-link-fraction", 0, "minimum bandwidth as a fraction of the port's rate (0.9 = 90%)")
	f.Float64Var(&th.MinMsgRateMpps, "min-rate", 0, "minimum message rate, Mpps")
	f.DurationVar(&th.MaxP99, "max-p99", 0, "maximum p99 latency (e.g. 50us); a result with too few samples for a p99 fails")
	f.StringVar(&baseline, "baseline", "", "results file to compare against, by configuration")
	f.Float64Var(&th.Tolerance, "tolerance", 0.05, "allowed regression against --baseline, as a fraction")
	return cmd
}
