package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/bench"
	"github.com/rdmabench/rdmabench/bench/ops"
	"github.com/rdmabench/rdmabench/fleet/pairs"
	"github.com/rdmabench/rdmabench/oob"
	"github.com/rdmabench/rdmabench/plan"
	"github.com/rdmabench/rdmabench/report"
	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/verbs"
	"github.com/spf13/cobra"
)

// execute runs one command on args as rdmabench runs it (bad usage is a *flagError)
// and returns what it wrote.
func execute(cmd *cobra.Command, args ...string) (string, error) {
	usageErrors(cmd)
	var out bytes.Buffer
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.Execute()
	return out.String(), err
}

// flagCase is one command line: the options runF must get, or the words of the flag
// error (exit 2) it must fail with, runF not called.
type flagCase[O any] struct {
	args    []string
	want    func(*O) // changes to the defaults; nil: the defaults
	wantErr string
}

// checkFlags runs each case through newCmd's runF. clean clears what the command
// fills in from its environment (writers), which the table does not compare.
func checkFlags[O any](t *testing.T, name string, newCmd func(func(*O) error) *cobra.Command, defaults func() O, clean func(*O), cases []flagCase[O]) {
	t.Helper()
	for _, tc := range cases {
		var got *O
		_, err := execute(newCmd(func(o *O) error { got = o; return nil }), tc.args...)
		if tc.wantErr != "" {
			var fe *flagError
			if !errors.As(err, &fe) || !strings.Contains(err.Error(), tc.wantErr) || got != nil {
				t.Errorf("%s %q: want a flag error with %q before the run, got %v (ran: %v)", name, tc.args, tc.wantErr, err, got != nil)
			}
			continue
		}
		if err != nil || got == nil {
			t.Errorf("%s %q: %v", name, tc.args, err)
			continue
		}
		want := defaults()
		if tc.want != nil {
			tc.want(&want)
		}
		clean(got)
		if !reflect.DeepEqual(*got, want) {
			t.Errorf("%s %q:\n got %+v\nwant %+v", name, tc.args, *got, want)
		}
	}
}

func TestVersionFlags(t *testing.T) {
	checkFlags(t, "version", newCmdVersion, func() versionOptions { return versionOptions{} },
		func(o *versionOptions) { o.Out = nil },
		[]flagCase[versionOptions]{
			{args: nil},
			{args: []string{"extra"}, wantErr: `unknown command "extra" for "version"`},
			{args: []string{"--json"}, wantErr: "unknown flag: --json"},
		})
	var out bytes.Buffer
	if err := versionRun(&versionOptions{Out: &out}); err != nil || !strings.Contains(out.String(), "result schema 3") {
		t.Fatalf("%v: %s", err, out.String())
	}
}

func TestProfilesFlags(t *testing.T) {
	checkFlags(t, "profiles", newCmdProfiles, func() profilesOptions { return profilesOptions{Format: "auto"} },
		func(o *profilesOptions) { o.Out = nil },
		[]flagCase[profilesOptions]{
			{args: nil},
			{args: []string{"cx5"}, want: func(o *profilesOptions) { o.Name = "cx5" }},
			{args: []string{"./my.yaml"}, want: func(o *profilesOptions) { o.Name = "./my.yaml" }},
			{args: []string{"cx5", "cx6"}, wantErr: "accepts at most 1 arg(s), received 2"},
			{args: []string{"--all"}, wantErr: "unknown flag: --all"},
			{args: []string{"--format", "plain"}, want: func(o *profilesOptions) { o.Format = "plain" }},
			{args: []string{"--format", "boxes"}, wantErr: `--format "boxes": want auto, table, plain`},
			{args: []string{"cx5", "--format", "plain"}, wantErr: "--format goes with the list"},
		})
	var out bytes.Buffer
	if err := profilesRun(&profilesOptions{Name: "rxe", Out: &out}); err != nil || !strings.Contains(out.String(), "msg_size_bytes") {
		t.Fatalf("profiles rxe: %v\n%s", err, out.String())
	}
}

