package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/rdmabench/rdmabench/bench"
	"github.com/rdmabench/rdmabench/mrbench"
	"github.com/rdmabench/rdmabench/verbs"
)

func TestMRFlags(t *testing.T) {
	defaults := func() mrOptions {
		return mrOptions{Local: bench.Local{Port: 1, GIDIndex: -1}, Sizes: []int{4 << 10, 64 << 10, 1 << 20, 64 << 20},
			Modes: []string{"warm", "cold", "huge", "odp"}, Iterations: 20, Format: "auto"}
	}
	checkFlags(t, "mr", newCmdMR, defaults, func(o *mrOptions) { o.Out, o.Err = nil, nil }, []flagCase[mrOptions]{
		{args: nil},
		{args: []string{"-d", "rxe0", "-i", "2", "--sizes", "4K,1m,64MiB", "--modes", "warm,COLD", "-n", "100", "--json", "mr.json"},
			want: func(o *mrOptions) {
				o.Local.Device, o.Local.Port = "rxe0", 2
				o.Sizes, o.Modes, o.Iterations, o.JSON = []int{4 << 10, 1 << 20, 64 << 20}, []string{"warm", "cold"}, 100, "mr.json"
			}},
		{args: []string{"--format", "plain"}, want: func(o *mrOptions) { o.Format = "plain" }},
		{args: []string{"--disable-pcie-relaxed"}, want: func(o *mrOptions) { o.NoRelaxed = true }},
		{args: []string{"--format", "perftest"}, wantErr: `--format "perftest": want auto, table, plain`},
		{args: []string{"--sizes", "4096", "--sizes", "8K", "--modes", "odp", "--iterations", "1", "--json", "-"},
			want: func(o *mrOptions) {
				o.Sizes, o.Modes, o.Iterations, o.JSON = []int{4096, 8192}, []string{"odp"}, 1, "-"
			}},
		{args: []string{"--modes", "warm,lukewarm"}, wantErr: `unknown mode "lukewarm"`},
		{args: []string{"--modes", "warm,warm"}, wantErr: "warm given twice"},
		{args: []string{"--modes", ""}, wantErr: "want at least one of"},
		{args: []string{"--sizes", "4X"}, wantErr: `invalid size "4X"`},
		{args: []string{"--sizes", "-4K"}, wantErr: "invalid size"},
		{args: []string{"--sizes", "0"}, wantErr: "want at least 1 byte"},
		{args: []string{"--sizes", "4K,4096"}, wantErr: "4K given twice"},
		{args: []string{"--sizes", ""}, wantErr: "want at least one size"},
		{args: []string{"-n", "0"}, wantErr: "-n 0: want 1 to 1048576"},
		{args: []string{"-n", "-3"}, wantErr: "-n -3"},
		{args: []string{"-n", "x"}, wantErr: `invalid argument "x"`},
		{args: []string{"-i", "0"}, wantErr: "--ib-port 0"},
		{args: []string{"-x", "3"}, wantErr: "unknown shorthand flag: 'x'"}, // no connection: no GID to choose
		{args: []string{"--json"}, wantErr: "flag needs an argument: --json"},
		{args: []string{"rxe0"}, wantErr: `unknown command "rxe0"`},
	})
}

// fakeMR runs the whole command through mrRun with a fake device: registration costs
// 1 µs + 250 ns per 4K page (x4 cold), dereg half; no hugepages, no ODP; sizes in
// failing fail with ENOMEM.
func fakeMR(memlock int64, failing ...int) func(*mrOptions) error {
	return func(o *mrOptions) error {
		o.Limits = func() (int64, bool, error) { return memlock, false, nil }
		o.Open = func(l bench.Local) (mrbench.Timer, mrbench.Device, func() error, error) {
			if l.Device == "nodev" {
				return nil, mrbench.Device{}, nil, verbs.ErrNoDevice
			}
			timer := func(size int, mode string, n, _ int) ([]int64, []int64, error) {
				switch mode {
				case "huge":
					return nil, nil, verbs.ErrNoHugepages
				case "odp":
					return nil, nil, verbs.ErrNoODP
				}
				for _, f := range failing {
					if f == size {
						return nil, nil, &verbs.VerbError{Verb: "ibv_reg_mr", Phase: mode, Err: syscall.ENOMEM}
					}
				}
				per := int64(250)
				if mode == "cold" {
					per *= 4
				}
				var reg, dereg []int64
				for i := range n {
					v := 1000 + per*int64(size/4096) + int64(i%3)
					reg, dereg = append(reg, v), append(dereg, v/2)
				}
				return reg, dereg, nil
			}
			return timer, mrbench.Device{Name: l.Device, Driver: "rxe", Port: l.Port, LinkLayer: "Ethernet"}, func() error { return nil }, nil
		}
		return mrRun(o)
	}
}

