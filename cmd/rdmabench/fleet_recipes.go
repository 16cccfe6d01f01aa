package main

import (
	"io"

	"github.com/rdmabench/rdmabench/fleet"
	"github.com/rdmabench/rdmabench/fleet/pairs"
	"github.com/rdmabench/rdmabench/oob"
	"github.com/spf13/cobra"
)

// The launch recipes of `rdmabench fleet`: `fleet slurm` prints an sbatch script,
// `fleet k8s` Kubernetes manifests. The text is fleet.SlurmScript's and
// fleet.K8sManifests'; these commands only read the flags and print it.

type fleetSlurmOptions struct {
	fleet.SlurmOptions
	Out io.Writer
}

type fleetK8sOptions struct {
	fleet.K8sOptions
	Out io.Writer
}

// newCmdFleetSlurm is `fleet slurm`, to attach under `fleet`.
func newCmdFleetSlurm() *cobra.Command { return newCmdFleetSlurmRun(nil) }

// newCmdFleetK8s is `fleet k8s`, to attach under `fleet`.
func newCmdFleetK8s() *cobra.Command { return newCmdFleetK8sRun(nil) }

// fleetExtraArgs is what follows "--": more arguments for every member's `rdmabench
// fleet`. Anything before "--" is refused.
func fleetExtraArgs(cmd *cobra.Command, args []string) ([]string, error) {
	dash := cmd.ArgsLenAtDash()
	if dash < 0 {
		dash = len(args)
	}
	if dash > 0 {
		return nil, flagErrorf("unexpected argument %q: arguments for every member's 'rdmabench fleet' go after -- (see '%s --help')", args[0], cmd.CommandPath())
	}
	if dash == len(args) {
		return nil, nil
	}
	return args[dash:], nil
}

