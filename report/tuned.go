package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/rdmabench/rdmabench/profiles"
	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/sweep"
)

// TunedSchemaVersion versions tuned.json (3: numbers and points only, no formatted cells).
const TunedSchemaVersion = 3

// Tuned is the tuned-parameter report: the article's table, measured. It holds numbers
// and points only; TunedTable and TunedCSV format them.
type Tuned struct {
	SchemaVersion int                         `json:"schema_version"`
	ToolVersion   string                      `json:"tool_version"`
	Time          time.Time                   `json:"time"`
	Profile       string                      `json:"profile"`
	Client        result.Device               `json:"client"`
	Server        result.Device               `json:"server_device"`
	Objective     string                      `json:"objective"`
	Ops           map[string]sweep.Outcome    `json:"ops"`
	Reference     map[string]map[string][]int `json:"reference"` // the article's [lo, hi] per op and dimension
}

// NewTuned builds the report from the outcomes of a sweep.
func NewTuned(p profiles.Profile, outcomes map[string]sweep.Outcome, client, server result.Device, version string) Tuned {
	t := Tuned{SchemaVersion: TunedSchemaVersion, ToolVersion: version, Time: time.Now().UTC(), Profile: p.Name,
		Client: client, Server: server, Ops: outcomes, Reference: p.Reference}
	for _, op := range tunedOps(t) {
		t.Objective = outcomes[op].Objective
		break
	}
	return t
}

// WriteTunedJSON writes the report as indented JSON (what sweep --json writes).
func WriteTunedJSON(w io.Writer, t Tuned) error {
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	return e.Encode(t)
}

// ReadTuned reads a tuned-parameter report. ok says whether data is one (a JSON object
// with "ops"); err, that it is one this rdmabench cannot read: another schema version
// (its keys may mean something else), or broken.
func ReadTuned(data []byte) (t Tuned, ok bool, err error) {
	var probe struct {
		SchemaVersion *int            `json:"schema_version"`
		Ops           json.RawMessage `json:"ops"`
	}
	if json.Unmarshal(data, &probe) != nil || len(probe.Ops) == 0 || string(probe.Ops) == "null" {
		return t, false, nil
	}
	switch v := probe.SchemaVersion; {
	case v == nil:
		return t, true, fmt.Errorf("tuned report without a schema_version; this rdmabench reads schema_version %d", TunedSchemaVersion)
	case *v != TunedSchemaVersion:
		return t, true, fmt.Errorf("tuned report has schema_version %d; this rdmabench reads schema_version %d", *v, TunedSchemaVersion)
	}
	if err := json.Unmarshal(data, &t); err != nil {
		return Tuned{}, true, fmt.Errorf("reading the tuned report: %w", err)
	}
	return t, true, nil
}

// tunedOps lists the swept operations, WRITE first.
func tunedOps(t Tuned) []string {
	var ops []string
	for _, op := range []string{"write", "read"} {
		if _, ok := t.Ops[op]; ok {
			ops = append(ops, op)
		}
	}
	return ops
}

var paramNames = map[string]string{
	"msg_size_bytes": "message size", "sq_depth": "SQ depth", "buf_offset_bytes": "offset from 4 KiB",
	"cq_mod": "signal every N (cq-mod)", "post_list": "post-list length",
}

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

// fmtPoint is a configuration in one short cell: size/depth/offset/cq-mod/post-list.
func fmtPoint(p profiles.Point) string {
	return fmt.Sprintf("%s/%d/%d/%d/%d", result.FormatSize(p.MsgSizeBytes), p.SQDepth, p.BufOffsetBytes, p.CQMod, p.PostList)
}

// fmtValue renders an objective's value in its unit.
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
	return map[string]string{"gbit_per_s": "Gb/s", "mpps": "Mpps", "ns": "p99 us"}[unit]
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

var verdictWords = map[string]string{sweep.Agrees: "agrees", sweep.Differs: "differs (significant)",
	sweep.ArticleBetter: "article's better", sweep.CannotTell: "cannot tell (noise)", sweep.NotApplicable: "n/a", "": "-"}

// optimumState is an optimum's "decided" cell: whether the search decided it, among
// how many contenders, or that it is only the best of the points measured.
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