func TestReportShowFlags(t *testing.T) {
	checkFlags(t, "report show", newCmdReportShow, func() reportShowOptions { return reportShowOptions{Out: outputs{Format: "auto"}} },
		func(o *reportShowOptions) { o.Out.Stdout, o.Out.Stderr = nil, nil },
		[]flagCase[reportShowOptions]{
			{args: []string{"a.json"}, want: func(o *reportShowOptions) { o.Files = []string{"a.json"} }},
			{args: []string{"a.json", "b.ndjson", "--json", "-"}, want: func(o *reportShowOptions) {
				o.Files, o.Out.JSON = []string{"a.json", "b.ndjson"}, "-"
			}},
			{args: []string{"--csv", "out.csv", "a.json"}, want: func(o *reportShowOptions) { o.Files, o.Out.CSV = []string{"a.json"}, "out.csv" }},
			{args: nil, wantErr: "requires at least 1 arg(s), only received 0"},
			{args: []string{"--json", "-", "--csv", "-", "a.json"}, wantErr: "only one can go to stdout"},
			{args: []string{"--json"}, wantErr: "flag needs an argument: --json"},
			{args: []string{"a.json", "--format", "plain"}, want: func(o *reportShowOptions) { o.Files, o.Out.Format = []string{"a.json"}, "plain" }},
			{args: []string{"a.json", "--format", "boxes"}, wantErr: `--format "boxes": want auto, table, plain, perftest`},
		})
}

func TestReportCompareFlags(t *testing.T) {
	checkFlags(t, "report compare", newCmdReportCompare, func() reportCompareOptions { return reportCompareOptions{Format: "auto"} },
		func(o *reportCompareOptions) { o.Out = nil },
		[]flagCase[reportCompareOptions]{
			{args: []string{"cx5.json", "cx6.json"}, want: func(o *reportCompareOptions) { o.Files = []string{"cx5.json", "cx6.json"} }},
			{args: []string{"a", "b", "c"}, want: func(o *reportCompareOptions) { o.Files = []string{"a", "b", "c"} }},
			{args: []string{"a"}, wantErr: "requires at least 2 arg(s), only received 1"},
			{args: nil, wantErr: "requires at least 2 arg(s)"},
			{args: []string{"a", "b", "--csv", "x"}, wantErr: "unknown flag: --csv"},
			{args: []string{"a", "b", "--format", "plain"}, want: func(o *reportCompareOptions) { o.Files, o.Format = []string{"a", "b"}, "plain" }},
			{args: []string{"a", "b", "--format", "perftest"}, wantErr: `--format "perftest": want auto, table, plain`},
		})
}

func TestReportCheckFlags(t *testing.T) {
	checkFlags(t, "report check", newCmdReportCheck,
		func() reportCheckOptions {
			return reportCheckOptions{Thresholds: report.Thresholds{Tolerance: 0.05},
				Outliers: pairs.OutlierOpts{MinBWFraction: pairs.DefaultMinBWFraction, MaxLatFactor: pairs.DefaultMaxLatFactor}}
		},
		func(o *reportCheckOptions) { o.Out = nil },
		[]flagCase[reportCheckOptions]{
			{args: []string{"r.json"}, want: func(o *reportCheckOptions) { o.Files = []string{"r.json"} }},
			{args: []string{"f.ndjson", "--no-bad-pair", "--min-bw-fraction", "0.8"}, want: func(o *reportCheckOptions) {
				o.Files, o.NoBadPair, o.Outliers.MinBWFraction = []string{"f.ndjson"}, true, 0.8
			}},
			{args: []string{"a.json", "b.json", "--min-bw", "40", "--min-link-fraction", "0.9", "--min-rate", "2.5", "--max-p99", "50us",
				"--baseline", "base.json", "--tolerance", "0.1"}, want: func(o *reportCheckOptions) {
				o.Files, o.Baseline = []string{"a.json", "b.json"}, "base.json"
				o.Thresholds = report.Thresholds{MinBWGbps: 40, MinLinkFraction: 0.9, MinMsgRateMpps: 2.5, MaxP99: 50 * time.Microsecond, Tolerance: 0.1}
			}},
			{args: nil, wantErr: "requires at least 1 arg(s)"},
			{args: []string{"r.json", "--min-bw", "fast"}, wantErr: `invalid argument "fast" for "--min-bw"`},
			{args: []string{"r.json", "--min-bw", "-1"}, wantErr: "--min-bw -1"},
			{args: []string{"r.json", "--tolerance", "NaN"}, wantErr: "--tolerance NaN"},
			{args: []string{"r.json", "--min-rate", "+Inf"}, wantErr: "--min-rate +Inf"},
			{args: []string{"r.json", "--max-p99", "-5us"}, wantErr: "--max-p99 -5µs"},
		})
}

