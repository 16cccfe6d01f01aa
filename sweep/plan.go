package sweep

import (
	"fmt"
	"math"
	"time"

	"github.com/rdmabench/rdmabench/internal/stat"
	"github.com/rdmabench/rdmabench/plan"
	"github.com/rdmabench/rdmabench/profiles"
	"github.com/rdmabench/rdmabench/result"
)

// The references a sweep reports gains over, by the names reports show them under.
const (
	RefArticle  = "article"           // the article's configuration (ArticlePoint)
	RefPerftest = "perftest_defaults" // perftest's defaults (Options.Defaults)
)

// Plan is one operation's sweep.
type Plan struct {
	Op        string
	Base      result.Config    // everything but the swept dimensions
	Grid      map[string][]int // dimension -> ascending values
	Start     plan.Point
	Search    string    // "descent" (default) or "grid"
	Objective Objective // what the search and the chosen configuration optimise
	// Others are further objectives whose optima are confirmed too, from the same rounds.
	Others []Objective
	Repeat int // the gains' rounds: the chosen configuration and the references, this many runs (made even)
	// Resolution asked for: comparisons are decided at +-Resolution (a fraction), and the
	// sweep says what that costs. 0: the resolution the budget buys (see Run).
	Resolution float64
	Budget     time.Duration // the runs' wall times, summed, for the whole plan (plan.Ledger); <= 0: no limit (see Run)
	// MaxDurationS caps how long a timed point is lengthened for its queue (0: never
	// lengthened; see RampShare).
	MaxDurationS float64
	// References are measured in every final round (RefArticle, RefPerftest),
	// for the gains; those on the grid compete too.
	References map[string]plan.Point
	// Article is the tuning article's [lo, hi] per dimension, for the verdicts.
	Article map[string][]int
}

// Options are a tuning sweep's settings as rdmabench sweep's flags give them; Plan
// makes one operation's Plan of them, references included.
type Options struct {
	Profile    profiles.Profile
	Search     string
	Objective  Objective     // the search's (ParseObjective)
	MaxP99     time.Duration // the bound of bw-p99; above 0, bw-p99 is a further objective where it is not the search's
	Resolution float64       // asked for; 0: what the budget buys
	Repeat     int
	Budget     time.Duration
	// PointDurationS: seconds per point (0: the profile's); MaxDurationS: the longest a
	// point is run for its queue (0: four times the point's; never less than it).
	PointDurationS, MaxDurationS float64
	QPs                          int
	Threads                      int    // loop threads (--threads; 0 or 1: one)
	CPUList                      string // --cpu, as given
	QPTimeout                    int    // fixes every point's QP timeout, the references' too (-u); 0: swept where the profile's grid has it
	Counters                     string
	Events                       result.Config // completion events and CQ moderation, for every point
	// Fabric is --disable-pcie-relaxed, --sl and --tclass (DisablePCIeRelaxed, SL,
	// TrafficClass), for every point and reference.
	Fabric result.Config
	// Defaults fills in what a config of its operation leaves unset the way perftest
	// does (the bench's Defaults: package sweep imports no bench package), for the
	// perftest reference; nil: no such reference.
	Defaults func(*result.Config)
}

// pointDuration is how long a point runs: asked for, or (0) the profile's.
func pointDuration(asked float64, p profiles.Profile) float64 {
	if asked <= 0 {
		return p.PointDurationS
	}
	return asked
}

// Durations are how long a point runs and the longest it may run for its queue.
func (o Options) Durations() (point, most float64) {
	point = pointDuration(o.PointDurationS, o.Profile)
	most = o.MaxDurationS
	if most <= 0 {
		most = 4 * point
	}
	return point, max(most, point)
}

