package result

import (
	"math"
	"testing"
)

// SetRampShare: the bytes the send queues hold at once (QPs x WRs outstanding per QP
// x size) over the bytes moved, each expectation computed by hand. 64 KiB messages
// and 1 GiB moved unless a case says otherwise: one queue of 128 holds 8 MiB, 1/128
// of the run.
func TestSetRampShare(t *testing.T) {
	const (
		kib64 = 64 << 10
		gib   = 1 << 30
	)
	bw := func(op string, qps, depth int) Config {
		return Config{Op: op, Test: BW, MsgSizeBytes: kib64, SQDepth: depth, PostList: 1, CQMod: 1, NumQPs: qps, DurationS: 1}
	}
	with := func(c Config, f func(*Config)) Config { f(&c); return c }
	for _, tc := range []struct {
		name   string
		c      Config
		rdAtom int
		bytes  uint64
		want   float64 // -1: no share
	}{
		{"write, 1 QP x 128", bw("write", 1, 128), 0, gib, 128.0 * kib64 / gib},         // 1/128
		{"write, 4 QPs x 128", bw("write", 4, 128), 0, gib, 4 * 128.0 * kib64 / gib},    // 1/32: 4x one QP's
		{"write, 16 QPs x 128", bw("write", 16, 128), 0, gib, 16 * 128.0 * kib64 / gib}, // 1/8
		{"write ignores rd_atom", bw("write", 1, 128), 16, gib, 1.0 / 128},
		{"read, 1 QP x 128, rd_atom 16", bw("read", 1, 128), 16, gib, 16.0 * kib64 / gib},   // 1/1024
		{"read, 4 QPs x 128, rd_atom 16", bw("read", 4, 128), 16, gib, 4 * 16.0 / 16384},    // 1/256: 4x one QP's
		{"read, rd_atom above the depth", bw("read", 2, 8), 16, gib, 2 * 8.0 * kib64 / gib}, // the depth: 1/1024
		{"read, rd_atom unknown", bw("read", 1, 128), 0, gib, 1.0 / 128},
		{"read, --outs 1", bw("read", 4, 128), 1, gib, 4.0 * kib64 / gib}, // 1/4096
		// A post list and CQ moderation change how WRs are posted and reaped, not how
		// many a queue holds.
		{"post list 32, cq-mod 32", with(bw("write", 1, 128), func(c *Config) { c.PostList, c.CQMod = 32, 32 }), 0, gib, 1.0 / 128},
		{"threads: 4 QPs on 2", with(bw("write", 4, 128), func(c *Config) { c.Threads = 2 }), 0, gib, 1.0 / 32},
		{"bidirectional: the client's queues", with(bw("write", 2, 64), func(c *Config) { c.Bidirectional = true }), 0, gib, 2 * 64.0 / 16384},
		{"no QP count means one", bw("write", 0, 128), 0, gib, 1.0 / 128},
		{"no depth means one WR", bw("write", 1, 0), 0, gib, kib64 / float64(gib)},
		// Iterations: per QP. Below the depth a queue holds only those: the whole run
		// is its ramp, share 1 (not 2 x 128 x 4 KiB over 2 x 50 x 4 KiB = 2.56).
		{"iterations below the depth", Config{Op: "write", Test: BW, MsgSizeBytes: 4096, SQDepth: 128, NumQPs: 2, Iterations: 50}, 0, 2 * 50 * 4096, 1},
		{"read iterations below rd_atom", Config{Op: "read", Test: BW, MsgSizeBytes: 4096, SQDepth: 128, NumQPs: 2, Iterations: 10}, 16, 2 * 10 * 4096, 1},
		{"read iterations between rd_atom and the depth", Config{Op: "read", Test: BW, MsgSizeBytes: 4096, SQDepth: 128, NumQPs: 2, Iterations: 100}, 16, 2 * 100 * 4096, 16.0 / 100},
		{"iterations above the depth", Config{Op: "write", Test: BW, MsgSizeBytes: 4096, SQDepth: 128, NumQPs: 1, Iterations: 1000}, 0, 1000 * 4096, 128.0 / 1000},
		{"a timed run ignores iterations", with(bw("write", 1, 128), func(c *Config) { c.Iterations = 50 }), 0, gib, 1.0 / 128},
		{"latency: none", Config{Op: "write", Test: Lat, MsgSizeBytes: 2, SQDepth: 1, NumQPs: 1}, 0, 2000, -1},
		{"nothing moved: none", bw("write", 1, 128), 0, 0, -1},
	} {
		r := Result{Bytes: tc.bytes}
		r.SetRampShare(tc.c, tc.rdAtom)
		switch {
		case tc.want < 0 && r.RampShare != nil:
			t.Errorf("%s: share %v, want none", tc.name, *r.RampShare)
		case tc.want < 0:
		case r.RampShare == nil:
			t.Errorf("%s: no share, want %v", tc.name, tc.want)
		case math.Abs(*r.RampShare-tc.want) > 1e-12*tc.want:
			t.Errorf("%s: share %v, want %v", tc.name, *r.RampShare, tc.want)
		}
	}
}

// Several QPs at the same depth hold that many queues: 4 QPs' share is 4x one QP's
// for the same bytes moved, and a READ's is its rd_atom's, not its depth's.
func TestRampShareScalesWithQPs(t *testing.T) {
	share := func(op string, qps, rdAtom int) float64 {
		r := Result{Bytes: 1 << 30}
		r.SetRampShare(Config{Op: op, Test: BW, MsgSizeBytes: 65536, SQDepth: 128, NumQPs: qps, DurationS: 2}, rdAtom)
		return *r.RampShare
	}
	for _, op := range []string{"write", "read"} {
		if one, four := share(op, 1, 16), share(op, 4, 16); math.Abs(four/one-4) > 1e-12 {
			t.Errorf("%s: 4 QPs %v, 1 QP %v: ratio %v, want 4", op, four, one, four/one)
		}
	}
	if w, r := share("write", 1, 16), share("read", 1, 16); math.Abs(w/r-128.0/16) > 1e-12 {
		t.Errorf("write %v, read %v at depth 128, rd_atom 16: ratio %v, want 8", w, r, w/r)
	}
}
