package htmlreport

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

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
			if r.ToolVersion != "" && !slices.Contains(tools, r.ToolVersion) {
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
			if s.Tuned.ToolVersion != "" && !slices.Contains(tools, s.Tuned.ToolVersion) {
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

// deviceName is a device in one line: name, model, firmware, port rate, host.
func deviceName(d result.Device) string {
	if d.Name == "" && d.Model == "" {
		return "-"
	}
	s := fmt.Sprintf("%s (%s, %s, fw %s), %s Gb/s, MTU %d, on %s", clean(d.Name, 64), clean(d.Model, 96), clean(d.Driver, 32),
		clean(d.FirmwareVer, 48), fmtNum(d.RateGbps), d.ActiveMTU, clean(d.Host, 96))
	return s
}

var verdictClass = map[string]string{sweep.Agrees: "good", sweep.Differs: "good", sweep.ArticleBetter: "bad", sweep.CannotTell: "noise"}

func unitName(unit string) string {
	if n := report.UnitName(unit); n != "" {
		return n
	}
	return clean(unit, 32)
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

	params := table{Caption: "Chosen configuration per parameter, next to the article's (\"?\": left undecided; \"(32-512 equal)\": the values of " +
		"that parameter, the others as chosen, found equal to the best within the operation's resolution)", Head: []string{"parameter"}}
	for _, op := range tops {
		params.Head = append(params.Head, strings.ToUpper(op), "article", "verdict")
	}
	for _, d := range t.Params() {
		row := []tcell{txt(report.ParamName(d))}
		for _, op := range tops {
			o := t.Ops[op]
			v, ok := o.Verdicts[d]
			if !ok {
				row = append(row, txt("-"), txt(report.FmtRange(d, t.Reference[op][d])), txt("-"))
				continue
			}
			val := t.FmtChosen(op, d)
			w := report.FmtVerdict(d, v, o.Resolution)
			if _, ok := report.VerdictWords[v.Verdict]; !ok {
				w = clean(v.Verdict, 32)
			}
			row = append(row, num(val), txt(report.FmtRange(d, v.Article)), tcell{Text: w, Class: verdictClass[v.Verdict]})
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
		meas.Rows = append(meas.Rows, []tcell{txt(op), txt("chosen"), txt(pointName(o.Chosen.Point)), num(report.FmtRuns(o.Chosen)),
			num(report.FmtValue(o.Unit, o.Chosen.Median)), num(report.FmtInterval(o.Unit, o.Chosen.CILow, o.Chosen.CIHigh)), txt("")})
		for _, name := range []string{sweep.RefArticle, sweep.RefPerftest} {
			if r, ok := o.References[name]; ok {
				meas.Rows = append(meas.Rows, []tcell{txt(op), txt(strings.ReplaceAll(name, "_", " ")), txt(pointName(r.Point)), num(report.FmtRuns(r.Estimate)),
					num(report.FmtValue(o.Unit, r.Median)), num(report.FmtInterval(o.Unit, r.CILow, r.CIHigh)), gainCell(r.Gain)})
			}
		}
	}

	optima := table{Caption: "Optimum per objective (searched: the cheapest configuration statistically equal to the best)",
		Head: []string{"op", "objective", "size/depth/off/mod/pl", "runs", "median", "95% interval", "unit", "decided"}}
	var missing []string
	for _, op := range tops {
		o := t.Ops[op]
		for _, name := range report.ObjectiveOrder(o) {
			m, ok := o.Optima[name]
			if !ok {
				missing = append(missing, op+" "+name)
				continue
			}
			state := report.OptimumState(m)
			cls := "noise"
			if m.Decided {
				cls = "good"
			}
			optima.Rows = append(optima.Rows, []tcell{txt(op), txt(clean(name, 32)), txt(pointName(m.Point)), num(fmt.Sprint(m.Runs)),
				num(report.FmtValue(m.Unit, m.Median)), num(report.FmtInterval(m.Unit, m.CILow, m.CIHigh)), txt(unitName(m.Unit)), tcell{Text: state, Class: cls}})
		}
	}
	sec.Tables = []table{params, meas, optima}
	for _, op := range tops {
		sec.Notes = append(sec.Notes, report.TunedNotes(op, t.Ops[op])...)
	}
	for _, m := range missing {
		why := "no configuration qualifies"
		if strings.Contains(m, "p99") {
			why += fmt.Sprintf(" (a p99 needs %d signalled completions)", result.MinSamples(0.99))
		}
		sec.Notes = append(sec.Notes, fmt.Sprintf("%s: no optimum: %s", m, why))
	}
	sec.Notes = append(sec.Notes, "Verdicts, at the operation's resolution +-R: agrees = ours is in the article's range (and decided), or the article's value is within +-R of ours; "+
		"differs = ours is better by more than the noise allows at R; article's better = the opposite; "+
		"cannot tell = not decided even at R within the budget; n/a = no other grid value stands for the article's, or it cannot run with the rest.")
	return sec
}

func gainCell(g sweep.Gain) tcell {
	c := num(report.FmtGain(g))
	switch {
	case g.GainLow != nil && *g.GainLow > 0:
		c.Class = "num good"
	case g.GainHigh != nil && *g.GainHigh < 0:
		c.Class = "num bad"
	}
	return c
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
	t := &table{Caption: "Runs per configuration measured while the NIC's error counters moved, a sanity check failed or the data's sender was paused (tainted), and the counters flagged",
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
		what := string(c.Cfg.Test) + " " + configName(c.Cfg)
		t.Rows = append(t.Rows, []tcell{txt(c.Cfg.Op), txt(what), num(fmt.Sprint(c.Runs)), num(fmt.Sprint(c.Counted)), tc, txt(orDash(strings.Join(flags, ", ")))})
	}
	if counted == 0 {
		sec.Notes = append(sec.Notes, "NIC counters were not read for these runs (counters off, or results from before counters were recorded).")
		return sec
	}
	sec.Table = t
	sec.Notes = append(sec.Notes, fmt.Sprintf("%d of %d runs tainted, at %d of %d configurations whose counters were read; counters read on %d runs. "+
		"The charts use tainted runs as measured: a tainted run was measured while the NIC retransmitted, dropped or miscounted, or while pause frames held off the side sending the data. "+
		"The flagged counters include congestion (CNPs, ECN marks) and pauses that did not taint; the counters are port-wide: other traffic on either port moves them too.", tainted, runs, taintedPts, pts, counted))
	return sec
}

func indexOf2[S comparable](v []S, x S) int {
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
	ka := []int{indexOf2(ops, a.Cfg.Op), indexOf2([]result.Test{result.BW, result.Lat}, a.Cfg.Test), a.Cfg.MsgSizeBytes, a.Cfg.SQDepth, a.Cfg.CQMod, a.Cfg.BufOffsetBytes, a.Cfg.PostList, a.Cfg.NumQPs}
	kb := []int{indexOf2(ops, b.Cfg.Op), indexOf2([]result.Test{result.BW, result.Lat}, b.Cfg.Test), b.Cfg.MsgSizeBytes, b.Cfg.SQDepth, b.Cfg.CQMod, b.Cfg.BufOffsetBytes, b.Cfg.PostList, b.Cfg.NumQPs}
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
		return num(fmt.Sprintf("%s (%d)", report.FmtValue("gbit_per_s", c.BWMed), c.Runs))
	}
	for _, r := range rows {
		change, interval := "-", "-"
		if r.A != nil && r.B != nil && !math.IsNaN(r.Ratio) {
			change = report.Pct(r.Ratio - 1)
		}
		if r.Lo != nil && r.Hi != nil {
			interval = fmt.Sprintf("[%s, %s]", report.Pct(*r.Lo-1), report.Pct(*r.Hi-1))
		}
		t.Rows = append(t.Rows, []tcell{txt(clean(r.Key, 160)), side(r.A), side(r.B), num(change), num(interval), tcell{Text: r.Class, Class: classOf[r.Class]}})
	}
	return t
}
