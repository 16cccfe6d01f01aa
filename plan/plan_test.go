package plan_test

import (
	"math"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/plan"
	"github.com/rdmabench/rdmabench/result"
)

func TestDefaultsMirrorPerftest(t *testing.T) {
	type want struct {
		size         int
		iters        uint64
		depth, pl, q int
	}
	for _, tc := range []struct {
		name string
		in   result.Config
		want want
	}{
		// ib_write_bw: 64 KiB, 5000 iterations, depth 128; over 8 KiB every WR is signalled.
		{"write bw", result.Config{Op: "write"}, want{65536, 5000, 128, 1, 1}},
		// ib_read_bw: 1000 iterations (DEF_ITERS_WB is WRITE's only).
		{"read bw", result.Config{Op: "read", Test: result.BW}, want{65536, 1000, 128, 1, 1}},
		{"write bw 8K", result.Config{Op: "write", Test: result.BW, MsgSizeBytes: 8192}, want{8192, 5000, 128, 1, 100}},
		{"write bw 8K+1", result.Config{Op: "write", Test: result.BW, MsgSizeBytes: 8193}, want{8193, 5000, 128, 1, 1}},
		{"read bw 64B", result.Config{Op: "read", Test: result.BW, MsgSizeBytes: 64}, want{64, 1000, 128, 1, 100}},
		// With completion events perftest keeps DEF_CQ_MOD whatever the size.
		{"write bw events", result.Config{Op: "write", Test: result.BW, CompletionEvents: true}, want{65536, 5000, 128, 1, 100}},
		// A post list sets the moderation to its length, large messages or not.
		{"write bw -l 8", result.Config{Op: "write", Test: result.BW, PostList: 8}, want{65536, 5000, 128, 8, 8}},
		{"write bw 64B -l 8", result.Config{Op: "write", Test: result.BW, MsgSizeBytes: 64, PostList: 8}, want{64, 5000, 128, 8, 8}},
		// Never more than the depth; an explicit value stays.
		{"write bw 64B -t 50", result.Config{Op: "write", Test: result.BW, MsgSizeBytes: 64, SQDepth: 50}, want{64, 5000, 50, 1, 50}},
		{"write bw -Q 7", result.Config{Op: "write", Test: result.BW, CQMod: 7}, want{65536, 5000, 128, 1, 7}},
		// ib_write_lat, ib_read_lat: 2 B, 1000 iterations, depth 1 (DEF_TX_LAT).
		{"write lat", result.Config{Op: "write", Test: result.Lat}, want{2, 1000, 1, 1, 1}},
		{"read lat", result.Config{Op: "read", Test: result.Lat}, want{2, 1000, 1, 1, 1}},
		{"read lat -t 16", result.Config{Op: "read", Test: result.Lat, SQDepth: 16}, want{2, 1000, 16, 1, 16}},
	} {
		c := tc.in
		plan.Defaults(&c)
		got := want{c.MsgSizeBytes, c.Iterations, c.SQDepth, c.PostList, c.CQMod}
		if got != tc.want || c.NumQPs != 1 {
			t.Errorf("%s: got %+v (qps %d), want %+v", tc.name, got, c.NumQPs, tc.want)
		}
		again := c
		plan.Defaults(&again)
		if again != c {
			t.Errorf("%s: Defaults is not idempotent: %+v then %+v", tc.name, c, again)
		}
		c.WarmupIterations = plan.DefaultWarmup(c)
		if err := plan.Validate(c); err != nil {
			t.Errorf("%s: the defaults do not validate: %v", tc.name, err)
		}
	}
}

// cliPlan is a plan as the command line makes it: flags, then Defaults and the warm-up.
func cliPlan(mod func(*result.Config)) result.Config {
	c := result.Config{Op: "write", Test: result.BW, InlineBytes: plan.InlineAuto}
	if mod != nil {
		mod(&c)
	}
	plan.Defaults(&c)
	if c.WarmupIterations == 0 {
		c.WarmupIterations = plan.DefaultWarmup(c)
	}
	return c
}

