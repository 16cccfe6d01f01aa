// Package read is RDMA READ for the bench engine: the client pulls from the server's
// buffer, the server's CPU stays idle; latency is one READ at a time, post to
// completion. Concurrency is bounded by the QPs' outstanding-read limit.
package read

import (
	"github.com/rdmabench/rdmabench/bench"
	"github.com/rdmabench/rdmabench/plan"
	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/verbs"
)

// Op is RDMA READ.
var Op = bench.Op{
	Op: plan.Read,
	ServerSpec: func(c result.Config) verbs.Spec {
		if c.Test == result.Lat {
			return bench.Spec(c, c.MsgSizeBytes, false, true, 1)
		}
		return bench.Spec(c, bench.SourceBytes(c), false, true, 1)
	},
	ClientSpec: func(c result.Config) verbs.Spec {
		if c.Test == result.Lat {
			return bench.Spec(c, c.MsgSizeBytes, false, false, c.SQDepth)
		}
		return bench.Spec(c, bench.DestBytes(c), false, false, c.SQDepth)
	},
	// One READ at a time, against rdmabench's server or perftest's alike.
	ClientLatency: func(s bench.Session, c result.Config, r bench.LatRounds) (verbs.LatResult, error) {
		return s.ReadLatency(verbs.ReadLatParams{Size: c.MsgSizeBytes, Iters: r.N, Timeout: r.Timeout})
	},
	LatKind:  "read_completion",
	Requests: "rx_read_requests",
}
