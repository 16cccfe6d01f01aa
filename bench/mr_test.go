package bench_test

import (
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/bench"
	"github.com/rdmabench/rdmabench/bench/benchtest"
	"github.com/rdmabench/rdmabench/bench/ops"
	"github.com/rdmabench/rdmabench/result"
)

// mrPlan is a bandwidth plan as the command line makes it, with --mr mode.
func mrPlan(mode string, mod func(*result.Config)) result.Config {
	c := result.Config{Op: "write", Test: result.BW, InlineBytes: bench.InlineAuto, MR: mode}
	if mod != nil {
		mod(&c)
	}
	ops.Defaults(&c)
	c.WarmupIterations = bench.DefaultWarmup(c)
	return c
}

// --mr's defaults: per-io signals every WR, the cache holds 16, pool is no --mr.
func TestMRDefaults(t *testing.T) {
	for _, tc := range []struct {
		mode, wantMode string
		mod            func(*result.Config)
		cqMod, cache   int
	}{
		{"", "", nil, 1, 0},
		{"pool", "", nil, 1, 0},
		{"pool", "", func(c *result.Config) { c.MsgSizeBytes = 64 }, 100, 0},
		{"per-io", "per-io", func(c *result.Config) { c.MsgSizeBytes = 64 }, 1, 0},
		{"per-io", "per-io", nil, 1, 0},
		{"cache", "cache", func(c *result.Config) { c.MsgSizeBytes = 64 }, 100, 128}, // the depth, above 16
		{"cache", "cache", func(c *result.Config) { c.SQDepth = 8 }, 1, 16},
		{"cache", "cache", func(c *result.Config) { c.MRCache = 200 }, 1, 200},
	} {
		c := mrPlan(tc.mode, tc.mod)
		if c.MR != tc.wantMode || c.CQMod != tc.cqMod || c.MRCache != tc.cache {
			t.Errorf("--mr %q: mr %q cq-mod %d mr-cache %d, want %q, %d, %d", tc.mode, c.MR, c.CQMod, c.MRCache, tc.wantMode, tc.cqMod, tc.cache)
		}
		again := c
		ops.Defaults(&again)
		if again != c {
			t.Errorf("--mr %q: Defaults is not idempotent", tc.mode)
		}
	}
}

func TestMRValidate(t *testing.T) {
	for _, tc := range []struct {
		mode string
		mod  func(*result.Config)
		want string // "" = valid
	}{
		{"per-io", nil, ""},
		{"per-io", func(c *result.Config) { c.Op, c.MsgSizeBytes, c.DurationS, c.Verify = "read", 64, 1, true }, ""},
		{"cache", func(c *result.Config) { c.SQDepth = 16 }, ""},
		{"cache", func(c *result.Config) { c.MRCache = 128 }, ""},
		{"cache", func(c *result.Config) { c.SQDepth, c.MRCache = 1, 1 }, ""},
		{"pool", func(c *result.Config) { c.NumQPs, c.PostList = 4, 8 }, ""},
		{"bogus", nil, `--mr "bogus": want pool, per-io or cache`},
		{"PER-IO", nil, "want pool, per-io or cache"},
		{"cache", func(c *result.Config) { c.MRCache = 16 }, "--mr-cache 16 is less than --tx-depth 128"},
		{"cache", func(c *result.Config) { c.SQDepth, c.MRCache = 8, 7 }, "--mr-cache 7 is less than --tx-depth 8"},
		{"cache", func(c *result.Config) { c.SQDepth, c.MRCache = 8, -1 }, "--mr-cache -1: want 1 to"},
		{"cache", func(c *result.Config) { c.SQDepth, c.MRCache = 8, bench.MaxMRCache+1 }, "--mr-cache"},
		{"", func(c *result.Config) { c.MRCache = 32 }, "--mr-cache applies to --mr cache"},
		{"per-io", func(c *result.Config) { c.MRCache = 32 }, "--mr-cache applies to --mr cache"},
		{"per-io", func(c *result.Config) { c.NumQPs = 2 }, "drop --qps"},
		{"per-io", func(c *result.Config) { c.PostList = 4 }, "drop --post-list"},
		{"cache", func(c *result.Config) { c.SQDepth, c.PostList = 16, 2 }, "drop --post-list"},
		{"per-io", func(c *result.Config) { c.CompletionEvents = true }, "drop --events"},
		{"per-io", func(c *result.Config) { c.Bidirectional = true }, "-b/--bidirectional"},
		{"per-io", func(c *result.Config) { c.Peers = 2 }, "one server"},
		{"per-io", func(c *result.Config) { c.CQMod = 4 }, "--cq-mod 4, want 1"},
		{"per-io", func(c *result.Config) { c.MsgSizeBytes, c.InlineBytes = 64, 64 }, "drop --inline"},
		{"per-io", func(c *result.Config) { c.Test = "lat" }, "--mr applies to bandwidth tests"},
	} {
		c := mrPlan(tc.mode, tc.mod)
		err := ops.Validate(c)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("--mr %s %+v: want valid, got %v", tc.mode, c, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("--mr %s: want an error with %q, got %v", tc.mode, tc.want, err)
		}
	}
}

