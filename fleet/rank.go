package fleet

import (
	"fmt"
	"strconv"

	"github.com/rdmabench/rdmabench/fleet/pairs"
)

// Rank is where this member stands in the fleet: its rank in [0, World), the number of
// members, and where the two came from (one of the Source constants).
type Rank struct {
	Rank   int
	World  int
	Source string
}

// Where a Rank came from.
const (
	SourceFlags   = "flags"      // --rank and --world
	SourceOpenMPI = "openmpi"    // OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE (Open MPI's mpirun)
	SourcePMI     = "pmi"        // PMI_RANK, PMI_SIZE (MPICH's and Intel MPI's mpirun, Hydra)
	SourceSlurm   = "slurm"      // SLURM_PROCID, SLURM_NTASKS (srun)
	SourceK8s     = "kubernetes" // JOB_COMPLETION_INDEX (an Indexed Job), the world from --world
)

// Unset is the value of a --rank or --world flag that was not given.
const Unset = -1

// launcher is one environment that gives a rank and a world size.
type launcher struct {
	source, rank, world string
}

// launchers in the order Discover consults them. Open MPI comes before Slurm: an
// mpirun inside a Slurm allocation runs with the batch step's SLURM_PROCID (0 on every
// host) still set, and its own OMPI_ variables are the ones that tell the ranks apart.
var launchers = []launcher{
	{SourceOpenMPI, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
	{SourcePMI, "PMI_RANK", "PMI_SIZE"},
	{SourceSlurm, "SLURM_PROCID", "SLURM_NTASKS"},
}

// EnvJobIndex is the variable Kubernetes sets to a pod's index in an Indexed Job.
const EnvJobIndex = "JOB_COMPLETION_INDEX"

// Discover finds this member's rank and the fleet's size. env looks a variable up
// (os.Getenv; "" is unset); flagRank and flagWorld are --rank and --world, Unset (-1)
// when not given. It takes, in order:
//
//  1. --rank with --world, when --rank is given (--rank alone is an error);
//  2. OMPI_COMM_WORLD_RANK and OMPI_COMM_WORLD_SIZE (Open MPI's mpirun);
//  3. PMI_RANK and PMI_SIZE (MPICH, Intel MPI);
//  4. SLURM_PROCID and SLURM_NTASKS (srun);
//  5. JOB_COMPLETION_INDEX (a Kubernetes Indexed Job), whose world size must come
//     from --world: Kubernetes sets no variable for it.
//
// A launcher is taken when its rank variable is set, and then both its variables must
// be good. --world given with a launcher that has its own world size must agree with
// it. Errors name the variable (or flag) and its bad value: not a number, negative, a
// rank not below the world size, a world of fewer than 2 members.
func Discover(env func(string) string, flagRank, flagWorld int) (Rank, error) {
	if flagRank < Unset {
		return Rank{}, fmt.Errorf("--rank %d: want a rank of at least 0", flagRank)
	}
	if flagWorld < Unset {
		return Rank{}, fmt.Errorf("--world %d: want a fleet of at least 2 hosts", flagWorld)
	}
	if flagRank >= 0 {
		if flagWorld == Unset {
			return Rank{}, fmt.Errorf("--rank %d needs --world N, the number of hosts in the fleet", flagRank)
		}
		return check(Rank{flagRank, flagWorld, SourceFlags}, fmt.Sprintf("--rank %d", flagRank), fmt.Sprintf("--world %d", flagWorld))
	}
	for _, l := range launchers {
		rs := env(l.rank)
		if rs == "" {
			continue
		}
		rank, err := number(l.rank, rs)
		if err != nil {
			return Rank{}, err
		}
		ws := env(l.world)
		if ws == "" {
			return Rank{}, fmt.Errorf("%s=%s is set but %s is not: the launcher gave a rank without a world size", l.rank, rs, l.world)
		}
		world, err := number(l.world, ws)
		if err != nil {
			return Rank{}, err
		}
		if flagWorld != Unset && flagWorld != world {
			return Rank{}, fmt.Errorf("--world %d disagrees with %s=%s: leave --world out under %s", flagWorld, l.world, ws, l.source)
		}
		return check(Rank{rank, world, l.source}, l.rank+"="+rs, l.world+"="+ws)
	}
	if is := env(EnvJobIndex); is != "" {
		rank, err := number(EnvJobIndex, is)
		if err != nil {
			return Rank{}, err
		}
		if flagWorld == Unset {
			return Rank{}, fmt.Errorf("%s=%s (a Kubernetes Indexed Job) gives no world size: pass --world N, the Job's completions", EnvJobIndex, is)
		}
		return check(Rank{rank, flagWorld, SourceK8s}, EnvJobIndex+"="+is, fmt.Sprintf("--world %d", flagWorld))
	}
	if flagWorld != Unset {
		return Rank{}, fmt.Errorf("--world %d without a rank: pass --rank too, or run under mpirun, srun or an Indexed Job", flagWorld)
	}
	return Rank{}, fmt.Errorf("no rank: pass --rank and --world, or run under a launcher " +
		"(none of OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID, JOB_COMPLETION_INDEX is set)")
}

// number parses a launcher variable's value: a whole number, at least 0.
func number(name, v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("%s=%q: not a number", name, v)
	}
	if n < 0 {
		return 0, fmt.Errorf("%s=%s: negative", name, v)
	}
	return n, nil
}

// check refuses a world of fewer than 2 and a rank outside it; rankWhat and worldWhat
// say where each came from ("SLURM_PROCID=3", "--world 2").
func check(r Rank, rankWhat, worldWhat string) (Rank, error) {
	if r.World < 2 {
		return Rank{}, fmt.Errorf("%s: a fleet needs at least 2 hosts", worldWhat)
	}
	if r.World > pairs.MaxMembers {
		return Rank{}, fmt.Errorf("%s: a fleet of at most %d hosts", worldWhat, pairs.MaxMembers)
	}
	if r.Rank >= r.World {
		return Rank{}, fmt.Errorf("%s is not below the world size (%s): ranks run from 0 to %d", rankWhat, worldWhat, r.World-1)
	}
	return r, nil
}
