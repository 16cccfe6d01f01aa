package bench_test

import (
	"encoding/json"
	"math"
	"math/big"
	"math/bits"
	"testing"

	"github.com/rdmabench/rdmabench/bench"
	"github.com/rdmabench/rdmabench/bench/ops"
	"github.com/rdmabench/rdmabench/plan"
	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/verbs"
)

// fuzzPlan is a plan as the command line makes it: Defaults, and the default warm-up
// unless one is given.
func fuzzPlan(c result.Config) result.Config {
	ops.Defaults(&c)
	if c.WarmupIterations == 0 {
		c.WarmupIterations = plan.DefaultWarmup(c)
	}
	return c
}

func mustJSON(tb testing.TB, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// FuzzPlan decodes a plan from arbitrary JSON, as the server does with the one a
// client sends, and runs Defaults and Validate on it. Neither may panic, and a plan
// Validate accepts must keep every invariant the loops and the buffer layout rely on.
func FuzzPlan(f *testing.F) {
	for _, op := range []string{"write", "read"} {
		for _, test := range []string{"bw", "lat"} {
			f.Add(mustJSON(f, fuzzPlan(result.Config{Op: op, Test: result.Test(test), InlineBytes: plan.InlineAuto})))
		}
	}
	f.Add(mustJSON(f, fuzzPlan(result.Config{Op: "write", Test: result.BW, Verify: true, NumQPs: 8, MsgSizeBytes: 64, SQDepth: 512, PostList: 16, CQMod: 8})))
	f.Add(mustJSON(f, fuzzPlan(result.Config{Op: "read", Test: result.BW, DurationS: 10, CompletionEvents: true, CQModerationCount: 16, CQModerationUS: 8, MTUBytes: 4096, BufOffsetBytes: 2056})))
	// At the bounds.
	f.Add(mustJSON(f, fuzzPlan(result.Config{Op: "write", Test: result.BW, Verify: true, NumQPs: 1024, MsgSizeBytes: 1 << 31, Iterations: 1<<23 - 1, SQDepth: 1 << 40, PostList: 1 << 40, CQMod: 1 << 40})))
	f.Add(mustJSON(f, fuzzPlan(result.Config{Op: "write", Test: result.BW, NumQPs: 1024, MsgSizeBytes: 16, Iterations: 1<<48 - 1, WarmupIterations: 1000, PostList: 128})))
	f.Add(mustJSON(f, fuzzPlan(result.Config{Op: "read", Test: result.BW, NumQPs: 1024, MsgSizeBytes: 1, Iterations: 1<<48 - 1, DurationS: plan.MaxDurationS, WarmupIterations: plan.MaxWarmup})))
	f.Add(mustJSON(f, fuzzPlan(result.Config{Op: "write", Test: result.Lat, MsgSizeBytes: 1 << 31, SQDepth: math.MaxInt64, InlineBytes: math.MaxInt64})))
	for _, s := range []string{
		`{}`, `{"op":"write"}`, `{"op":"read","test":"lat"}`, `null`, `[]`,
		`{"op":"write","msg_size_bytes":2147483649}`,
		`{"op":"write","iterations":18446744073709551615,"num_qps":1024,"msg_size_bytes":2147483648}`,
		`{"op":"write","iterations":281474976710656}`,
		`{"op":"read","sq_depth":-1,"post_list":-1,"cq_mod":-1}`,
		`{"op":"write","sq_depth":4,"post_list":5}`,
		`{"op":"write","duration_s":1e308}`, `{"op":"write","duration_s":-0}`, `{"op":"write","duration_s":1e-320}`,
		`{"op":"write","verify":true,"num_qps":1024,"msg_size_bytes":2147483648,"sq_depth":9223372036854775807}`,
		`{"op":"write","test":"lat","sq_depth":9223372036854775807,"cq_mod":1}`,
		`{"op":"write","mtu_bytes":-2147483648}`, `{"op":"read","inline_bytes":-1}`,
		`{"op":"write","sl":15,"traffic_class":255,"disable_pcie_relaxed":true}`, `{"op":"read","test":"lat","sl":16}`,
		`{"op":"write","test":"lat","pcie_relaxed_ordering":true}`, `{"op":"read","traffic_class":-1,"pcie_relaxed_ordering":false}`,
		`{"op":"write","warmup_iterations":1000000001}`,
		`{"op":"write","iterations":10000000010}`, `{"op":"read","duration_s":1,"sq_depth":600000000}`,
		// Region plans (the Go API's Dial), as the server reads them.
		`{"op":"write","test":"region","msg_size_bytes":4096,"num_qps":1,"sq_depth":128}`,
		`{"op":"read","test":"region","msg_size_bytes":2147483648,"num_qps":1024,"mtu_bytes":4096}`,
		`{"op":"write","test":"region","msg_size_bytes":4096,"num_qps":1,"warmup_iterations":1000000000,"bidirectional":true}`,
		`{"op":"send","test":"region","msg_size_bytes":-1,"num_qps":0,"sq_depth":-5}`,
		`{"op":"write","test":"region","msg_size_bytes":4096,"num_qps":2,"pcie_relaxed_ordering":true,"sl":3,"traffic_class":96}`,
		`{"op":"read","test":"region","msg_size_bytes":4096,"num_qps":1,"sl":16,"traffic_class":-1}`,
	} {
		f.Add([]byte(s))
	}

	f.Fuzz(func(t *testing.T, data []byte) {
		var c result.Config
		if json.Unmarshal(data, &c) != nil {
			return
		}
		if c.Test == result.Region {
			checkRegion(t, c)
			return
		}
		ops.Defaults(&c)
		again := c
		if ops.Defaults(&again); again != c {
			t.Fatalf("Defaults is not idempotent: %+v then %+v", c, again)
		}
		if err := ops.Validate(c); err != nil {
			if err.Error() == "" {
				t.Fatalf("refused %+v without saying why", c)
			}
			return
		}
		checkPlan(t, c)

		// The client validates, then sends the plan; the server decodes, fills in the
		// defaults and validates it again: the same plan, accepted again.
		var back result.Config
		if err := json.Unmarshal(mustJSON(t, c), &back); err != nil {
			t.Fatalf("an accepted plan does not decode: %v", err)
		}
		ops.Defaults(&back)
		if back != c {
			t.Fatalf("an accepted plan changed on the wire: %+v became %+v", c, back)
		}
		if err := ops.Validate(back); err != nil {
			t.Fatalf("an accepted plan is refused after the wire: %v", err)
		}

		// The command line fills in the warm-up (DefaultWarmup) when --warmup is not
		// given: that must not turn a valid plan into one refused for its --warmup.
		d := c
		d.WarmupIterations = plan.DefaultWarmup(c)
		if err := ops.Validate(d); err != nil {
			t.Fatalf("plan %+v is refused with its default warm-up of %d: %v", c, d.WarmupIterations, err)
		}

		op := ops.All[c.Op]
		for side, s := range map[string]verbs.Spec{"server": op.ServerSpec(c), "client": op.ClientSpec(c)} {
			if s.BufSize < 1 || s.Offset != c.BufOffsetBytes || s.NumQP != c.NumQPs || s.SQDepth < 1 || s.InlineSize < 0 || s.InlineSize > max(c.InlineBytes, 0) {
				t.Fatalf("%s spec %+v for plan %+v", side, s, c)
			}
		}
		// The memory bound a server applies counts at least the buffer and one byte per
		// queue entry: it must not wrap around.
		s := op.ServerSpec(c)
		least := new(big.Int).Mul(big.NewInt(int64(s.NumQP)), big.NewInt(int64(s.SQDepth)))
		least.Add(least, big.NewInt(int64(s.BufSize)+int64(s.Offset)))
		if got := bench.ServerBytes(op, c); big.NewInt(got).Cmp(least) < 0 {
			t.Fatalf("ServerBytes = %d for plan %+v, below the %v bytes its buffer and queues take: it overflowed", got, c, least)
		}
	})
}

// checkPlan checks what the loops rely on in a plan Validate accepted.
func checkPlan(t *testing.T, c result.Config) {
	t.Helper()
	fail := func(what string) { t.Fatalf("Validate accepted a plan with %s: %+v", what, c) }
	if c.Op != "write" && c.Op != "read" || c.Test != result.BW && c.Test != result.Lat {
		fail("an unknown op or test")
	}
	if c.MsgSizeBytes < 1 || c.MsgSizeBytes > 1<<31 {
		fail("a size outside 1..2^31")
	}
	if c.NumQPs < 1 || c.NumQPs > 1024 || c.Test == result.Lat && c.NumQPs != 1 {
		fail("a QP count outside 1..1024 (1 for latency)")
	}
	if c.Iterations < 1 || c.Iterations >= 1<<48 || c.Iterations >= 1<<verbs.QShift {
		fail("iterations outside 1..2^48-1")
	}
	if c.SQDepth < 1 || c.PostList < 1 || c.PostList > c.SQDepth || c.CQMod < 1 || c.CQMod > c.SQDepth {
		fail("post list or CQ moderation outside 1..sq_depth")
	}
	if c.Test == result.Lat && c.PostList != 1 {
		fail("a post list in a latency test")
	}
	if c.SL < 0 || c.SL > 15 || c.TrafficClass < 0 || c.TrafficClass > 255 {
		fail("a service level outside 0..15 or a traffic class outside 0..255")
	}
	if c.PCIeRelaxedOrdering && (c.DisablePCIeRelaxed || c.Op == "write" && c.Test == result.Lat) {
		fail("relaxed ordering disabled, or in the WRITE ping-pong (it polls the last byte)")
	}
	if hi, n := bits.Mul64(c.Iterations, uint64(c.NumQPs)); hi != 0 {
		fail("iterations x qps overflowing 64 bits")
	} else if hi, _ := bits.Mul64(n, uint64(c.MsgSizeBytes)); hi != 0 {
		fail("size x iterations x qps overflowing 64 bits")
	}
	if all, carry := bits.Add64(c.Iterations, c.WarmupIterations, 0); carry != 0 || c.WarmupIterations > plan.MaxWarmup {
		fail("a warm-up out of bounds")
	} else if hi, _ := bits.Mul64(all, uint64(c.NumQPs)); hi != 0 {
		fail("(warm-up + iterations) x qps overflowing 64 bits")
	}
	if math.IsNaN(c.DurationS) || math.IsInf(c.DurationS, 0) || c.DurationS < 0 || c.DurationS > plan.MaxDurationS || c.DurationS > 0 && c.Test != result.BW {
		fail("a duration that is not finite, not within 0..MaxDurationS, or on a latency test")
	}
	if c.BufOffsetBytes < 0 || c.BufOffsetBytes >= 1<<21 {
		fail("an offset outside 0..2 MiB-1")
	}
	if c.InlineBytes < plan.InlineAuto || c.MTUBytes != 0 && (c.MTUBytes < 256 || c.MTUBytes > 4096 || c.MTUBytes&(c.MTUBytes-1) != 0) {
		fail("an inline size or MTU out of bounds")
	}
	if c.CQModerationCount < 0 || c.CQModerationCount > 65535 || c.CQModerationUS < 0 || c.CQModerationUS > 65535 {
		fail("a CQ moderation out of bounds")
	}

	// The verification layout: at least one slot per QP on each side, the source at
	// least as large as the destination, a verified destination no more slots than the
	// send queue holds, and nothing that wrapped around int.
	src, dst := bench.SourceBytes(c), bench.DestBytes(c)
	stride := int64(c.MsgSizeBytes+63) / 64 * 64
	perQP := big.NewInt(int64(c.NumQPs) * stride) // at most 2^10 * 2^31
	upper := new(big.Int).Mul(big.NewInt(int64(c.NumQPs)), big.NewInt(max(stride, 4096)))
	upper.Add(upper.Lsh(upper, 1), big.NewInt(64<<20))
	if big.NewInt(int64(dst)).Cmp(perQP) < 0 || src < dst || big.NewInt(int64(src)).Cmp(upper) > 0 {
		t.Fatalf("layout of %+v: source %d bytes, destination %d bytes (one slot per QP is %v, the bound %v)", c, src, dst, perQP, upper)
	}
	if c.Verify {
		most := new(big.Int).Mul(perQP, big.NewInt(int64(c.SQDepth)))
		if big.NewInt(int64(dst)).Cmp(most) > 0 {
			t.Fatalf("verified layout of %+v: %d destination bytes, more than sq_depth slots per QP (%v)", c, dst, most)
		}
	}
}

// checkRegion reads a region plan as the server does (PlanRules) and checks what its
// session relies on in a plan it accepts.
func checkRegion(t *testing.T, c result.Config) {
	t.Helper()
	op, got, err := bench.PlanRules(ops.All, c)
	if err != nil {
		if err.Error() == "" {
			t.Fatalf("refused %+v without saying why", c)
		}
		return
	}
	if got != c {
		t.Fatalf("a region plan is taken as sent, without defaults: %+v became %+v", c, got)
	}
	rest := c
	rest.Op, rest.Test, rest.MsgSizeBytes, rest.NumQPs, rest.SQDepth, rest.MTUBytes = "", "", 0, 0, 0, 0
	rest.PCIeRelaxedOrdering, rest.SL, rest.TrafficClass = false, 0, 0
	switch {
	case c.Op != "write" && c.Op != "read":
		t.Fatalf("a region plan for operation %q accepted", c.Op)
	case c.MsgSizeBytes < 1 || c.MsgSizeBytes > 1<<31 || c.NumQPs < 1 || c.NumQPs > 1024 || c.SQDepth < 0 || c.SQDepth > plan.MaxSQDepth:
		t.Fatalf("a region plan out of bounds accepted: %+v", c)
	case c.SL < 0 || c.SL > 15 || c.TrafficClass < 0 || c.TrafficClass > 255:
		t.Fatalf("a region plan with a service level or traffic class out of range accepted: %+v", c)
	case rest != result.Config{}:
		t.Fatalf("a region plan with fields a region does not take accepted: %+v", rest)
	}
	s := op.ServerSpec(c)
	if s.BufSize != c.MsgSizeBytes || s.NumQP != c.NumQPs || s.SQDepth != 1 || s.Offset != 0 || s.MsgSize != 0 ||
		s.RelaxedOrdering != c.PCIeRelaxedOrdering || s.SL != c.SL || s.TrafficClass != c.TrafficClass {
		t.Fatalf("region spec %+v for plan %+v", s, c)
	}
	if bench.ServerBytes(op, c) < int64(c.MsgSizeBytes) {
		t.Fatalf("ServerBytes = %d for a region of %d bytes: it overflowed", bench.ServerBytes(op, c), c.MsgSizeBytes)
	}
}