// The plan's mode reaches the loop and the loop's registrations reach the result (the
// fake engine's numbers are synthetic: this is the plumbing).
func TestPipeMR(t *testing.T) {
	r := benchtest.NewRig(t, ops.All, nil)
	c := dial(t, r, "")
	for _, tc := range []struct {
		cfg                          result.Config
		regs, hits, misses, deregsAW uint64
	}{
		{result.Config{Op: "write", Test: result.BW, MR: "per-io", Iterations: 300, MsgSizeBytes: 4096, SQDepth: 16, Verify: true}, 300, 0, 0, 0},
		{result.Config{Op: "read", Test: result.BW, MR: "per-io", Iterations: 300, MsgSizeBytes: 64, Verify: true}, 300, 0, 0, 0},
		// 64-byte messages cycle through 64 slots: a cache of 64 holds them all ...
		{result.Config{Op: "write", Test: result.BW, MR: "cache", MRCache: 64, Iterations: 300, MsgSizeBytes: 64, SQDepth: 16}, 64, 236, 64, 64},
		// ... one of 16 misses every time.
		{result.Config{Op: "read", Test: result.BW, MR: "cache", Iterations: 300, MsgSizeBytes: 64, SQDepth: 16}, 300, 0, 300, 16},
		{result.Config{Op: "write", Test: result.BW, MR: "pool", Iterations: 300, MsgSizeBytes: 64}, 0, 0, 0, 0},
	} {
		res, err := run(t, c, tc.cfg)
		name := tc.cfg.Op + " bw --mr " + tc.cfg.MR
		if err != nil || res.Error != "" {
			t.Fatalf("%s: %v (%s)", name, err, res.Error)
		}
		if tc.cfg.Verify && (res.Verify == nil || !res.Verify.OK) {
			t.Errorf("%s: verification %+v", name, res.Verify)
		}
		m := res.MR
		if tc.cfg.MR == "pool" {
			if m != nil || res.Config.MR != "" {
				t.Errorf("%s: config mr %q, result mr %+v", name, res.Config.MR, m)
			}
			continue
		}
		switch {
		case m == nil:
			t.Errorf("%s: no mr in the result", name)
		case m.Mode != tc.cfg.MR || res.Config.MR != tc.cfg.MR || res.Config.CQMod != 1 && tc.cfg.MR == "per-io":
			t.Errorf("%s: mr %+v, config %+v", name, m, res.Config)
		case m.Regs != tc.regs || m.Deregs != m.Regs || m.Hits != tc.hits || m.Misses != tc.misses || m.DeregsAfterWindow != tc.deregsAW:
			t.Errorf("%s: mr %+v, want %d registrations, %d hits, %d misses, %d deregistered after the window", name, m, tc.regs, tc.hits, tc.misses, tc.deregsAW)
		case m.WindowShare <= 0 || m.WindowShare > 1:
			t.Errorf("%s: window share %v", name, m.WindowShare)
		}
	}
}
