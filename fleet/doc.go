// Package fleet is `rdmabench fleet`: one member per host, started by a launcher a
// cluster already has (mpirun, srun, a Kubernetes Indexed Job), rank 0 coordinating
// the others over rdmabench's own control protocol. It holds
//
//   - rank discovery from a launcher's environment (Discover),
//   - the coordinator, which runs the schedule's rounds on the members' agents and
//     retests the bad pairs (Coordinator),
//   - the launch recipes: an sbatch script (SlurmScript) and Kubernetes manifests
//     (K8sManifests).
//
// The fleet's rules that need no network (the patterns as rounds of pairs, the
// ClusterKit-style outlier judgement against the fleet's median, the retests'
// bookkeeping, the host x host matrix) are in fleet/pairs, which the readers (report
// matrix, report html) use too.
package fleet
