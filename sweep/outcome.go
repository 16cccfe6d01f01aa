package sweep

import (
	"errors"

	"github.com/rdmabench/rdmabench/plan"
)

// Outcome is a finished (or interrupted) sweep of one operation: numbers and points
// only; the renderers format them.
type Outcome struct {
	Op        string `json:"op"`
	Search    string `json:"search"`
	Objective string `json:"objective"`
	Unit      string `json:"unit"`
	// Resolution: every comparison of the final rounds, the verdicts and the choice is
	// decided at +-Resolution (a fraction: 0.08 is +-8%); the descent's at the probe's
	// projection. ResolutionBasis: "asked" (Plan.Resolution), "budget" (what the final
	// share of the budget buys at the noise measured, see FinalPlan) or "assumed" (no
	// noise measured to plan with).
	Resolution      float64     `json:"resolution"`
	ResolutionBasis string      `json:"resolution_basis"`
	Projection      *Projection `json:"projection"`
	FinalPlan       *FinalPlan  `json:"final_plan"`
	// FinalLean: the budget bought too few final rounds of every contender, so they
	// measured only the chosen point, its variants with the tuning article's values and the
	// references (the verdicts and the gains); the choice is then not decided.
	FinalLean       bool    `json:"final_lean,omitempty"`
	Repeat          int     `json:"repeat"`
	BudgetS         float64 `json:"budget_s"` // 0: no limit
	BudgetSpentS    float64 `json:"budget_spent_s"`
	BudgetExhausted bool    `json:"budget_exhausted"`
	GridPoints      int     `json:"grid_points"`        // valid points on the grid
	Points          int     `json:"points_measured"`    // distinct grid points measured (or failed)
	Runs            int     `json:"runs"`               // measurements made in this invocation
	Reused          int     `json:"runs_reused"`        // measurements taken from --resume
	Tainted         int     `json:"runs_tainted"`       // runs measured while NIC counters moved (counters_flags), counted as measured
	Lengthened      int     `json:"runs_lengthened"`    // runs measured again, longer, for their queue (not counted)
	QueueBound      int     `json:"points_queue_bound"` // points whose runs stayed mostly ramp-up and drain at the cap
	FinalRounds     int     `json:"final_rounds"`
	ElapsedS        float64 `json:"elapsed_s"`
	Noise           float64 `json:"noise"` // run-to-run noise of the objective (relative)
	// Decided: the chosen point is established as equal to the best, every contender
	// decided. Chosen is the cheapest configuration statistically equal to the best.
	Decided    bool                 `json:"decided"`
	Chosen     Estimate             `json:"chosen"`
	Best       Estimate             `json:"best"` // the highest estimate (Chosen when it is the cheapest)
	References map[string]Reference `json:"references"`
	Verdicts   map[string]Verdict   `json:"verdicts"` // per dimension
	Optima     map[string]Optimum   `json:"optima"`   // per objective, the search's included
	Descent    []Step               `json:"descent_steps"`
	All        []PointSummary       `json:"points"`
	// Interrupted: cancelled before the end; the outcome holds what was measured.
	Interrupted bool `json:"interrupted"`
}

// Estimate is what the runs of one point say about one objective.
type Estimate struct {
	Point   plan.Point `json:"point"`
	Runs    int        `json:"runs"`         // runs counted (the final rounds, where the point was in them)
	Tainted int        `json:"runs_tainted"` // of them, measured while NIC counters moved (counted as measured)
	Median  float64    `json:"median"`       // of the objective's value, in its unit
	CILow   *float64   `json:"ci_low"`       // 95% interval of the geometric mean; null below 2 runs
	CIHigh  *float64   `json:"ci_high"`      // (an interval of the level: it includes drift)
	// Medians of the other metrics over the same runs.
	BWGbps      float64 `json:"bw_gbit_per_s"`
	MsgRateMpps float64 `json:"msg_rate_mpps"`
	P99NS       *int64  `json:"lat_p99_ns"` // null where no run had a supported p99
}

// Gain is how much better a configuration is than a reference, as a fraction (0.1:
// 10% more bandwidth, or a 1.1 times lower p99), from runs paired round by round; null
// where no round paired them.
type Gain struct {
	Pairs      int      `json:"pairs"`
	GainMedian *float64 `json:"gain_median"`
	GainLow    *float64 `json:"gain_ci_low"` // 95% interval; null below 2 pairs
	GainHigh   *float64 `json:"gain_ci_high"`
}

// Reference is a reference configuration, measured in the same rounds as the chosen one.
type Reference struct {
	Estimate
	Gain // of the chosen configuration over this one
}

// Comparison is one point against the best, where it was not decided.
type Comparison struct {
	Point plan.Point `json:"point"`
	Ratio *Ratio     `json:"ratio"` // this point over the best (>1: better); null: never measured in the same round
}