func TestServerFlags(t *testing.T) {
	t.Setenv("RDMABENCH_TOKEN", "")
	tokenFile := filepath.Join(t.TempDir(), "token")
	os.WriteFile(tokenFile, []byte("s3cret\n"), 0o600)
	checkFlags(t, "server", newCmdServer,
		func() serverOptions {
			return serverOptions{Local: bench.Local{Port: 1, GIDIndex: -1}, TCPPort: oob.DefaultPort, MaxBuffer: 1 << 30, Concurrent: 1,
				MaxTest: 10 * time.Minute, Timeout: 30 * time.Second, Idle: 10 * time.Minute}
		},
		func(o *serverOptions) { o.Log = nil },
		[]flagCase[serverOptions]{
			{args: nil},
			{args: []string{"-d", "rxe0", "-i", "2", "-x", "3", "--bind", "127.0.0.1", "-p", "9000", "--max-buffer", "64M", "--max-test-time", "1m",
				"--timeout", "5s", "--idle", "1h", "--token-file", tokenFile}, want: func(o *serverOptions) {
				o.Local, o.Bind, o.TCPPort, o.MaxBuffer, o.MaxTest = bench.Local{Device: "rxe0", Port: 2, GIDIndex: 3}, "127.0.0.1", 9000, 64<<20, time.Minute
				o.Timeout, o.Idle, o.Token, o.TokenFile = 5*time.Second, time.Hour, "s3cret", tokenFile
			}},
			{args: []string{"host"}, wantErr: `unknown command "host" for "server"`},
			{args: []string{"--idle", "0"}, wantErr: "--idle"},
			{args: []string{"--max-test-time", "-1s"}, wantErr: "--max-test-time"},
			{args: []string{"--max-buffer", "0"}, wantErr: "--max-buffer"},
			{args: []string{"--max-buffer", "1T"}, wantErr: `invalid argument "1T" for "--max-buffer"`},
			{args: []string{"--timeout", "0s"}, wantErr: "--timeout"},
			{args: []string{"--concurrent", "3"}, want: func(o *serverOptions) { o.Concurrent = 3 }},
			{args: []string{"--concurrent", "0"}, wantErr: "--concurrent 0"},
			{args: []string{"--token", "a", "--token-file", tokenFile}, wantErr: "--token and --token-file: give one"},
			{args: []string{"--perftest-port", "18515", "--perftest-disable-pcie-relaxed", "--perftest-sl", "3", "--perftest-tclass", "96"}, want: func(o *serverOptions) {
				o.PerftestPort, o.PerftestNoRelaxed, o.PerftestSL, o.PerftestTClass = 18515, true, 3, 96
			}},
			{args: []string{"--perftest-port", "18515", "--perftest-sl", "16"}, wantErr: "--perftest-sl 16: want a service level from 0 to 15"},
			{args: []string{"--perftest-port", "18515", "--perftest-tclass", "300"}, wantErr: "--perftest-tclass 300: want a traffic class from 0 to 255"},
			{args: []string{"--perftest-sl", "3"}, wantErr: "apply to perftest clients: add --perftest-port"},
		})
}

