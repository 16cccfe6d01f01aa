package report

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/rdmabench/rdmabench/internal/text"
	"github.com/rdmabench/rdmabench/profiles"
	"github.com/rdmabench/rdmabench/sweep"
)

// ParamShort is dimension d's name in the sweep's short table (TunedSummary):
// plan.Dim.Short.
func ParamShort(d string) string { return dim(d).Short }

// TunedSummary writes what rdmabench sweep prints by default: the tuned table first,
// one row per parameter (the QP timeout's only where it was swept), then a few lines.
//
// FormatTable: columns WRITE and READ (the chosen values, "?" where not decided, the
// flat top in brackets), the article's value and the verdict, each one cell where the
// operations agree and "WRITE's / READ's" where they differ; under it per operation
// the resolution (what "equal" means), the noise and the budget used, then the gains
// over perftest's defaults and the article's configuration, and a legend line.
//
// FormatPlain: the parameters' table as TunedShow's plain one (a column per operation
// and field), then the same lines each starting with the operation, and the "tuned:"
// line.
//
// Everything else (the measurements, the optima, the open comparisons, the notes) is
// in TunedShow (sweep --verbose), the JSON and the HTML report.
func TunedSummary(w io.Writer, t Tuned, f Format) error {
	virtualTimeAbove(w, f, t.VirtualClock())
	ops := tunedOps(t)
	title := fmt.Sprintf("parameters for %s (profile %s), objective %s", text.Clean(t.Client.Model, 80), text.Clean(t.Profile, 32), text.Clean(t.Objective, 32))
	plain := f == FormatPlain
	var tb *Tab
	if plain {
		head := []string{"parameter"}
		for _, op := range ops {
			head = append(head, op, op+" article", op+" verdict")
		}
		tb = NewTab(w, f, head...)
	} else {
		fmt.Fprintln(w, "Tuned "+title)
		head := []string{"parameter"}
		for _, op := range ops {
			head = append(head, strings.ToUpper(op))
		}
		tb = NewTab(w, f, append(head, "article", "verdict")...)
	}
	for _, d := range t.Params() {
		if plain {
			row := []any{ParamName(d)}
			for _, op := range ops {
				o := t.Ops[op]
				if v, ok := o.Verdicts[d]; ok {
					row = append(row, t.FmtChosen(op, d), FmtRange(d, v.Article), FmtVerdict(d, v, o.Resolution))
				} else {
					row = append(row, "-", FmtRange(d, t.Reference[op][d]), "-")
				}
			}
			tb.Append(row...)
			continue
		}
		row := []any{ParamShort(d)}
		var article, verdict []string
		for _, op := range ops {
			row = append(row, t.FmtChosen(op, d))
			v, ok := t.Ops[op].Verdicts[d]
			if !ok {
				article, verdict = append(article, FmtRange(d, t.Reference[op][d])), append(verdict, "-")
				continue
			}
			article, verdict = append(article, FmtRange(d, v.Article)), append(verdict, shortVerdict(d, v))
		}
		tb.Append(append(row, joinSame(article), joinSame(verdict))...)
	}
	if err := tb.Render(); err != nil {
		return err
	}
	for _, op := range ops {
		for _, l := range summaryLines(op, t.Ops[op], plain) {
			fmt.Fprintln(w, l)
		}
	}
	if plain {
		fmt.Fprintln(w, "tuned: "+title)
		virtualTimeUnder(w, f, t.VirtualClock())
		return nil
	}
	legend := `"?": not decided`
	if len(ops) == 2 {
		legend += `; "a / b": WRITE's / READ's`
	}
	fmt.Fprintln(w, legend+"; all the numbers and notes: --verbose, --json, --html")
	return nil
}

// shortVerdict is a verdict in words without its resolution (the short table states
// it once per operation), and the grid value it was measured at where the tuning
// article's own is not on the grid: "agrees (vs 512)".
func shortVerdict(d string, v sweep.Verdict) string {
	w, ok := VerdictWords[v.Verdict]
	if !ok {
		w = text.Clean(v.Verdict, 32)
	}
	if v.Nearest && v.ArticleValue != nil && v.Verdict != sweep.NotApplicable {
		w += " (vs " + FmtDim(d, *v.ArticleValue) + ")"
	}
	return w
}

// joinSame is one cell for the operations' values: the value where they are all the
// same, else each operation's, in order, separated by " / ".
func joinSame(vals []string) string {
	if len(vals) == 0 {
		return "-"
	}
	for _, v := range vals[1:] {
		if v != vals[0] {
			return strings.Join(vals, " / ")
		}
	}
	return vals[0]
}

// Params are the parameters the report's tables show a row for: profiles.Dims, an
// optional one only where the sweep varied it (swept: a sweep that held the QP timeout
// at perftest's 14, or at -u's, did not tune it; a report from before a dimension was
// added, or one whose profile left it out, shows none for it).
func (t Tuned) Params() []string {
	var out []string
	for _, d := range profiles.Dims {
		if !slices.Contains(profiles.Optional, d) || t.swept(d) {
			out = append(out, d)
		}
	}
	return out
}

// swept says whether dimension d was tuned: the search measured more than one value of
// it in some operation (the references are not the search's points).
func (t Tuned) swept(d string) bool {
	for _, o := range t.Ops {
		seen := map[int]bool{norm(d, o.Chosen.Point.Int(d)): true}
		for _, ps := range o.All {
			seen[norm(d, ps.Point.Int(d))] = true
		}
		if len(seen) > 1 {
			return true
		}
	}
	return false
}

