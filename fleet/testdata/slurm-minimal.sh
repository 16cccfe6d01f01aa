#!/bin/bash
#SBATCH --job-name=rdmabench-fleet
#SBATCH --nodes=4 --ntasks-per-node=1
#SBATCH --time=00:30:00
#
# rdmabench fleet, pattern pairwise, over 4 nodes: one member per node. Submit with
# `sbatch THIS_FILE`. Each member takes its rank and the world size from srun's
# SLURM_PROCID and SLURM_NTASKS; rank 0 runs on the first host of the allocation
# and coordinates the others over rdmabench's control protocol.
#
# Without Slurm, Open MPI's mpirun starts the same fleet, one member per host of
# its hostfile, the first of which coordinates:
#   mpirun -np 4 --map-by node rdmabench fleet --coordinator FIRST_HOST --pattern pairwise
#
# The members share a token: export RDMABENCH_TOKEN before sbatch (srun passes the
# environment on), or give --token-file FILE on shared storage after -- .

set -eu
coordinator=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1)
srun --ntasks-per-node=1 rdmabench fleet --coordinator "$coordinator" --pattern pairwise
