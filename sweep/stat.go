package sweep

import (
	"math"
	"slices"
)

// The statistics of a sweep, in one place. Every decision compares two points on
// runs measured in the same round (interleaved: A B, then B A), so that slow drift of
// the machine hits both alike. The comparison is a 95% t-interval on the mean of the
// paired differences of log goodness (log throughput, or -log p99): under
// multiplicative noise these differences are close to normal and the interval's
// coverage holds from 2 pairs up (wide there, as it should be). Ratios are exp of it.

// Ratio is how many times better A is than B (>1: A better), from paired runs.
type Ratio struct {
	N      int      `json:"n"`      // pairs (rounds where both were measured)
	Median float64  `json:"median"` // median of the paired ratios
	Low    *float64 `json:"ci_low"` // 95% interval of the (geometric) mean ratio; null below 2 pairs
	High   *float64 `json:"ci_high"`
}

// Relation is what a comparison decided.
type Relation string

const (
	Equal     Relation = "equal"     // the interval lies within the tolerance
	Better    Relation = "better"    // significantly better (the interval is above 1)
	Worse     Relation = "worse"     // significantly worse (the interval is below 1)
	Undecided Relation = "undecided" // the interval straddles 1 and leaves the tolerance
)

// pairRatio summarises paired log differences d (A - B).
func pairRatio(d []float64) Ratio {
	r := Ratio{N: len(d)}
	if len(d) == 0 {
		return r
	}
	r.Median = math.Exp(median(d))
	if len(d) < 2 {
		return r
	}
	lo, hi := tInterval(d)
	lo, hi = math.Exp(lo), math.Exp(hi)
	r.Low, r.High = &lo, &hi
	return r
}

// Judge decides a ratio against a relative tolerance.
func (r Ratio) Judge(tol float64) Relation {
	if r.Low == nil {
		return Undecided
	}
	lo, hi := *r.Low, *r.High
	switch {
	case lo >= 1-tol && hi <= 1+tol:
		return Equal
	case lo > 1:
		return Better
	case hi < 1:
		return Worse
	}
	return Undecided
}

// tInterval is the 95% t-interval of the mean of v (len >= 2).
func tInterval(v []float64) (lo, hi float64) {
	m, sd := meanSD(v)
	h := t975(len(v)-1) * sd / math.Sqrt(float64(len(v)))
	return m - h, m + h
}

func meanSD(v []float64) (mean, sd float64) {
	for _, x := range v {
		mean += x
	}
	mean /= float64(len(v))
	if len(v) < 2 {
		return mean, 0
	}
	var ss float64
	for _, x := range v {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss / float64(len(v)-1))
}

// t975 is Student's t 0.975 quantile with df degrees of freedom: a table to 30, then
// the Cornish-Fisher expansion (error < 1e-4 there).
func t975(df int) float64 {
	table := [...]float64{12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
		2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
		2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042}
	if df < 1 {
		return math.Inf(1)
	}
	if df <= len(table) {
		return table[df-1]
	}
	z, n := 1.959964, float64(df)
	return z + (z*z*z+z)/(4*n) + (5*math.Pow(z, 5)+16*z*z*z+3*z)/(96*n*n)
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n == 0 {
		return math.NaN()
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// level is one point's own runs: median and the 95% interval of the geometric mean.
func level(v []float64) (med float64, lo, hi *float64) {
	if len(v) == 0 {
		return 0, nil, nil
	}
	med = median(v)
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
