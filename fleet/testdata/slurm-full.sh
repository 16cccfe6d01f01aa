#!/bin/bash
#SBATCH --job-name=rdmabench-fleet
#SBATCH --nodes=8 --ntasks-per-node=1
#SBATCH --time=1-00:00:00
#SBATCH --partition=roce,ib
#
# rdmabench fleet, pattern fanout:0, over 8 nodes: one member per node. Submit with
# `sbatch THIS_FILE`. Each member takes its rank and the world size from srun's
# SLURM_PROCID and SLURM_NTASKS; rank 0 runs on the first host of the allocation
# and coordinates the others over rdmabench's control protocol.
#
# Without Slurm, Open MPI's mpirun starts the same fleet, one member per host of
# its hostfile, the first of which coordinates:
#   mpirun -np 8 --map-by node rdmabench fleet --coordinator FIRST_HOST --pattern fanout:0 --size 64K --op read --label 'it'\''s a test'
#
# The members share a token: export RDMABENCH_TOKEN before sbatch (srun passes the
# environment on), or give --token-file FILE on shared storage after -- .

set -eu
coordinator=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1)
srun --ntasks-per-node=1 rdmabench fleet --coordinator "$coordinator" --pattern fanout:0 --size 64K --op read --label 'it'\''s a test'
