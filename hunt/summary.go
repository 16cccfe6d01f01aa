package hunt

import (
	"fmt"
	"strings"
	"time"
)

// Summary is the outcome as lines for a terminal: a line on what the hunt spent and
// why it stopped, then per finding its class, set and effect, and its two command lines.
func Summary(o Outcome) []string {
	spent := time.Duration(o.BudgetSpentS * float64(time.Second)).Round(time.Second)
	budget := "no budget"
	if o.BudgetS > 0 {
		budget = "a budget of " + time.Duration(o.BudgetS*float64(time.Second)).Round(time.Second).String()
	}
	var why string
	switch {
	case o.Interrupted:
		why = "interrupted"
	case o.BudgetExhausted:
		why = "budget spent"
	case o.Exhausted:
		why = "no configuration left to try"
	default:
		why = "stopped"
	}
	runs := fmt.Sprintf("%d runs", o.Runs)
	if o.PriorRuns > 0 {
		runs += fmt.Sprintf(" (and %d resumed)", o.PriorRuns)
	}
	head := fmt.Sprintf("hunt: %s of %d configurations, %s of %s (%s); %d finding%s, %d candidate%s not confirmed (noise)",
		runs, o.Points, spent, budget, why, len(o.Findings), plural(len(o.Findings)), o.Rejected, plural(o.Rejected))
	if o.RampBound > 0 {
		head += fmt.Sprintf("; %d run%s too short for %s queues to judge its throughput (raise the point duration)",
			o.RampBound, plural(o.RampBound), map[bool]string{true: "its", false: "their"}[o.RampBound == 1])
	}
	if o.TooLong > 0 {
		head += fmt.Sprintf("; %d run%s not started: %s would have run past the budget", o.TooLong, plural(o.TooLong),
			map[bool]string{true: "it", false: "they"}[o.TooLong == 1])
	}
	lines := []string{head}
	if o.Errors > 0 {
		lines = append(lines, fmt.Sprintf("errors: %d of %d runs did not run (a setup that failed, a server that refused: no anomaly); the first: %s",
			o.Errors, o.Runs, o.FirstError))
	}
	for _, b := range o.Background {
		how := fmt.Sprintf("at its control too (%d of %d runs)", b.ControlMoved, b.ControlRuns)
		if b.Probed {
			how = fmt.Sprintf("at the baseline in every run (%d), and with any one of its parameters moved", b.ControlRuns)
		}
		lines = append(lines, fmt.Sprintf("background: %s counter %s moved in %d of %d runs, %s: not judged as an anomaly",
			b.Class, b.Counter, b.Moved, b.Runs, how))
	}
	for _, f := range o.Findings {
		min := ""
		if !f.Minimal {
			min = " [set not minimal: the hunt stopped first]"
		}
		lines = append(lines, fmt.Sprintf("%s %s: %s: %s%s", f.ID, f.Class, f.SetString(), f.Effect.Text, min))
		if len(f.CountersMoved) > 0 {
			lines = append(lines, "    counters moved: "+strings.Join(f.CountersMoved, ", "))
		}
		if f.PausedRuns > 0 {
			lines = append(lines, fmt.Sprintf("    paused: %d of its %d runs (pause frames, PFC or 802.3x, moved on a port during them)", f.PausedRuns, f.Runs))
		}
		lines = append(lines, "    "+f.Command)
		if f.PerftestCommand != "" {
			lines = append(lines, "    "+f.PerftestCommand)
		} else {
			lines = append(lines, "    (perftest cannot express this configuration)")
		}
	}
	return lines
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
