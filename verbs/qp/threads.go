package qp

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Split gives each of threads loop threads its QPs of a session of nqp: thread t
// drives the QPs [Split[t].First, Split[t].First+Split[t].N), blocks that differ in
// size by one at most, the larger first. Contiguous blocks keep each loop's regions
// where the single loop would have put them (local region q at q x lstride). It needs
// a QP per thread at least.
func Split(nqp, threads int) ([]Block, error) {
	if threads < 1 || nqp < threads {
		return nil, fmt.Errorf("%d loop threads for %d QPs: every thread needs a QP of its own (raise -q or lower --threads)", threads, nqp)
	}
	b := make([]Block, threads)
	first := 0
	for t := range b {
		n := nqp / threads
		if t < nqp%threads {
			n++
		}
		b[t] = Block{First: first, N: n}
		first += n
	}
	return b, nil
}

// Block is a thread's QPs (see Split).
type Block struct{ First, N int }

// QPs lists the block's QP indices.
func (b Block) QPs() []int {
	q := make([]int, b.N)
	for i := range q {
		q[i] = b.First + i
	}
	return q
}

// Span is one loop's window on a clock shared by the threads: its first post and its
// last completion, in ns. A loop that posted nothing has Start 0.
type Span struct{ Start, End int64 }

// Window is the run's window over the loops' spans: the first post of any to the last
// completion of any; 0, 0 when none posted. Every loop's span nests in it.
func Window(spans []Span) (start, end int64) {
	for _, s := range spans {
		if s.Start == 0 {
			continue
		}
		if start == 0 || s.Start < start {
			start = s.Start
		}
		end = max(end, s.End)
	}
	return start, end
}

// CPUSets gives each of threads loop threads the CPUs it may run on, from the CPUs
// allowed (nil: no pinning, every set nil). With split and a CPU per thread or more,
// thread t gets the one CPU cpus[t]: spinning loops on one CPU each, as --cpu asks.
// Otherwise every thread gets them all (shared) and the kernel places them: a NIC's
// NUMA node, where a loop pinned to one CPU could share it with its peer or with the
// kernel's RDMA work.
func CPUSets(cpus []int, threads int, split bool) [][]int {
	sets := make([][]int, threads)
	if len(cpus) == 0 {
		return sets
	}
	for t := range sets {
		if split && len(cpus) >= threads {
			sets[t] = []int{cpus[t]}
		} else {
			sets[t] = slices.Clone(cpus)
		}
	}
	return sets
}

// ParseCPUList reads a cpulist as the kernel writes it and taskset takes it
// ("0-3,8,10-11"): CPU numbers, each once, sorted.
func ParseCPUList(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, fmt.Errorf("empty CPU list")
	}
	var cpus []int
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err := strconv.Atoi(lo)
		b := a
		if err == nil && isRange {
			b, err = strconv.Atoi(hi)
		}
		if err != nil || a < 0 || b < a || b > 1<<16 {
			return nil, fmt.Errorf("CPU list %q: %q is not a CPU or a range of CPUs (e.g. 0-3,8)", s, part)
		}
		for c := a; c <= b; c++ {
			cpus = append(cpus, c)
		}
	}
	slices.Sort(cpus)
	return slices.Compact(cpus), nil
}

// FormatCPUList writes cpus (sorted, each once) as a cpulist, ranges joined: "0-3,8".
func FormatCPUList(cpus []int) string {
	var b strings.Builder
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(cpus[i]))
		if j > i {
			b.WriteString("-" + strconv.Itoa(cpus[j]))
		}
		i = j + 1
	}
	return b.String()
}