// builtin is the built-in profile of the report's name, if there is one (a tuned
// report names its profile, and does not carry its grid).
func (t Tuned) builtin() (profiles.Profile, bool) {
	for _, p := range builtinProfiles() {
		if p.Name == t.Profile {
			return p, true
		}
	}
	return profiles.Profile{}, false
}

// norm is a value of d as the sweep ran it (plan.Dim.Canon: a QP timeout of 0 is the
// default).
func norm(d string, v int) int { return dim(d).Canon(v) }

// FmtChosen is the chosen value of parameter d for op as a cell: "512", "512 ?" where
// the parameter is not decided, and the flat top where the chosen value has company
// (sweep.Verdict.Equal): "32 (32-512 equal)", "32 (32,512 equal)" (FmtEqual); "-"
// without a verdict.
func (t Tuned) FmtChosen(op, d string) string {
	v, ok := t.Ops[op].Verdicts[d]
	if !ok {
		return "-"
	}
	s := FmtDim(d, v.Chosen)
	if !v.Decided {
		s += " ?"
	}
	if len(v.Equal) > 1 {
		s += " (" + FmtEqual(d, v.Equal, t.grid(op, d)) + " equal)"
	}
	return s
}

// FmtEqual renders a flat top, the values of d found equal to the best (sorted): as a
// range "32-512" where they are three or more values contiguous on grid (every grid
// value from the first to the last is among them), else as a list "32,128,512" (two
// values are always listed: "1,4" is as short as "1-4" and cannot be read as 2 and 3).
// A nil grid (unknown) lists them.
func FmtEqual(d string, equal, grid []int) string {
	if len(equal) >= 3 && contiguous(equal, grid) {
		return FmtDim(d, equal[0]) + "-" + FmtDim(d, equal[len(equal)-1])
	}
	out := make([]string, len(equal))
	for i, v := range equal {
		out[i] = FmtDim(d, v)
	}
	return strings.Join(out, ",")
}

// contiguous says whether the sorted values vals are consecutive values of grid.
func contiguous(vals, grid []int) bool {
	g := slices.Clone(grid)
	slices.Sort(g)
	g = slices.Compact(g)
	i := slices.Index(g, vals[0])
	if i < 0 || i+len(vals) > len(g) {
		return false
	}
	return slices.Equal(g[i:i+len(vals)], vals)
}

// grid is the grid of d for op that a flat top is contiguous on: the built-in profile
// of the report's name (a tuned report does not carry its grid), with every value the
// sweep measured; nil where no built-in profile has the name (then FmtEqual lists).
func (t Tuned) grid(op, d string) []int {
	p, _ := t.builtin()
	g := slices.Clone(p.Grid[op][d])
	if len(g) == 0 {
		return nil
	}
	for i := range g {
		g[i] = norm(d, g[i])
	}
	o := t.Ops[op]
	g = append(g, norm(d, o.Chosen.Point.Int(d)))
	for _, ps := range o.All {
		g = append(g, norm(d, ps.Point.Int(d)))
	}
	return g
}

var builtinProfiles = sync.OnceValue(func() []profiles.Profile {
	all, _ := profiles.All()
	return all
})

// summaryLines are an operation's two lines under the short table (TunedSummary): the
// resolution (what "equal" means), the noise, the budget used (and "stopped: decided"
// where the sweep decided before the budget was spent); then, indented under it (plain:
// starting with the operation), the gains of the chosen configuration over perftest's
// defaults and the article's configuration (GainWords).
func summaryLines(op string, o sweep.Outcome, plain bool) []string {
	var res string
	switch r := o.Resolution; {
	case r <= 0:
		res = "no resolution (no final rounds)"
	case r > 1:
		res = "nothing decided finer than +-100%"
	default:
		res = "equal within " + sweep.FmtResolution(r)
	}
	budget := fmt.Sprintf("%.0f s, no budget", o.BudgetSpentS)
	if o.BudgetS > 0 {
		budget = fmt.Sprintf("budget %.0f of %.0f s", o.BudgetSpentS, o.BudgetS)
	}
	switch {
	case o.Interrupted:
		budget += ", interrupted"
	case o.Decided && !o.BudgetExhausted && o.BudgetS > 0:
		budget += ", stopped: decided"
	case o.Decided:
		budget += ", decided"
	}
	if o.Noise > 0 {
		res += fmt.Sprintf(" (noise %s a run)", sweep.FmtNoise(o.Noise))
	}
	first := fmt.Sprintf("%s: %s; %s", op, res, budget)
	gain := func(name string) string {
		r, ok := o.References[name]
		if !ok {
			return "not measured"
		}
		return GainWords(r.Gain, o.Resolution)
	}
	second := fmt.Sprintf("gain over perftest's defaults: %s; over the article's: %s", gain(sweep.RefPerftest), gain(sweep.RefArticle))
	if plain {
		return []string{first, op + ": " + second}
	}
	return []string{first, "  " + second}
}

// GainWords is a gain judged as the sweep judges a comparison at the resolution r
// (sweep.Ratio.JudgeAt): its 95% interval within +-r of no change, "equal"; beyond no
// change, the gain with its interval ("+18.8% [+17.0%, +20.5%]"); else "cannot tell".
func GainWords(g sweep.Gain, r float64) string {
	switch {
	case g.Pairs == 0 || g.GainMedian == nil:
		return "not measured"
	case g.GainLow == nil || g.GainHigh == nil:
		return "cannot tell (1 pair)"
	case r > 0 && *g.GainLow >= 1/(1+r)-1 && *g.GainHigh <= r:
		return "equal"
	case *g.GainLow > 0 || *g.GainHigh < 0:
		return FmtGain(g)
	}
	return "cannot tell"
}
