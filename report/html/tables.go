package htmlreport

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/rdmabench/rdmabench/profiles"
	"github.com/rdmabench/rdmabench/report"
	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/sweep"
)

// table is an HTML table: its cells are text (escaped by html/template), each with an
// optional class from the page's style sheet.
type table struct {
	Caption string
	Head    []string
	Rows    [][]tcell
}

type tcell struct {
	Text  string
	Class string // "", "good", "bad", "noise", "warn", "num"
}

func txt(s string) tcell { return tcell{Text: s} }
func num(s string) tcell { return tcell{Text: s, Class: "num"} }

// clean is a string from a result file, for the page: as for the charts (svgText),
// control characters escaped and at most n bytes; html/template escapes the markup.
func clean(s string, n int) string { return svgText(s, n) }

// inputsTable describes each series: its files, devices, versions and time span.
func inputsTable(ss []*Series) table {
	t := table{Caption: "Inputs", Head: []string{"label", "files", "results", "client device", "server device", "rdmabench", "measured (UTC)"}}
	for _, s := range ss {
		var files []string
		for i, f := range s.Files {
			files = append(files, fmt.Sprintf("%s (%s)", clean(bases([]string{f})[0], 128), s.Kinds[i]))
		}
		var client, server result.Device
		var tools []string
		var first, last time.Time
		ok, failed := 0, 0
		for _, r := range s.Results {
			if measured(r) {
				ok++
			} else {
				failed++
			}
			if r.ToolVersion != "" && !contains(tools, r.ToolVersion) {
				tools = append(tools, r.ToolVersion)
			}
			if !r.Time.IsZero() && (first.IsZero() || r.Time.Before(first)) {
				first = r.Time
			}
			if r.Time.After(last) {
				last = r.Time
			}
		}
		if len(s.Results) > 0 {
			client, server = s.Results[0].Client, s.Results[0].ServerDevice
		}
		if s.Tuned != nil {
			if len(s.Results) == 0 {
				client, server = s.Tuned.Client, s.Tuned.Server
			}
			if s.Tuned.ToolVersion != "" && !contains(tools, s.Tuned.ToolVersion) {
				tools = append(tools, s.Tuned.ToolVersion)
			}
		}
		sort.Strings(tools)
		results := "-"
		if s.hasRuns {
			results = fmt.Sprintf("%d measured", ok)
			if failed > 0 {
				results += fmt.Sprintf(", %d failed or interrupted", failed)
			}
		}
		span := "-"
		if !first.IsZero() {
			span = first.UTC().Format("2006-01-02 15:04:05") + " .. " + last.UTC().Format("2006-01-02 15:04:05")
		}
		t.Rows = append(t.Rows, []tcell{txt(clean(s.Label, 128)), txt(strings.Join(files, ", ")), txt(results),
			txt(deviceName(client)), txt(deviceName(server)), txt(clean(strings.Join(tools, ", "), 128)), txt(span)})
	}
	return t
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// deviceName is a device in one line: name, model, firmware, port rate, host.
func deviceName(d result.Device) string {
	if d.Name == "" && d.Model == "" {
		return "-"
	}
	s := fmt.Sprintf("%s (%s, %s, fw %s), %s Gb/s, MTU %d, on %s", clean(d.Name, 64), clean(d.Model, 96), clean(d.Driver, 32),
		clean(d.FirmwareVer, 48), fmtNum(d.RateGbps), d.ActiveMTU, clean(d.Host, 96))
	return s
}

// The tuned report's words and formats (as report.TunedTable writes them).
var paramNames = map[string]string{
	"msg_size_bytes": "message size", "sq_depth": "SQ depth", "buf_offset_bytes": "offset from 4 KiB",
	"cq_mod": "signal every N (cq-mod)", "post_list": "post-list length",
}

var verdictWords = map[string]string{sweep.Agrees: "agrees", sweep.Differs: "differs (significant)",
	sweep.ArticleBetter: "article's better", sweep.CannotTell: "cannot tell (noise)", sweep.NotApplicable: "n/a", "": "-"}

var verdictClass = map[string]string{sweep.Agrees: "good", sweep.Differs: "good", sweep.ArticleBetter: "bad", sweep.CannotTell: "noise"}

func fmtDim(d string, v int) string {
	if d == "msg_size_bytes" {
		return result.FormatSize(v)
	}
	return fmt.Sprint(v)
}

func fmtRange(d string, r []int) string {
	switch {
	case len(r) != 2:
		return "-"
	case d == "buf_offset_bytes" && r[0] == 0 && r[1] == 0:
		return "aligned"
	case r[0] == r[1]:
		return fmtDim(d, r[0])
	}
	return fmtDim(d, r[0]) + "-" + fmtDim(d, r[1])
}

func fmtValue(unit string, v float64) string {
	switch unit {
	case "mpps":
		return fmt.Sprintf("%.4f", v)
	case "ns":
		return fmt.Sprintf("%.1f", v/1e3)
	}
	return fmt.Sprintf("%.3f", v)
}

func unitName(unit string) string {
	if n, ok := map[string]string{"gbit_per_s": "Gb/s", "mpps": "Mpps", "ns": "p99 us"}[unit]; ok {
		return n
	}
	return clean(unit, 32)
}

func fmtInterval(unit string, lo, hi *float64) string {
	if lo == nil || hi == nil {
		return "-"
	}
	return fmtValue(unit, *lo) + " .. " + fmtValue(unit, *hi)
}

func pct(v float64) string { return fmt.Sprintf("%+.1f%%", 100*v) }

func fmtGain(g sweep.Gain) string {
	switch {
	case g.Pairs == 0:
		return "-"
	case g.GainLow == nil || g.GainHigh == nil:
		return pct(g.GainMedian) + " (1 pair)"
	}
	return fmt.Sprintf("%s [%s, %s]", pct(g.GainMedian), pct(*g.GainLow), pct(*g.GainHigh))
}

func fmtRatio(r sweep.Ratio) string {
	if r.N == 0 {
		return "not measured in the same rounds (budget spent)"
	}
	if r.Low == nil || r.High == nil {
		return fmt.Sprintf("%.3f (%d pair, no interval)", r.Median, r.N)
	}
	return fmt.Sprintf("%.3f [%.3f, %.3f] over %d pairs", r.Median, *r.Low, *r.High, r.N)
}

func optimumState(m sweep.Optimum) string {
	switch {
	case m.Basis == sweep.BestMeasured:
		return fmt.Sprintf("best of %d measured", m.Contenders)
	case m.Decided:
		return fmt.Sprintf("yes, of %d", m.Contenders)
	case m.ContendersCut > 0:
		return fmt.Sprintf("no, of %d (+%d left out)", m.Contenders, m.ContendersCut)
	}
	return fmt.Sprintf("no, of %d", m.Contenders)
}

func tunedOps(t *report.Tuned) []string {
	var out []string
	for _, op := range ops {
		if _, ok := t.Ops[op]; ok {
			out = append(out, op)
		}
	}
	return out
}

// tunedSection is the tuned report as tables, and the notes under them.
type tunedSection struct {
	Title  string
	Tables []table
	Notes  []string
}

func tunedTables(s *Series) *tunedSection {
	t := s.Tuned
	if t == nil {
		return nil
	}
	tops := tunedOps(t)
	sec := &tunedSection{Title: fmt.Sprintf("%s: tuned parameters for %s (profile %s), objective %s", clean(s.Label, 128), clean(t.Client.Model, 96), clean(t.Profile, 64), clean(t.Objective, 32))}

	params := table{Caption: "Chosen configuration per parameter, next to the article's (\"?\": left undecided)", Head: []string{"parameter"}}
	for _, op := range tops {
		params.Head = append(params.Head, strings.ToUpper(op), "article", "verdict")
	}
	for _, d := range profiles.Dims {
		row := []tcell{txt(paramNames[d])}
		for _, op := range tops {
			o := t.Ops[op]
			v, ok := o.Verdicts[d]
			if !ok {
				row = append(row, txt("-"), txt(fmtRange(d, t.Reference[op][d])), txt("-"))
				continue
			}
			val := fmtDim(d, v.Chosen)
			if !v.Decided {
				val += " ?"
			}
			w, ok := verdictWords[v.Verdict]
			if !ok {
				w = clean(v.Verdict, 32)
			}
			row = append(row, num(val), txt(fmtRange(d, v.Article)), tcell{Text: w, Class: verdictClass[v.Verdict]})
		}
		params.Rows = append(params.Rows, row)
	}

	unit := ""
	if len(tops) > 0 {
		unit = unitName(t.Ops[tops[0]].Unit)
	}
	meas := table{Caption: "Measured in the same interleaved rounds: median, 95% interval of the geometric mean, gain of the chosen configuration over each reference (median of paired ratios - 1, 95% interval)",
		Head: []string{"op", "configuration", "size/depth/off/mod/pl", "runs", unit, "95% interval", "gain [95% interval]"}}
	for _, op := range tops {
		o := t.Ops[op]
		meas.Rows = append(meas.Rows, []tcell{txt(op), txt("chosen"), txt(pointName(o.Chosen.Point)), num(fmt.Sprint(o.Chosen.Runs)),
			num(fmtValue(o.Unit, o.Chosen.Median)), num(fmtInterval(o.Unit, o.Chosen.CILow, o.Chosen.CIHigh)), txt("")})
		for _, name := range []string{sweep.RefArticle, sweep.RefPerftest} {
			if r, ok := o.References[name]; ok {
				meas.Rows = append(meas.Rows, []tcell{txt(op), txt(strings.ReplaceAll(name, "_", " ")), txt(pointName(r.Point)), num(fmt.Sprint(r.Runs)),
					num(fmtValue(o.Unit, r.Median)), num(fmtInterval(o.Unit, r.CILow, r.CIHigh)), gainCell(r.Gain)})
			}
		}
	}

	optima := table{Caption: "Optimum per objective (searched: the cheapest configuration statistically equal to the best)",
		Head: []string{"op", "objective", "size/depth/off/mod/pl", "runs", "median", "95% interval", "unit", "decided"}}
	var missing []string
	for _, op := range tops {
		o := t.Ops[op]
		for _, name := range objectiveOrder(o) {
			m, ok := o.Optima[name]
			if !ok {
				missing = append(missing, op+" "+name)
				continue
			}
			state := optimumState(m)
			cls := "noise"
			if m.Decided {
				cls = "good"
			}
			optima.Rows = append(optima.Rows, []tcell{txt(op), txt(clean(name, 32)), txt(pointName(m.Point)), num(fmt.Sprint(m.Runs)),
				num(fmtValue(m.Unit, m.Median)), num(fmtInterval(m.Unit, m.CILow, m.CIHigh)), txt(unitName(m.Unit)), tcell{Text: state, Class: cls}})
		}
	}
	sec.Tables = []table{params, meas, optima}
	for _, op := range tops {
		sec.Notes = append(sec.Notes, tunedNotes(op, t.Ops[op])...)
	}
	for _, m := range missing {
		why := "no configuration qualifies"
		if strings.Contains(m, "p99") {
			why += fmt.Sprintf(" (a p99 needs %d signalled completions)", result.MinSamples(0.99))
		}
		sec.Notes = append(sec.Notes, fmt.Sprintf("%s: no optimum: %s", m, why))
	}
	sec.Notes = append(sec.Notes, "Verdicts: agrees = ours is in the article's range (and decided), or the article's value is within the tolerance of ours; "+
		"differs = ours is significantly better; article's better = the article's value is significantly better; "+
		"cannot tell = the intervals did not decide within the budget; n/a = no other grid value stands for the article's, or it cannot run with the rest.")
	return sec
}

func gainCell(g sweep.Gain) tcell {
	c := num(fmtGain(g))
	switch {
	case g.GainLow != nil && *g.GainLow > 0:
		c.Class = "num good"
	case g.GainHigh != nil && *g.GainHigh < 0:
		c.Class = "num bad"
	}
	return c
}

func objectiveOrder(o sweep.Outcome) []string {
	names := []string{"bw", "rate", "p99"}
	var rest []string
	for name := range o.Optima {
		if !contains(names, name) {
			rest = append(rest, name)
		}
	}
	sort.Strings(rest)
	names = append(names, rest...)
	if o.Objective != "" && !contains(names, o.Objective) {
		names = append(names, o.Objective)
	}
	return names
}

// tunedNotes are what the cells cannot hold: the effort, the noise, the taint, every
// comparison left open.
func tunedNotes(op string, o sweep.Outcome) []string {
	var out []string
	budget := "no budget"
	if o.BudgetS > 0 {
		budget = fmt.Sprintf("budget %.0f s, %.0f s used", o.BudgetS, o.BudgetSpentS)
		if o.BudgetExhausted {
			budget += " (exhausted)"
		}
	}
	state := "decided"
	if !o.Decided {
		state = "NOT decided (the chosen point is the best estimate)"
	}
	if o.Interrupted {
		state += ", interrupted"
	}
	out = append(out, fmt.Sprintf("%s: %s; noise %.1f%% per run, tolerance %.1f%%; %s search: %d / %d points, %d runs (%d reused), %d final rounds, %.0f s; %s",
		op, state, 100*o.Noise, 100*o.Tolerance, clean(o.Search, 16), o.Points, o.GridPoints, o.Runs+o.Reused, o.Reused, o.FinalRounds, o.ElapsedS, budget))
	switch {
	case o.TaintCommon:
		out = append(out, fmt.Sprintf("%s: %d runs tainted (NIC counters moved): most runs were, so tainted runs were used as measured (%d of them)", op, o.Tainted, o.TaintedKept))
	case o.Tainted > 0:
		out = append(out, fmt.Sprintf("%s: %d runs tainted (NIC counters moved), each measured again up to 3 times; %d used although tainted every time", op, o.Tainted, o.TaintedKept))
	}
	for _, d := range profiles.Dims {
		v, ok := o.Verdicts[d]
		if !ok {
			continue
		}
		if v.Ratio != nil {
			out = append(out, fmt.Sprintf("%s %s: ours %s over the article's %s: %s", op, paramNames[d], fmtDim(d, v.Chosen), fmtDim(d, v.ArticleValue), fmtRatio(*v.Ratio)))
		}
		if v.Unresolved != nil {
			out = append(out, fmt.Sprintf("%s %s: inconclusive: %s against the best: %s", op, paramNames[d], pointName(v.Unresolved.Point), fmtRatio(v.Unresolved.Ratio)))
		}
	}
	for _, ps := range o.All {
		if ps.Error != "" {
			out = append(out, fmt.Sprintf("%s %s failed (not measured again): %s", op, pointName(ps.Point), clean(strings.ReplaceAll(ps.Error, "\n", "; "), 300)))
		}
	}
	return out
}

// countersSection is the NIC counters' verdict per configuration of a series.
type countersSection struct {
	Title string
	Table *table
	Notes []string
}

func countersTable(s *Series, cells []*cell) *countersSection {
	if !s.hasRuns {
		return nil
	}
	sec := &countersSection{Title: clean(s.Label, 128) + ": NIC counters"}
	runs, counted, tainted, pts, taintedPts := 0, 0, 0, 0, 0
	t := &table{Caption: "Runs per configuration measured while the NIC's error or congestion counters moved (tainted), and the counters flagged",
		Head: []string{"op", "configuration", "runs", "counters read", "tainted runs", "flagged counters (runs)"}}
	sorted := append([]*cell(nil), cells...)
	sort.SliceStable(sorted, func(i, j int) bool { return cellLess(sorted[i], sorted[j]) })
	for _, c := range sorted {
		runs += c.Runs
		counted += c.Counted
		tainted += c.Tainted
		if c.Counted == 0 {
			continue
		}
		pts++
		var flags []string
		for _, name := range sortedKeysInt(c.Flags) {
			flags = append(flags, fmt.Sprintf("%s x%d", clean(name, 64), c.Flags[name]))
		}
		tc := num(fmt.Sprint(c.Tainted))
		if c.Tainted > 0 {
			taintedPts++
			tc.Class = "num warn"
		}
		what := c.Cfg.Test + " " + configName(c.Cfg)
		t.Rows = append(t.Rows, []tcell{txt(c.Cfg.Op), txt(what), num(fmt.Sprint(c.Runs)), num(fmt.Sprint(c.Counted)), tc, txt(orDash(strings.Join(flags, ", ")))})
	}
	if counted == 0 {
		sec.Notes = append(sec.Notes, "NIC counters were not read for these runs (counters off, or results from before counters were recorded).")
		return sec
	}
	sec.Table = t
	sec.Notes = append(sec.Notes, fmt.Sprintf("%d of %d runs tainted, at %d of %d configurations whose counters were read; counters read on %d runs. "+
		"The charts use tainted runs as measured: a tainted run was measured while the NIC retransmitted, dropped or miscounted.", tainted, runs, taintedPts, pts, counted))
	return sec
}

func indexOf2(v []string, x string) int {
	for i, y := range v {
		if y == x {
			return i
		}
	}
	return len(v)
}

// cellLess orders configurations as a person reads them: WRITE before READ, bandwidth
// tests before latency tests, then by size, depth, moderation, offset, post list.
func cellLess(a, b *cell) bool {
	ka := []int{indexOf2(ops, a.Cfg.Op), indexOf2([]string{"bw", "lat"}, a.Cfg.Test), a.Cfg.MsgSizeBytes, a.Cfg.SQDepth, a.Cfg.CQMod, a.Cfg.BufOffsetBytes, a.Cfg.PostList, a.Cfg.NumQPs}
	kb := []int{indexOf2(ops, b.Cfg.Op), indexOf2([]string{"bw", "lat"}, b.Cfg.Test), b.Cfg.MsgSizeBytes, b.Cfg.SQDepth, b.Cfg.CQMod, b.Cfg.BufOffsetBytes, b.Cfg.PostList, b.Cfg.NumQPs}
	for i := range ka {
		if ka[i] != kb[i] {
			return ka[i] < kb[i]
		}
	}
	return a.Key < b.Key
}

func sortedKeysInt(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

var classOf = map[string]string{clsFaster: "good", clsSlower: "bad", clsNoise: "noise", clsOneRun: "", clsSummary: ""}

// compareTable lists a comparison's configurations with their numbers.
func compareTable(aLabel, bLabel string, rows []cmpRow) table {
	t := table{Caption: fmt.Sprintf("Bandwidth per configuration: %s against %s", clean(bLabel, 64), clean(aLabel, 64)),
		Head: []string{"configuration", clean(aLabel, 64) + " median Gb/s (runs)", clean(bLabel, 64) + " median Gb/s (runs)", "change", "95% interval", "verdict"}}
	side := func(c *cell) tcell {
		if c == nil {
			return num("-")
		}
		return num(fmt.Sprintf("%s (%d)", fmtValue("gbit_per_s", c.BWMed), c.Runs))
	}
	for _, r := range rows {
		change, interval := "-", "-"
		if r.A != nil && r.B != nil && !math.IsNaN(r.Ratio) {
			change = pct(r.Ratio - 1)
		}
		if r.Lo != nil && r.Hi != nil {
			interval = fmt.Sprintf("[%s, %s]", pct(*r.Lo-1), pct(*r.Hi-1))
		}
		t.Rows = append(t.Rows, []tcell{txt(clean(r.Key, 160)), side(r.A), side(r.B), num(change), num(interval), tcell{Text: r.Class, Class: classOf[r.Class]}})
	}
	return t
}
