package fleet

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/ from what the recipes generate")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./fleet -run %s -update writes it)", err, t.Name())
	}
	if got != string(want) {
		t.Errorf("%s differs from what the recipe generates (go test ./fleet -update rewrites it):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

var slurmCases = []struct {
	golden string
	opts   SlurmOptions
}{
	{"slurm-minimal.sh", SlurmOptions{Nodes: 4}},
	{"slurm-full.sh", SlurmOptions{Nodes: 8, Pattern: "fanout:0", Time: "1-00:00:00", Partition: "roce,ib",
		Args: []string{"--size", "64K", "--op", "read", "--label", "it's a test"}}},
}

// k8sCases are the manifests' golden files; k8s_decode_test.go decodes each strictly.
var k8sCases = []struct {
	golden string
	opts   K8sOptions
}{
	{"k8s-minimal.yaml", K8sOptions{Members: 4, Image: "ghcr.io/example/rdmabench:0.1"}},
	{"k8s-multus.yaml", K8sOptions{Members: 3, Image: "registry.example:5000/rdmabench@sha256:0123abcd", Name: "fleet-a", Namespace: "bench",
		Pattern: "ring", RDMAResource: "rdma/rdma_shared_device_a=1", Network: "bench/roce-net", Args: []string{"--size", "1M"}}},
	{"k8s-hostnet.yaml", K8sOptions{Members: 16, Image: "rdmabench", HostNetwork: true, RDMAResource: "rdma/hca_shared_devices_a",
		Pattern: "incast:15", Port: 18700}},
}

func TestSlurmGolden(t *testing.T) {
	for _, tc := range slurmCases {
		got, err := SlurmScript(tc.opts)
		if err != nil {
			t.Fatalf("%s: %v", tc.golden, err)
		}
		golden(t, tc.golden, got)
	}
}

func TestK8sGolden(t *testing.T) {
	for _, tc := range k8sCases {
		got, err := K8sManifests(tc.opts)
		if err != nil {
			t.Fatalf("%s: %v", tc.golden, err)
		}
		golden(t, tc.golden, got)
	}
}

func TestSlurmScript(t *testing.T) {
	s, err := SlurmScript(SlurmOptions{Nodes: 6, Pattern: "ring", Args: []string{"--retest", "2"}})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(s, "\n")
	if lines[0] != "#!/bin/bash" {
		t.Errorf("first line %q", lines[0])
	}
	// sbatch reads #SBATCH lines only before the first command.
	sawCommand := false
	for _, l := range lines[1:] {
		if strings.HasPrefix(l, "#SBATCH") && sawCommand {
			t.Errorf("#SBATCH after a command: %q", l)
		}
		if l != "" && !strings.HasPrefix(l, "#") {
			sawCommand = true
		}
	}
	for _, want := range []string{
		"#SBATCH --nodes=6 --ntasks-per-node=1\n",
		"#SBATCH --time=00:30:00\n",
		`coordinator=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1)` + "\n",
		`srun --ntasks-per-node=1 rdmabench fleet --coordinator "$coordinator" --pattern ring --retest 2` + "\n",
		"#   mpirun -np 6 --map-by node rdmabench fleet --coordinator FIRST_HOST --pattern ring --retest 2\n",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("script lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "--partition") {
		t.Errorf("a partition nobody asked for:\n%s", s)
	}
	if strings.Contains(s, "pipefail") {
		t.Error("pipefail: head -n1 closing the pipe would fail the script when scontrol lists many hosts")
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"--size": "--size", "64K": "64K", "a b": "'a b'", "it's": `'it'\''s'`, "": "''", "$HOME": "'$HOME'", "a;b": "'a;b'",
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestRecipeErrors(t *testing.T) {
	for _, tc := range []struct {
		opts SlurmOptions
		want string
	}{
		{SlurmOptions{Nodes: 1}, "-N 1: a fleet needs at least 2 nodes"},
		{SlurmOptions{Nodes: 4, Pattern: "mesh"}, `--pattern: unknown pattern "mesh"`},
		{SlurmOptions{Nodes: 4, Pattern: "fanout:4"}, "rank 4 is out of range"},
		{SlurmOptions{Nodes: 4, Time: "half an hour"}, `--time "half an hour"`},
		{SlurmOptions{Nodes: 4, Partition: "a b"}, `--partition "a b"`},
		{SlurmOptions{Nodes: 4, Partition: "x\n#SBATCH --nodes=1"}, "--partition"},
		{SlurmOptions{Nodes: 4, Args: []string{"a\nb"}}, "control character"},
	} {
		if _, err := SlurmScript(tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error with %q", tc.opts, err, tc.want)
		}
	}
	for _, ok := range []string{"30", "30:00", "00:30:00", "2-12", "2-12:30", "2-12:30:00", "UNLIMITED"} {
		if _, err := SlurmScript(SlurmOptions{Nodes: 2, Time: ok}); err != nil {
			t.Errorf("--time %s: %v", ok, err)
		}
	}
	img := "rdmabench"
	for _, tc := range []struct {
		opts K8sOptions
		want string
	}{
		{K8sOptions{Members: 1, Image: img}, "-n 1: a fleet needs at least 2 members"},
		{K8sOptions{Members: 4}, "--image is required"},
		{K8sOptions{Members: 4, Image: "a b"}, `--image "a b"`},
		{K8sOptions{Members: 4, Image: img, RDMAResource: "rdma_shared_device_a=1"}, `--rdma-resource "rdma_shared_device_a=1": want NAME=COUNT`},
		{K8sOptions{Members: 4, Image: img, RDMAResource: "rdma/x=0"}, `the count "0" is not a whole number of at least 1`},
		{K8sOptions{Members: 4, Image: img, RDMAResource: "rdma/x=one"}, `the count "one"`},
		{K8sOptions{Members: 4, Image: img, RDMAResource: "=1"}, "want NAME=COUNT"},
		{K8sOptions{Members: 4, Image: img, RDMAResource: "rdma/x y=1"}, "want NAME=COUNT"},
		{K8sOptions{Members: 4, Image: img, Name: "Fleet"}, `--name "Fleet"`},
		{K8sOptions{Members: 4, Image: img, Name: "fleet-"}, `--name "fleet-"`},
		{K8sOptions{Members: 100, Image: img, Name: strings.Repeat("a", 61)}, "at most 60 characters"},
		{K8sOptions{Members: 4, Image: img, Namespace: "my_ns"}, `--namespace "my_ns"`},
		{K8sOptions{Members: 4, Image: img, Pattern: "incast"}, "incast needs a rank"},
		{K8sOptions{Members: 4, Image: img, Port: 70000}, "--port 70000"},
		{K8sOptions{Members: 4, Image: img, Network: "a\nb"}, "--network"},
	} {
		if _, err := K8sManifests(tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error with %q", tc.opts, err, tc.want)
		}
	}
}

func TestParseResource(t *testing.T) {
	for in, want := range map[string]struct {
		name  string
		count int
	}{
		"rdma/rdma_shared_device_a=1":   {"rdma/rdma_shared_device_a", 1},
		"rdma/hca_shared_devices_a":     {"rdma/hca_shared_devices_a", 1},
		"nvidia.com/hostdev=2":          {"nvidia.com/hostdev", 2},
		"example.com/sriov_netdevice=4": {"example.com/sriov_netdevice", 4},
	} {
		name, count, err := ParseResource(in)
		if err != nil || name != want.name || count != want.count {
			t.Errorf("ParseResource(%q) = %q, %d, %v", in, name, count, err)
		}
	}
}

func TestCoordinator(t *testing.T) {
	if got := (K8sOptions{}).Coordinator(); got != "rdmabench-fleet-0.rdmabench-fleet" {
		t.Errorf("default coordinator %q", got)
	}
	if got := (K8sOptions{Name: "f", Port: 18700}).Coordinator(); got != "f-0.f:18700" {
		t.Errorf("coordinator on another port %q", got)
	}
}
