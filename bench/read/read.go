// Package read is RDMA READ for the bench engine: the client pulls from the server's
// buffer, the server's CPU stays idle; latency is one READ at a time, post to
// completion. Concurrency is bounded by the QPs' outstanding-read limit.
package read

import (
	"github.com/rdmabench/rdmabench/bench"
	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/verbs"
)

// Op is RDMA READ.
var Op = bench.Op{
	Name:       verbs.Read,
	ServerSpec: func(c result.Config) verbs.Spec { return bench.Spec(c, c.MsgSizeBytes, false, true, 1) },
	ClientSpec: func(c result.Config) verbs.Spec { return bench.Spec(c, c.MsgSizeBytes, false, false, c.SQDepth) },
	ClientLatency: func(s *verbs.Session, c result.Config, _, n uint64) ([]int64, error) {
		return s.ReadLatency(c.MsgSizeBytes, n)
	},
	LatKind: "read_completion",
}
