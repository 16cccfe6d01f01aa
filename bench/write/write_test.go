package write_test

import (
	"context"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/bench"
	"github.com/rdmabench/rdmabench/bench/fake"
	"github.com/rdmabench/rdmabench/bench/write"
	"github.com/rdmabench/rdmabench/result"
)

// Every test of the op runs through the client and the server on the fake engine, and
// the data lands where the op says it goes (--verify).
func TestOpOverFakeEngine(t *testing.T) {
	r := fake.NewRig(t, map[string]bench.Op{"write": write.Op}, nil)
	c, err := r.Dial("")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, cfg := range []result.Config{
		{Test: "bw", Verify: true, Iterations: 200, MsgSizeBytes: 64, NumQPs: 2},
		{Test: "bw", DurationS: 0.05},
		{Test: "lat", Iterations: 100, MsgSizeBytes: 8},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		res, err := c.Run(ctx, write.Op, cfg)
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", cfg.Test, err)
		}
		if res.Config.Op != "write" || res.Iterations == 0 || (cfg.Verify && !res.Verify.OK) {
			t.Errorf("%s: op %q, %d iterations, verify %+v", cfg.Test, res.Config.Op, res.Iterations, res.Verify)
		}
		if cfg.Test == "lat" && res.LatKind != write.Op.LatKind {
			t.Errorf("latency kind %q, want %q", res.LatKind, write.Op.LatKind)
		}
	}
}
