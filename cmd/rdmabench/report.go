package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"github.com/rdmabench/rdmabench/fleet/pairs"
	"github.com/rdmabench/rdmabench/report"
	htmlreport "github.com/rdmabench/rdmabench/report/html"
	"github.com/rdmabench/rdmabench/result"
	"github.com/spf13/cobra"
)

func newCmdReport() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "report",
		Example: "  rdmabench report show w.json\n  rdmabench report check w.json --min-link-fraction 0.5",
		Short:   "Read result files: show them, compare runs, check them in CI",
	}
	cmd.AddCommand(newCmdReportShow(nil), newCmdReportCompare(nil), newCmdReportCheck(nil), newCmdReportHTML(nil), newCmdReportMatrix(nil))
	return cmd
}

// readResults reads a results file in any of its forms (result.ReadAll).
func readResults(path string) ([]result.Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rs, err := result.ReadAll(f)
	switch {
	case err != nil:
		return rs, fmt.Errorf("%s: %w", path, err)
	case len(rs) == 0:
		return nil, fmt.Errorf("%s: no results in it (an empty file?)", path)
	}
	return rs, nil
}

type reportShowOptions struct {
	Files []string
	Out   outputs
}

func newCmdReportShow(runF func(*reportShowOptions) error) *cobra.Command {
	o := &reportShowOptions{}
	cmd := &cobra.Command{
		Use:     "show FILE...",
		Example: "  rdmabench report show w.json sweep.ndjson\n  rdmabench report show w.json --format plain --csv w.csv",
		Short:   "Show results (JSON, NDJSON, CSV) or a tuned report as tables, or convert them",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Files = args
			if err := o.Out.check(); err != nil {
				return err
			}
			o.Out.Stdout, o.Out.Stderr = cmd.OutOrStdout(), cmd.ErrOrStderr()
			if runF != nil {
				return runF(o)
			}
			return reportShowRun(o)
		},
	}
	cmd.Flags().StringVar(&o.Out.JSON, "json", "", "also write the results as JSON to FILE ('-' for stdout)")
	cmd.Flags().StringVar(&o.Out.CSV, "csv", "", "also write the results as CSV to FILE ('-' for stdout)")
	addFormatFlag(cmd, &o.Out)
	return cmd
}

func reportShowRun(o *reportShowOptions) error {
	var all []result.Result
	for _, path := range o.Files {
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		t, ok, err := report.ReadTuned(b)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if ok {
			if err := writeTuned(o.Out, t, true); err != nil { // the whole report: a file read in full
				return err
			}
			continue
		}
		rs, err := result.ReadAll(bytes.NewReader(b))
		switch {
		case err != nil:
			return fmt.Errorf("%s: %w", path, err)
		case len(rs) == 0:
			return fmt.Errorf("%s: no results in it (an empty file?)", path)
		}
		all = append(all, rs...)
	}
	if len(all) == 0 {
		return nil
	}
	return o.Out.write(all)
}

type reportCompareOptions struct {
	Files  []string
	Format string // --format: auto, table or plain
	Out    io.Writer
}

func newCmdReportCompare(runF func(*reportCompareOptions) error) *cobra.Command {
	o := &reportCompareOptions{}
	cmd := &cobra.Command{
		Use:     "compare A B [C...]",
		Example: "  rdmabench report compare cx5.json cx6.json\n  rdmabench report compare cx5.json cx6.json --format plain | awk '{print $1, $4}'",
		Short:   "Compare runs or NIC generations side by side, by configuration, with deltas against A",
		Long: `Compare runs or NIC generations side by side, by configuration, with deltas against A.

Under the table, one line per host fact (PCIe link, NUMA node, CPUs, governors, kernel,
clock domain, firmware, provider, rdma-core) in which a run's client or server host
differs from A's, A's value first: "host: server, a.json vs b.json: kernel_release:
6.8.0-45-generic vs 6.1.0-18-amd64". Nothing is said where neither run recorded its
hosts' facts.

Results measured on a virtual clock (the Soft-RoCE test bed's VM_CLOCK=virtual, host
fact clock_domain) are not compared with results measured on any other: their change
says "not comparable: clock domain differs", a line under the table says which run was
measured on which clock, and the report says once that virtual time describes
Soft-RoCE's CPU path, not a NIC. As for other configurations that cannot be compared,
the exit status is 0.

Columns are named by the files' names; two files of the same name by the shortest ends
of their paths that tell them apart (a/sweep.ndjson, b/sweep.ndjson).`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(o.Format, report.TableFormats); err != nil {
				return err
			}
			o.Files, o.Out = args, cmd.OutOrStdout()
			if runF != nil {
				return runF(o)
			}
			return reportCompareRun(o)
		},
	}
	addTableFormatFlag(cmd, &o.Format, "auto")
	return cmd
}

