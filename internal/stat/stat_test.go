package stat

import (
	"math"
	"slices"
	"testing"
)

// same is a == b, NaN equal to NaN.
func same(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }

func TestMedian(t *testing.T) {
	nan := math.NaN()
	for _, c := range []struct {
		xs   []float64
		want float64
	}{
		{nil, nan},
		{[]float64{7}, 7},
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{-1, 5}, 2},
		{[]float64{2, 2, 9, 2}, 2},
		{[]float64{nan, 1, 2}, 1}, // a NaN sorts first
	} {
		in := slices.Clone(c.xs)
		if got := Median(in); !same(got, c.want) {
			t.Errorf("Median(%v) = %v, want %v", c.xs, got, c.want)
		}
		if !slices.EqualFunc(in, c.xs, same) {
			t.Errorf("Median(%v) reordered its input: %v", c.xs, in)
		}
	}
}

func TestMeanVarSD(t *testing.T) {
	nan := math.NaN()
	for _, c := range []struct {
		xs         []float64
		mean, v, s float64
	}{
		{nil, nan, 0, 0},
		{[]float64{3}, 3, 0, 0},
		{[]float64{1, 3}, 2, 2, math.Sqrt2},
		{[]float64{2, 4, 4, 4, 5, 5, 7, 9}, 5, 32.0 / 7, math.Sqrt(32.0 / 7)},
	} {
		m, v := MeanVar(c.xs)
		m2, s := MeanSD(c.xs)
		if !same(m, c.mean) || !same(m2, c.mean) || v != c.v || s != c.s {
			t.Errorf("%v: mean %v %v, variance %v, sd %v; want %v, %v, %v", c.xs, m, m2, v, s, c.mean, c.v, c.s)
		}
	}
}

func TestStudentsT(t *testing.T) {
	// Known values: closed forms for 1 and 2 degrees of freedom, the others from mpmath
	// at 40 digits (the root of its regularised incomplete beta).
	for _, c := range []struct{ p, df, q float64 }{
		{0.975, 1, math.Tan(math.Pi * 0.475)},       // Cauchy: tan(pi (p - 1/2))
		{0.975, 2, 0.95 / math.Sqrt(2*0.975*0.025)}, // (2p-1) / sqrt(2p(1-p))
		{0.975, 10, 2.228138851986274},
		{0.975, 29, 2.0452296421327039},
		{0.995, 5, 4.0321429835552272},
		{0.9995, 3, 12.923978636687964},
		{0.975, 1000, 1.9623390808264081},
		{0.5, 7, 0},
		{1, 7, math.Inf(1)},
		{0.975, 0, math.Inf(1)},
	} {
		if got := TQuantile(c.p, c.df); !(got == c.q || math.Abs(got-c.q) <= 1e-9*math.Abs(c.q)) {
			t.Errorf("TQuantile(%v, %v) = %.16g, want %.16g", c.p, c.df, got, c.q)
		}
	}
	for _, c := range []struct{ x, df, p float64 }{
		{0, 5, 0.5},
		{1, 1, 0.25},                    // Cauchy: 1/2 - atan(x)/pi
		{2, 2, 0.5 - 1/math.Sqrt(6)},    // 1/2 - x / (2 sqrt(2 + x^2))
		{-2, 2, 0.5 + 1/math.Sqrt(6)},   // symmetric
		{2.2281388519862742, 10, 0.025}, // the quantile above
		{math.Inf(1), 3, 0},
		{1e8, 1, 1 / (math.Pi * 1e8)}, // far out (1/(pi x)): 1 - the distribution function would be off by 3e-8
	} {
		if got := TTail(c.x, c.df); math.Abs(got-c.p) > 1e-9*c.p {
			t.Errorf("TTail(%v, %v) = %.16g, want %.16g", c.x, c.df, got, c.p)
		}
	}
}
