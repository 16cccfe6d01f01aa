package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/bench"
	"github.com/rdmabench/rdmabench/bench/benchtest"
	"github.com/rdmabench/rdmabench/bench/ops"
	"github.com/rdmabench/rdmabench/result"
)

// parseTest runs a test command's flag handling and returns the options it would run.
func parseTest(t *testing.T, op, test string, args ...string) (*testOptions, error) {
	t.Helper()
	var got *testOptions
	_, err := execute(newCmdTest(op, test, func(o *testOptions) error { got = o; return nil }), args...)
	return got, err
}

// mustFlagError runs the root command on args and wants a usage error (exit 2) that
// names want, the command's run not reached.
func mustFlagError(t *testing.T, want string, args ...string) {
	t.Helper()
	root := newRootCmd()
	root.SetArgs(args)
	root.SetOut(&bytes.Buffer{})
	root.SetErr(&bytes.Buffer{})
	err := root.Execute()
	var fe *flagError
	if !errors.As(err, &fe) || exitCode(err) != 2 || !strings.Contains(err.Error(), want) {
		t.Errorf("%q: want a usage error (exit 2) with %q, got exit %d: %v", args, want, exitCode(err), err)
	}
}

// The command line, as ib_write_bw takes it.
func TestPerftestCommandLine(t *testing.T) {
	o, err := parseTest(t, "write", "bw", "-d", "mlx5_0", "-x", "3", "-a", "-F", "-q", "2", "--report_gbits", "server1")
	if err != nil {
		t.Fatal(err)
	}
	if !o.All || !o.CPUFreq || !o.Out.Gbits || o.Local.Device != "mlx5_0" || o.Local.GIDIndex != 3 || o.Server != "server1" {
		t.Errorf("options: %+v", o)
	}
	if len(o.Plans) != 23 || o.Plans[0].MsgSizeBytes != 2 || o.Plans[22].MsgSizeBytes != 8<<20 {
		t.Fatalf("-a: %d plans, want 23 from 2 B to 8 MiB", len(o.Plans))
	}
	for i, c := range o.Plans {
		if c.MsgSizeBytes != 2<<i || c.NumQPs != 2 || ops.Validate(c) != nil {
			t.Errorf("-a plan %d: %+v", i, c)
		}
	}
	// The defaults that depend on the size are the size's: cq-mod 100 for small
	// messages, 1 above 8 KiB (perftest's rule).
	if o.Plans[0].CQMod != 100 || o.Plans[22].CQMod != 1 {
		t.Errorf("-a: cq-mod %d at 2 B and %d at 8 MiB, want 100 and 1", o.Plans[0].CQMod, o.Plans[22].CQMod)
	}
}

// perftest's long names are rdmabench's flags under another name.
func TestPerftestAliases(t *testing.T) {
	o, err := parseTest(t, "write", "bw", "host", "--ib-dev", "mlx5_1", "--qp", "4", "--post_list", "2", "--tx_depth", "64",
		"--cq_mod", "4", "--use_hugepages", "-e", "--ib_port", "2", "--gid_index", "1", "--iters", "100", "--size", "4K")
	if err != nil {
		t.Fatal(err)
	}
	c := o.Config
	if o.Local.Device != "mlx5_1" || o.Local.Port != 2 || o.Local.GIDIndex != 1 || c.NumQPs != 4 || c.PostList != 2 || c.SQDepth != 64 ||
		c.CQMod != 4 || !c.Hugepages || !c.CompletionEvents || c.Iterations != 100 || c.MsgSizeBytes != 4096 {
		t.Errorf("aliases: %+v %+v", o.Local, c)
	}
	for _, args := range [][]string{{"--inline_size", "64"}, {"-I", "64"}, {"--inline-size=64"}} {
		o, err := parseTest(t, "write", "lat", append([]string{"host"}, args...)...)
		if err != nil || o.Config.InlineBytes != 64 {
			t.Errorf("write lat %v: %v", args, err)
		}
	}
	if o, err := parseTest(t, "read", "bw", "host", "--duration", "3", "--run_infinitely"); err != nil || !o.Infinite {
		t.Errorf("--run_infinitely: %v", err)
	}
	// perftest's -S and --tclass, and its --disable_pcie_relaxed, are rdmabench's.
	for _, args := range [][]string{{"-S", "3", "--tclass", "96", "--disable_pcie_relaxed"}, {"--sl=3", "--tclass=96", "--disable-pcie-relaxed"}} {
		o, err := parseTest(t, "read", "bw", append([]string{"host"}, args...)...)
		if err != nil || o.Config.SL != 3 || o.Config.TrafficClass != 96 || !o.Config.DisablePCIeRelaxed || o.Config.PCIeRelaxedOrdering {
			t.Errorf("read bw %v: %+v %v", args, o.Config, err)
		}
	}
	if o, err := parseTest(t, "write", "bw", "host"); err != nil || !o.Config.PCIeRelaxedOrdering || o.Config.SL != 0 || o.Config.TrafficClass != 0 {
		t.Errorf("write bw: relaxed ordering %v, SL %d, traffic class %d: %v", o.Config.PCIeRelaxedOrdering, o.Config.SL, o.Config.TrafficClass, err)
	}
	if o, err := parseTest(t, "write", "lat", "host"); err != nil || o.Config.PCIeRelaxedOrdering {
		t.Errorf("write lat: relaxed ordering %v: %v", o.Config.PCIeRelaxedOrdering, err)
	}
	for _, args := range [][]string{{"-o", "4"}, {"--outs_num", "4"}, {"--outs=4"}} {
		if o, err := parseTest(t, "read", "bw", append([]string{"host"}, args...)...); err != nil || o.Config.OutsNum != 4 {
			t.Errorf("read bw %v: %v", args, err)
		}
	}
}

