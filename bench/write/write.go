// Package write is RDMA WRITE for the bench engine: one-sided pushes into the
// server's buffer; latency is perftest's ping-pong (RTT/2), where each side spins on
// the last byte of its own buffer.
package write

import (
	"github.com/rdmabench/rdmabench/bench"
	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/verbs"
)

// Op is RDMA WRITE.
var Op = bench.Op{
	Name:           verbs.Write,
	ServerSpec:     serverSpec,
	ClientSpec:     clientSpec,
	ClientLatency:  clientLatency,
	ServerLatency:  serverLatency,
	LatKind:        "one_way",
	VerifyAtServer: true,
}

// Bandwidth: the server's buffer is only written to. Latency: both sides hold a receive
// region and a send region and write into each other's.
func serverSpec(c result.Config) verbs.Spec {
	if c.Test == "lat" {
		return bench.Spec(c, 2*c.MsgSizeBytes, true, false, c.SQDepth)
	}
	return bench.Spec(c, c.MsgSizeBytes, true, false, 1)
}

func clientSpec(c result.Config) verbs.Spec {
	if c.Test == "lat" {
		return bench.Spec(c, 2*c.MsgSizeBytes, true, false, c.SQDepth)
	}
	return bench.Spec(c, c.MsgSizeBytes, false, false, c.SQDepth)
}

func clientLatency(s *verbs.Session, c result.Config, first, n uint64) ([]int64, error) {
	rtt, err := s.PingPong(true, c.MsgSizeBytes, first, n, c.SQDepth, c.CQMod, bench.Inline(c))
	for i := range rtt {
		rtt[i] /= 2 // one-way latency, as perftest reports it
	}
	return rtt, err
}

func serverLatency(s *verbs.Session, c result.Config) error {
	_, err := s.PingPong(false, c.MsgSizeBytes, 0, c.WarmupIterations+c.Iterations, c.SQDepth, c.CQMod, bench.Inline(c))
	return err
}
