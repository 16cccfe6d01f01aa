package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/fleet"
	"github.com/spf13/cobra"
)

func TestFleetSlurmRecipeFlags(t *testing.T) {
	defaults := func() fleetSlurmOptions {
		return fleetSlurmOptions{SlurmOptions: fleet.SlurmOptions{Pattern: "pairwise", Time: "00:30:00"}}
	}
	checkFlags(t, "fleet slurm", newCmdFleetSlurmRun, defaults, func(o *fleetSlurmOptions) { o.Out = nil },
		[]flagCase[fleetSlurmOptions]{
			{args: []string{"-N", "4"}, want: func(o *fleetSlurmOptions) { o.Nodes = 4 }},
			{args: []string{"--nodes", "16", "--pattern", "ring", "--time", "02:00:00", "--partition", "roce"}, want: func(o *fleetSlurmOptions) {
				o.Nodes, o.Pattern, o.Time, o.Partition = 16, "ring", "02:00:00", "roce"
			}},
			{args: []string{"-N", "3", "--pattern", "incast:2", "--", "--size", "64K", "--retest", "2"}, want: func(o *fleetSlurmOptions) {
				o.Nodes, o.Pattern, o.Args = 3, "incast:2", []string{"--size", "64K", "--retest", "2"}
			}},
			{args: nil, wantErr: "-N NODES is required"},
			{args: []string{"-N", "1"}, wantErr: "-N 1: a fleet needs at least 2 nodes"},
			{args: []string{"-N", "0"}, wantErr: "-N 0: a fleet needs at least 2 nodes"},
			{args: []string{"-N", "x"}, wantErr: `invalid argument "x" for "-N, --nodes"`},
			{args: []string{"-N", "4", "--pattern", "mesh"}, wantErr: `--pattern: unknown pattern "mesh"`},
			{args: []string{"-N", "4", "--pattern", "fanout:9"}, wantErr: "rank 9 is out of range"},
			{args: []string{"-N", "4", "--time", "soon"}, wantErr: `--time "soon"`},
			{args: []string{"-N", "4", "--partition", "a b"}, wantErr: `--partition "a b"`},
			{args: []string{"-N", "4", "--size", "64K"}, wantErr: "unknown flag: --size"},
			{args: []string{"-N", "4", "extra"}, wantErr: `unexpected argument "extra": arguments for every member's 'rdmabench fleet' go after --`},
			{args: []string{"-N", "4", "extra", "--", "--size", "1"}, wantErr: `unexpected argument "extra"`},
		})
}

