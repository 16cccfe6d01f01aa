package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/result"
)

// A run that registered in its loop says, under the bandwidth table, how many
// registrations it made and what part of its window they took.
func TestTableMRLines(t *testing.T) {
	r := result.Result{Config: result.Config{Op: "write", Test: result.BW, MsgSizeBytes: 65536, NumQPs: 1, SQDepth: 128, PostList: 1, CQMod: 1, MR: "per-io"},
		Iterations: 5000, DurationNS: 1e9, BWGbps: 2.6}
	r.MR = &result.MRRun{Mode: "per-io", Regs: 5000, Deregs: 5000, RegNSTotal: 3e8, DeregNSTotal: 7e7}
	r.MR.SetShare(r.DurationNS)
	c := r
	c.Config.MR, c.Config.MRCache, c.Config.SQDepth = "cache", 16, 16
	c.MR = &result.MRRun{Mode: "cache", Regs: 1, Deregs: 1, DeregsAfterWindow: 1, Hits: 4999, Misses: 1, RegNSTotal: 20000}
	c.MR.SetShare(c.DurationNS)
	pool := r
	pool.Config.MR, pool.MR = "", nil
	var out bytes.Buffer
	if err := Table(&out, []result.Result{r, c, pool}); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{
		"mr per-io: write bw 64K qps=1 depth=128", ": 5000 registrations (60.00 us each), 37.0% of the window registering\n",
		"mr cache: write bw 64K qps=1 depth=16", ": cache of 16: 4999 hits, 1 misses, 1 registrations (20.00 us each), 0.0% of the window registering\n",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("want %q in\n%s", want, s)
		}
	}
	if n := strings.Count(s, "\nmr "); n != 2 {
		t.Errorf("%d mr lines, want 2 (none for pool):\n%s", n, s)
	}
}
