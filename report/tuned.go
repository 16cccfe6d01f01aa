package report

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/rdmabench/rdmabench/internal/text"
	"github.com/rdmabench/rdmabench/plan"
	"github.com/rdmabench/rdmabench/profiles"
	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/sweep"
)

// TunedSchemaVersion versions tuned.json (3: numbers and points only, no formatted
// cells; 4: a resolution per operation instead of a tolerance, taint counted, null for
// what was not measured, queue-bound and failing points).
const TunedSchemaVersion = 4

// Tuned is the tuned-parameter report: the tuning article's table, measured. It holds numbers
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

// ParamName is dimension d's name in tables (and in the HTML report): plan.Dim.Name.
func ParamName(d string) string { return dim(d).Name }

// dim is the dimension d of plan.Dims; it panics on an unknown one (a report's
// dimensions are profiles.Dims, checked against plan.Dims when the program starts).
func dim(d string) plan.Dim {
	x, ok := plan.DimOf(d)
	if !ok {
		panic("report: unknown dimension " + d)
	}
	return x
}

// FmtDim renders a value of dimension d (sizes with units).
func FmtDim(d string, v int) string {
	if d == "msg_size_bytes" {
		return result.FormatSize(v)
	}
	return fmt.Sprint(v)
}

// FmtRange renders the tuning article's range [lo, hi] of dimension d.
func FmtRange(d string, r []int) string {
	switch {
	case len(r) != 2:
		return "-"
	case d == "buf_offset_bytes" && r[0] == 0 && r[1] == 0:
		return "aligned"
	case r[0] == r[1]:
		return FmtDim(d, r[0])
	}
	return FmtDim(d, r[0]) + "-" + FmtDim(d, r[1])
}

// FmtPoint is a sweep's point in one short cell: its values on profiles.Dims joined by
// "/" (size/depth/offset/cq-mod/post-list), an optional dimension's only where the
// point holds it off its default, after its Cell prefix (its Word where it has none):
// "64K/8/0/8/1/u20" for a QP timeout of 20.
func FmtPoint(p plan.Point) string {
	var c []string
	for _, k := range profiles.Dims {
		d := dim(k)
		switch {
		case !slices.Contains(profiles.Optional, k):
			c = append(c, FmtDim(k, p.Int(k)))
		case p.Holds(d) && p.Get(k) != d.Held():
			c = append(c, cmp.Or(d.Cell, d.Word)+p.Get(k))
		}
	}
	return strings.Join(c, "/")
}

// FmtValue renders an objective's value in its unit.
func FmtValue(unit string, v float64) string {
	switch unit {
	case "mpps":
		return fmt.Sprintf("%.4f", v)
	case "ns":
		return fmt.Sprintf("%.1f", v/1e3)
	}
	return fmt.Sprintf("%.3f", v)
}

// UnitName is an objective unit's column heading ("" for an unknown unit).
func UnitName(unit string) string {
	return map[string]string{"gbit_per_s": "Gb/s", "mpps": "Mpps", "ns": "p99 us"}[unit]
}

// FmtInterval renders a 95% interval in unit ("-" without one).
func FmtInterval(unit string, lo, hi *float64) string {
	if lo == nil || hi == nil {
		return "-"
	}
	return FmtValue(unit, *lo) + " .. " + FmtValue(unit, *hi)
}

// Pct renders a fraction as a signed percentage.
func Pct(v float64) string { return fmt.Sprintf("%+.1f%%", 100*v) }

// FmtGain renders a gain: median [95% interval], or why there is none.
func FmtGain(g sweep.Gain) string {
	switch {
	case g.Pairs == 0:
		return "-"
	case g.GainMedian == nil:
		return "-"
	case g.GainLow == nil || g.GainHigh == nil:
		return Pct(*g.GainMedian) + " (1 pair)"
	}
	return fmt.Sprintf("%s [%s, %s]", Pct(*g.GainMedian), Pct(*g.GainLow), Pct(*g.GainHigh))
}

