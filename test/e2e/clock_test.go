//go:build e2e

package e2e

import (
	"sort"
	"testing"

	"github.com/rdmabench/rdmabench/result"
)

// TestClocksAgree: the same test timed with the TSC (forced where the bed's CPU does
// not vouch for it) and with CLOCK_MONOTONIC_RAW gives numbers within the bed's noise
// of each other: a tick rate inverted or not applied is off by the TSC's GHz, far more
// than the bounds here. Three alternating runs per clock, medians compared, within 5%:
// a quiet NIC's bound (the virtual-clock bed's runs repeat within 0.5%). On the
// real-clock bed the bounds are its noise: a factor of 2 for latency (single runs spread
// up to about 1.5), 3 for bandwidth (single runs spread up to about 3.7 in one boot).
// The ping-pong runs 200 rounds: on the virtual bed's one vCPU each way waits for the
// scheduler's tick (a p50 of 4 ms), which both clocks must time alike all the same.
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
		bound    float64
	}{
		{"write", "lat", []string{"-n", "200"}, func(r result.Result) float64 { return float64(*r.Lat.P50) }, "p50 ns", bound(1.05, 2)},
		{"write", "bw", []string{"-s", "4K", "-n", "2000"}, func(r result.Result) float64 { return r.BWGbps }, "Gb/s", bound(1.05, 3)},
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
		if ratio < 1/tc.bound || ratio > tc.bound {
			t.Errorf("%s %s: the two clocks disagree by a factor of %.2f", tc.op, tc.test, ratio)
		}
	}
}
