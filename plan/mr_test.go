package plan_test

import (
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/plan"
	"github.com/rdmabench/rdmabench/result"
)

// mrPlan is a bandwidth plan as the command line makes it, with --mr mode.
func mrPlan(mode string, mod func(*result.Config)) result.Config {
	c := result.Config{Op: "write", Test: result.BW, InlineBytes: plan.InlineAuto, MR: mode}
	if mod != nil {
		mod(&c)
	}
	plan.Defaults(&c)
	c.WarmupIterations = plan.DefaultWarmup(c)
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
		plan.Defaults(&again)
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
		{"cache", func(c *result.Config) { c.SQDepth, c.MRCache = 8, plan.MaxMRCache+1 }, "--mr-cache"},
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
		err := plan.Validate(c)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("--mr %s %+v: want valid, got %v", tc.mode, c, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("--mr %s: want an error with %q, got %v", tc.mode, tc.want, err)
		}
	}
}