func TestTestCommandFlags(t *testing.T) {
	client := clientOptions{Server: "host", TCPPort: oob.DefaultPort, Local: bench.Local{Port: 1, GIDIndex: -1}, Timeout: 30 * time.Second, Clock: "auto",
		Out: outputs{Format: "auto"}}
	for _, op := range []string{"write", "read"} {
		// What newCmdTest's defaults resolve to, as ops.Defaults resolves them.
		cliPlan := func(test string) result.Config {
			c := result.Config{Op: op, Test: result.Test(test), InlineBytes: plan.InlineAuto, PostAPI: verbs.PostAuto, NumQPs: 1, PostList: 1}
			ops.Defaults(&c)
			c.WarmupIterations = plan.DefaultWarmup(c)
			return c
		}
		clean := func(o *testOptions) { o.Op, o.Out.Stdout, o.Out.Stderr = bench.Op{}, nil, nil }
		checkFlags(t, op+" bw", func(runF func(*testOptions) error) *cobra.Command { return newCmdTest(op, "bw", runF) },
			func() testOptions { return testOptions{clientOptions: client, Config: cliPlan("bw")} }, clean,
			[]flagCase[testOptions]{
				{args: []string{"host"}},
				{args: []string{"10.0.0.2", "-s", "4K", "-n", "100", "-q", "2", "-t", "64", "-Q", "8", "-l", "4", "--offset", "64", "--hugepages",
					"-m", "1024", "--warmup", "0", "--events", "--cq-moderation", "16", "--cq-moderation-usec", "20", "--verify",
					"-d", "mlx5_0", "-p", "9000", "--clock", "monotonic", "--timeout", "5s", "--json", "r.json", "--csv", "-"},
					want: func(o *testOptions) {
						o.Server, o.Local.Device, o.TCPPort, o.Clock, o.Timeout = "10.0.0.2", "mlx5_0", 9000, "monotonic", 5*time.Second
						o.Out.JSON, o.Out.CSV, o.warmup = "r.json", "-", 0
						o.Config = result.Config{Op: op, Test: result.BW, MsgSizeBytes: 4096, Iterations: 100, NumQPs: 2, SQDepth: 64, CQMod: 8, PostList: 4,
							BufOffsetBytes: 64, Hugepages: true, MTUBytes: 1024, InlineBytes: plan.InlineAuto, PostAPI: verbs.PostAuto, Verify: true,
							CompletionEvents: true, CQModerationCount: 16, CQModerationUS: 20}
						ops.Defaults(&o.Config)
					}},
				{args: []string{"host", "-D", "2"}, want: func(o *testOptions) {
					o.Config = result.Config{Op: op, Test: result.BW, DurationS: 2, InlineBytes: plan.InlineAuto, PostAPI: verbs.PostAuto, NumQPs: 1, PostList: 1}
					ops.Defaults(&o.Config)
					o.Config.WarmupIterations = plan.DefaultWarmup(o.Config)
				}},
				{args: nil, wantErr: "SERVER missing"},
				{args: []string{"host", "--post-api", "wr"}, want: func(o *testOptions) { o.Config.PostAPI = verbs.PostWR }},
				{args: []string{"host", "--use_old_post_send"}, want: func(o *testOptions) { o.Config.PostAPI = verbs.PostLegacy }},
				{args: []string{"host", "--use_old_post_send", "--post-api", "legacy"}, want: func(o *testOptions) { o.Config.PostAPI = verbs.PostLegacy }},
				{args: []string{"host", "--use_old_post_send", "--post-api", "wr"}, wantErr: "drop one of them"},
				{args: []string{"host", "--post-api", "ex"}, wantErr: `--post-api "ex": want auto`},
				{args: []string{"a", "b"}, wantErr: "accepts at most 1 arg(s), received 2"},
				{args: []string{"host", "--perftest", "pt"}, wantErr: "give one"},
				{args: []string{"--perftest", "pt", "--token", "x"}, wantErr: "a perftest server takes no token"},
				{args: []string{"--perftest", "pt", "-b"}, wantErr: "-b"},
				{args: []string{"host", "-s", "3X"}, wantErr: `invalid argument "3X" for "-s, --size"`},
				{args: []string{"host", "--json", "-", "--csv", "-"}, wantErr: "only one can go to stdout"},
				{args: []string{"host", "-t", "8", "-Q", "9"}, wantErr: "--cq-mod"},
				{args: []string{"a,b:9", "--sync", "rounds"}, want: func(o *testOptions) {
					o.Server = "a,b:9"
					o.Config = result.Config{Op: op, Test: result.BW, InlineBytes: plan.InlineAuto, PostAPI: verbs.PostAuto, NumQPs: 1, PostList: 1, Peers: 2, Sync: "rounds"}
					ops.Defaults(&o.Config)
					o.Config.WarmupIterations = plan.DefaultWarmup(o.Config)
				}},
				{args: []string{"host", "--sync", "rounds"}, wantErr: "several servers"},
				{args: []string{"a,b", "-q", "2"}, wantErr: "one QP per server"},
				{args: []string{"a,,b"}, wantErr: "empty entry"},
				{args: []string{"a,a"}, wantErr: "appears twice"},
			})
		checkFlags(t, op+" lat", func(runF func(*testOptions) error) *cobra.Command { return newCmdTest(op, "lat", runF) },
			func() testOptions { return testOptions{clientOptions: client, Config: cliPlan("lat")} }, clean,
			[]flagCase[testOptions]{
				{args: []string{"host"}},
				{args: []string{"host", "-s", "64", "-n", "10000"}, want: func(o *testOptions) {
					o.Config.MsgSizeBytes, o.Config.Iterations = 64, 10000
					o.Config.WarmupIterations = plan.DefaultWarmup(o.Config)
				}},
				{args: nil, wantErr: "SERVER missing"},
				{args: []string{"host", "-q", "2"}, wantErr: "unknown shorthand flag: 'q'"},
				{args: []string{"host", "--events"}, wantErr: "unknown flag: --events"},
			})
	}
}

