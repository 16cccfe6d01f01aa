package fleet

import (
	"strings"
	"testing"
)

// envOf is a launcher's environment.
func envOf(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

func TestDiscoverLaunchers(t *testing.T) {
	for _, tc := range []struct {
		name        string
		env         []string
		rank, world int
		want        Rank
	}{
		{"flags", nil, 3, 8, Rank{3, 8, SourceFlags}},
		{"flags win over a launcher", []string{"SLURM_PROCID", "1", "SLURM_NTASKS", "4"}, 0, 2, Rank{0, 2, SourceFlags}},
		{"open mpi", []string{"OMPI_COMM_WORLD_RANK", "5", "OMPI_COMM_WORLD_SIZE", "6"}, Unset, Unset, Rank{5, 6, SourceOpenMPI}},
		{"pmi", []string{"PMI_RANK", "0", "PMI_SIZE", "2"}, Unset, Unset, Rank{0, 2, SourcePMI}},
		{"slurm", []string{"SLURM_PROCID", "7", "SLURM_NTASKS", "16"}, Unset, Unset, Rank{7, 16, SourceSlurm}},
		{"slurm with an agreeing --world", []string{"SLURM_PROCID", "7", "SLURM_NTASKS", "16"}, Unset, 16, Rank{7, 16, SourceSlurm}},
		{"mpirun inside a slurm allocation", []string{"SLURM_PROCID", "0", "SLURM_NTASKS", "1", "OMPI_COMM_WORLD_RANK", "3", "OMPI_COMM_WORLD_SIZE", "4"}, Unset, Unset, Rank{3, 4, SourceOpenMPI}},
		{"pmi before slurm", []string{"SLURM_PROCID", "2", "SLURM_NTASKS", "4", "PMI_RANK", "2", "PMI_SIZE", "4"}, Unset, Unset, Rank{2, 4, SourcePMI}},
		{"kubernetes indexed job", []string{"JOB_COMPLETION_INDEX", "3"}, Unset, 4, Rank{3, 4, SourceK8s}},
		{"an empty variable is unset", []string{"OMPI_COMM_WORLD_RANK", "", "SLURM_PROCID", "1", "SLURM_NTASKS", "2"}, Unset, Unset, Rank{1, 2, SourceSlurm}},
	} {
		got, err := Discover(envOf(tc.env...), tc.rank, tc.world)
		if err != nil || got != tc.want {
			t.Errorf("%s: got %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
	}
}

func TestDiscoverErrors(t *testing.T) {
	for _, tc := range []struct {
		name        string
		env         []string
		rank, world int
		want        []string // words the error must have
	}{
		{"nothing", nil, Unset, Unset, []string{"no rank", "--rank", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID", "JOB_COMPLETION_INDEX"}},
		{"--rank alone", nil, 2, Unset, []string{"--rank 2 needs --world"}},
		{"--world alone", nil, Unset, 4, []string{"--world 4 without a rank"}},
		{"--rank negative", nil, -3, 4, []string{"--rank -3"}},
		{"--world negative", nil, Unset, -2, []string{"--world -2"}},
		{"--rank not below --world", nil, 4, 4, []string{"--rank 4 is not below the world size (--world 4)", "0 to 3"}},
		{"--world 1", nil, 0, 1, []string{"--world 1", "at least 2 hosts"}},
		{"ompi rank not a number", []string{"OMPI_COMM_WORLD_RANK", "x1", "OMPI_COMM_WORLD_SIZE", "4"}, Unset, Unset, []string{`OMPI_COMM_WORLD_RANK="x1": not a number`}},
		{"ompi size missing", []string{"OMPI_COMM_WORLD_RANK", "1"}, Unset, Unset, []string{"OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE is not"}},
		{"pmi size not a number", []string{"PMI_RANK", "1", "PMI_SIZE", "four"}, Unset, Unset, []string{`PMI_SIZE="four": not a number`}},
		{"pmi rank negative", []string{"PMI_RANK", "-1", "PMI_SIZE", "4"}, Unset, Unset, []string{"PMI_RANK=-1: negative"}},
		{"slurm rank not below size", []string{"SLURM_PROCID", "4", "SLURM_NTASKS", "4"}, Unset, Unset, []string{"SLURM_PROCID=4 is not below the world size (SLURM_NTASKS=4)"}},
		{"slurm world of one", []string{"SLURM_PROCID", "0", "SLURM_NTASKS", "1"}, Unset, Unset, []string{"SLURM_NTASKS=1: a fleet needs at least 2 hosts"}},
		{"slurm size negative", []string{"SLURM_PROCID", "0", "SLURM_NTASKS", "-4"}, Unset, Unset, []string{"SLURM_NTASKS=-4: negative"}},
		{"--world disagrees with slurm", []string{"SLURM_PROCID", "0", "SLURM_NTASKS", "8"}, Unset, 4, []string{"--world 4 disagrees with SLURM_NTASKS=8"}},
		{"job index without --world", []string{"JOB_COMPLETION_INDEX", "2"}, Unset, Unset, []string{"JOB_COMPLETION_INDEX=2", "pass --world N"}},
		{"job index not a number", []string{"JOB_COMPLETION_INDEX", "two"}, Unset, 4, []string{`JOB_COMPLETION_INDEX="two": not a number`}},
		{"job index negative", []string{"JOB_COMPLETION_INDEX", "-2"}, Unset, 4, []string{"JOB_COMPLETION_INDEX=-2: negative"}},
		{"job index not below --world", []string{"JOB_COMPLETION_INDEX", "4"}, Unset, 4, []string{"JOB_COMPLETION_INDEX=4 is not below the world size (--world 4)"}},
		{"job index with --world 1", []string{"JOB_COMPLETION_INDEX", "0"}, Unset, 1, []string{"--world 1: a fleet needs at least 2 hosts"}},
	} {
		got, err := Discover(envOf(tc.env...), tc.rank, tc.world)
		if err == nil {
			t.Errorf("%s: got %+v, want an error", tc.name, got)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q lacks %q", tc.name, err, w)
			}
		}
	}
}

// A world size from a launcher sizes the coordinator's tables: it is bounded.
func TestDiscoverBoundsTheWorld(t *testing.T) {
	for _, env := range [][]string{
		{"SLURM_PROCID", "0", "SLURM_NTASKS", "10000000000"},
		{"OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "4097"},
	} {
		if r, err := Discover(envOf(env...), Unset, Unset); err == nil || !strings.Contains(err.Error(), "at most 4096 hosts") {
			t.Errorf("%v: want a refusal of the world size, got %+v, %v", env, r, err)
		}
	}
	if _, err := Discover(envOf(), 0, 4097); err == nil {
		t.Error("--world 4097: want a refusal")
	}
}
