package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// perftest's command lines, read by rdmabench (issue 23, section 2).
//
// Where perftest and rdmabench mean the same thing by a flag, perftest's long name is
// an alias of rdmabench's, by normalisation rather than by a second registered flag:
// --help and docs/cli.md list each flag once, under rdmabench's name, and a perftest
// command line still parses. perftest's flags that rdmabench does not implement are
// registered hidden, so that they are refused with what to do instead, never with
// "unknown flag".

// perftestAliases are perftest's long names (after perftestNames has lower-cased them
// and turned '_' into '-') whose rdmabench flag has another name.
var perftestAliases = map[string]string{
	"ib-dev":        "device",
	"qp":            "qps",
	"inline-size":   "inline",
	"use-hugepages": "hugepages",
	"outs-num":      "outs",
}

// perftestNames is the flag-name normaliser of the commands that take perftest's
// flags: perftest spells some names with '_' (--post_list, --report_gbits), some in
// capitals (--CPU-freq), some differently (--ib-dev, --qp, --inline_size).
func perftestNames(_ *pflag.FlagSet, name string) pflag.NormalizedName {
	name = strings.ToLower(strings.ReplaceAll(name, "_", "-"))
	if to, ok := perftestAliases[name]; ok {
		name = to
	}
	return pflag.NormalizedName(name)
}

// refusedFlag is a perftest flag rdmabench does not implement: its names, whether it
// takes a value, and what to do instead.
type refusedFlag struct {
	name, short string
	value       bool
	instead     string
}

