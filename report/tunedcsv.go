package report

import (
	"encoding/csv"
	"io"
	"strconv"

	"github.com/rdmabench/rdmabench/plan"
	"github.com/rdmabench/rdmabench/sweep"
)

// TunedCSVHeader is the column set of TunedCSV, stable for machines: one row per
// operation and objective, numbers only. median, ci_low and ci_high are in the
// objective's unit (Gb/s for bw and bw-p99, Mpps for rate, ns for p99); the gains are
// fractions (0.05: 5% better; for p99, a 1.05 times lower p99), medians of the pairs;
// verdict is "decided" or "inconclusive" for an objective that had final rounds of its
// own (the budget left comparisons open), "best_measured" for one the budget did not
// reach (the best of the points the search measured); resolution is the fraction every
// comparison of the operation was decided at (0.08: +-8%), runs_tainted how many of the
// runs counted were measured while NIC counters moved, qp_timeout the optimum's QP
// timeout exponent (-u). An empty cell is a value not measured.
var TunedCSVHeader = []string{"op", "objective", "msg_size_bytes", "sq_depth", "buf_offset_bytes", "cq_mod", "post_list",
	"runs", "median", "ci_low", "ci_high", "gain_vs_article", "gain_vs_perftest", "verdict", "resolution", "runs_tainted", "qp_timeout"}

// TunedCSV writes each operation's optimum per objective.
func TunedCSV(w io.Writer, t Tuned) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(TunedCSVHeader); err != nil {
		return err
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 8, 64) }
	fp := func(v *float64) string {
		if v == nil {
			return ""
		}
		return f(*v)
	}
	g := func(x sweep.Gain, ok bool) string {
		if !ok || x.Pairs == 0 {
			return ""
		}
		return fp(x.GainMedian)
	}
	qp := func(u int) string { return strconv.Itoa(plan.QPTimeout(u)) } // a report without one: the default
	for _, op := range tunedOps(t) {
		o := t.Ops[op]
		for _, name := range ObjectiveOrder(o) {
			m, ok := o.Optima[name]
			if !ok {
				continue
			}
			p := m.Point
			art, aok := m.Gains[sweep.RefArticle]
			pft, pok := m.Gains[sweep.RefPerftest]
			i := strconv.Itoa
			if err := cw.Write([]string{op, name, i(p.MsgSizeBytes), i(p.SQDepth), i(p.BufOffsetBytes), i(p.CQMod), i(p.PostList),
				i(m.Runs), f(m.Median), fp(m.CILow), fp(m.CIHigh), g(art, aok), g(pft, pok),
				csvVerdict(m), f(o.Resolution), i(m.Tainted), qp(p.QPTimeout)}); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

func csvVerdict(m sweep.Optimum) string {
	switch {
	case m.Basis == sweep.BestMeasured:
		return "best_measured"
	case m.Decided:
		return "decided"
	}
	return "inconclusive"
}
