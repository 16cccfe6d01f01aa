package report

import (
	"encoding/csv"
	"io"
	"slices"
	"strconv"

	"github.com/rdmabench/rdmabench/plan"
	"github.com/rdmabench/rdmabench/profiles"
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
//
// The optimum's point takes a column per swept dimension (profiles.Dims), named by its
// key: the required ones after op and objective, the optional ones at the end (a sweep
// that held one says the value it held, its default unless fixed), so that a dimension
// added to the sweep adds a column at the end and moves none.
var TunedCSVHeader = slices.Concat([]string{"op", "objective"}, csvDims(false),
	[]string{"runs", "median", "ci_low", "ci_high", "gain_vs_article", "gain_vs_perftest", "verdict", "resolution", "runs_tainted"},
	csvDims(true))

// csvDims are profiles.Dims, the optional ones or the others, in their order.
func csvDims(optional bool) []string {
	var out []string
	for _, d := range profiles.Dims {
		if slices.Contains(profiles.Optional, d) == optional {
			out = append(out, d)
		}
	}
	return out
}

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
	i := strconv.Itoa
	required, optional := csvDims(false), csvDims(true)
	values := func(p plan.Point, dims []string) []string {
		var out []string
		for _, d := range dims {
			out = append(out, i(norm(d, p.Int(d)))) // a report without one: the default
		}
		return out
	}
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
			row := slices.Concat([]string{op, name}, values(p, required),
				[]string{i(m.Runs), f(m.Median), fp(m.CILow), fp(m.CIHigh), g(art, aok), g(pft, pok),
					csvVerdict(m), f(o.Resolution), i(m.Tainted)},
				values(p, optional))
			if err := cw.Write(row); err != nil {
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