// refusedFlags are perftest 6.x's flags (perftest_parameters.c) that rdmabench's client
// commands do not implement. A perftest flag that is neither here nor an rdmabench flag
// is one of the raw-Ethernet, multicast or SEND tests', which rdmabench does not run.
var refusedFlags = []refusedFlag{
	{"connection", "c", true, "rdmabench measures RC QPs only (UC, UD, XRC, DC, SRD are not implemented): drop -c, or use perftest"},
	{"rdma-cm", "R", false, "rdmabench connects its QPs over its own control connection, not rdma_cm: drop -R"},
	{"comm-rdma-cm", "z", false, "rdmabench exchanges QP details over its own TCP control connection: drop -z"},
	{"tos", "T", true, "-T sets the type of service of rdma_cm's QPs (rdma_set_option), and rdmabench connects its QPs without rdma_cm: give the traffic class with --tclass (the GRH's, which on RoCE is the IP header's TOS byte: DSCP << 2 | ECN), and the service level with --sl"},
	{"flow-label", "", true, "the flow label is not settable in rdmabench: drop --flow_label"},
	{"hop-limit", "L", true, "the hop limit is not settable in rdmabench (perftest's -L is for its raw Ethernet tests; the GRH of its and rdmabench's RC QPs has hop limit 255): drop -L"},
	{"pkey-index", "", true, "rdmabench uses P_Key index 0: drop --pkey_index"},
	{"version", "V", false, "use 'rdmabench --version'"},
	{"nopeak", "N", false, "rdmabench computes no per-WR peak: --format perftest shows a peak only from --interval samples (docs/usage.md)"},
	{"report-cycles", "C", false, "rdmabench reports nanoseconds, converted with a ratio measured over the loop: drop -C"},
	{"report-histogrm", "H", false, "the full histogram is in every result: use --json (lat_ns, histogram) or 'report show'"},
	{"report-histogram", "", false, "the full histogram is in every result: use --json (lat_ns, histogram) or 'report show'"},
	{"report-unsorted", "U", false, "rdmabench keeps a histogram, not the raw samples: use --json"},
	{"report-both", "", false, "-b reports each direction and their sum already: drop --report-both"},
	{"report-per-port", "", false, "rdmabench runs one port per test: drop --report-per-port"},
	{"report-counters", "W", true, "use --counters (both sides' port counters, around the measured phase)"},
	{"dualport", "O", false, "rdmabench runs one port per test: run one test per port"},
	{"atomic-type", "A", true, "rdmabench measures WRITE and READ, not atomics"},
	{"vector", "X", true, "completion vectors are not settable in rdmabench: drop -X"},
	{"margin", "f", true, "rdmabench measures the whole --duration after its warm-up (--warmup): drop -f"},
	{"rx-depth", "r", true, "WRITE and READ post no receives: drop -r"},
	{"mcg", "g", false, "multicast is a SEND/UD test, which rdmabench does not run"},
	{"mgid", "M", true, "multicast is a SEND/UD test, which rdmabench does not run"},
	{"limit-bw", "w", true, "rate limiting is not implemented in rdmabench: drop -w"},
	{"limit-msgrate", "y", true, "rate limiting is not implemented in rdmabench: drop -y"},
	{"rate-limit", "", true, "rate limiting is not implemented in rdmabench: drop --rate_limit"},
	{"burst-size", "", true, "rate limiting is not implemented in rdmabench: drop --burst_size"},
	{"use-cuda", "", true, "GPU memory (CUDA, ROCm, Neuron, Gaudi) is not implemented in rdmabench; use perftest for GPUDirect"},
	{"use-cuda-bus-id", "", true, "GPU memory is not implemented in rdmabench; use perftest for GPUDirect"},
	{"use-cuda-dmabuf", "", false, "GPU memory is not implemented in rdmabench; use perftest for GPUDirect"},
	{"use-rocm", "", true, "GPU memory is not implemented in rdmabench; use perftest"},
	{"use-neuron", "", true, "accelerator memory is not implemented in rdmabench; use perftest"},
	{"use-hl", "", true, "accelerator memory is not implemented in rdmabench; use perftest"},
	{"mmap", "", true, "rdmabench allocates its buffers (--hugepages for 2 MiB pages): drop --mmap"},
	{"odp", "", false, "on-demand paging is not implemented in rdmabench: drop --odp (see --mr for registration costs)"},
	{"use-srq", "", false, "WRITE and READ use no receive queue: drop --use-srq"},
	{"reversed", "", false, "for the other direction run the other operation (read bw), or -b for both"},
	{"tcp", "", false, "rdmabench always exchanges QP details over TCP: drop --tcp"},
	{"cpu-util", "", false, "CPU utilisation is not measured by rdmabench: drop --cpu_util"},
	{"out-json", "", false, "use --json FILE (the whole result, with a schema)"},
	{"out-json-file", "", true, "use --json FILE (the whole result, with a schema)"},
	{"latency-gap", "", true, "latency tests post the next round at once: drop --latency_gap"},
	{"retry-count", "", true, "this is rdma_cm's, which rdmabench does not use: drop --retry_count"},
	{"dont-xchg-versions", "", false, "rdmabench checks its peer's protocol version: drop --dont_xchg_versions"},
	{"ipv6", "", false, "give the server as an IPv6 address ([addr]:port) and its GID with -x: drop --ipv6"},
	{"mr-per-qp", "", false, "rdmabench registers one buffer per test: drop --mr_per_qp"},
	{"perform-warm-up", "", false, "rdmabench always warms up (--warmup sets how much): drop --perform_warm_up"},
	{"wait-destroy", "", true, "drop --wait_destroy"},
	{"dlid", "", true, "rdmabench resolves the path from the GID: drop --dlid"},
	{"force-link", "", true, "rdmabench takes the port's link layer: drop --force-link"},
	{"server", "Z", false, "run 'rdmabench server' on the other host"},
	{"client", "P", false, "the client is the command with a SERVER argument: drop -P"},
}

// perftestFlagRow is a row of the flag map: perftest's flags, rdmabench's, and the
// difference, as Markdown.
type perftestFlagRow struct{ perftest, rdmabench, difference string }