// perftest's flags rdmabench does not implement: a usage error that names the flag and
// says what to do, never "unknown flag".
func TestPerftestFlagsRefused(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-c", "UC"}, "-c/--connection UC: perftest's flag, not implemented by rdmabench: rdmabench measures RC QPs only"},
		{[]string{"-c", "UD"}, "-c/--connection UD"},
		{[]string{"-R"}, "-R/--rdma-cm: perftest's flag"},
		{[]string{"--rdma_cm"}, "-R/--rdma-cm"},
		{[]string{"-z"}, "-z/--comm-rdma-cm"},
		{[]string{"--use_cuda=0"}, "--use-cuda 0: perftest's flag, not implemented by rdmabench: GPU memory"},
		{[]string{"-T", "3"}, "-T/--tos 3: perftest's flag, not implemented by rdmabench: -T sets the type of service of rdma_cm's QPs"},
		{[]string{"--tos=96"}, "give the traffic class with --tclass"},
		{[]string{"--tclass", "256"}, "--tclass 256: want a traffic class from 0 to 255"},
		{[]string{"-S", "16"}, "--sl 16: want a service level from 0 to 15"},
		{[]string{"--sl=-1"}, "--sl -1: want a service level from 0 to 15"},
		{[]string{"-o", "300"}, "--outs 300: want 1 to 255"},
		{[]string{"--outs_num", "4", "-b"}, "--outs with -b"},
		{[]string{"-H"}, "-H/--report-histogrm"},
		{[]string{"-V"}, "use 'rdmabench --version'"},
	} {
		mustFlagError(t, tc.want, append([]string{"read", "bw", "host"}, tc.args...)...)
	}
	// Hidden: --help lists rdmabench's flags only.
	var out bytes.Buffer
	cmd := newCmdTest("write", "bw", nil)
	cmd.SetOut(&out)
	cmd.Help()
	if strings.Contains(out.String(), "--connection") || strings.Contains(out.String(), "use-cuda") {
		t.Errorf("refused flags shown in --help:\n%s", out.String())
	}
}

