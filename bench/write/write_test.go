package write_test

import (
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/bench"
	"github.com/rdmabench/rdmabench/bench/benchtest"
	"github.com/rdmabench/rdmabench/bench/write"
	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/verbs"
)

// Every test of the op through the client and the server on the fake engine.
func TestOpOverFakeEngine(t *testing.T) { benchtest.TestOp(t, write.Op) }

// pingPongs records the ping-pongs a latency rule asks for.
type pingPongs struct {
	bench.Session
	inline int
	got    []verbs.PingPongParams
}

func (s *pingPongs) MaxInline() int { return s.inline }

func (s *pingPongs) PingPong(p verbs.PingPongParams) (verbs.LatResult, error) {
	s.got = append(s.got, p)
	return verbs.LatResult{Done: p.Iters}, nil
}

// The op's latency rule: against rdmabench's server the client initiates the plan's
// rounds; against perftest's ib_write_lat it answers (its server sends first), one WR
// at a time, each signalled, its round count in the byte. Both are one-way (RTT/2);
// both go inline when the plan asks and the QP takes the size.
func TestClientLatencyRule(t *testing.T) {
	c := result.Config{Op: "write", Test: result.Lat, MsgSizeBytes: 32, InlineBytes: 64, SQDepth: 4, CQMod: 2}
	for _, tc := range []struct {
		r      bench.LatRounds
		inline int
		want   verbs.PingPongParams
	}{
		{bench.LatRounds{First: 10, N: 100, Timeout: time.Second}, 64,
			verbs.PingPongParams{Initiator: true, Size: 32, First: 10, Iters: 100, SQDepth: 4, CQMod: 2, Inline: true, Timeout: time.Second, OneWay: true}},
		{bench.LatRounds{N: 100, Timeout: time.Second, Perftest: true}, 64,
			verbs.PingPongParams{Size: 32, Iters: 100, SQDepth: 1, CQMod: 1, Inline: true, Timeout: time.Second, OneWay: true, Perftest: true}},
		{bench.LatRounds{N: 5, Perftest: true}, 16, // the QP takes 16 B inline: not 32
			verbs.PingPongParams{Size: 32, Iters: 5, SQDepth: 1, CQMod: 1, OneWay: true, Perftest: true}},
	} {
		s := &pingPongs{inline: tc.inline}
		if _, err := write.Op.ClientLatency(s, c, tc.r); err != nil || len(s.got) != 1 || s.got[0] != tc.want {
			t.Errorf("%+v: %+v (%v), want %+v", tc.r, s.got, err, tc.want)
		}
	}
}