// comparison is pt against the best, by r (nil ratio where no round paired them).
func comparison(pt plan.Point, r Ratio) Comparison {
	c := Comparison{Point: pt}
	if r.N > 0 {
		c.Ratio = &r
	}
	return c
}

// Optimum is one objective's optimum. Its estimate and gains are from the gains'
// rounds (measured afresh once the choice was made).
type Optimum struct {
	Objective string `json:"objective"`
	Unit      string `json:"unit"`
	Estimate
	// Basis: "searched" (the search's objective: decided as below) or "best_measured"
	// (a further objective: the best of the Contenders points measured for the search,
	// by their runs; not an optimum the sweep looked for, never decided).
	Basis string `json:"basis"`
	// Contenders: the points it was chosen among; ContendersCut: points within reach
	// left out of the final rounds (then it is not decided).
	Contenders    int `json:"contenders"`
	ContendersCut int `json:"contenders_cut"`
	// Decided: every contender, the chosen point's one-parameter neighbours included,
	// is statistically equal to or worse than the best; the chosen point is the
	// cheapest of the equal ones. Otherwise Unresolved lists the comparisons that the
	// budget left open, and the point is the best estimate.
	Decided    bool            `json:"decided"`
	Noise      float64         `json:"noise"` // run-to-run noise of this metric (relative), from the paired runs
	Gains      map[string]Gain `json:"gains"` // over each reference
	Unresolved []Comparison    `json:"unresolved"`
}

// Verdict compares one parameter of the chosen configuration with the tuning article.
type Verdict struct {
	Article      []int `json:"article"`       // the article's [lo, hi]; null where it gives none
	Chosen       int   `json:"chosen"`        // the chosen value
	ArticleValue *int  `json:"article_value"` // the grid value that stands for the article's range, compared with it; null without a range
	// Nearest: the grid has no value in the tuning article's range; ArticleValue is the one
	// nearest to it (what was measured, not the tuning article's own).
	Nearest bool   `json:"article_value_nearest,omitempty"`
	Verdict string `json:"verdict"` // Agrees, Differs, ArticleBetter, CannotTell, NotApplicable, NoArticle
	Ratio   *Ratio `json:"ratio"`   // chosen over the article's value, where they differ and were measured in the same rounds
	// Equal: the values of this parameter (the others as chosen) that the final rounds
	// found equal to the best within the resolution, the chosen one among them, sorted:
	// a flat top ("SQ depth 32 to 512: equal within +-0.7%; the cheapest is 32"). A
	// value not in the final rounds is not in it. Null where the choice has no equal.
	Equal []int `json:"equal_values,omitempty"`
	// Decided: every measured alternative for this parameter is decided against the
	// best; otherwise Unresolved is the most threatening open comparison.
	Decided    bool        `json:"decided"`
	Unresolved *Comparison `json:"unresolved"`
}

// Verdicts.
const (
	Agrees        = "agrees"         // ours is in the article's range (and decided), or its value is within the tolerance of ours
	Differs       = "differs"        // ours is significantly better than the article's value
	ArticleBetter = "article_better" // the article's value is significantly better than ours (the choice is not decided then)
	CannotTell    = "cannot_tell"    // the intervals did not decide (noise, budget)
	NotApplicable = "not_applicable" // no other grid value stands for the article's range, or it cannot run with the rest of ours
	NoArticle     = "no_article"     // the article gives no value for this parameter
)

// Bases of an optimum.
const (
	Searched     = "searched"
	BestMeasured = "best_measured"
)

// PointSummary is every measured point, all its runs.
type PointSummary struct {
	Point       plan.Point `json:"point"`
	Runs        int        `json:"runs"`
	Tainted     int        `json:"runs_tainted"` // runs measured while NIC counters moved
	BWGbps      float64    `json:"bw_gbit_per_s"`
	MsgRateMpps float64    `json:"msg_rate_mpps"`
	P99NS       *int64     `json:"lat_p99_ns"`
	// DurationS: how long the point's runs were (the plan's, or longer for its queue);
	// RampShare: the largest of its runs' (result.Result.RampShare); QueueBound: above a
	// quarter of the resolution even at Plan.MaxDurationS: its runs are mostly ramp-up
	// and drain, and its numbers are not to be trusted as the link's.
	DurationS  float64  `json:"duration_s,omitempty"`
	RampShare  *float64 `json:"ramp_share"`
	QueueBound bool     `json:"queue_bound,omitempty"`
	Error      string   `json:"error,omitempty"` // a failed point ("fails here"): not measured again
}

// ErrNoFeasible means no measured point met the objective.
var ErrNoFeasible = errors.New("no measured configuration meets the objective")