// FmtRatio renders a ratio of paired runs with its interval and pair count.
func FmtRatio(rp *sweep.Ratio) string {
	if rp == nil || rp.N == 0 {
		return "not measured in the same rounds as the best (it left the rounds before the best was found, or the budget or the looks ended first)"
	}
	r := *rp
	if r.Low == nil || r.High == nil {
		return fmt.Sprintf("%.3f (%d pair, no interval)", r.Median, r.N)
	}
	return fmt.Sprintf("%.3f [%.3f, %.3f] over %d pairs", r.Median, *r.Low, *r.High, r.N)
}

// VerdictWords are the verdicts in words.
var VerdictWords = map[string]string{sweep.Agrees: "agrees", sweep.Differs: "differs",
	sweep.ArticleBetter: "article's better", sweep.CannotTell: "cannot tell", sweep.NotApplicable: "n/a", sweep.NoArticle: "-", "": "-"}

// FmtVerdict is a verdict in words at its resolution ("agrees, at +-8%"), and the grid
// value it was measured at where the tuning article's own is not on the grid.
func FmtVerdict(d string, v sweep.Verdict, resolution float64) string {
	w := VerdictWords[v.Verdict]
	switch v.Verdict {
	case sweep.Agrees, sweep.Differs, sweep.ArticleBetter, sweep.CannotTell:
		if resolution > 0 {
			w += ", at " + sweep.FmtResolution(resolution)
		}
	}
	if v.Nearest && v.ArticleValue != nil && v.Verdict != sweep.NotApplicable {
		w += " (vs nearest grid value " + FmtDim(d, *v.ArticleValue) + ")"
	}
	return w
}

// FmtRuns is an estimate's runs and how many of them were tainted: "6", "6 (2 tainted)".
func FmtRuns(e sweep.Estimate) string {
	if e.Tainted == 0 {
		return fmt.Sprint(e.Runs)
	}
	return fmt.Sprintf("%d (%d tainted)", e.Runs, e.Tainted)
}

