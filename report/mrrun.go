package report

import (
	"fmt"
	"io"

	"github.com/rdmabench/rdmabench/internal/text"
	"github.com/rdmabench/rdmabench/result"
)

// mrLines writes, under the bandwidth table, what each run that registered memory in
// its timed loop (--mr per-io or cache) counted, and how much of its window went to
// ibv_reg_mr and ibv_dereg_mr.
func mrLines(w io.Writer, rs []result.Result) {
	for _, r := range rs {
		m := r.MR
		if m == nil {
			continue
		}
		what := fmt.Sprintf("%d registrations", m.Regs)
		if m.Mode == "cache" {
			what = fmt.Sprintf("cache of %d: %d hits, %d misses, %d registrations", r.Config.MRCache, m.Hits, m.Misses, m.Regs)
		}
		if m.Regs > 0 {
			what += fmt.Sprintf(" (%.2f us each)", float64(m.RegNSTotal)/float64(m.Regs)/1e3)
		}
		if m.Deregs < m.Regs {
			what += fmt.Sprintf(", %d left registered", m.Regs-m.Deregs)
		}
		share := "the window not measured"
		if r.DurationNS > 0 {
			share = fmt.Sprintf("%.1f%% of the window registering", 100*m.WindowShare)
		}
		// A result file is input: its strings are cleaned.
		fmt.Fprintf(w, "mr %s: %s: %s, %s\n", text.Clean(m.Mode, 16), ConfigKey(r.Config), what, share)
	}
}
