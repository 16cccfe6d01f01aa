//go:build e2e

package e2e

import (
	"sort"
	"testing"

	"github.com/rdmabench/rdmabench/result"
)

// TestClocksAgree: the same test timed with the TSC (forced where the bed's CPU does
// not vouch for it) and with CLOCK_MONOTONIC_RAW gives numbers within the bed's noise
// of each other: a tick rate inverted, not applied or applied twice would be off by far
// more than the factor of 2 allowed here (the bed's run-to-run spread is up to about
// 1.5 for a single latency run). Three alternating runs per clock, medians compared.
func TestClocksAgree(t *testing.T) {
	needDevice(t)
	p := startServer(t)
	dev := srvDev
	if cliDev != "" {
		dev = cliDev
	}
	median := func(xs []float64) float64 { sort.Float64s(xs); return xs[len(xs)/2] }
	for _, tc := range []struct {
		op, test string
		args     []string
		value    func(r result.Result) float64
		what     string
	}{
		{"write", "lat", []string{"-n", "1000"}, func(r result.Result) float64 { return float64(*r.Lat.P50) }, "p50 ns"},
		{"write", "bw", []string{"-s", "4K", "-n", "2000"}, func(r result.Result) float64 { return r.BWGbps }, "Gb/s"},
	} {
		got := map[string][]float64{}
		for i := 0; i < 3; i++ {
			for _, clock := range []string{"tsc", "monotonic"} {
				r := measure(t, client(tc.op, tc.test, dev, p, append(tc.args, "--clock", clock)...)...)
				if want := map[string]string{"tsc": "tsc", "monotonic": "clock_monotonic_raw"}[clock]; r.Clock != want {
					t.Fatalf("--clock %s: the result says %q", clock, r.Clock)
				}
				got[clock] = append(got[clock], tc.value(r))
			}
		}
		tsc, mono := median(got["tsc"]), median(got["monotonic"])
		ratio := tsc / mono
		t.Logf("%s %s: %s median with the TSC %.3f, with CLOCK_MONOTONIC_RAW %.3f (ratio %.3f)", tc.op, tc.test, tc.what, tsc, mono, ratio)
		if ratio < 0.5 || ratio > 2 {
			t.Errorf("%s %s: the two clocks disagree by a factor of %.2f", tc.op, tc.test, ratio)
		}
	}
}