// OptimumState is an optimum's "decided" cell: whether the search decided it, among
// how many contenders, or that it is only the best of the points measured.
func OptimumState(m sweep.Optimum) string {
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
// explanations under them (TunedShow in FormatTable).
func TunedTable(w io.Writer, t Tuned) error { return TunedShow(w, t, FormatTable) }

// TunedShow writes the whole report in f (sweep --verbose, report show; TunedSummary
// is the sweep's default): FormatTable as TunedTable; FormatPlain as three
// plain tables (the parameters, the measurements, the optima), each one header line and
// a line per row, then the notes, each line starting with the operation, and a line
// "tuned:" on the device, the profile and the objective.
func TunedShow(w io.Writer, t Tuned, f Format) error {
	virtualTimeAbove(w, f, t.VirtualClock())
	ops := tunedOps(t)
	title := fmt.Sprintf("parameters for %s (profile %s), objective %s", text.Clean(t.Client.Model, 80), text.Clean(t.Profile, 32), text.Clean(t.Objective, 32))
	plain := f == FormatPlain
	if !plain {
		fmt.Fprintln(w, "Tuned "+title)
	}
	head := []string{"parameter"}
	for _, op := range ops {
		if plain {
			head = append(head, op, op+" article", op+" verdict")
		} else {
			head = append(head, strings.ToUpper(op), "article", "verdict")
		}
	}
	tb := NewTab(w, f, head...)
	for _, d := range t.Params() {
		row := []any{ParamName(d)}
		for _, op := range ops {
			o := t.Ops[op]
			v, ok := o.Verdicts[d]
			if !ok {
				row = append(row, "-", FmtRange(d, t.Reference[op][d]), "-")
				continue
			}
			row = append(row, t.FmtChosen(op, d), FmtRange(d, v.Article), FmtVerdict(d, v, o.Resolution))
		}
		tb.Append(row...)
	}
	if err := tb.Render(); err != nil {
		return err
	}
	if !plain {
		fmt.Fprintln(w, "Measured in the same interleaved rounds (median, 95% interval; gain of the chosen configuration):")
	}
	mb := NewTab(w, f, "op", "configuration", "size/depth/off/mod/pl", "runs", t.unit(), "95% interval", "gain [95% interval]")
	for _, op := range ops {
		o := t.Ops[op]
		mb.Append(op, "chosen", FmtPoint(o.Chosen.Point), FmtRuns(o.Chosen), FmtValue(o.Unit, o.Chosen.Median), FmtInterval(o.Unit, o.Chosen.CILow, o.Chosen.CIHigh), "")
		for _, name := range []string{sweep.RefArticle, sweep.RefPerftest} {
			if r, ok := o.References[name]; ok {
				mb.Append(op, strings.ReplaceAll(name, "_", " "), FmtPoint(r.Point), FmtRuns(r.Estimate), FmtValue(o.Unit, r.Median), FmtInterval(o.Unit, r.CILow, r.CIHigh), FmtGain(r.Gain))
			}
		}
	}
	if err := mb.Render(); err != nil {
		return err
	}
	if !plain {
		fmt.Fprintln(w, "Optimum per objective (searched: the cheapest configuration statistically equal to the best):")
	}
	ob := NewTab(w, f, "op", "objective", "size/depth/off/mod/pl", "runs", "median", "95% interval", "unit", "decided")
	var missing []string
	for _, op := range ops {
		o := t.Ops[op]
		for _, name := range ObjectiveOrder(o) {
			m, ok := o.Optima[name]
			if !ok {
				missing = append(missing, op+" "+name)
				continue
			}
			ob.Append(op, name, FmtPoint(m.Point), m.Runs, FmtValue(m.Unit, m.Median), FmtInterval(m.Unit, m.CILow, m.CIHigh), UnitName(m.Unit), OptimumState(m))
		}
	}
	if err := ob.Render(); err != nil {
		return err
	}
	for _, op := range ops {
		for i, l := range TunedNotes(op, t.Ops[op]) {
			if i > 0 && !plain {
				l = "  " + l // under the operation's first line
			}
			fmt.Fprintln(w, l)
		}
	}
	for _, m := range missing {
		// Said, not left out in silence.
		why := "no configuration qualifies"
		if strings.Contains(m, "p99") {
			why += fmt.Sprintf(" (a p99 needs %d signalled completions: raise --point-duration)", result.MinSamples(0.99))
		}
		fmt.Fprintf(w, "%s: no optimum: %s\n", m, why)
	}
	if plain {
		// The legend is for people: docs/usage.md says what the verdicts mean.
		fmt.Fprintln(w, "tuned: "+title)
		virtualTimeUnder(w, f, t.VirtualClock())
		return nil
	}
	fmt.Fprint(w, "verdict, at the operation's resolution +-R: agrees = ours is in the article's range (and decided), or\n"+
		"the article's value is within +-R of ours; differs = ours is better by more than the noise allows at R;\n"+
		"article's better = the opposite; cannot tell = not decided even at R within --budget; n/a = no other grid\n"+
		"value stands for the article's, or it cannot run with the rest. \"?\": a parameter left undecided.\n"+
		"Gains are paired by round, from rounds measured after the choice: median [95% interval]. An optimum\n"+
		"\"best of N measured\" is the best of the search's points for an objective whose own final rounds the\n"+
		"budget did not reach.\n")
	return nil
}

func (t Tuned) unit() string {
	for _, op := range tunedOps(t) {
		return UnitName(t.Ops[op].Unit)
	}
	return ""
}

// ObjectiveOrder lists an outcome's optima: bw, rate, p99, then the rest in order.
func ObjectiveOrder(o sweep.Outcome) []string {
	names := []string{"bw", "rate", "p99"}
	var rest []string
	for name := range o.Optima {
		if !slices.Contains(names, name) {
			rest = append(rest, name)
		}
	}
	sort.Strings(rest)
	names = append(names, rest...)
	if o.Objective != "" && !slices.Contains(names, o.Objective) {
		names = append(names, o.Objective)
	}
	return names
}

// ResolutionBasis says where an outcome's resolution came from.
func ResolutionBasis(o sweep.Outcome) string {
	switch o.ResolutionBasis {
	case "asked":
		return "asked for"
	case "assumed":
		return "assumed: no noise measured to plan with"
	}
	return "what the budget buys at the noise measured"
}

// TunedNotes are what the cells cannot hold, one line each: the effort, the resolution
// and noise, the taint, the queue-bound and failing points, every comparison left open
// (the text and HTML reports both show them).
func TunedNotes(op string, o sweep.Outcome) []string {
	var out []string
	add := func(format string, a ...any) { out = append(out, fmt.Sprintf(format, a...)) }
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
	add("%s: %s%s; noise %.1f%% per run", op, state, map[bool]string{true: ", interrupted"}[o.Interrupted], 100*o.Noise)
	add("%s: resolution %s (%s)", op, sweep.FmtResolution(o.Resolution), ResolutionBasis(o))
	if pr := o.Projection; pr != nil && pr.Pairs >= 2 {
		line := fmt.Sprintf("%s probe: %s noise per run over %d pairs, %.1f s a run", op, sweep.FmtNoise(pr.Noise), pr.Pairs, pr.RunS)
		if pr.FinerBudgetS > 0 {
			line += fmt.Sprintf("; %s would take a budget of about %.0f s", sweep.FmtResolution(pr.Finer), pr.FinerBudgetS)
		}
		if pr.AskedBudgetS > 0 {
			line += fmt.Sprintf("; the asked %s takes about %.0f s", sweep.FmtResolution(o.Resolution), pr.AskedBudgetS)
			if !pr.AskedReachedS {
				line += " (beyond the final rounds' looks: some comparisons may stay open)"
			}
		}
		out = append(out, line)
	}
	add("%s %s search: %d / %d points, %d runs (%d reused), %d final rounds, %.0f s; %s", op,
		o.Search, o.Points, o.GridPoints, o.Runs+o.Reused, o.Reused, o.FinalRounds, o.ElapsedS, budget)
	if o.Tainted > 0 {
		n := o.Runs + o.Reused - o.Lengthened
		add("%s: %d of %d runs tainted (NIC counters moved): counted as measured, their cost in the numbers; see counters_flags in the stream", op, o.Tainted, n)
		if 2*o.Tainted > n {
			add("%s: most runs retransmit or drop on this link: where the QP timeout is too short for it (Soft-RoCE under emulation at -u 14), raise --qp-timeout", op)
		}
	}
	if o.QueueBound > 0 {
		add("%s: %d points stayed queue-bound at the longest point duration (too little of a steady window, every queue full: compared on their whole window, fill and drain included)", op, o.QueueBound)
	}
	for _, d := range profiles.Dims {
		v, ok := o.Verdicts[d]
		if !ok {
			continue
		}
		if v.Ratio != nil && v.ArticleValue != nil {
			what := "the article's"
			if v.Nearest {
				what = "the nearest grid value to the article's,"
			}
			add("%s %s: ours %s over %s %s: %s", op, ParamName(d), FmtDim(d, v.Chosen), what, FmtDim(d, *v.ArticleValue), FmtRatio(v.Ratio))
		}
		if v.Unresolved != nil {
			add("%s %s: inconclusive: %s against the best: %s", op, ParamName(d), FmtPoint(v.Unresolved.Point), FmtRatio(v.Unresolved.Ratio))
		}
	}
	if m, ok := o.Optima[o.Objective]; ok && m.ContendersCut > 0 {
		if o.FinalLean {
			add("%s: lean final rounds: the budget bought under %d rounds of every contender, so they measured the chosen point, its variants with the article's values and the references; %d contenders left out: the choice is not decided", op, sweep.MinFinalRounds, m.ContendersCut)
		} else {
			add("%s: %d more points came within reach of the best than the final rounds measure: not decided", op, m.ContendersCut)
		}
	}
	for _, ps := range o.All {
		if ps.Error != "" {
			add("%s %s fails here (not measured again): %s", op, FmtPoint(ps.Point), strings.ReplaceAll(ps.Error, "\n", "; "))
		}
	}
	return out
}