// TestCQModerationWithinReach: a count the CQ can gather, or any count with a period,
// is accepted; TestValidateNamesTheFlag has the refusal.
func TestCQModerationWithinReach(t *testing.T) {
	for _, mod := range []func(*result.Config){
		func(c *result.Config) {
			c.CompletionEvents, c.NumQPs, c.SQDepth, c.CQMod, c.CQModerationCount = true, 2, 128, 100, 4
		},
		func(c *result.Config) {
			c.CompletionEvents, c.SQDepth, c.CQMod, c.CQModerationCount, c.CQModerationUS = true, 128, 100, 16, 20
		},
	} {
		if c := cliPlan(mod); plan.Validate(c) != nil {
			t.Errorf("plan %+v refused: %v", c, plan.Validate(c))
		}
	}
}

func TestValidateNamesTheFlag(t *testing.T) {
	for _, tc := range []struct {
		want string
		mod  func(*result.Config)
	}{
		{"unknown operation", func(c *result.Config) { c.Op = "send" }},
		{"unknown test", func(c *result.Config) { c.Test = "rate" }},
		{"--size", func(c *result.Config) { c.MsgSizeBytes = 1<<31 + 1 }},
		{"--cq-mod", func(c *result.Config) { c.SQDepth = 16; c.CQMod = 17 }},
		{"--cq-mod", func(c *result.Config) { c.CQMod = -1 }},
		{"--post-list", func(c *result.Config) { c.PostList = -1 }},
		{"--post-list", func(c *result.Config) { c.SQDepth = 16; c.PostList = 17 }},
		{"--post-list", func(c *result.Config) { c.Test = "lat"; c.PostList = 2 }},
		{"--tx-depth", func(c *result.Config) { c.SQDepth = -1 }},
		{"--mtu", func(c *result.Config) { c.MTUBytes = 1500 }},
		{"--duration", func(c *result.Config) { c.Test = "lat"; c.DurationS = 1 }},
		{"--duration", func(c *result.Config) { c.DurationS = -1 }},
		{"--duration", func(c *result.Config) { c.DurationS = math.NaN() }},
		{"--duration", func(c *result.Config) { c.DurationS = math.Inf(1) }},
		{"--duration", func(c *result.Config) { c.DurationS = math.Inf(-1) }},
		{"--duration", func(c *result.Config) { c.DurationS = plan.MaxDurationS * 1.0001 }},
		{"--inline", func(c *result.Config) { c.Op = "read"; c.InlineBytes = 64 }},
		{"--inline", func(c *result.Config) { c.InlineBytes = -2 }},
		{"--verify", func(c *result.Config) { c.Test = "lat"; c.Verify = true }},
		{"--qps", func(c *result.Config) { c.NumQPs = -1 }},
		{"--qps", func(c *result.Config) { c.NumQPs = 1025 }},
		{"--qps", func(c *result.Config) { c.Test = "lat"; c.NumQPs = 2 }},
		{"--offset", func(c *result.Config) { c.BufOffsetBytes = 1 << 21 }},
		{"--events", func(c *result.Config) { c.Test = "lat"; c.CompletionEvents = true }},
		{"add --events", func(c *result.Config) { c.CQModerationCount = 16 }},
		{"--cq-moderation", func(c *result.Config) { c.CompletionEvents = true; c.CQModerationUS = 65536 }},
		// 2 QPs x 128 WRs / 100 per signal, rounded up: 4 completions can be outstanding.
		{"at most 4 completions", func(c *result.Config) {
			c.CompletionEvents, c.NumQPs, c.SQDepth, c.CQMod, c.CQModerationCount = true, 2, 128, 100, 5
		}},
		{"--outs", func(c *result.Config) { c.OutsNum = 256 }},
		{"--outs with -b", func(c *result.Config) { c.OutsNum = 2; c.Bidirectional = true }},
		{"--post-api", func(c *result.Config) { c.PostAPI = "ibv_wr" }},
	} {
		c := cliPlan(tc.mod)
		if err := plan.Validate(c); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("want an error naming %s, got %v (plan %+v)", tc.want, err, c)
		}
	}
}

