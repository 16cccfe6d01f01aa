package result

import "math"

// QPShares is how a bandwidth run's messages divided among the client's QPs, in QP
// order, and how evenly (see Evenness).
type QPShares struct {
	Messages []uint64 `json:"messages"`
	Evenness
}

// Evenness is how evenly a run's messages divided among its parts (QPs, loop threads):
// Jain's index over their messages and, for a timed run (-D), the verdict of
// FairnessOf, the spread and the edge in messages. In a run of a number of messages
// every part completes them all: no verdict.
type Evenness struct {
	JainFairness           *float64 `json:"jain_fairness,omitempty"`
	Fairness               string   `json:"fairness,omitempty"`
	FairnessSpreadMessages *float64 `json:"fairness_spread_messages,omitempty"`
	FairnessEdgeMessages   int64    `json:"fairness_edge_messages,omitempty"`
}

// EvennessOf judges msgs, each part's messages over a window of windowNS, in a run of c
// where each part keeps depth WRs in flight (its QPs' send queues).
func EvennessOf(c Config, msgs []uint64, windowNS int64, depth int) Evenness {
	e := Evenness{JainFairness: JainOf(msgs)}
	if c.DurationS > 0 && windowNS > 0 && len(msgs) > 1 {
		gbps := make([]float64, len(msgs))
		for i, m := range msgs {
			gbps[i] = float64(m) * float64(c.MsgSizeBytes) * 8 / float64(windowNS)
		}
		v, spread, edge := FairnessOf(gbps, windowNS, c.MsgSizeBytes, depth, c.CQMod)
		e.Fairness, e.FairnessSpreadMessages, e.FairnessEdgeMessages = v, &spread, edge
	}
	return e
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
	// The threads' evenness: the edge is a thread's QPs' queues.
	Evenness
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
	return &QPShares{Messages: append([]uint64(nil), msgs...), Evenness: EvennessOf(c, msgs, windowNS, c.SQDepth)}
}