func TestSweepFlags(t *testing.T) {
	t.Chdir(t.TempDir()) // --resume s.ndjson must exist
	os.WriteFile("s.ndjson", nil, 0o644)
	checkFlags(t, "sweep", newCmdSweep,
		func() sweepOptions {
			return sweepOptions{clientOptions: clientOptions{Server: "host", TCPPort: oob.DefaultPort, Local: bench.Local{Port: 1, GIDIndex: -1},
				Timeout: 30 * time.Second, Clock: "auto", Out: outputs{Format: "table"}},
				Ops: []string{"write", "read"}, Search: "descent", Objective: "bw", Repeat: 6, Budget: 15 * time.Minute, QPs: 1, Threads: 1}
		},
		func(o *sweepOptions) { o.Out.Stdout, o.Out.Stderr = nil, nil },
		[]flagCase[sweepOptions]{
			{args: []string{"host"}},
			{args: []string{"host", "--ops", "read", "--profile", "cx6", "--search", "grid", "--objective", "bw-p99", "--max-p99", "500us",
				"--resolution", "0.05", "--repeat", "5", "--budget", "0", "--point-duration", "0.5", "--point-duration-max", "4", "--resume", "s.ndjson", "-q", "4",
				"--events", "--cq-moderation", "8", "--json", "t.json"}, want: func(o *sweepOptions) {
				o.Ops, o.Profile, o.Search, o.Objective, o.MaxP99 = []string{"read"}, "cx6", "grid", "bw-p99", 500*time.Microsecond
				o.Resolution, o.Repeat, o.Budget, o.PointDuration, o.MaxDuration, o.Resume, o.QPs = 0.05, 5, 0, 0.5, 4, "s.ndjson", 4
				o.Events = result.Config{CompletionEvents: true, CQModerationCount: 8}
				o.Out.JSON = "t.json"
			}},
			{args: nil, wantErr: "accepts 1 arg(s), received 0"},
			{args: []string{"host", "--ops", "send"}, wantErr: `--ops: unknown operation "send"`},
			{args: []string{"host", "--search", "random"}, wantErr: "--search"},
			{args: []string{"host", "--objective", "speed"}, wantErr: "speed"},
			{args: []string{"host", "--repeat", "1"}, wantErr: "--repeat"},
			{args: []string{"host", "--resolution", "1"}, wantErr: "--resolution 1: want a fraction"},
			{args: []string{"host", "--resolution", "-0.1"}, wantErr: "--resolution -0.1"},
			{args: []string{"host", "--tolerance", "0.03"}, want: func(o *sweepOptions) { o.Resolution = 0.03 }},
			{args: []string{"host", "--resume", "a", "--results", "b"}, wantErr: "drop --results"},
			{args: []string{"host", "--json", "-", "--csv", "-"}, wantErr: "only one can go to stdout"},
			{args: []string{"host", "--mr", "pool,per-io", "--sizes", "4K,64K", "--baseline", "tcp"}, want: func(o *sweepOptions) {
				o.MR, o.Sizes, o.Baseline = []string{"pool", "per-io"}, []int{4096, 65536}, "tcp"
			}},
			{args: []string{"host", "--mr", "pool"}, wantErr: "two different modes"},
			{args: []string{"host", "--mr", "pool,pool"}, wantErr: "two different modes"},
			{args: []string{"host", "--mr", "pool,bogus"}, wantErr: "--mr bogus"},
			{args: []string{"host", "--mr", "pool,per-io", "--resume", "s.ndjson"}, wantErr: "--resume continues a tuning sweep"},
			{args: []string{"host", "--sizes", "4K"}, wantErr: "go with --mr"},
			{args: []string{"host", "--mr", "pool,per-io", "--sizes", "64K,4K"}, wantErr: "ascending"},
			{args: []string{"host", "--mr", "pool,per-io", "--baseline", "udp"}, wantErr: "--baseline"},
			{args: []string{"host", "-u", "20"}, want: func(o *sweepOptions) { o.QPTimeout = 20 }},
			{args: []string{"host", "--disable_pcie_relaxed", "-S", "3", "--tclass", "96"}, want: func(o *sweepOptions) {
				o.Fabric = result.Config{DisablePCIeRelaxed: true, SL: 3, TrafficClass: 96}
			}},
			{args: []string{"host", "--sl", "16"}, wantErr: "--sl 16: want a service level from 0 to 15"},
			{args: []string{"host", "--tclass", "-1"}, wantErr: "--tclass -1: want a traffic class from 0 to 255"},
			{args: []string{"host", "-u", "0"}, wantErr: "--qp-timeout 0"},
			{args: []string{"host", "--qp-timeout", "40"}, wantErr: "--qp-timeout 40"},
			{args: []string{"host", "--format", "auto"}, want: func(o *sweepOptions) { o.Out.Format = "auto" }},
			{args: []string{"host", "--format", "perftest"}, wantErr: `--format "perftest": want auto, table, plain`},
			{args: []string{"host", "--verbose"}, want: func(o *sweepOptions) { o.Verbose = true }},
			{args: []string{"host", "--mr", "pool,per-io", "--verbose"}, wantErr: "--verbose prints a tuning sweep's whole report"},
		})
}

