package htmlreport

import (
	"math"

	"github.com/rdmabench/rdmabench/internal/stat"
)

// welchRatio compares two sets of runs' bandwidths (each at least 2 runs, all > 0): the
// ratio of B's geometric mean over A's and its 95% interval, Welch's t-interval on the
// difference of the mean logs (unequal variances, Welch-Satterthwaite degrees of
// freedom). Runs without a positive bandwidth are not measurements and are left out
// by the callers.
func welchRatio(a, b []float64) (ratio, lo, hi float64) {
	ma, va := stat.MeanVar(logs(a))
	mb, vb := stat.MeanVar(logs(b))
	na, nb := float64(len(a)), float64(len(b))
	d := mb - ma
	sa, sb := va/na, vb/nb
	se := math.Sqrt(sa + sb)
	if se == 0 {
		return math.Exp(d), math.Exp(d), math.Exp(d)
	}
	df := (sa + sb) * (sa + sb) / (sa*sa/(na-1) + sb*sb/(nb-1))
	t := stat.TQuantile(0.975, df)
	return math.Exp(d), math.Exp(d - t*se), math.Exp(d + t*se)
}

func logs(v []float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = math.Log(math.Max(x, 1e-300))
	}
	return out
}