// Plan is op's sweep: the profile's grid and start point for op (its QP timeout swept
// where the grid has it, unless QPTimeout fixes it), a bandwidth test of the options'
// settings, every other objective of the report as a further one, and the tuning article's
// configuration and perftest's defaults as the references.
func (o Options) Plan(op string) Plan {
	dur, maxDur := o.Durations()
	base := result.Config{Op: op, Test: result.BW, DurationS: dur, WarmupIterations: o.Profile.WarmupIterations, NumQPs: o.QPs,
		CompletionEvents: o.Events.CompletionEvents, CQModerationCount: o.Events.CQModerationCount, CQModerationUS: o.Events.CQModerationUS,
		Counters: o.Counters, QPTimeout: o.QPTimeout, CPUList: o.CPUList,
		DisablePCIeRelaxed: o.Fabric.DisablePCIeRelaxed, SL: o.Fabric.SL, TrafficClass: o.Fabric.TrafficClass}
	if o.Threads > 1 {
		base.Threads = o.Threads
	}
	var others []Objective
	for _, ob := range Objectives(o.MaxP99) {
		if ob.String() != o.Objective.String() {
			others = append(others, ob)
		}
	}
	grid, start := profiles.Complete(o.Profile.Grid[op], o.Profile.Start[op], map[string]int{"qp_timeout": o.QPTimeout})
	refs := map[string]plan.Point{RefArticle: ArticlePoint(grid, o.Profile.Reference[op], start)}
	if o.Defaults != nil {
		refs[RefPerftest] = o.perftest(op)
	}
	return Plan{Op: op, Base: base, Grid: grid, Start: start, Search: o.Search,
		Objective: o.Objective, Others: others, Repeat: o.Repeat, Resolution: o.Resolution, Budget: o.Budget, MaxDurationS: maxDur,
		Article: o.Profile.Reference[op], References: refs}
}

// perftest is perftest's defaults for a bandwidth test of op (with the options'
// completion events) as a sweep point: its QP timeout is the default's, or QPTimeout
// where that fixes every point's.
func (o Options) perftest(op string) plan.Point {
	c := result.Config{Op: op, Test: result.BW, CompletionEvents: o.Events.CompletionEvents}
	o.Defaults(&c)
	p := PointOf(c)
	if o.QPTimeout != 0 {
		p.QPTimeout = o.QPTimeout
	}
	return p
}

// normalised is the plan as Run runs it: at least one gains' round, the descent
// without a search, and the optional dimensions the grid leaves out held at one value
// (profiles.Complete): the QP timeout at the base config's, at the start point and the
// references too where they do not say one (0). An unknown search is an error.
func (p Plan) normalised() (Plan, error) {
	p.Repeat = max(p.Repeat, 1)
	if p.Search == "" {
		p.Search = "descent"
	}
	if p.Search != "descent" && p.Search != "grid" {
		return p, fmt.Errorf("unknown search %q: want descent or grid", p.Search)
	}
	u := PointOf(p.Base).QPTimeout
	fixed := map[string]int{}
	if len(p.Grid["qp_timeout"]) == 0 {
		fixed["qp_timeout"] = u
	}
	p.Grid, p.Start = profiles.Complete(p.Grid, p.Start, fixed)
	refs := map[string]plan.Point{}
	for name, pt := range p.References {
		if pt.QPTimeout == 0 {
			pt.QPTimeout = u
		}
		refs[name] = pt
	}
	p.References = refs
	if p.Start.QPTimeout == 0 {
		p.Start.QPTimeout = u
	}
	return p, nil
}

const (
	minPairs = 3 // a descent move needs at least this many paired rounds, and so do the final rounds
	// MinFinalRounds: final rounds that buy fewer rounds of every contender than this
	// leave rivals out, then go lean (planFinal).
	MinFinalRounds = minPairs
	maxPairs       = 20 // and re-measures at most this many
	maxRivals      = 48 // contenders of the search's point in the final rounds (more: not decided); the budget may allow fewer (planFinal)
)

// The looks: a descent duel is judged at these numbers of pairs, the final rounds
// after these numbers of rounds (the last: the most final rounds, whatever the
// budget). Each look judges at alpha over the number of looks.
var (
	duelLooks  = []int{3, 5, 8, 12, maxPairs}
	finalLooks = []int{0, 3, 6, 10, 16, 24, 32, 40}
)

// The probe and the planning of the final rounds.
const (
	probeRounds     = 4   // the probe's paired rounds (3 degrees of freedom for the noise)
	planPoints      = 12  // points a final round is planned with: the contenders, the neighbours, the article's values, the references
	firstResolution = 0.1 // the resolution runs are lengthened for before the final rounds fix one
	minResolution   = 0.005
	planSlack       = 4    // contenders a final round is planned for beyond those known (new neighbours)
	outlierNoise    = 4    // a pair this many times noisier than the median pair does not set the plan's noise,
	outlierFloor    = 0.05 // nor one under 5% (where most pairs repeat exactly, 4x the median is no cut)
)

// looksUpTo are the final rounds' looks of a plan of n final rounds: finalLooks below
// n, and n itself. The looks are fixed by the probe, before any final round, so the
// error is spent over them only.
func looksUpTo(n int) []int {
	var out []int
	for _, l := range finalLooks {
		if l < n {
			out = append(out, l)
		}
	}
	return append(out, n)
}