// Every bad command line is a usage error (exit 2), found before anything runs: wrong
// argument counts, unknown commands, flags that do not parse.
func TestBadCommandLinesExit2(t *testing.T) {
	for _, args := range [][]string{
		{"write", "bw"}, {"read", "lat"}, {"write", "bw", "a", "b"},
		{"server", "extra"}, {"sweep"}, {"version", "extra"}, {"profiles", "a", "b"},
		{"report", "show"}, {"report", "compare", "a"}, {"report", "check"},
		{"bogus"}, {"wirte", "bw", "host"}, {"write", "bogus"}, {"report", "shwo", "a"},
		{"completion", "bash", "extra"},
		{"write", "bw", "--size", "3X", "host"},
	} {
		root := newRootCmd()
		root.SetArgs(args)
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&out)
		err := root.Execute()
		var fe *flagError
		if !errors.As(err, &fe) || exitCode(err) != 2 || !strings.Contains(err.Error(), "--help'") {
			t.Errorf("%q: want a usage error pointing at --help (exit 2), got exit %d: %v", args, exitCode(err), err)
		}
	}
	root := newRootCmd()
	root.SetArgs([]string{"wirte"})
	root.SetOut(&bytes.Buffer{})
	if err := root.Execute(); err == nil || !strings.Contains(err.Error(), "did you mean write?") {
		t.Errorf("want a suggestion: %v", err)
	}
	// Alone, a command that groups others shows its help.
	for _, args := range [][]string{nil, {"write"}, {"report"}} {
		root := newRootCmd()
		root.SetArgs(args)
		var out bytes.Buffer
		root.SetOut(&out)
		if err := root.Execute(); err != nil || !strings.Contains(out.String(), "Available Commands:") {
			t.Errorf("%q: want the help, got %v\n%s", args, err, out.String())
		}
	}
	if exitCode(nil) != 0 || exitCode(errors.New("run failed")) != 1 {
		t.Error("exit codes: 0 for success, 1 for a failed run")
	}
}

