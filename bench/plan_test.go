package bench_test

import (
	"testing"

	"github.com/rdmabench/rdmabench/bench"
	"github.com/rdmabench/rdmabench/bench/ops"
	"github.com/rdmabench/rdmabench/plan"
	"github.com/rdmabench/rdmabench/result"
)

// cliPlan is a plan as the command line makes it: flags, then Defaults and the warm-up.
func cliPlan(mod func(*result.Config)) result.Config {
	c := result.Config{Op: "write", Test: result.BW, InlineBytes: plan.InlineAuto}
	if mod != nil {
		mod(&c)
	}
	ops.Defaults(&c)
	if c.WarmupIterations == 0 {
		c.WarmupIterations = plan.DefaultWarmup(c)
	}
	return c
}

// TestResolvedInlineReachesSpec: the inline size perftest picks for the client's device
// (plan's TestResolveInline) goes into the session's spec.
func TestResolvedInlineReachesSpec(t *testing.T) {
	cx6 := result.Device{Driver: "mlx5", VendorID: 0x15b3, VendorPartID: 4123}
	// A default WRITE latency plan on ConnectX inlines its 2-byte messages, as ib_write_lat does.
	c := cliPlan(func(c *result.Config) { c.Test = "lat" })
	ops.All[c.Op].ResolveInline(&c, cx6)
	if !plan.Inline(c) || bench.Spec(c, 4, true, false, c.SQDepth).InlineSize != 220 {
		t.Errorf("default write lat on ConnectX-6: inline %v, spec %+v", plan.Inline(c), bench.Spec(c, 4, true, false, c.SQDepth))
	}
}

// TestResolvePostAPI: --post-api auto takes perftest's choice for the client's device
// (the extended QP API on mlx5, EFA and HNS), an explicit choice stays, and the session
// spec carries the result.
func TestResolvePostAPI(t *testing.T) {
	for _, tc := range []struct {
		api, driver, want string
	}{
		{"", "mlx5_core", "wr"}, {"auto", "mlx5_core", "wr"}, {"auto", "efa", "wr"}, {"auto", "hns3", "wr"},
		{"auto", "rxe", "legacy"}, {"auto", "bnxt_re", "legacy"}, {"auto", "irdma", "legacy"}, {"auto", "mlx4_core", "legacy"},
		{"legacy", "mlx5_core", "legacy"}, {"wr", "rxe", "wr"},
	} {
		c := cliPlan(func(c *result.Config) { c.PostAPI = tc.api })
		plan.ResolvePostAPI(&c, result.Device{Driver: tc.driver})
		if c.PostAPI != tc.want || bench.Spec(c, 4, true, false, c.SQDepth).PostAPI != tc.want {
			t.Errorf("--post-api %q on %s: %q (spec %q), want %q", tc.api, tc.driver, c.PostAPI, bench.Spec(c, 4, true, false, c.SQDepth).PostAPI, tc.want)
		}
		if err := ops.Validate(c); err != nil {
			t.Errorf("--post-api %q on %s: %v", tc.api, tc.driver, err)
		}
	}
}
