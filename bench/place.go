package bench

import (
	"fmt"
	"slices"

	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/verbs"
	"github.com/rdmabench/rdmabench/verbs/qp"
)

// Placement is where a side's loop threads run and where its buffer's pages live.
type Placement struct {
	// CPUs the loop threads may run on (nil, not pinned); with Split (--cpu) a CPU each
	// where there are as many as threads, else all of them shared (qp.CPUSets).
	CPUs  []int
	Split bool
	// MemNode is the NUMA node the buffer is bound to (preferred); nil, not bound.
	MemNode *int
	// How: result.Threads.Pinning.
	How string
}

// The placements' origins (result.Threads.Pinning).
const (
	PinCPUList  = "cpu-list"
	PinNICNode  = "nic-numa-node"
	PinNone     = "none"
	maxCPUCount = 1 << 16
)

// Place decides a side's placement: the CPUs of cpuList (--cpu) when given, each of
// which this process must be allowed to run on, one per thread where there are enough;
// else the CPUs local to the NIC's NUMA node that it may run on, shared by the threads
// (the kernel places each on one of them), where the host facts know the node; else
// none. The buffer
// goes to the NIC's node where it is known, with --cpu too: the NIC reads and writes
// it, and a buffer across the interconnect costs what a slow PCIe slot does.
func Place(cpuList string, dev result.Device, allowed []int) (Placement, error) {
	var node *int
	var local []int
	if f := dev.HostFacts; f != nil && f.NUMANode != nil && *f.NUMANode >= 0 {
		n := *f.NUMANode
		node = &n
		if l, err := qp.ParseCPUList(f.LocalCPUs); err == nil {
			local = l
		}
	}
	if cpuList != "" {
		cpus, err := qp.ParseCPUList(cpuList)
		if err != nil {
			return Placement{}, fmt.Errorf("--cpu: %w", err)
		}
		if allowed != nil {
			for _, c := range cpus {
				if !slices.Contains(allowed, c) {
					return Placement{}, fmt.Errorf("--cpu %s: CPU %d is not one this process may run on (it may run on %s; see taskset -p and the cgroup's cpuset)", cpuList, c, qp.FormatCPUList(allowed))
				}
			}
		}
		return Placement{CPUs: cpus, Split: true, MemNode: node, How: PinCPUList}, nil
	}
	if node == nil {
		return Placement{How: PinNone}, nil
	}
	var cpus []int
	for _, c := range local {
		if allowed == nil || slices.Contains(allowed, c) {
			cpus = append(cpus, c)
		}
	}
	if len(cpus) == 0 { // none of the node's CPUs is ours: leave the kernel to it
		return Placement{MemNode: node, How: PinNone}, nil
	}
	return Placement{CPUs: cpus, MemNode: node, How: PinNICNode}, nil
}

// apply puts the placement in a session's spec.
func (p Placement) apply(s *verbs.Spec) {
	s.CPUs, s.SplitCPUs, s.MemNode = p.CPUs, p.Split, p.MemNode
}

// threadsResult is what a result says about the loop threads of a bandwidth run of c
// (nil for one unpinned thread on a buffer bound nowhere: nothing to say).
func threadsResult(p Placement, c result.Config, res verbs.BWResult, memNode *int) *result.Threads {
	if max(c.Threads, 1) == 1 && p.How == PinNone && memNode == nil {
		return nil
	}
	t := &result.Threads{Pinning: p.How, MemoryNode: memNode, Threads: []result.Thread{}}
	var msgs []uint64
	maxQPs := 0
	for i, tr := range res.Threads {
		th := result.Thread{Index: i, QPs: tr.QPs.QPs(), RanOn: tr.RanOn, Messages: tr.Completed,
			Bytes: tr.Completed * uint64(c.MsgSizeBytes), StartNS: tr.StartNS, DurationNS: tr.DurationNS}
		if tr.CPUs != nil {
			th.CPUs = qp.FormatCPUList(tr.CPUs)
		}
		if res.Completed > 0 {
			th.Share = float64(tr.Completed) / float64(res.Completed)
		}
		if tr.DurationNS > 0 {
			sec := float64(tr.DurationNS) / 1e9
			th.BWGbps = float64(th.Bytes) * 8 / 1e9 / sec
			th.MsgRateMpps = float64(th.Messages) / 1e6 / sec
		}
		if tr.Err != nil {
			th.Error = tr.Err.Error()
		}
		t.Threads = append(t.Threads, th)
		msgs = append(msgs, tr.Completed)
		maxQPs = max(maxQPs, tr.QPs.N)
	}
	if len(msgs) > 1 {
		// A thread's edge is its queues': every QP of it may start a queue late and end
		// a queue short.
		t.Evenness = result.EvennessOf(c, msgs, res.DurationNS, c.SQDepth*maxQPs)
	}
	return t
}

// allowedCPUs are the CPUs this process may run on, nil where that is unknown (no cgo).
func allowedCPUs() []int {
	cpus, err := verbs.AllowedCPUs()
	if err != nil {
		return nil
	}
	return cpus
}