// report show reads a tuned report of its own schema version only.
func TestReportShowTunedVersion(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "tuned.json")
	var out bytes.Buffer
	o := &reportShowOptions{Files: []string{file}, Out: outputs{Stdout: &out, Stderr: &out}}
	os.WriteFile(file, []byte(`{"schema_version":4,"profile":"rxe","objective":"bw","ops":{"write":{"op":"write","objective":"bw"}}}`), 0o644)
	if err := reportShowRun(o); err != nil || !strings.Contains(out.String(), "Tuned parameters") {
		t.Fatalf("tuned report: %v\n%s", err, out.String())
	}
	os.WriteFile(file, []byte(`{"schema_version":2,"profile":"rxe","objective":"bw","ops":{"write":{"op":"write","objective":"bw"}}}`), 0o644)
	if err := reportShowRun(o); err == nil || !strings.Contains(err.Error(), "tuned.json: tuned report has schema_version 2; this rdmabench reads schema_version 4") {
		t.Fatalf("want the old tuned report refused, got %v", err)
	}
}

// report show converts between the forms: JSON in, CSV out, and CSV in, JSON out.
func TestReportShowConverts(t *testing.T) {
	dir := t.TempDir()
	in, csvFile, back := filepath.Join(dir, "r.json"), filepath.Join(dir, "r.csv"), filepath.Join(dir, "back.json")
	r := result.Result{SchemaVersion: result.SchemaVersion, Config: result.Config{Op: "write", Test: result.BW, MsgSizeBytes: 65536, SQDepth: 128, PostList: 1, CQMod: 100, NumQPs: 1},
		Iterations: 10, BWGbps: 42}
	var buf bytes.Buffer
	result.WriteJSON(&buf, r)
	os.WriteFile(in, buf.Bytes(), 0o644)
	if _, err := execute(newCmdReportShow(nil), in, "--csv", csvFile); err != nil {
		t.Fatal(err)
	}
	if _, err := execute(newCmdReportShow(nil), csvFile, "--json", back); err != nil {
		t.Fatal(err)
	}
	rs, err := readResults(back)
	if err != nil || len(rs) != 1 || rs[0].BWGbps != 42 || rs[0].Config != r.Config {
		t.Fatalf("JSON -> CSV -> JSON: %+v %v", rs, err)
	}
}

// --json writes one JSON document, whatever the number of results (finding 9 of the
// hostile-peers review: several results came out as objects one after another, neither
// JSON nor NDJSON); a file named *.ndjson gets a line each.
func TestReportShowJSONIsOneDocument(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "three.ndjson")
	var buf bytes.Buffer
	for i := range 3 {
		r := result.Result{SchemaVersion: result.SchemaVersion, Config: result.Config{Op: "write", Test: result.BW, MsgSizeBytes: 64 << i, SQDepth: 128, PostList: 1, CQMod: 100, NumQPs: 1},
			Iterations: 10, BWGbps: float64(i + 1)}
		result.WriteAll(result.NewNDJSONEncoder(&buf), []result.Result{r})
	}
	os.WriteFile(in, buf.Bytes(), 0o644)
	doc := filepath.Join(dir, "all.json")
	if _, err := execute(newCmdReportShow(nil), in, "--json", doc); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(doc)
	var rs []result.Result
	if err := json.Unmarshal(b, &rs); err != nil || len(rs) != 3 || rs[2].BWGbps != 3 {
		t.Fatalf("--json of three results is not one JSON array of them: %v (%d)\n%s", err, len(rs), b)
	}
	lines := filepath.Join(dir, "all.ndjson")
	if _, err := execute(newCmdReportShow(nil), in, "--json", lines); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(lines)
	for i, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r result.Result
		if err := json.Unmarshal([]byte(l), &r); err != nil || r.BWGbps != float64(i+1) {
			t.Fatalf("line %d of --json x.ndjson: %v\n%s", i+1, err, l)
		}
	}
}