func reportCompareRun(o *reportCompareOptions) error {
	var runs [][]result.Result
	for _, path := range o.Files {
		rs, err := readResults(path)
		if err != nil {
			return err
		}
		runs = append(runs, rs)
	}
	return report.CompareShow(o.Out, report.Labels(o.Files), runs, formatFor(o.Out, o.Format))
}

type reportCheckOptions struct {
	Files      []string
	Baseline   string // results file; loaded into Thresholds.Baseline by the run
	Thresholds report.Thresholds
	NoBadPair  bool // fleet results: fail the bad pairs
	Outliers   pairs.OutlierOpts
	Out        io.Writer
}

func newCmdReportCheck(runF func(*reportCheckOptions) error) *cobra.Command {
	o := &reportCheckOptions{}
	cmd := &cobra.Command{
		Use:     "check FILE...",
		Example: "  rdmabench report check w.json --min-bw 90\n  rdmabench report check new.json --baseline old.json --tolerance 0.05",
		Short:   "Check results against thresholds or a baseline; exit 1 with one line per failure",
		Long: `Check results against thresholds or a baseline, for CI: exit 0 when every result
passes, exit 1 with one line per failure (naming the configuration and the reason).

A p99 is only compared where the sample count supports it (at least 1000 samples; a
bandwidth test samples its signalled WRs, iterations x QPs / cq-mod): --max-p99 on a
result without one fails, as does a result that lacks the p99 its --baseline has. A
baseline without a p99 cannot be regressed from: that is printed as a NOTE.

A result measured on a virtual clock (the Soft-RoCE test bed's VM_CLOCK=virtual) checked
against a baseline that was not, or the other way round, fails as not comparable,
whatever the numbers; with a virtual clock's results a NOTE says what virtual time
describes.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			th := o.Thresholds
			for _, f := range []struct {
				name string
				v    float64
			}{{"--min-bw", th.MinBWGbps}, {"--min-link-fraction", th.MinLinkFraction}, {"--min-rate", th.MinMsgRateMpps}, {"--tolerance", th.Tolerance}} {
				if !(f.v >= 0) || math.IsInf(f.v, 0) {
					return flagErrorf("%s %v: want a number, 0 or more", f.name, f.v)
				}
			}
			if th.MaxP99 < 0 {
				return flagErrorf("--max-p99 %v: want a duration, 0 (none) or more", th.MaxP99)
			}
			o.Files, o.Out = args, cmd.OutOrStdout()
			if runF != nil {
				return runF(o)
			}
			return reportCheckRun(o)
		},
	}
	f := cmd.Flags()
	f.Float64Var(&o.Thresholds.MinBWGbps, "min-bw", 0, "minimum bandwidth, Gb/s")
	f.Float64Var(&o.Thresholds.MinLinkFraction, "min-link-fraction", 0, "minimum bandwidth as a fraction of the port's rate (0.9 = 90%)")
	f.Float64Var(&o.Thresholds.MinMsgRateMpps, "min-rate", 0, "minimum message rate, Mpps")
	f.DurationVar(&o.Thresholds.MaxP99, "max-p99", 0, "maximum p99 latency (e.g. 50us); a result with too few samples for a p99 fails")
	f.StringVar(&o.Baseline, "baseline", "", "results file to compare against, by configuration")
	f.Float64Var(&o.Thresholds.Tolerance, "tolerance", 0.05, "allowed regression against --baseline, as a fraction")
	f.BoolVar(&o.Thresholds.NoTaint, "no-taint", false, "fail tainted results: an error counter moved, a sanity check failed or the data's sender received pause frames (congestion alone does not taint)")
	f.BoolVar(&o.NoBadPair, "no-bad-pair", false, "fleet results: fail every pair judged bad against the fleet after its retests (as 'report matrix' judges)")
	addOutlierFlags(cmd, &o.Outliers)
	return cmd
}

func reportCheckRun(o *reportCheckOptions) error {
	th := o.Thresholds
	if o.Baseline != "" {
		b, err := readResults(o.Baseline)
		if err != nil {
			return err
		}
		th.Baseline = b
	}
	var all []result.Result
	for _, path := range o.Files {
		rs, err := readResults(path)
		if err != nil {
			return err
		}
		all = append(all, rs...)
	}
	fails, notes := report.Check(all, th)
	if o.NoBadPair {
		out, err := pairs.FromResults(all, o.Outliers)
		if err != nil {
			return err
		}
		for _, v := range out.Verdicts {
			if v.Bad {
				fails = append(fails, fmt.Sprintf("fleet pair %d -> %d (%s -> %s): %s", v.A, v.B, out.Hosts[v.A], out.Hosts[v.B], v.Why)) // text: cleaned (pairs.FromResults cleans the hosts; Why is built from cleaned text)
			}
		}
	}
	for _, n := range notes {
		fmt.Fprintln(o.Out, "NOTE", n)
	}
	for _, f := range fails {
		fmt.Fprintln(o.Out, "FAIL", f)
	}
	if len(fails) > 0 {
		return fmt.Errorf("%d of %d checks failed", len(fails), len(all))
	}
	fmt.Fprintf(o.Out, "ok: %d results pass\n", len(all))
	return nil
}

type reportHTMLOptions struct {
	Files  []string
	Output string
	Title  string
	Labels []string
	Out    io.Writer
}

func newCmdReportHTML(runF func(*reportHTMLOptions) error) *cobra.Command {
	o := &reportHTMLOptions{}
	cmd := &cobra.Command{
		Use:     "html FILE... [-o report.html]",
		Example: "  rdmabench report html sweep.ndjson tuned.json -o report.html",
		Short:   "Write results, sweep streams and tuned reports as one self-contained HTML page",
		Long: `Write one self-contained HTML page (inline SVG and CSS; it loads nothing): bandwidth
and message rate against message size, heat maps of the bandwidth over SQ depth and CQ
moderation, latency spectra and CDFs from the stored histograms, the tuned report's
tables, the NIC counters' verdicts, and with several inputs the change of each against
the first, judged against the runs' noise.

FILEs are results (JSON, NDJSON, CSV), sweep streams and tuned reports (told by their
content). Each results file is a series, labelled by its file name or --label; a tuned
report joins the results of the same client device, or stands alone.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.Output == "" {
				return flagErrorf("--output: want a file name")
			}
			for _, l := range o.Labels {
				if l == "" {
					return flagErrorf("--label %q: an empty label", strings.Join(o.Labels, ","))
				}
			}
			if len(o.Labels) > len(args) {
				return flagErrorf("--label: %d labels for %d files", len(o.Labels), len(args))
			}
			o.Files, o.Out = args, cmd.OutOrStdout()
			if runF != nil {
				return runF(o)
			}
			return reportHTMLRun(o)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.Output, "output", "o", "report.html", "write the page to FILE")
	f.StringVar(&o.Title, "title", "", "the page's title (default \"rdmabench report\")")
	f.StringSliceVar(&o.Labels, "label", nil, "name the series, one per results file in order (a,b); default: the file names")
	return cmd
}

func reportHTMLRun(o *reportHTMLOptions) error {
	var files []htmlreport.File
	for _, path := range o.Files {
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files = append(files, htmlreport.File{Path: path, Data: b})
	}
	n, err := writeHTML(o.Output, files, o.Labels, o.Title)
	if err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "wrote %s (%d series)\n", o.Output, n)
	return nil
}

// writeHTML renders files (results, sweep streams, tuned reports) as the HTML report
// at path (report html, sweep --html) and returns the number of series.
func writeHTML(path string, files []htmlreport.File, labels []string, title string) (int, error) {
	series, err := htmlreport.Build(files, labels)
	if errors.Is(err, htmlreport.ErrLabels) {
		return 0, flagErrorf("--label: %v", err)
	}
	if err != nil {
		return 0, err
	}
	var page bytes.Buffer
	if err := htmlreport.Write(&page, series, htmlreport.Options{Title: title, ToolVersion: version}); err != nil {
		return 0, err
	}
	return len(series), os.WriteFile(path, page.Bytes(), 0o644)
}