func TestMRRun(t *testing.T) {
	file := filepath.Join(t.TempDir(), "mr.json")
	out, err := execute(newCmdMR(fakeMR(-1, 64<<10)), "-d", "rxe0", "--sizes", "4K,64K,1M", "--json", file, "--format", "table")
	if err != nil || exitCode(err) != 0 {
		t.Fatalf("exit %d: %v\n%s", exitCode(err), err, out)
	}
	t.Log("\n" + out)
	for _, want := range []string{"rxe0 port 1", "memlock unlimited", "skipped: no hugepages reserved (sysctl vm.nr_hugepages)", "skipped: no ODP",
		"error: 64K warm: ibv_reg_mr(warm): cannot allocate memory"} {
		if !strings.Contains(out, want) {
			t.Errorf("output has no %q", want)
		}
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		SchemaVersion int    `json:"schema_version"`
		Kind          string `json:"kind"`
		ToolVersion   string `json:"tool_version"`
		Memlock       *int64 `json:"memlock_bytes"`
		Device        struct {
			Name string `json:"name"`
		} `json:"device"`
		Config struct {
			Sizes      []int    `json:"sizes"`
			Modes      []string `json:"modes"`
			Iterations int      `json:"iterations"`
		} `json:"config"`
		Rows []struct {
			Size    int    `json:"size_bytes"`
			Mode    string `json:"mode"`
			Skipped string `json:"skipped"`
			Error   string `json:"error"`
			Reg     struct {
				Samples int    `json:"samples"`
				P50     *int64 `json:"p50"`
			} `json:"reg_ns"`
			RegHist string  `json:"reg_histogram"`
			GiBps   float64 `json:"reg_gib_per_s"`
			Pages   int     `json:"pages"`
		} `json:"rows"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.SchemaVersion != 1 || doc.Kind != "mr" || doc.ToolVersion != version || doc.Memlock == nil || *doc.Memlock != -1 || doc.Device.Name != "rxe0" ||
		doc.Config.Iterations != 20 || len(doc.Config.Sizes) != 3 || len(doc.Config.Modes) != 4 || len(doc.Rows) != 12 {
		t.Fatalf("document: %s", b)
	}
	for _, r := range doc.Rows {
		switch {
		case r.Mode == "huge" || r.Mode == "odp":
			if r.Skipped == "" || r.Reg.Samples != 0 {
				t.Errorf("%d %s not skipped", r.Size, r.Mode)
			}
		case r.Size == 64<<10:
			if !strings.Contains(r.Error, "cannot allocate memory") {
				t.Errorf("%d %s: error %q", r.Size, r.Mode, r.Error)
			}
		default:
			if r.Error != "" || r.Reg.Samples != 20 || r.Reg.P50 == nil || r.RegHist == "" || r.GiBps <= 0 || r.Pages != r.Size/4096 {
				t.Errorf("%d %s: %+v", r.Size, r.Mode, r)
			}
		}
	}
}

func TestMRExitCodes(t *testing.T) {
	for _, c := range []struct {
		name    string
		memlock int64
		failing []int
		args    []string
		code    int
		wantErr string
	}{
		{"all measured", -1, nil, []string{"--modes", "warm,cold", "--sizes", "4K"}, 0, ""},
		{"one size over memlock", 1 << 20, nil, []string{"--modes", "warm", "--sizes", "4K,64M"}, 0, ""},
		{"every size over memlock", 4096, nil, []string{"--modes", "warm,cold", "--sizes", "64K,1M"}, 1, "every row failed or was skipped"},
		{"only skipped modes", -1, nil, []string{"--modes", "huge,odp"}, 1, "every row failed or was skipped"},
		{"every row failed", -1, []int{4096}, []string{"--modes", "warm", "--sizes", "4K"}, 1, "every row failed"},
		{"no device", -1, nil, []string{"-d", "nodev"}, 1, "no RDMA device"},
		{"bad flag", -1, nil, []string{"--modes", "hot"}, 2, "unknown mode"},
	} {
		out, err := execute(newCmdMR(fakeMR(c.memlock, c.failing...)), append([]string{"-d", "rxe0", "-n", "5"}, c.args...)...)
		if exitCode(err) != c.code || (c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr))) {
			t.Errorf("%s: exit %d (%v), want %d with %q\n%s", c.name, exitCode(err), err, c.code, c.wantErr, out)
		}
		if c.name == "one size over memlock" && !strings.Contains(out, "64M pins 16384 pages (64M), more than the memlock limit (RLIMIT_MEMLOCK 1M)") {
			t.Errorf("%s: the error does not name the limit:\n%s", c.name, out)
		}
	}
}

// --json - puts the document on stdout and the table on stderr.
func TestMRJSONStdout(t *testing.T) {
	cmd := newCmdMR(fakeMR(-1))
	var stdout, stderr strings.Builder
	cmd.SetOut(&stdout)
	cmd.SetErr(&stderr)
	cmd.SetArgs([]string{"--json", "-", "--sizes", "4K", "--modes", "warm"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(stdout.String()), &doc); err != nil || doc["kind"] != "mr" {
		t.Errorf("stdout is not the document: %v\n%s", err, stdout.String())
	}
	// stderr is not a terminal: --format auto is plain there.
	if !strings.HasPrefix(stderr.String(), "bytes mode pages reg_p50_us") {
		t.Errorf("stderr has no plain table: %s", stderr.String())
	}
}

// The registrations get PCIe relaxed ordering unless --disable-pcie-relaxed, as a
// benchmark's buffers, and the document and the table say which.
func TestMRRelaxedOrdering(t *testing.T) {
	for _, disable := range []bool{false, true} {
		args := []string{"--json", "-", "--sizes", "4K", "--modes", "warm"}
		if disable {
			args = append(args, "--disable-pcie-relaxed")
		}
		cmd := newCmdMR(fakeMR(-1))
		var stdout, stderr strings.Builder
		cmd.SetOut(&stdout)
		cmd.SetErr(&stderr)
		cmd.SetArgs(args)
		if err := cmd.Execute(); err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Config struct {
				Relaxed bool `json:"pcie_relaxed_ordering"`
			} `json:"config"`
		}
		if err := json.Unmarshal([]byte(stdout.String()), &doc); err != nil || doc.Config.Relaxed == disable {
			t.Errorf("--disable-pcie-relaxed %v: the document says relaxed ordering %v (%v)", disable, doc.Config.Relaxed, err)
		}
		if strings.Contains(stderr.String(), "without relaxed ordering") != disable {
			t.Errorf("--disable-pcie-relaxed %v: the table says\n%s", disable, stderr.String())
		}
	}
}

func TestMRNoDevice(t *testing.T) {
	// The real Open: with cgo and no device here, or without cgo, the run fails (exit 1)
	// before measuring anything.
	_, err := execute(newCmdMR(func(o *mrOptions) error {
		o.Limits = func() (int64, bool, error) { return -1, false, nil }
		o.Local.Device = "no-such-device"
		return mrRun(o)
	}), "--sizes", "4K", "--modes", "warm")
	if exitCode(err) != 1 {
		t.Errorf("exit %d: %v", exitCode(err), err)
	}
	if err != nil && !errors.Is(err, verbs.ErrUnsupported) && !strings.Contains(err.Error(), "no-such-device") && !errors.Is(err, verbs.ErrNoDevice) {
		t.Logf("error: %v", err)
	}
}
