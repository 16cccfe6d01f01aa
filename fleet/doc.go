// Package fleet is the pure logic of `rdmabench fleet`: one member per host, started by
// a launcher a cluster already has (mpirun, srun, a Kubernetes Indexed Job), rank 0
// coordinating the others over rdmabench's own control protocol.
//
// This package does no I/O of its own beyond the writers it is handed: no network, no
// cgo. It holds
//
//   - rank discovery from a launcher's environment (Discover),
//   - the test patterns a fleet runs, as rounds of pairs (Schedule),
//   - ClusterKit-style outlier judgement of the pairs' results against the fleet's
//     median (Judge), and the bookkeeping of retests in isolation (Retests),
//   - the host x host matrix of a fleet's results (Matrix, WriteMatrix),
//   - the launch recipes: an sbatch script (SlurmScript) and Kubernetes manifests
//     (K8sManifests).
package fleet
