package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/result"
)

func TestShareLines(t *testing.T) {
	j, sp, node := 0.98, 900.0, 1
	r := result.Result{Config: result.Config{Op: "write", Test: result.BW, MsgSizeBytes: 4096, NumQPs: 4, Threads: 2, SQDepth: 8, CQMod: 1, DurationS: 1},
		Iterations: 100,
		Threads: &result.Threads{Pinning: "cpu-list", MemoryNode: &node, Evenness: result.Evenness{JainFairness: &j, Fairness: result.FairnessUneven, FairnessSpreadMessages: &sp, FairnessEdgeMessages: 33},
			Threads: []result.Thread{{Index: 0, QPs: []int{0, 1}, CPUs: "2", RanOn: []int{2}, Share: 0.6}, {Index: 1, QPs: []int{2, 3}, CPUs: "3\x1b[31m", Share: 0.4}}},
		QPs: &result.QPShares{Messages: []uint64{10, 90}, Evenness: result.Evenness{Fairness: result.FairnessUneven, FairnessSpreadMessages: &sp, FairnessEdgeMessages: 17}}}
	var b bytes.Buffer
	shareLines(&b, []result.Result{r})
	out := b.String()
	for _, want := range []string{"#0 QPs 0,1 60.0% pinned 2 ran on 2", "#1 QPs 2,3 40.0%", "placement cpu-list, buffer on NUMA node 1",
		"Jain's fairness 0.980 (uneven: the threads' shares differ by 900 messages", "qps: ", "messages per QP 10,90"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b") {
		t.Errorf("a control character from the file reached the terminal:\n%q", out)
	}
	b.Reset()
	shareLines(&b, []result.Result{{Config: r.Config}})
	if b.Len() != 0 {
		t.Errorf("a run without shares: %q", b.String())
	}
}
