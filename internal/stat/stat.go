// Package stat holds the statistics that more than one package decides with: the
// median, the mean and standard deviation, and Student's t distribution (gonum's). The
// sweep's verdicts, hunt's findings, a fleet's judgements and the HTML report's
// comparisons rest on them, so each is written once here and checked against known
// values. It depends on nothing of the module's.
//
// A statistic with one user stays with it: Welch's interval in report/html, the
// binomial tail in hunt, Jain's index in result (which the public library imports, so it
// does not pull gonum in through here).
package stat

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"
)

// Median of xs (the mean of the middle two for an even count); NaN for none. xs is
// left as it is (a sorted copy is used); a NaN sorts first.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Sorted(slices.Values(xs))
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// MeanVar is the mean of xs (NaN for none) and their sample variance (n-1; 0 below 2).
func MeanVar(xs []float64) (mean, variance float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	if len(xs) < 2 {
		return mean, 0
	}
	for _, x := range xs {
		variance += (x - mean) * (x - mean)
	}
	return mean, variance / float64(len(xs)-1)
}

// MeanSD is the mean of xs (NaN for none) and their sample standard deviation (n-1; 0
// below 2).
func MeanSD(xs []float64) (mean, sd float64) {
	mean, v := MeanVar(xs)
	return mean, math.Sqrt(v)
}

// TQuantile is the p quantile of Student's t with df degrees of freedom; +Inf for p >= 1
// or df <= 0.
func TQuantile(p, df float64) float64 {
	if df <= 0 || p >= 1 {
		return math.Inf(1)
	}
	return t(df).Quantile(p)
}

// TTail is P(T > x) for T Student's t with df degrees of freedom (computed as the tail,
// not as 1 - the distribution function, so that it keeps its precision far out).
func TTail(x, df float64) float64 { return t(df).Survival(x) }

func t(df float64) distuv.StudentsT { return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df} }