// perftestFlagMap is perftest's flags next to rdmabench's, with refusedFlags the
// compatibility table: docs/usage.md's flag map is generated from both (make docs,
// TestPerftestFlagMapDocs), and TestPerftestFlagMap checks every flag a row names
// against the test commands' own flags (a refused row's against refusedFlags).
var perftestFlagMap = []perftestFlagRow{
	{"`-d/--ib-dev`, `-i/--ib-port`, `-x/--gid-index`, `-p/--port`", "same", "`-p` is the control port, default 18600 (perftest 18515)"},
	{"`-s/--size`, `-n/--iters`, `-D/--duration`", "same", "sizes take units (`64K`); `-D` with `--run_infinitely` bounds the run (perftest: the print period)"},
	{"`-a/--all`", "same", "2 B to 8 MiB, a result each, one connection; written to `--json`/`--csv` as each size ends"},
	{"`-q/--qp`, `-t/--tx-depth`, `-l/--post_list`, `-Q/--cq-mod`", "`--qps`, same, `--post-list`, same", "`--iters` need not be a multiple of `--post-list`"},
	{"`-I/--inline_size`", "`-I/--inline`", "`auto` (the default) is perftest's per-device size"},
	{"`-e/--events`, `-b/--bidirectional`, `-m/--mtu`, `-u/--qp-timeout`", "same", ""},
	{"`-F/--CPU-freq`", "accepted", "does nothing: rdmabench never uses the CPU's frequency (`--clock`)"},
	{"`--report_gbits`", "same", "for `--format perftest` and `--output`; the tables always show Gb/s"},
	{"`--output bandwidth|message_rate|latency`", "same", "latency: the mean, µs"},
	{"`--run_infinitely`", "same", "an `--interval` line every 5 s; Ctrl-C keeps and writes the result; at most `--duration` (570 s: a default server's limit)"},
	{"`--use_hugepages`", "`--hugepages`", ""},
	{"BW peak", "`peak`", "the best full `--interval`, `-` without one; perftest's is its best few WRs, which overstates"},
	{"`-o/--outs_num`", "`-o/--outs`", "the client's cap on its READs in flight per QP; not with `-b` or several servers"},
	{"(the `ibv_wr_*` API), `--use_old_post_send`", "`--post-api auto|wr|legacy`, same", "`auto`: perftest's choice, the extended QP API on mlx5, EFA and HNS; the result's `post_api` says which ran"},
	{"`-S/--sl`, `--tclass`, `--disable_pcie_relaxed`", "same (`--disable-pcie-relaxed`)", "in the plan, so both sides apply them; relaxed ordering on by default except in `write lat`, as perftest ([On a real fabric](#on-a-real-fabric))"},
	{"`-c UC|UD|XRC|DC`, `-R`, `-z`, `-T`, `--use_cuda*`, `-w`, `-y`, ...", "refused, exit 2", "RC only, own connection setup (`-T` is rdma_cm's: use `--tclass`); every refused flag and what to do instead: below"},
}

// addPerftestFlags registers, hidden, perftest's flags that rdmabench does not
// implement (refusePerftestFlags refuses them), and makes cmd read perftest's long
// names. A flag cmd already has, by name or shorthand, is left to it.
func addPerftestFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.SetNormalizeFunc(perftestNames)
	for _, r := range refusedFlags {
		short := r.short
		if f.Lookup(r.name) != nil {
			continue
		}
		if short != "" && f.ShorthandLookup(short) != nil {
			short = ""
		}
		if r.value {
			f.StringP(r.name, short, "", r.instead)
		} else {
			f.BoolP(r.name, short, false, r.instead)
		}
		_ = f.MarkHidden(r.name)
	}
}

// refusePerftestFlags is the usage error (exit 2) for the first perftest flag on the
// command line that rdmabench does not implement, naming it and what to do instead.
func refusePerftestFlags(cmd *cobra.Command) error {
	for _, r := range refusedFlags {
		fl := cmd.Flags().Lookup(r.name)
		if fl == nil || !fl.Hidden || !fl.Changed {
			continue
		}
		name := "--" + r.name
		if r.short != "" && fl.Shorthand == r.short {
			name = "-" + r.short + "/" + name
		}
		if r.value {
			name += " " + fl.Value.String()
		}
		return flagErrorf("%s: perftest's flag, not implemented by rdmabench: %s", name, r.instead)
	}
	return nil
}

// allSizes are -a's message sizes: perftest's RUN_ALL loop, 2^1 to 2^23 bytes.
func allSizes() []int {
	var s []int
	for i := 1; i < 24; i++ {
		s = append(s, 1<<i)
	}
	return s
}

// outputValue checks --output against the test: perftest prints the one number
// asked for, bandwidth or message_rate for bandwidth tests, latency for latency tests.
func checkOutput(output, test string) error {
	if output == "" {
		return nil
	}
	want := map[string][]string{"bw": {"bandwidth", "message_rate"}, "lat": {"latency"}}[test]
	for _, w := range want {
		if output == w {
			return nil
		}
	}
	return flagErrorf("--output %q: a %s test prints %s", output, test, strings.Join(want, " or "))
}

// outputNumber is --output's one number for a result, as perftest prints it: the
// average bandwidth in MiB/s (perftest's MB/sec) or, with --report_gbits, Gb/s; the
// message rate in Mpps; the mean latency in microseconds.
func outputNumber(output string, gbits bool, bwGbps, mpps, meanNS float64) string {
	switch output {
	case "bandwidth":
		if gbits {
			return fmt.Sprintf("%f", bwGbps)
		}
		return fmt.Sprintf("%f", bwGbps*1e9/8/(1<<20))
	case "message_rate":
		return fmt.Sprintf("%f", mpps)
	}
	return fmt.Sprintf("%f", meanNS/1e3)
}