func TestFleetK8sRecipeFlags(t *testing.T) {
	defaults := func() fleetK8sOptions {
		return fleetK8sOptions{K8sOptions: fleet.K8sOptions{Name: "rdmabench-fleet", Pattern: "pairwise", Port: 18600}}
	}
	checkFlags(t, "fleet k8s", newCmdFleetK8sRun, defaults, func(o *fleetK8sOptions) { o.Out = nil },
		[]flagCase[fleetK8sOptions]{
			{args: []string{"-n", "4", "--image", "rdmabench:1"}, want: func(o *fleetK8sOptions) { o.Members, o.Image = 4, "rdmabench:1" }},
			{args: []string{"--members", "8", "--image", "img", "--rdma-resource", "rdma/rdma_shared_device_a=1", "--network", "ns/roce",
				"--host-network", "--name", "fleet-b", "--namespace", "bench", "--pattern", "fanout:0", "--port", "18700", "--", "--size", "1M"},
				want: func(o *fleetK8sOptions) {
					o.Members, o.Image, o.RDMAResource, o.Network, o.HostNetwork = 8, "img", "rdma/rdma_shared_device_a=1", "ns/roce", true
					o.Name, o.Namespace, o.Pattern, o.Port, o.Args = "fleet-b", "bench", "fanout:0", 18700, []string{"--size", "1M"}
				}},
			{args: []string{"--image", "img"}, wantErr: "-n MEMBERS is required"},
			{args: []string{"-n", "1", "--image", "img"}, wantErr: "-n 1: a fleet needs at least 2 members"},
			{args: []string{"-n", "-3", "--image", "img"}, wantErr: "-n -3: a fleet needs at least 2 members"},
			{args: []string{"-n", "4"}, wantErr: "--image is required"},
			{args: []string{"-n", "4", "--image", "img", "--rdma-resource", "rdma_shared_device_a"}, wantErr: `--rdma-resource "rdma_shared_device_a": want NAME=COUNT`},
			{args: []string{"-n", "4", "--image", "img", "--rdma-resource", "rdma/a=0"}, wantErr: `the count "0" is not a whole number of at least 1`},
			{args: []string{"-n", "4", "--image", "img", "--rdma-resource", "rdma/a=x"}, wantErr: `the count "x"`},
			{args: []string{"-n", "4", "--image", "img", "--name", "My_Fleet"}, wantErr: `--name "My_Fleet"`},
			{args: []string{"-n", "4", "--image", "img", "--namespace", "-ns"}, wantErr: `--namespace "-ns"`},
			{args: []string{"-n", "4", "--image", "img", "--pattern", "incast"}, wantErr: "incast needs a rank"},
			{args: []string{"-n", "4", "--image", "img", "--port", "0"}, wantErr: "--port 0"},
			{args: []string{"-n", "4", "--image", "img", "oops"}, wantErr: `unexpected argument "oops"`},
		})
}

// The recipes under a `fleet` command, as the fleet command attaches them: what they
// print is the fleet package's text, and bad usage exits 2.
func TestFleetRecipesPrint(t *testing.T) {
	newFleet := func() *cobra.Command {
		c := &cobra.Command{Use: "fleet"}
		c.AddCommand(newCmdFleetSlurm(), newCmdFleetK8s())
		return c
	}
	out, err := execute(newFleet(), "slurm", "-N", "4", "--pattern", "ring", "--", "--size", "64 K")
	want, _ := fleet.SlurmScript(fleet.SlurmOptions{Nodes: 4, Pattern: "ring", Args: []string{"--size", "64 K"}})
	if err != nil || out != want {
		t.Errorf("fleet slurm: %v\n%s\nwant\n%s", err, out, want)
	}
	if !strings.Contains(out, "srun --ntasks-per-node=1 rdmabench fleet --coordinator \"$coordinator\" --pattern ring --size '64 K'\n") {
		t.Errorf("fleet slurm: %s", out)
	}
	out, err = execute(newFleet(), "k8s", "-n", "3", "--image", "img:1", "--rdma-resource", "rdma/rdma_shared_device_a=1", "--host-network")
	want, _ = fleet.K8sManifests(fleet.K8sOptions{Members: 3, Image: "img:1", RDMAResource: "rdma/rdma_shared_device_a=1", HostNetwork: true})
	if err != nil || out != want {
		t.Errorf("fleet k8s: %v\n%s\nwant\n%s", err, out, want)
	}
	for _, args := range [][]string{
		{"slurm"}, {"slurm", "-N", "1"}, {"slurm", "-N", "2", "--pattern", "star"}, {"slurm", "-N", "2", "--bogus"},
		{"k8s", "-n", "1", "--image", "i"}, {"k8s", "-n", "4"}, {"k8s", "-n", "4", "--image", "i", "--rdma-resource", "bad"},
	} {
		var b bytes.Buffer
		c := newFleet()
		usageErrors(c)
		c.SetArgs(args)
		c.SetOut(&b)
		c.SetErr(&b)
		c.SilenceUsage, c.SilenceErrors = true, true
		if err := c.Execute(); exitCode(err) != 2 {
			t.Errorf("fleet %q: exit %d (%v), want 2", args, exitCode(err), err)
		}
		if b.Len() != 0 {
			t.Errorf("fleet %q printed %q", args, b.String())
		}
	}
}