// Iterations and warm-up after Defaults: Validate sees what the loops will run.
func TestValidateCounts(t *testing.T) {
	const max64 = math.MaxUint64
	for _, tc := range []struct {
		name string
		c    result.Config
		want string // "" = valid
	}{
		{"no iterations", result.Config{Iterations: 0}, "--iters 0"},
		{"one iteration", result.Config{Iterations: 1}, ""},
		{"iters at the WR-number limit", result.Config{Iterations: 1<<48 - 1, NumQPs: 4, MsgSizeBytes: 1}, ""},
		{"iters past the WR-number limit", result.Config{Iterations: 1 << 48, MsgSizeBytes: 1}, "fewer than 2^48"},
		{"bytes at the limit", result.Config{Iterations: max64 / (1 << 20), NumQPs: 1024, MsgSizeBytes: 1 << 10}, ""},
		{"bytes overflow", result.Config{Iterations: max64/(1<<20) + 1, NumQPs: 1024, MsgSizeBytes: 1 << 10}, "--size 1024 x --iters"},
		{"2 GiB x 2^33", result.Config{Iterations: 1 << 33, MsgSizeBytes: 1 << 31}, "the byte count overflows"},
		{"warm-up at the bound", result.Config{Iterations: 1, WarmupIterations: plan.MaxWarmup}, ""},
		{"warm-up over the bound", result.Config{Iterations: 1, WarmupIterations: plan.MaxWarmup + 1}, "--warmup"},
		{"warm-up + iters at the limits", result.Config{Iterations: 1<<48 - 1, WarmupIterations: plan.MaxWarmup, NumQPs: 1024}, ""},
		{"duration at the bound", result.Config{Iterations: 5000, DurationS: plan.MaxDurationS}, ""},
		{"tiny duration", result.Config{Iterations: 5000, DurationS: 1e-6}, ""},
	} {
		c := tc.c
		c.Op, c.Test = "write", "bw"
		if c.MsgSizeBytes == 0 {
			c.MsgSizeBytes = 1
		}
		if c.NumQPs == 0 {
			c.NumQPs = 1
		}
		c.SQDepth, c.PostList, c.CQMod = 128, 1, 100
		err := plan.Validate(c)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: want valid, got %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: want an error with %q, got %v", tc.name, tc.want, err)
		}
	}
}

// The bandwidth loop posts the part of a chain that fits, so every post list and
// moderation within the depth completes; these used to deadlock, and some of them
// perftest refuses (iterations not a multiple of the post list, post list not a
// multiple of the moderation).
func TestValidateAcceptsEveryChainWithinTheDepth(t *testing.T) {
	for _, tc := range []struct{ depth, pl, q int }{
		{128, 64, 0}, {100, 8, 0}, {64, 32, 50}, {16, 16, 10},
		{7, 3, 3}, {1, 1, 1}, {8, 8, 8}, {128, 5, 128}, {1000, 999, 1},
	} {
		for _, iters := range []uint64{0, 1, 777} {
			c := cliPlan(func(c *result.Config) {
				c.MsgSizeBytes, c.Iterations, c.SQDepth, c.PostList, c.CQMod = 1024, iters, tc.depth, tc.pl, tc.q
			})
			if err := plan.Validate(c); err != nil {
				t.Errorf("-t %d -l %d -Q %d -n %d: %v", tc.depth, tc.pl, tc.q, iters, err)
			}
			if tc.q == 0 && c.CQMod != tc.pl {
				t.Errorf("-t %d -l %d: cq-mod %d, want the post list (perftest's rule)", tc.depth, tc.pl, c.CQMod)
			}
		}
		d := cliPlan(func(c *result.Config) {
			c.DurationS, c.SQDepth, c.PostList, c.CQMod = 0.5, tc.depth, tc.pl, tc.q
		})
		if err := plan.Validate(d); err != nil {
			t.Errorf("-t %d -l %d -Q %d -D 0.5: %v", tc.depth, tc.pl, tc.q, err)
		}
	}
}