// TunedTable writes the report as terminal tables (within 120 columns), the
// explanations under them.
func TunedTable(w io.Writer, t Tuned) error {
	ops := tunedOps(t)
	fmt.Fprintf(w, "Tuned parameters for %s (profile %s), objective %s\n", t.Client.Model, t.Profile, t.Objective)
	tb := NewTable(w)
	head := []any{"parameter"}
	for _, op := range ops {
		head = append(head, strings.ToUpper(op), "article", "verdict")
	}
	tb.Header(head...)
	for _, d := range profiles.Dims {
		row := []any{paramNames[d]}
		for _, op := range ops {
			o := t.Ops[op]
			v, ok := o.Verdicts[d]
			if !ok {
				row = append(row, "-", fmtRange(d, t.Reference[op][d]), "-")
				continue
			}
			val := fmtDim(d, v.Chosen)
			if !v.Decided {
				val += " ?"
			}
			row = append(row, val, fmtRange(d, v.Article), verdictWords[v.Verdict])
		}
		tb.Append(row...)
	}
	if err := tb.Render(); err != nil {
		return err
	}
	fmt.Fprintln(w, "Measured in the same interleaved rounds (median, 95% interval; gain of the chosen configuration):")
	mb := NewTable(w)
	mb.Header("op", "configuration", "size/depth/off/mod/pl", "runs", t.unit(), "95% interval", "gain [95% interval]")
	for _, op := range ops {
		o := t.Ops[op]
		mb.Append(op, "chosen", fmtPoint(o.Chosen.Point), o.Chosen.Runs, fmtValue(o.Unit, o.Chosen.Median), fmtInterval(o.Unit, o.Chosen.CILow, o.Chosen.CIHigh), "")
		for _, name := range []string{sweep.RefArticle, sweep.RefPerftest} {
			if r, ok := o.References[name]; ok {
				mb.Append(op, strings.ReplaceAll(name, "_", " "), fmtPoint(r.Point), r.Runs, fmtValue(o.Unit, r.Median), fmtInterval(o.Unit, r.CILow, r.CIHigh), fmtGain(r.Gain))
			}
		}
	}
	if err := mb.Render(); err != nil {
		return err
	}
	fmt.Fprintln(w, "Optimum per objective (searched: the cheapest configuration statistically equal to the best):")
	ob := NewTable(w)
	ob.Header("op", "objective", "size/depth/off/mod/pl", "runs", "median", "95% interval", "unit", "decided")
	var missing []string
	for _, op := range ops {
		o := t.Ops[op]
		for _, name := range objectiveOrder(o) {
			m, ok := o.Optima[name]
			if !ok {
				missing = append(missing, op+" "+name)
				continue
			}
			ob.Append(op, name, fmtPoint(m.Point), m.Runs, fmtValue(m.Unit, m.Median), fmtInterval(m.Unit, m.CILow, m.CIHigh), unitName(m.Unit), optimumState(m))
		}
	}
	if err := ob.Render(); err != nil {
		return err
	}
	for _, op := range ops {
		tunedNotes(w, op, t.Ops[op])
	}
	for _, m := range missing {
		// Said, not left out in silence.
		why := "no configuration qualifies"
		if strings.Contains(m, "p99") {
			why += fmt.Sprintf(" (a p99 needs %d signalled completions: raise --point-duration)", result.MinSamples(0.99))
		}
		fmt.Fprintf(w, "%s: no optimum: %s\n", m, why)
	}
	fmt.Fprint(w, "verdict: agrees = ours is in the article's range (and decided), or the article's value is within the\n"+
		"tolerance of ours; differs = ours is significantly better; article's better = the article's value is\n"+
		"significantly better; cannot tell = the intervals did not decide within --budget; n/a = no other grid\n"+
		"value stands for the article's, or it cannot run with the rest. \"?\": a parameter left undecided.\n"+
		"Gains are paired by round, from rounds measured after the choice: median [95% interval]. An optimum\n"+
		"\"best of N measured\" is the best of the search's points for an objective the search did not optimise.\n")
	return nil
}

func (t Tuned) unit() string {
	for _, op := range tunedOps(t) {
		return unitName(t.Ops[op].Unit)
	}
	return ""
}

// objectiveOrder lists an outcome's optima: bw, rate, p99, then the rest.
func objectiveOrder(o sweep.Outcome) []string {
	names := []string{"bw", "rate", "p99"}
	for name := range o.Optima {
		if name != "bw" && name != "rate" && name != "p99" {
			names = append(names, name)
		}
	}
	if o.Objective != "" && !contains(names, o.Objective) {
		names = append(names, o.Objective)
	}
	return names
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// tunedNotes writes what the cells cannot hold: the effort, the noise, and every
// comparison left open.
func tunedNotes(w io.Writer, op string, o sweep.Outcome) {
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
	fmt.Fprintf(w, "%s: %s%s; noise %.1f%% per run, tolerance %.1f%%\n", op, state, map[bool]string{true: ", interrupted"}[o.Interrupted], 100*o.Noise, 100*o.Tolerance)
	fmt.Fprintf(w, "  %s search: %d / %d points, %d runs (%d reused), %d final rounds, %.0f s; %s\n",
		o.Search, o.Points, o.GridPoints, o.Runs+o.Reused, o.Reused, o.FinalRounds, o.ElapsedS, budget)
	switch {
	case o.TaintCommon:
		fmt.Fprintf(w, "  %d runs tainted (NIC counters moved): most runs were, so tainted runs were used as measured (%d of them); this link retransmits or drops as a rule: see counters_flags in the stream\n", o.Tainted, o.TaintedKept)
	case o.Tainted > 0:
		fmt.Fprintf(w, "  %d runs tainted (NIC counters moved), each measured again up to 3 times; %d used although tainted every time\n", o.Tainted, o.TaintedKept)
	}
	for _, d := range profiles.Dims {
		v, ok := o.Verdicts[d]
		if !ok {
			continue
		}
		if v.Ratio != nil {
			fmt.Fprintf(w, "  %s %s: ours %s over the article's %s: %s\n", op, paramNames[d], fmtDim(d, v.Chosen), fmtDim(d, v.ArticleValue), fmtRatio(*v.Ratio))
		}
		if v.Unresolved != nil {
			fmt.Fprintf(w, "  %s %s: inconclusive: %s against the best: %s\n", op, paramNames[d], fmtPoint(v.Unresolved.Point), fmtRatio(v.Unresolved.Ratio))
		}
	}
	if m, ok := o.Optima[o.Objective]; ok && m.ContendersCut > 0 {
		fmt.Fprintf(w, "  %s: %d more points came within reach of the best than the final rounds measure: not decided\n", op, m.ContendersCut)
	}
	for _, ps := range o.All {
		if ps.Error != "" {
			fmt.Fprintf(w, "  %s %s failed (not measured again): %s\n", op, fmtPoint(ps.Point), strings.ReplaceAll(ps.Error, "\n", "; "))
		}
	}
}