// planResolution is the resolution of a plan of n final rounds of m points at the
// noise sd of a paired difference: at the level of one of its looks, with Holm's first
// step over the m-1 comparisons of a round, the comparisons moderated by a prior of d0
// degrees of freedom (moderatedRatio; 0: none, as before the final rounds).
func planResolution(sd float64, n, m, d0 int) float64 {
	return resolutionFor(sd, n, alpha/float64(len(looksUpTo(n)))/float64(max(m-1, 1)), d0)
}

// planRounds is the fewest final rounds of m points (up to most) that decide at r.
func planRounds(sd, r float64, m, most, d0 int) (int, bool) {
	for n := minPairs; n <= most; n++ {
		if planResolution(sd, n, m, d0) <= r {
			return n, true
		}
	}
	return most, false
}

// pairedNoise is the spread of one paired log difference of the search objective
// (bandwidth's where that has too few), pooled over the probe's pairs and the
// descent's duels (their variances, weighted by their degrees of freedom), and the
// degrees of freedom. A pair whose spread is over outlierNoise times the median pair's
// (and over outlierFloor) is left out: one bimodal configuration (rxe with post lists
// runs at half or full speed) would otherwise set the resolution of every comparison;
// its own comparisons still judge it by its own spread.
func (s *state) pairedNoise() (sd float64, df int) {
	type pairSD struct {
		v  float64 // variance
		df int
	}
	var pairs []pairSD
	seen := map[[2]plan.Point]bool{}
	add := func(a, b plan.Point) {
		if seen[[2]plan.Point{a, b}] || seen[[2]plan.Point{b, a}] {
			return // a pair's differences count once, however many duels it had
		}
		seen[[2]plan.Point{a, b}] = true
		for _, o := range []Objective{s.objs[0], {Name: "bw"}} {
			if d := s.diffs(a, b, o, 0); len(d) >= 2 {
				_, v := stat.MeanSD(d)
				pairs = append(pairs, pairSD{v * v, len(d) - 1})
				return
			}
		}
	}
	if s.partner != nil {
		add(s.p.Start, *s.partner)
	}
	for _, st := range s.o.Descent {
		add(st.To, st.From)
	}
	if len(pairs) == 0 {
		return 0, 0
	}
	vs := make([]float64, len(pairs))
	for i, p := range pairs {
		vs[i] = p.v
	}
	cut := max(stat.Median(vs)*outlierNoise*outlierNoise, outlierFloor*outlierFloor)
	var ss float64
	for _, p := range pairs {
		if len(pairs) < 3 || p.v <= cut {
			ss += p.v * float64(p.df)
			df += p.df
		}
	}
	if df == 0 {
		return 0, 0
	}
	return math.Sqrt(ss / float64(df)), df
}

// FmtResolution is a resolution in words: "+-8%", "+-2.5%"; beyond +-100% (a
// projection), "nothing finer than +-100%".
func FmtResolution(r float64) string {
	switch {
	case r > 1:
		return "nothing finer than +-100%"
	case r >= 0.1:
		return fmt.Sprintf("+-%.0f%%", 100*r)
	case r < 0.001: // the virtual bed's probe can promise +-0.02%: not +-0.0%
		return fmt.Sprintf("+-%.2f%%", 100*r)
	}
	return fmt.Sprintf("+-%.1f%%", 100*r)
}

// FmtNoise is a noise per run (a fraction) as a percentage with the digits it needs: the
// virtual bed's 0.03% is not 0.0%.
func FmtNoise(n float64) string {
	switch {
	case n >= 0.01:
		return fmt.Sprintf("%.1f%%", 100*n)
	case n >= 0.0001:
		return fmt.Sprintf("%.2f%%", 100*n)
	}
	return "under 0.01%"
}

// guess is the number of measurements to expect, for the progress bar.
func (s *state) guess() int {
	final := 3*(1+6+10)*s.p.Repeat + (1+len(s.p.Others)+len(s.p.References))*s.p.Repeat
	if s.p.Search == "grid" {
		return 2*probeRounds + len(gridPoints(s.p.Grid)) + final
	}
	n := 0
	for _, d := range profiles.Dims {
		n += len(s.p.Grid[d]) - 1
	}
	return 2*probeRounds + 2*n + 1 + 6 + 4*2*minPairs + final
}