func TestResolveInline(t *testing.T) {
	cx6 := result.Device{Driver: "mlx5", VendorID: 0x15b3, VendorPartID: 4123}
	rxe := result.Device{Driver: "rxe", VendorID: 0xffffff, VendorPartID: 0}
	for _, tc := range []struct {
		name     string
		op, test string
		dev      result.Device
		in, want int
	}{
		{"ConnectX-6 write lat", "write", "lat", cx6, plan.InlineAuto, 220},
		{"ConnectX-6 write bw", "write", "bw", cx6, plan.InlineAuto, 0},
		{"ConnectX-6 read lat", "read", "lat", cx6, plan.InlineAuto, 0},
		{"ConnectX-3 write lat", "write", "lat", result.Device{Driver: "mlx4", VendorID: 0x02c9, VendorPartID: 4099}, plan.InlineAuto, 220},
		{"BlueField-3 write lat", "write", "lat", result.Device{Driver: "mlx5", VendorID: 0x15b3, VendorPartID: 41692}, plan.InlineAuto, 220},
		{"rxe write lat", "write", "lat", rxe, plan.InlineAuto, 0},
		{"rxe write bw", "write", "bw", rxe, plan.InlineAuto, 0},
		{"siw write lat", "write", "lat", result.Device{Driver: "siw", VendorID: 0x626d74}, plan.InlineAuto, 0},
		{"bnxt write lat", "write", "lat", result.Device{Driver: "bnxt_re", VendorID: 0x14e4, VendorPartID: 5858}, plan.InlineAuto, 96},
		{"EFA write lat", "write", "lat", result.Device{Driver: "efa", VendorID: 0x1d0f, VendorPartID: 61345}, plan.InlineAuto, 32},
		{"qedr E4 write lat", "write", "lat", result.Device{Driver: "qedr", VendorID: 0x1077, VendorPartID: 5684}, plan.InlineAuto, 128},
		{"erdma write lat", "write", "lat", result.Device{Driver: "erdma", VendorID: 0x1ded, VendorPartID: 4223}, plan.InlineAuto, 96},
		{"hns write lat", "write", "lat", result.Device{Driver: "hns", VendorID: 0x19e5, VendorPartID: 41506}, plan.InlineAuto, 32},
		{"i40iw write lat", "write", "lat", result.Device{Driver: "i40iw", VendorID: 0x8086, VendorPartID: 14289}, plan.InlineAuto, 48},
		{"irdma write lat", "write", "lat", result.Device{Driver: "irdma", VendorID: 0x8086, VendorPartID: 5522}, plan.InlineAuto, 101},
		{"Chelsio T6 write lat", "write", "lat", result.Device{Driver: "cxgb4", VendorID: 0x1425, VendorPartID: 0x6408}, plan.InlineAuto, 220},
		{"Chelsio unknown write lat", "write", "lat", result.Device{Driver: "cxgb4", VendorID: 0x1425, VendorPartID: 0x7001}, plan.InlineAuto, 0},
		{"unknown device write lat", "write", "lat", result.Device{Driver: "foo", VendorID: 0x1234, VendorPartID: 1}, plan.InlineAuto, 0},
		// The user's value stays, whatever the device.
		{"rxe --inline 64", "write", "lat", rxe, 64, 64},
		{"ConnectX-6 --inline 0", "write", "lat", cx6, 0, 0},
		{"ConnectX-6 bw --inline 220", "write", "bw", cx6, 220, 220},
	} {
		c := cliPlan(func(c *result.Config) { c.Op, c.Test, c.InlineBytes = tc.op, result.Test(tc.test), tc.in })
		if err := plan.Validate(c); err != nil {
			t.Errorf("%s: the unresolved plan does not validate: %v", tc.name, err)
		}
		plan.Ops[c.Op].ResolveInline(&c, tc.dev)
		if c.InlineBytes != tc.want {
			t.Errorf("%s: inline %d, want %d", tc.name, c.InlineBytes, tc.want)
		}
		if err := plan.Validate(c); err != nil {
			t.Errorf("%s: the resolved plan does not validate: %v", tc.name, err)
		}
	}
	// Until resolved, auto inlines nothing.
	if c := cliPlan(func(c *result.Config) { c.Test = "lat" }); plan.Inline(c) {
		t.Error("an unresolved plan must not inline")
	}
}