// A value that cannot be right is refused before anything opens, naming its flag:
// explicit zeros no longer mean "the default", ports are in range.
func TestImpossibleValuesRefused(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"write", "bw", "host", "-s", "0"}, "--size 0: want more than 0"},
		{[]string{"write", "bw", "host", "-n", "0"}, "--iters 0"},
		{[]string{"write", "bw", "host", "-t", "0"}, "--tx-depth 0"},
		{[]string{"write", "bw", "host", "-q", "0"}, "--qps 0"},
		{[]string{"write", "bw", "host", "-l", "0"}, "--post-list 0"},
		{[]string{"write", "bw", "host", "-Q", "0"}, "--cq-mod 0"},
		{[]string{"write", "bw", "host", "-D", "0"}, "--duration 0"},
		{[]string{"read", "lat", "host", "-s", "0"}, "--size 0"},
		{[]string{"write", "bw", "host", "-p", "99999"}, "--port 99999: want a TCP port, 1 to 65535"},
		{[]string{"write", "bw", "host", "-p", "-1"}, "--port -1"},
		{[]string{"read", "lat", "host", "-i", "0"}, "--ib-port 0"},
		{[]string{"server", "-p", "99999"}, "--port 99999"},
		{[]string{"server", "-p", "0"}, "--port 0"},
		{[]string{"sweep", "host", "-p", "70000"}, "--port 70000"},
		{[]string{"sweep", "host", "--profile", "nosuch"}, "--profile nosuch: no profile"},
		{[]string{"sweep", "host", "--resume", "/nonexistent/s.ndjson"}, "--resume /nonexistent/s.ndjson: no such file"},
		{[]string{"sweep", "host", "-q", "0"}, "--qps 0"},
		{[]string{"write", "bw", "host", "--format", "boxes"}, `--format "boxes"`},
		{[]string{"write", "bw", "host", "--output", "latency"}, `--output "latency": a bw test prints bandwidth or message_rate`},
		{[]string{"write", "lat", "host", "--output", "bandwidth"}, `--output "bandwidth": a lat test prints latency`},
		{[]string{"write", "bw", "host", "-a", "-s", "4K"}, "-a/--all runs every size from 2 B to 8 MiB: drop --size"},
		{[]string{"write", "bw", "a,b", "-a"}, "-a/--all takes one server"},
		{[]string{"write", "bw", "host", "--run_infinitely", "-n", "100"}, "--run_infinitely runs until interrupted: drop --iters"},
		{[]string{"write", "bw", "host", "--run_infinitely", "-e"}, "drop --events"},
		{[]string{"write", "lat", "host", "--run_infinitely"}, "unknown flag: --run_infinitely"},
	} {
		mustFlagError(t, tc.want, tc.args...)
	}
	// --tolerance (deprecated for --resolution) is named as given, and alone.
	root := newRootCmd()
	root.SetArgs([]string{"sweep", "host", "--tolerance", "-1"})
	root.SetOut(&bytes.Buffer{})
	root.SetErr(&bytes.Buffer{})
	if err := root.Execute(); err == nil || !strings.HasPrefix(err.Error(), "--tolerance -1: want a fraction") || strings.Contains(err.Error(), "--resolution") {
		t.Errorf("sweep --tolerance -1: %v", err)
	}
}

func TestRunInfinitelyPlan(t *testing.T) {
	o, err := parseTest(t, "write", "bw", "host", "--run_infinitely")
	if err != nil || o.Config.DurationS != runInfinitelyS || o.Config.IntervalS != 5 {
		t.Fatalf("--run_infinitely: %+v, %v", o.Config, err)
	}
	o, err = parseTest(t, "write", "bw", "host", "--run_infinitely", "-D", "60", "--interval", "1")
	if err != nil || o.Config.DurationS != 60 || o.Config.IntervalS != 1 {
		t.Fatalf("--run_infinitely -D 60 --interval 1: %+v, %v", o.Config, err)
	}
}

func TestRootVersionFlag(t *testing.T) {
	root := newRootCmd()
	var out bytes.Buffer
	root.SetArgs([]string{"--version"})
	root.SetOut(&out)
	if err := root.Execute(); err != nil || strings.TrimSpace(out.String()) != versionLine() {
		t.Fatalf("--version: %v %q, want %q", err, out.String(), versionLine())
	}
}

// The help of read bw says its own default --iters (1000), not write bw's.
func TestItersDefaultInHelp(t *testing.T) {
	for _, tc := range []struct{ op, test, want string }{
		{"read", "bw", "(default 1000"}, {"write", "bw", "(default 5000"}, {"read", "lat", "(default 1000"},
	} {
		f := newCmdTest(tc.op, tc.test, nil).Flags().Lookup("iters")
		if !strings.Contains(f.Usage, tc.want) {
			t.Errorf("%s %s --iters: %q, want %s", tc.op, tc.test, f.Usage, tc.want)
		}
	}
}

