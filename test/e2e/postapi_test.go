//go:build e2e

package e2e

import (
	"testing"
)

// TestPostAPIs: both post paths run every loop on Soft-RoCE, which offers the extended
// QP API: WRITE and READ bandwidth with a post list (--verify checks every byte that
// arrived), both latency tests; each result names the path it ran, and auto picks
// ibv_post_send on rxe, as perftest does. The numbers of the two paths are compared by
// make parity (POST_API=wr), not here.
func TestPostAPIs(t *testing.T) {
	needDevice(t)
	p := startServer(t)
	dev := srvDev
	if cliDev != "" {
		dev = cliDev
	}
	for _, api := range []string{"wr", "legacy", "auto"} {
		want := api
		if api == "auto" {
			want = "legacy" // rxe is not on perftest's list
		}
		for _, tc := range []struct {
			op, test string
			args     []string
		}{
			{"write", "bw", []string{"-s", "4K", "-n", "2000", "-q", "2", "-l", "4", "--verify"}},
			{"read", "bw", []string{"-s", "4K", "-n", "2000", "-l", "4", "--verify"}},
			{"write", "lat", []string{"-n", "300"}},
			{"read", "lat", []string{"-n", "300"}},
		} {
			r := measure(t, client(tc.op, tc.test, dev, p, append(tc.args, "--post-api", api)...)...)
			if r.Config.PostAPI != want {
				t.Errorf("%s %s --post-api %s: the result says post_api %q, want %q", tc.op, tc.test, api, r.Config.PostAPI, want)
			}
			if tc.test == "bw" && (r.Iterations == 0 || r.Verify == nil || !r.Verify.OK) {
				t.Errorf("%s %s --post-api %s: %d messages, verify %+v", tc.op, tc.test, api, r.Iterations, r.Verify)
			}
			if tc.test == "lat" && (r.Lat.Samples < 300 || r.Lat.P50 == nil) {
				t.Errorf("%s %s --post-api %s: %d samples", tc.op, tc.test, api, r.Lat.Samples)
			}
			p50 := int64(-1)
			if r.Lat.P50 != nil {
				p50 = *r.Lat.P50
			}
			t.Logf("%s %s --post-api %s: post_api %s, %.3f Gb/s, p50 %d ns", tc.op, tc.test, api, r.Config.PostAPI, r.BWGbps, p50)
		}
	}
}
