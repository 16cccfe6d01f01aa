// Package write is RDMA WRITE for the bench engine: one-sided pushes into the
// server's buffer; latency is perftest's ping-pong (RTT/2), where each side spins on
// the last byte of its own buffer.
package write

import (
	"time"

	"github.com/rdmabench/rdmabench/bench"
	"github.com/rdmabench/rdmabench/plan"
	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/verbs"
)

// Op is RDMA WRITE.
var Op = bench.Op{
	Op:            plan.Write,
	ServerSpec:    serverSpec,
	ClientSpec:    clientSpec,
	ClientLatency: clientLatency,
	ServerLatency: serverLatency,
	LatKind:       "one_way",
	ToServer:      true,
	Requests:      "rx_write_requests",
}

// Bandwidth: the server's buffer is only written to. Latency: both sides hold a receive
// region and a send region and write into each other's.
func serverSpec(c result.Config) verbs.Spec {
	if c.Test == result.Lat {
		return bench.Spec(c, 2*c.MsgSizeBytes, true, false, c.SQDepth)
	}
	return bench.Spec(c, bench.DestBytes(c), true, false, 1)
}

func clientSpec(c result.Config) verbs.Spec {
	if c.Test == result.Lat {
		return bench.Spec(c, 2*c.MsgSizeBytes, true, false, c.SQDepth)
	}
	return bench.Spec(c, bench.SourceBytes(c), false, false, c.SQDepth)
}

func params(s bench.Session, c result.Config, initiator bool, first, n uint64, timeout time.Duration) verbs.PingPongParams {
	return verbs.PingPongParams{
		Initiator: initiator, Size: c.MsgSizeBytes, First: first, Iters: n,
		SQDepth: c.SQDepth, CQMod: c.CQMod, Inline: bench.InlineUsed(c, s), Timeout: timeout,
		OneWay: true, // half of each round trip, as perftest reports it
	}
}

func clientLatency(s bench.Session, c result.Config, r bench.LatRounds) (verbs.LatResult, error) {
	p := params(s, c, true, r.First, r.N, r.Timeout)
	if r.Perftest {
		// ib_write_lat's rounds: its server sends first, its count in the round byte,
		// one WR at a time, each signalled.
		p.Perftest, p.Initiator, p.SQDepth, p.CQMod = true, false, 1, 1
	}
	return s.PingPong(p)
}

func serverLatency(s bench.Session, c result.Config, timeout time.Duration) error {
	_, err := s.PingPong(params(s, c, false, 0, c.WarmupIterations+c.Iterations, timeout))
	return err
}