// --json and --csv are created before the run: a path that cannot be written is a
// usage error before any device is opened; a file nothing was written to is removed.
func TestResultFilesOpenedFirst(t *testing.T) {
	dir := t.TempDir()
	o, err := parseTest(t, "write", "bw", "host", "--json", filepath.Join(dir, "no", "such", "r.json"))
	if err != nil {
		t.Fatal(err)
	}
	opened := false
	saved := bench.Verbs
	defer func() { bench.Verbs = saved }()
	bench.Verbs = engineFunc(func(bench.Local) (bench.Device, error) { opened = true; return nil, errors.New("no device") })
	err = testRun(o)
	var fe *flagError
	if !errors.As(err, &fe) || !strings.Contains(err.Error(), "--json "+filepath.Join(dir, "no", "such", "r.json")) || opened {
		t.Fatalf("want a usage error naming --json before the device, got %v (device opened: %v)", err, opened)
	}
	file := filepath.Join(dir, "r.csv")
	o, _ = parseTest(t, "write", "bw", "host", "--csv", file)
	var existed bool
	bench.Verbs = engineFunc(func(bench.Local) (bench.Device, error) {
		_, err := os.Stat(file)
		existed = err == nil
		return nil, errors.New("no device")
	})
	if err := testRun(o); err == nil || !existed {
		t.Fatalf("want the file there when the device is opened: %v, %v", err, existed)
	}
	if _, err := os.Stat(file); err == nil {
		t.Error("a run that produced no result leaves no empty file behind")
	}
}

type engineFunc func(bench.Local) (bench.Device, error)

func (f engineFunc) Open(l bench.Local) (bench.Device, error) { return f(l) }

// -a runs every size on one connection; each result is in the file as soon as it is
// measured, and the table has a row each.
func TestAllSizesOneSession(t *testing.T) {
	r := benchtest.NewRig(t, ops.All, nil)
	c, err := r.Dial("")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	file := filepath.Join(t.TempDir(), "all.ndjson")
	o, err := parseTest(t, "write", "bw", "host", "-a", "-n", "20", "--warmup", "0", "-t", "4", "--json", file, "--format", "plain")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	o.Out.Stdout, o.Out.Stderr = &out, &out
	if err := o.Out.openResults(); err != nil {
		t.Fatal(err)
	}
	saves := 0
	o.Plans = o.Plans[:5] // 2 B to 32 B: enough to see the sizes and the saves
	if err := o.measure(context.Background(), c, nil); err != nil {
		t.Fatal(err)
	}
	o.Out.close()
	b, _ := os.ReadFile(file)
	for i, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var res result.Result
		if err := json.Unmarshal([]byte(l), &res); err != nil || res.Config.MsgSizeBytes != 2<<i {
			t.Fatalf("line %d: %v %d", i, err, res.Config.MsgSizeBytes)
		}
		saves++
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if saves != 5 || len(lines) < 6 || !strings.HasPrefix(lines[0], "op bytes qps") || strings.Fields(lines[5])[1] != "32" {
		t.Fatalf("%d results in the file; table:\n%s", saves, out.String())
	}
}

// --output bandwidth converts rdmabench's Gb/s (10^9 bits) to perftest's MB/sec (2^20
// bytes), by hand: 0.192937984 Gb/s = 0.192937984 x 10^9 / 8 / 1048576 = 23 MB/sec
// (with 10^6 bytes it would be 24.117248).
func TestOutputNumberUnits(t *testing.T) {
	for _, tc := range []struct {
		gbits bool
		gbps  float64
		want  string
	}{
		{false, 0.192937984, "23.000000"},
		{true, 0.192937984, "0.192938"},
		{false, 100, "11920.928955"}, // 100 x 10^9 / 8 / 2^20
		{true, 100, "100.000000"},
	} {
		if got := outputNumber("bandwidth", tc.gbits, tc.gbps, 0, 0); got != tc.want {
			t.Errorf("%v Gb/s, --report_gbits %v: %q, want %q", tc.gbps, tc.gbits, got, tc.want)
		}
	}
}

// --output prints the one number perftest prints, and nothing else.
func TestOutputNumber(t *testing.T) {
	var out bytes.Buffer
	r := result.Result{Config: result.Config{Op: "write", Test: result.BW}, BWGbps: 8 * 1.048576, MsgRateMpps: 0.5, Iterations: 1}
	for _, tc := range []struct {
		o    outputs
		want string
	}{
		{outputs{Output: "bandwidth"}, "1000.000000\n"},
		{outputs{Output: "bandwidth", Gbits: true}, "8.388608\n"},
		{outputs{Output: "message_rate"}, "0.500000\n"},
	} {
		out.Reset()
		tc.o.Stdout = &out
		if err := tc.o.write([]result.Result{r}); err != nil || out.String() != tc.want {
			t.Errorf("%+v: %q, want %q (%v)", tc.o, out.String(), tc.want, err)
		}
	}
}
