package sweep

import (
	"math"
	"slices"
	"sort"
	"sync"

	"github.com/rdmabench/rdmabench/internal/stat"
)

// The statistics of a sweep, in one place. Every decision compares two points on
// runs measured in the same round (interleaved: A B, then B A), so that slow drift of
// the machine hits both alike. The comparison is a t-interval on the mean of the
// paired differences of log goodness (log throughput, or -log p99): under
// multiplicative noise these differences are close to normal and the interval's
// coverage holds from 2 pairs up (wide there, as it should be). Ratios are exp of it.
//
// Decisions are taken while measuring (stop when decided), so each comparison is
// looked at several times; and a sweep decides many comparisons at once. The error
// is spent across both: a stage with L looks judges at level alpha/L (Bonferroni over
// the looks), and the comparisons of one look are judged with Holm's step-down at
// that level. What is shown is the plain 95% interval.

// alpha is the error of a sweep's decision: the chance that a stage of the sweep
// calls two points different (or equal) when they are not.
const alpha = 0.05

// Ratio is how many times better A is than B (>1: A better), from paired runs.
type Ratio struct {
	N      int      `json:"n"`      // pairs (rounds where both were measured)
	Median float64  `json:"median"` // median of the paired ratios
	Low    *float64 `json:"ci_low"` // 95% interval of the (geometric) mean ratio; null below 2 pairs
	High   *float64 `json:"ci_high"`
	mean   float64  // of the log differences
	se     float64  // its standard error
	df     int      // the degrees of freedom of se (N-1; moderated: more)
}

// Relation is what a comparison decided.
type Relation string

const (
	Equal     Relation = "equal"     // the interval lies within the tolerance
	Better    Relation = "better"    // significantly better (the interval is above 1)
	Worse     Relation = "worse"     // significantly worse (the interval is below 1)
	Undecided Relation = "undecided" // the interval straddles 1 and leaves the tolerance
	// NotBetter: undecided, but the interval's top lies within the tolerance: no better
	// than the point it is compared with by more than it. Only the final rounds' decide
	// gives it (non-superiority, Bonferroni over the look's contenders).
	NotBetter Relation = "not_better"
)

// settledRel: a final-round contender judged so is no better than the leader by more than
// the tolerance, so that a parameter's verdict stands whichever of them is best. The
// choice itself is decided only where each is equal or worse.
func settledRel(j Relation) bool { return j == Equal || j == Worse || j == NotBetter }

// pairRatio summarises paired log differences d (A - B).
func pairRatio(d []float64) Ratio {
	r := Ratio{N: len(d)}
	if len(d) == 0 {
		return r
	}
	r.Median = math.Exp(stat.Median(d))
	if len(d) < 2 {
		return r
	}
	m, sd := stat.MeanSD(d)
	r.mean, r.se, r.df = m, sd/math.Sqrt(float64(len(d))), len(d)-1
	lo, hi := r.bounds(alpha)
	r.Low, r.High = &lo, &hi
	return r
}

// moderatedRatio is pairRatio with the spread of d moderated by a prior spread s0 of a
// paired difference on d0 degrees of freedom (the noise pooled over the probe and the
// descent's duels): the variance is theirs pooled, ((n-1) sd^2 + d0 s0^2) / (n-1+d0),
// on n-1+d0 degrees of freedom (the moderated t of empirical Bayes, as limma's). A pair
// as quiet as the rest is judged with the pool's degrees of freedom, not its own few; a
// noisy pair (a bimodal point) keeps most of its own spread. No prior (d0 = 0): pairRatio.
func moderatedRatio(d []float64, s0 float64, d0 int) Ratio {
	r := pairRatio(d)
	if d0 <= 0 || r.N < 2 {
		return r
	}
	_, sd := stat.MeanSD(d)
	n1 := float64(r.N - 1)
	v := (n1*sd*sd + float64(d0)*s0*s0) / (n1 + float64(d0))
	r.se, r.df = math.Sqrt(v/float64(r.N)), r.N-1+d0
	lo, hi := r.bounds(alpha)
	r.Low, r.High = &lo, &hi
	return r
}

// bounds is the (1-a) interval of the ratio (a = 0: no decision possible, infinite).
func (r Ratio) bounds(a float64) (lo, hi float64) {
	if r.N < 2 || a <= 0 {
		return 0, math.Inf(1)
	}
	h := tQuantile(1-a/2, r.df) * r.se
	return math.Exp(r.mean - h), math.Exp(r.mean + h)
}

