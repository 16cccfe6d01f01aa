package main

import (
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/bench"
	"github.com/rdmabench/rdmabench/bench/ops"
	"github.com/rdmabench/rdmabench/oob"
	"github.com/rdmabench/rdmabench/plan"
	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/verbs"
	"github.com/spf13/cobra"
)

// --mr and --mr-cache (bandwidth tests): the plan they make, and the usage errors
// (exit 2) of plans the loops that register in the loop cannot run.
func TestBWMRFlags(t *testing.T) {
	client := clientOptions{Server: "host", TCPPort: oob.DefaultPort, Local: bench.Local{Port: 1, GIDIndex: -1}, Timeout: 30 * time.Second, Clock: "auto", Out: outputs{Format: "auto"}}
	clean := func(o *testOptions) { o.Op, o.Out.Stdout, o.Out.Stderr = bench.Op{}, nil, nil }
	for _, op := range []string{"write", "read"} {
		cliPlan := func(mod func(*result.Config)) result.Config {
			c := result.Config{Op: op, Test: result.BW, InlineBytes: plan.InlineAuto, PostAPI: verbs.PostAuto, NumQPs: 1, PostList: 1}
			if mod != nil {
				mod(&c)
			}
			ops.Defaults(&c)
			c.WarmupIterations = plan.DefaultWarmup(c)
			return c
		}
		checkFlags(t, op+" bw --mr", func(runF func(*testOptions) error) *cobra.Command { return newCmdTest(op, "bw", runF) },
			func() testOptions { return testOptions{clientOptions: client, Config: cliPlan(nil)} }, clean,
			[]flagCase[testOptions]{
				{args: []string{"host", "--mr", "pool"}},
				{args: []string{"host", "--mr", "per-io", "-s", "64"}, want: func(o *testOptions) {
					o.Config = cliPlan(func(c *result.Config) { c.MR, c.MsgSizeBytes = "per-io", 64 })
					if o.Config.CQMod != 1 {
						t.Errorf("--mr per-io: cq-mod %d, want 1", o.Config.CQMod)
					}
				}},
				{args: []string{"host", "--mr", "cache", "-t", "16"}, want: func(o *testOptions) {
					o.Config = cliPlan(func(c *result.Config) { c.MR, c.SQDepth = "cache", 16 })
					if o.Config.MRCache != 16 {
						t.Errorf("--mr cache: mr-cache %d, want 16", o.Config.MRCache)
					}
				}},
				{args: []string{"host", "--mr", "cache", "--mr-cache", "256", "-D", "1"}, want: func(o *testOptions) {
					o.Config = cliPlan(func(c *result.Config) { c.MR, c.MRCache, c.DurationS = "cache", 256, 1 })
				}},
				{args: []string{"host", "--mr", "bogus"}, wantErr: `--mr "bogus": want pool, per-io or cache`},
				{args: []string{"host", "--mr", "cache", "--mr-cache", "16"}, wantErr: "--mr-cache 16 is less than --tx-depth 128"},
				{args: []string{"host", "--mr", "cache", "--mr-cache", "64", "-t", "65"}, wantErr: "--mr-cache 64 is less than --tx-depth 65"},
				{args: []string{"host", "--mr-cache", "64"}, wantErr: "--mr-cache applies to --mr cache"},
				{args: []string{"host", "--mr", "per-io", "-q", "2"}, wantErr: "drop --qps"},
				{args: []string{"host", "--mr", "per-io", "-l", "2"}, wantErr: "drop --post-list"},
				{args: []string{"host", "--mr", "per-io", "-Q", "2"}, wantErr: "--cq-mod 2, want 1"},
				{args: []string{"host", "--mr", "per-io", "--events"}, wantErr: "drop --events"},
				{args: []string{"host", "--mr", "per-io", "-b"}, wantErr: "-b/--bidirectional"},
				{args: []string{"a,b", "--mr", "per-io"}, wantErr: "one server"},
				{args: []string{"host", "--mr-cache", "x"}, wantErr: `invalid argument "x" for "--mr-cache"`},
			})
		checkFlags(t, op+" lat --mr", func(runF func(*testOptions) error) *cobra.Command { return newCmdTest(op, "lat", runF) },
			func() testOptions { return testOptions{} }, clean,
			[]flagCase[testOptions]{
				{args: []string{"host", "--mr", "per-io"}, wantErr: "unknown flag: --mr"},
			})
	}
}
