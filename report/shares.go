package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/rdmabench/rdmabench/internal/text"
	"github.com/rdmabench/rdmabench/result"
)

// shareLines write, under a bandwidth table, how each run's messages divided among
// its loop threads (--threads, --cpu: where each ran) and among its QPs, with Jain's
// index and, for a timed run, whether the spread is more than the run's edges make.
// A result file is input: its strings are cleaned.
func shareLines(w io.Writer, bw []result.Result) {
	for _, r := range bw {
		if t := r.Threads; t != nil && len(t.Threads) > 0 {
			var parts []string
			for _, th := range t.Threads {
				p := fmt.Sprintf("#%d QPs %s %.1f%%", th.Index, numList(th.QPs), 100*th.Share)
				if th.CPUs != "" {
					p += " pinned " + text.Clean(th.CPUs, 64)
				}
				if len(th.RanOn) > 0 {
					p += " ran on " + numList(th.RanOn)
				}
				if th.Error != "" {
					p += " ERROR"
				}
				parts = append(parts, p)
			}
			fmt.Fprintf(w, "threads: %s: %s (placement %s", ConfigKey(r.Config), strings.Join(parts, "; "), text.Clean(t.Pinning, 32))
			if t.MemoryNode != nil {
				fmt.Fprintf(w, ", buffer on NUMA node %d", *t.MemoryNode)
			}
			fmt.Fprintf(w, ")%s\n", fairness(t.JainFairness, t.Fairness, t.FairnessSpreadMessages, t.FairnessEdgeMessages, "threads'"))
		}
		if q := r.QPs; q != nil && q.Fairness == result.FairnessUneven {
			fmt.Fprintf(w, "qps: %s: messages per QP %s%s\n", ConfigKey(r.Config), numList(q.Messages),
				fairness(q.JainFairness, q.Fairness, q.FairnessSpreadMessages, q.FairnessEdgeMessages, "QPs'"))
		}
	}
}

func fairness(jain *float64, verdict string, spread *float64, edge int64, whose string) string {
	s := ""
	if jain != nil {
		s = fmt.Sprintf("; Jain's fairness %.3f", *jain)
	}
	if spread == nil {
		return s
	}
	switch verdict {
	case result.FairnessUneven:
		s += fmt.Sprintf(" (uneven: the %s shares differ by %.0f messages, more than the run's edges make, %d)", whose, *spread, edge)
	case result.FairnessCannotTell:
		s += fmt.Sprintf(" (cannot tell: the %s shares differ by %.0f messages, within the run's edges, %d)", whose, *spread, edge)
	}
	return s
}

// numList joins numbers with commas: "0,1,2".
func numList[T int | uint64](xs []T) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ",")
}