// Judge decides a ratio against a relative tolerance with its 95% interval: one
// comparison, one look.
func (r Ratio) Judge(tol float64) Relation { return r.JudgeAt(tol, alpha) }

// JudgeAt decides with the (1-a) interval. Equal is the band [1/(1+tol), 1+tol],
// symmetric on the log scale.
func (r Ratio) JudgeAt(tol, a float64) Relation {
	if r.N < 2 || a <= 0 {
		return Undecided
	}
	lo, hi := r.bounds(a)
	switch {
	case lo >= 1/(1+tol) && hi <= 1+tol:
		return Equal
	case lo > 1:
		return Better
	case hi < 1:
		return Worse
	}
	return Undecided
}

// p is the smallest level a at which JudgeAt decides (1: never).
func (r Ratio) p(tol float64) float64 {
	switch {
	case r.N < 2:
		return 1
	case r.se == 0:
		return 0
	}
	m, band := math.Abs(r.mean), math.Log1p(tol)
	return 2 * stat.TTail(max(m, band-m)/r.se, float64(r.df))
}

// holm judges comparisons together at level a (Holm's step-down): the one with the
// smallest p at a/m, the next at a/(m-1), ..., each only while every one before it
// was decided; the others stay undecided.
func holm(rs []Ratio, tol, a float64) []Relation {
	idx := make([]int, len(rs))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(i, j int) bool { return rs[idx[i]].p(tol) < rs[idx[j]].p(tol) })
	out := make([]Relation, len(rs))
	for i := range out {
		out[i] = Undecided
	}
	for k, i := range idx {
		rel := rs[i].JudgeAt(tol, a/float64(len(rs)-k))
		out[i] = rel
		if rel == Undecided {
			break
		}
	}
	return out
}

// tInterval is the 95% t-interval of the mean of v (len >= 2).
func tInterval(v []float64) (lo, hi float64) {
	m, sd := stat.MeanSD(v)
	h := tQuantile(1-alpha/2, len(v)-1) * sd / math.Sqrt(float64(len(v)))
	return m - h, m + h
}

// tQuantile is Student's t's p quantile with df degrees of freedom (stat.TQuantile),
// remembered: the sweep asks for the same few again and again, and each costs ~10us.
func tQuantile(p float64, df int) float64 {
	k := tqKey{p, df}
	tqMu.Lock()
	defer tqMu.Unlock()
	if v, ok := tqCache[k]; ok {
		return v
	}
	v := stat.TQuantile(p, float64(df))
	tqCache[k] = v
	return v
}

type tqKey struct {
	p  float64
	df int
}

var (
	tqMu    sync.Mutex
	tqCache = map[tqKey]float64{}
)

// level is one point's own runs: median and the 95% interval of the geometric mean.
func level(v []float64) (med float64, lo, hi *float64) {
	if len(v) == 0 {
		return 0, nil, nil
	}
	med = stat.Median(v)
	if len(v) < 2 || slices.Min(v) <= 0 {
		return med, nil, nil
	}
	logs := make([]float64, len(v))
	for i, x := range v {
		logs[i] = math.Log(x)
	}
	l, h := tInterval(logs)
	l, h = math.Exp(l), math.Exp(h)
	return med, &l, &h
}

// The resolution. A comparison judged at level a after n paired rounds has an interval
// of half-width h = t(1-a/2, n-1) x sd / sqrt(n) on the log scale, sd being the spread
// of one paired difference. Judged against an equality band of +-2h, every comparison
// is decided: an estimate within h of 0 gives an interval inside the band (equal), one
// beyond h gives an interval that excludes 0 (better or worse). So 2h, as a relative
// difference, is the resolution that n rounds buy: the smallest difference the sweep
// tells from equality, and the band within which it calls points equal.

// resolutionFor is the resolution of n paired rounds at level a (Inf below 2 rounds),
// their spread moderated by a prior of d0 degrees of freedom (moderatedRatio; 0: none).
func resolutionFor(sd float64, n int, a float64, d0 int) float64 {
	if n < 2 {
		return math.Inf(1)
	}
	return math.Expm1(2 * tQuantile(1-a/2, n-1+d0) * sd / math.Sqrt(float64(n)))
}
