package sweep

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestRatioJudge(t *testing.T) {
	for _, c := range []struct {
		d    []float64
		want Relation
	}{
		{[]float64{0.001, -0.001, 0.002, 0}, Equal},
		{[]float64{0.10, 0.11, 0.09}, Better},
		{[]float64{-0.10, -0.11, -0.09}, Worse},
		{[]float64{0.10, -0.10, 0.05}, Undecided},
		{[]float64{0.5}, Undecided}, // one pair: no interval
	} {
		if got := pairRatio(c.d).Judge(0.02); got != c.want {
			t.Errorf("%v: %s, want %s", c.d, got, c.want)
		}
	}
	// The interval: mean 0.1, sd 0.01, n 3: 0.1 +- 4.303 x 0.01 / sqrt 3.
	r := pairRatio([]float64{0.09, 0.10, 0.11})
	if lo := math.Log(*r.Low); math.Abs(lo-(0.1-4.3027*0.01/math.Sqrt(3))) > 1e-6 {
		t.Errorf("t-interval low %v", lo)
	}
	if math.Abs(tQuantile(0.975, 40)-2.0211) > 1e-3 || math.Abs(tQuantile(0.975, 1000)-1.9623) > 1e-3 {
		t.Errorf("t975: %v %v", tQuantile(0.975, 40), tQuantile(0.975, 1000))
	}
}

func TestTDistribution(t *testing.T) {
	for _, c := range []struct {
		p  float64
		df int
		q  float64
	}{{0.975, 1, 12.706}, {0.975, 2, 4.303}, {0.975, 10, 2.228}, {0.975, 29, 2.045}, {0.995, 5, 4.032}, {0.9995, 3, 12.924}} {
		if q := tQuantile(c.p, c.df); math.Abs(q-c.q) > 2e-3 {
			t.Errorf("t quantile %v, %d df: %v, want %v", c.p, c.df, q, c.q)
		}
	}
	// p is the level at which a comparison starts to decide.
	for _, d := range [][]float64{{0.01, 0.02, 0.015}, {0.001, -0.002, 0.0005, 0.001}, {0.1, -0.05, 0.08}} {
		r := pairRatio(d)
		p := r.p(0.02)
		if p < 1 && (r.JudgeAt(0.02, p*1.01) == Undecided || r.JudgeAt(0.02, p*0.99) != Undecided) {
			t.Errorf("%v: p %v does not separate decided from undecided", d, p)
		}
	}
}

// Two equal points judged at every look of the final rounds, stopping at the first
// decision: calling them better or worse must stay within alpha, not grow with the
// looks (at 95% each look, 40 looks gave 31% at 5% noise).
func TestRepeatedLooksKeepTheError(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 4000
	wrong := 0
	lvl := alpha / float64(len(finalLooks))
	for range n {
		var d []float64
		for _, look := range finalLooks[1:] {
			for len(d) < look {
				d = append(d, math.Sqrt2*0.05*rng.NormFloat64())
			}
			if j := pairRatio(d).JudgeAt(0.02, lvl); j != Undecided {
				if j != Equal {
					wrong++
				}
				break
			}
		}
	}
	if float64(wrong) > alpha*n {
		t.Fatalf("equal points called different %d of %d times, want <= %.0f%%", wrong, n, 100*alpha)
	}
}
