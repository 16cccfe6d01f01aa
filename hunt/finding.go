package hunt

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/rdmabench/rdmabench/internal/stat"
	"github.com/rdmabench/rdmabench/result"
)

// finish completes a finding at point r from its confirming runs best: the set found
// (set, for DimNames[:done]; the parameters not varied yet are held at r's values, and
// the finding is then not minimal), its effect and command lines.
func (h *hunter) finish(f Finding, r Point, best trialOut, moved map[string]bool, set []Condition, done int, spent int, err error) Finding {
	f.Set = set
	for _, d := range DimNames[done:] {
		if len(h.p.Space.values(d)) > 1 {
			f.Set = append(f.Set, Condition{Dim: d, Op: "=", Values: []string{r.Get(d)}, Held: true})
		}
	}
	if f.Set == nil {
		f.Set = []Condition{}
	}
	f.Minimal = err == nil
	f.Point = r
	maps.Copy(moved, best.moved)
	f.CountersMoved = slices.Sorted(maps.Keys(moved))
	f.Runs, f.PausedRuns = len(best.values), best.paused
	f.TrialRuns = spent
	f.ErrorText = best.errText
	f.Effect = h.effect(f, best)
	f.ReproConfig = r.Config(h.p.Base)
	f.Command, f.PerftestCommand = Reproducer(f.ReproConfig, h.p.Server), Perftest(f.ReproConfig, h.p.Server)
	return f
}

// effect states a finding's effect from its confirming runs: the median and range of
// the rule's metric, and a sentence.
func (h *hunter) effect(f Finding, out trialOut) Effect {
	vals := out.values
	if f.Class == Counters {
		vals = nil
		for _, m := range out.moves {
			if d, ok := m[f.Key]; ok {
				vals = append(vals, float64(d))
			}
		}
	}
	e := Effect{Runs: len(vals), Median: stat.Median(vals)}
	if len(vals) > 0 {
		e.Min, e.Max = slices.Min(vals), slices.Max(vals)
	}
	n := len(vals)
	rng := func(format string) string {
		return fmt.Sprintf("%d runs: "+format+"-"+format, n, e.Min, e.Max)
	}
	switch {
	case f.Class == LowThroughput && f.Key == KeyLink:
		e.Metric = "bw_over_link"
		e.Text = fmt.Sprintf("%.2fx the %g Gb/s link (%s)", e.Median, h.p.LinkGbps, rng("%.2f"))
	case f.Class == LowThroughput:
		e.Metric, e.Reference = "bw_over_best_seen", out.ref
		e.Gbps, e.ReferenceGbps = stat.Median(out.gbps), stat.Median(out.refGbps)
		e.Text = fmt.Sprintf("%.2fx the best %s %s throughput seen (%.3g against %.3g Gb/s, the best point re-measured alongside; %s)",
			e.Median, strings.ToUpper(f.Point.Op), result.FormatSize(f.Point.MsgSizeBytes), e.Gbps, e.ReferenceGbps, rng("%.2f"))
	case f.Class == Tail:
		e.Metric = "p99_over_p50"
		e.Text = fmt.Sprintf("p99 %.1fx the p50 (%s)", e.Median, rng("%.1f"))
	case f.Class == Unfair:
		e.Metric = "share_ratio"
		what := map[string]string{
			KeyPeers:      "the slowest peer got %.2fx the fastest peer's throughput (uneven beyond the runs' edges; %s)",
			KeyQPs:        "the slowest QP got %.2fx the fastest QP's messages (uneven beyond the runs' edges; %s)",
			KeyThreads:    "the slowest thread got %.2fx the fastest thread's messages (uneven beyond the runs' edges; %s)",
			KeyDirections: "the slower direction got %.2fx the faster's throughput (%s)",
		}[f.Key]
		if what == "" {
			what = "the slowest peer or direction got %.2fx the fastest's throughput (%s)"
		}
		e.Text = fmt.Sprintf(what, e.Median, rng("%.2f"))
	case f.Class == Counters:
		e.Metric = "counter_delta"
		e.Text = fmt.Sprintf("%s moved in %d of %d runs, +%.0f a run (%s)", f.Key, n, n, e.Median, rng("%.0f"))
	case f.Class == Failed:
		e.Metric = "failed_runs"
		e.Text = fmt.Sprintf("failed in %d of %d runs: %s", n, n, f.Key)
	}
	return e
}

// addFinding keeps a new finding and records it: its ID the next, or id where given (a
// prior finding completed: the same ID, recorded again); one whose class, key and set
// are another known finding's is a duplicate, counted and dropped.
func (h *hunter) addFinding(f Finding, id string) error {
	if f.Class == "" {
		return nil
	}
	for _, g := range h.found {
		if g.ID != id && g.Class == f.Class && g.Key == f.Key && sameSet(g.Set, f.Set) {
			h.o.Duplicates++
			return nil
		}
	}
	if id == "" {
		h.nextID++
		id = fmt.Sprintf("F%d", h.nextID)
		h.o.New++
	}
	f.ID = id
	if h.record != nil {
		if err := h.record(findingRecord(&f)); err != nil {
			return fmt.Errorf("hunt: recording a finding: %w", err)
		}
	}
	h.found = append(h.found, f)
	return nil
}

// knownFor says whether a finding of class c and key k holds p: p's runs are not screened
// for it again (a finding whose set is empty holds every point: its class and key would
// only make it again). An unfair finding of a hunt before the unfair keys (its key
// empty) stands for every key.
func (h *hunter) knownFor(p Point, c Class, k string) bool {
	for _, f := range h.found {
		if f.Class == c && (f.Key == k || c == Counters && f.moved(k) || c == Unfair && f.Key == "") && f.Matches(p) {
			return true
		}
	}
	return false
}

// known says whether nothing new can show at p, so that the search does not propose it:
// every class the rules look for is known there, by findings whose sets are not empty (a
// failure known there stands for the throughput, tail and fairness too: a failed run
// shows none of them). A finding whose set is empty is never read here: it would make
// every point known, and end the search.
func (h *hunter) known(p Point) bool {
	covered := map[Class]bool{}
	for _, f := range h.found {
		if len(f.Set) > 0 && f.Matches(p) {
			covered[f.Class] = true
		}
	}
	if covered[Failed] {
		covered[LowThroughput], covered[Tail], covered[Unfair] = true, true, true
	}
	for _, c := range Classes {
		if h.r.on(c) && !covered[c] {
			return false
		}
	}
	return true
}
