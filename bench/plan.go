// Package bench runs rdmabench tests: a client that drives a whole run from one command
// line, and a server that follows the client's plan. What differs between WRITE and
// READ lives in bench/write and bench/read, as an Op.
package bench

import (
	"fmt"

	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/verbs"
)

// Op is what one RDMA operation brings to the engine.
type Op struct {
	Name verbs.Op
	// ServerSpec and ClientSpec size each side's buffer and say what access the peer gets.
	ServerSpec func(c result.Config) verbs.Spec
	ClientSpec func(c result.Config) verbs.Spec
	// ClientLatency measures rounds first..first+n-1 and returns one sample per round, ns.
	ClientLatency func(s *verbs.Session, c result.Config, first, n uint64) ([]int64, error)
	// ServerLatency is the server's half of a latency test; it runs until s.Stop().
	// nil when the server is passive (one-sided READ).
	ServerLatency func(s *verbs.Session, c result.Config) error
	// LatKind names what a latency sample of this op's latency test is.
	LatKind string
	// VerifyAtServer: the client fills the pattern and the server checks it (WRITE);
	// otherwise the server fills and the client checks (READ).
	VerifyAtServer bool
}

// Defaults fills what the user left unset, the way perftest would.
func Defaults(c *result.Config) {
	if c.Test == "" {
		c.Test = "bw"
	}
	if c.MsgSizeBytes == 0 {
		c.MsgSizeBytes = 65536
		if c.Test == "lat" {
			c.MsgSizeBytes = 2
		}
	}
	if c.Iterations == 0 {
		c.Iterations = 5000
		if c.Test == "lat" {
			c.Iterations = 1000
		}
	}
	if c.SQDepth == 0 {
		c.SQDepth = 128
		if c.Test == "lat" {
			c.SQDepth = 16
		}
	}
	if c.PostList == 0 {
		c.PostList = 1
	}
	if c.CQMod == 0 {
		c.CQMod = min(100, c.SQDepth)
	}
	if c.NumQPs == 0 {
		c.NumQPs = 1
	}
}

// DefaultWarmup is the warm-up used when the user gives none: a tenth of the run.
func DefaultWarmup(c result.Config) uint64 {
	if c.DurationS > 0 {
		return uint64(max(16, 2*c.SQDepth))
	}
	return max(16, c.Iterations/10)
}

// Validate says what is wrong with a plan, naming the flag to change.
func Validate(c result.Config) error {
	switch {
	case c.Op != "write" && c.Op != "read":
		return fmt.Errorf("unknown operation %q: want write or read", c.Op)
	case c.Test != "bw" && c.Test != "lat":
		return fmt.Errorf("unknown test %q: want bw or lat", c.Test)
	case c.MsgSizeBytes < 1 || c.MsgSizeBytes > 1<<31:
		return fmt.Errorf("--size %d: want 1 B to 2 GiB", c.MsgSizeBytes)
	case c.DurationS < 0:
		return fmt.Errorf("--duration must not be negative")
	case c.DurationS > 0 && c.Test == "lat":
		return fmt.Errorf("--duration applies to bandwidth tests; latency tests take --iters")
	case c.SQDepth < 1:
		return fmt.Errorf("--tx-depth %d: want at least 1", c.SQDepth)
	case c.PostList < 1 || c.PostList > c.SQDepth:
		return fmt.Errorf("--post-list %d: want 1 to --tx-depth (%d)", c.PostList, c.SQDepth)
	case c.CQMod < 1 || c.CQMod > c.SQDepth:
		return fmt.Errorf("--cq-mod %d: want 1 to --tx-depth (%d), or the send queue fills with unsignalled WRs", c.CQMod, c.SQDepth)
	case c.BufOffsetBytes < 0 || c.BufOffsetBytes >= 1<<21:
		return fmt.Errorf("--offset %d: want 0 to 2 MiB-1", c.BufOffsetBytes)
	case c.NumQPs < 1 || c.NumQPs > 1024:
		return fmt.Errorf("--qps %d: want 1 to 1024", c.NumQPs)
	case c.NumQPs > 1 && c.Test == "lat":
		return fmt.Errorf("latency tests use one QP; drop --qps")
	case (c.CompletionEvents || c.CQModerationCount > 0 || c.CQModerationUS > 0) && c.Test != "bw":
		return fmt.Errorf("--events and --cq-moderation apply to bandwidth tests")
	case (c.CQModerationCount > 0 || c.CQModerationUS > 0) && !c.CompletionEvents:
		return fmt.Errorf("--cq-moderation moderates completion events: add --events")
	case c.CQModerationCount < 0 || c.CQModerationCount > 65535 || c.CQModerationUS < 0 || c.CQModerationUS > 65535:
		return fmt.Errorf("--cq-moderation and --cq-moderation-usec: want 0 to 65535")
	case c.Verify && c.Test != "bw":
		return fmt.Errorf("--verify applies to bandwidth tests")
	case c.InlineBytes < 0:
		return fmt.Errorf("--inline must not be negative")
	case c.InlineBytes > 0 && c.Op == "read":
		return fmt.Errorf("--inline applies to WRITE; READ carries no payload in the request")
	case c.MTUBytes != 0 && (c.MTUBytes < 256 || c.MTUBytes > 4096 || c.MTUBytes&(c.MTUBytes-1) != 0):
		return fmt.Errorf("--mtu %d: want 256, 512, 1024, 2048 or 4096", c.MTUBytes)
	}
	return nil
}

// ServerBytes is the memory a plan makes the server register.
func ServerBytes(op Op, c result.Config) int64 {
	s := op.ServerSpec(c)
	return int64(s.BufSize) + int64(s.Offset)
}

// Inline says whether a plan's WRITE messages go inline.
func Inline(c result.Config) bool { return c.Op == "write" && c.MsgSizeBytes <= c.InlineBytes }

// Spec is the common shape of a side's session for a plan.
func Spec(c result.Config, bufSize int, remoteWrite, remoteRead bool, sqDepth int) verbs.Spec {
	s := verbs.Spec{
		NumQP: c.NumQPs, SQDepth: sqDepth, BufSize: bufSize, Offset: c.BufOffsetBytes,
		Huge: c.Hugepages, RemoteWrite: remoteWrite, RemoteRead: remoteRead,
	}
	if Inline(c) {
		s.InlineSize = c.InlineBytes
	}
	return s
}
