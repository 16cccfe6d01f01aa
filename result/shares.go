package result

import "math"

// QPShares is how a bandwidth run's messages divided among the client's QPs, in QP
// order, with Jain's index over them and, for a timed run (-D), the verdict of
// FairnessOf: in a run of a number of messages every QP completes them all.
type QPShares struct {
	Messages               []uint64 `json:"messages"`
	JainFairness           *float64 `json:"jain_fairness,omitempty"`
	Fairness               string   `json:"fairness,omitempty"`
	FairnessSpreadMessages *float64 `json:"fairness_spread_messages,omitempty"`
	FairnessEdgeMessages   int64    `json:"fairness_edge_messages,omitempty"`
}

// Threads is where a run's loop threads ran and what each one moved (--threads,
// --cpu). Each thread drives its own QPs on its own CQ with its own C loop; the run's
// window is the first post of any thread to the last completion of any.
type Threads struct {
	Threads []Thread `json:"threads"`
	// MemoryNode is the NUMA node the buffer's pages were bound to (preferred, as
	// mbind MPOL_PREFERRED: where the node has no free page the kernel takes another);
	// absent where they were not bound (a one-node host, or the NIC's node unknown).
	MemoryNode *int `json:"memory_numa_node,omitempty"`
	// Pinning says where the CPUs came from: "cpu-list" (--cpu), "nic-numa-node" (the
	// NIC's node's local CPUs, the default where the device has one) or "none".
	Pinning string `json:"pinning"`
	// JainFairness over the threads' messages, and for a timed run the verdict (see
	// FairnessOf; the edge there is per QP, here per thread's QPs).
	JainFairness           *float64 `json:"jain_fairness,omitempty"`
	Fairness               string   `json:"fairness,omitempty"`
	FairnessSpreadMessages *float64 `json:"fairness_spread_messages,omitempty"`
	FairnessEdgeMessages   int64    `json:"fairness_edge_messages,omitempty"`
}

// Thread is one loop thread of a run.
type Thread struct {
	Index int   `json:"thread"`
	QPs   []int `json:"qps"` // the client's QP indices it drove
	// CPUs is the set it was pinned to (a cpulist, "2,4-7"); absent: not pinned.
	CPUs string `json:"cpus,omitempty"`
	// RanOn are the CPUs it was on when its loop started and when it returned
	// (sched_getcpu), each once.
	RanOn    []int  `json:"ran_on_cpus,omitempty"`
	Messages uint64 `json:"messages"`
	Bytes    uint64 `json:"bytes"`
	// StartNS is its first post after the run's first post; DurationNS its own first
	// post to its last completion.
	StartNS     int64   `json:"start_ns"`
	DurationNS  int64   `json:"duration_ns"`
	BWGbps      float64 `json:"bw_gbit_per_s"`
	MsgRateMpps float64 `json:"msg_rate_mpps"`
	// Share is its part of the run's messages.
	Share float64 `json:"share"`
	Error string  `json:"error,omitempty"`
}

// JainOf is Jain's index of counts, nil where it is undefined (none, or all zero).
func JainOf(counts []uint64) *float64 {
	xs := make([]float64, len(counts))
	for i, c := range counts {
		xs[i] = float64(c)
	}
	j := Jain(xs)
	if math.IsNaN(j) {
		return nil
	}
	j = min(j, 1)
	return &j
}

// NewQPShares is the shares of a bandwidth run of c whose QPs completed msgs each
// over a window of windowNS; nil for one QP or nothing measured.
func NewQPShares(c Config, msgs []uint64, windowNS int64) *QPShares {
	if len(msgs) < 2 || windowNS <= 0 {
		return nil
	}
	s := &QPShares{Messages: append([]uint64(nil), msgs...), JainFairness: JainOf(msgs)}
	if c.DurationS > 0 {
		gbps := make([]float64, len(msgs))
		for i, m := range msgs {
			gbps[i] = float64(m) * float64(c.MsgSizeBytes) * 8 / float64(windowNS)
		}
		v, spread, edge := FairnessOf(gbps, windowNS, c.MsgSizeBytes, c.SQDepth, c.CQMod)
		s.Fairness, s.FairnessSpreadMessages, s.FairnessEdgeMessages = v, &spread, edge
	}
	return s
}
