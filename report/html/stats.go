package htmlreport

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// welchRatio compares two sets of runs' bandwidths (each at least 2 runs, all > 0): the
// ratio of B's geometric mean over A's and its 95% interval, Welch's t-interval on the
// difference of the mean logs (unequal variances, Welch-Satterthwaite degrees of
// freedom). Runs without a positive bandwidth are not measurements and are left out
// by the callers.
func welchRatio(a, b []float64) (ratio, lo, hi float64) {
	ma, va := meanVar(logs(a))
	mb, vb := meanVar(logs(b))
	na, nb := float64(len(a)), float64(len(b))
	d := mb - ma
	sa, sb := va/na, vb/nb
	se := math.Sqrt(sa + sb)
	if se == 0 {
		return math.Exp(d), math.Exp(d), math.Exp(d)
	}
	df := (sa + sb) * (sa + sb) / (sa*sa/(na-1) + sb*sb/(nb-1))
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile(0.975)
	return math.Exp(d), math.Exp(d - t*se), math.Exp(d + t*se)
}

func logs(v []float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = math.Log(math.Max(x, 1e-300))
	}
	return out
}

// meanVar is the mean and the sample variance (n-1).
func meanVar(v []float64) (mean, variance float64) {
	for _, x := range v {
		mean += x
	}
	mean /= float64(len(v))
	for _, x := range v {
		variance += (x - mean) * (x - mean)
	}
	return mean, variance / float64(len(v)-1)
}