func newCmdFleetSlurmRun(runF func(*fleetSlurmOptions) error) *cobra.Command {
	o := &fleetSlurmOptions{}
	cmd := &cobra.Command{
		Use:     "slurm -N NODES [--pattern P] [--time T] [--partition P] [-- FLEET-ARGS...]",
		Example: "  rdmabench fleet slurm -N 16 --time 20 > fleet.sbatch && sbatch fleet.sbatch",
		Short:   "Print an sbatch script that runs a fleet, one member per node",
		Long: `Print an sbatch script that runs 'rdmabench fleet' on NODES nodes, one member each:

  rdmabench fleet slurm -N 8 --pattern pairwise > fleet.sbatch && sbatch fleet.sbatch

srun starts the members; each takes its rank and the world size from SLURM_PROCID and
SLURM_NTASKS, and rank 0, the first host of the allocation, coordinates. Arguments
after -- go to every member's 'rdmabench fleet' as they are. A comment in the script
gives the mpirun line for the same fleet without Slurm (Open MPI: OMPI_COMM_WORLD_RANK
and OMPI_COMM_WORLD_SIZE).

Patterns: ` + pairs.Patterns + `.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			if o.Args, err = fleetExtraArgs(cmd, args); err != nil {
				return err
			}
			if !cmd.Flags().Changed("nodes") {
				return flagErrorf("-N NODES is required: the number of nodes, one member each (see '%s --help')", cmd.CommandPath())
			}
			if err := o.Check(); err != nil {
				return &flagError{err}
			}
			o.Out = cmd.OutOrStdout()
			if runF != nil {
				return runF(o)
			}
			return fleetSlurmRun(o)
		},
	}
	f := cmd.Flags()
	f.IntVarP(&o.Nodes, "nodes", "N", 0, "nodes in the fleet, one member each (at least 2)")
	f.StringVar(&o.Pattern, "pattern", pairs.Pairwise, "test pattern: "+pairs.Patterns)
	f.StringVar(&o.Time, "time", fleet.DefaultSlurmTime, "the job's time limit, in Slurm's format")
	f.StringVar(&o.Partition, "partition", "", "the partition to run in (default: the cluster's)")
	return cmd
}

func fleetSlurmRun(o *fleetSlurmOptions) error {
	s, err := fleet.SlurmScript(o.SlurmOptions)
	if err != nil {
		return &flagError{err}
	}
	_, err = io.WriteString(o.Out, s)
	return err
}

func newCmdFleetK8sRun(runF func(*fleetK8sOptions) error) *cobra.Command {
	o := &fleetK8sOptions{}
	cmd := &cobra.Command{
		Use:     "k8s -n MEMBERS --image IMAGE [--pattern P] [-- FLEET-ARGS...]",
		Example: "  rdmabench fleet k8s -n 8 --image registry.example/rdmabench:1 | kubectl apply -f -",
		Short:   "Print Kubernetes manifests for a fleet: a headless Service and an Indexed Job",
		Long: `Print Kubernetes manifests that run 'rdmabench fleet' in MEMBERS pods, one per node:

  rdmabench fleet k8s -n 8 --image registry/rdmabench:TAG \
      --rdma-resource rdma/rdma_shared_device_a=1 --network roce-net > fleet.yaml
  kubectl apply -f fleet.yaml

They are a headless Service NAME (clusterIP None, the control port) and an Indexed Job
NAME of MEMBERS completions, all running at once. Pod i is found by the others as
NAME-i.NAME; its rank is its index (JOB_COMPLETION_INDEX, set by Kubernetes), the
world size is --world MEMBERS, and rank 0, NAME-0.NAME, coordinates. The pods have a
required anti-affinity on kubernetes.io/hostname (one per node), the IPC_LOCK
capability (to lock memory regions), the device plugin's --rdma-resource as a limit
and the Multus annotation k8s.v1.cni.cncf.io/networks for --network when given, and
the node's network with --host-network (then dnsPolicy ClusterFirstWithHostNet).
Nothing restarts: restartPolicy Never, backoffLimit 0. Arguments after -- go to every
member's 'rdmabench fleet' as they are. The image must have rdmabench on its PATH.

Patterns: ` + pairs.Patterns + `.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			if o.Args, err = fleetExtraArgs(cmd, args); err != nil {
				return err
			}
			if !cmd.Flags().Changed("members") {
				return flagErrorf("-n MEMBERS is required: the number of pods, one per node (see '%s --help')", cmd.CommandPath())
			}
			if o.Port == 0 { // the options' "default", not a port
				return flagErrorf("--port 0: want a TCP port, 1 to 65535")
			}
			if err := o.Check(); err != nil {
				return &flagError{err}
			}
			o.Out = cmd.OutOrStdout()
			if runF != nil {
				return runF(o)
			}
			return fleetK8sRun(o)
		},
	}
	f := cmd.Flags()
	f.IntVarP(&o.Members, "members", "n", 0, "pods in the fleet, one per node (at least 2)")
	f.StringVar(&o.Image, "image", "", "container image with rdmabench on its PATH (required)")
	f.StringVar(&o.RDMAResource, "rdma-resource", "", "a device plugin's RDMA resource for each pod, NAME[=COUNT], such as rdma/rdma_shared_device_a=1")
	f.StringVar(&o.Network, "network", "", "Multus network attachment(s) for the RDMA interface ("+fleet.MultusAnnotation+")")
	f.BoolVar(&o.HostNetwork, "host-network", false, "run the pods in their nodes' network namespace")
	f.StringVar(&o.Name, "name", fleet.DefaultName, "name of the Job and the headless Service")
	f.StringVar(&o.Namespace, "namespace", "", "namespace (default: the one kubectl applies to)")
	f.StringVar(&o.Pattern, "pattern", pairs.Pairwise, "test pattern: "+pairs.Patterns)
	f.IntVar(&o.Port, "port", oob.DefaultPort, "the coordinator's control port")
	return cmd
}

func fleetK8sRun(o *fleetK8sOptions) error {
	s, err := fleet.K8sManifests(o.K8sOptions)
	if err != nil {
		return &flagError{err}
	}
	_, err = io.WriteString(o.Out, s)
	return err
}
