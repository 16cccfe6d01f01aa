package report

import (
	"fmt"
	"time"

	"github.com/rdmabench/rdmabench/result"
)

// Thresholds are what `report check` enforces; zero values are not checked.
type Thresholds struct {
	MinBWGbps       float64
	MinLinkFraction float64 // of the client port's rate
	MinMsgRateMpps  float64
	MaxP99          time.Duration
	Baseline        []result.Result // regression check against these, by configuration
	Tolerance       float64         // allowed regression against the baseline, relative
}

// Check returns one line per failure; none means the results pass.
func Check(rs []result.Result, th Thresholds) []string {
	var fails []string
	fail := func(r result.Result, format string, a ...any) {
		fails = append(fails, ConfigKey(r.Config)+": "+fmt.Sprintf(format, a...))
	}
	base := index(th.Baseline)
	if len(rs) == 0 {
		return []string{"no results to check"}
	}
	for _, r := range rs {
		if r.Error != "" {
			fail(r, "the run failed: %s", r.Error)
			continue
		}
		if r.Verify != nil && !r.Verify.OK {
			fail(r, "data verification failed at byte %d", r.Verify.FirstBadOffset)
		}
		if r.Config.Test == "bw" {
			if th.MinBWGbps > 0 && r.BWGbps < th.MinBWGbps {
				fail(r, "bandwidth %.3f Gb/s below the minimum %.3f Gb/s", r.BWGbps, th.MinBWGbps)
			}
			if th.MinLinkFraction > 0 {
				if r.Client.RateGbps <= 0 {
					fail(r, "link rate unknown: cannot check --min-link-fraction")
				} else if f := r.BWGbps / r.Client.RateGbps; f < th.MinLinkFraction {
					fail(r, "bandwidth is %.1f%% of the %.0f Gb/s link, below %.1f%%", 100*f, r.Client.RateGbps, 100*th.MinLinkFraction)
				}
			}
			if th.MinMsgRateMpps > 0 && r.MsgRateMpps < th.MinMsgRateMpps {
				fail(r, "message rate %.4f Mpps below the minimum %.4f Mpps", r.MsgRateMpps, th.MinMsgRateMpps)
			}
		}
		if th.MaxP99 > 0 && r.Lat.Samples > 0 && r.Lat.P99 > th.MaxP99.Nanoseconds() {
			fail(r, "p99 latency %.2f us above the maximum %.2f us", float64(r.Lat.P99)/1e3, float64(th.MaxP99.Nanoseconds())/1e3)
		}
		if b, ok := base[ConfigKey(r.Config)]; ok {
			if r.Config.Test == "bw" && r.BWGbps < b.BWGbps*(1-th.Tolerance) {
				fail(r, "bandwidth regressed %s against the baseline (%.3f -> %.3f Gb/s, tolerance %.1f%%)", delta(r.BWGbps, b.BWGbps), b.BWGbps, r.BWGbps, 100*th.Tolerance)
			}
			if r.Lat.Samples > 0 && b.Lat.Samples > 0 && float64(r.Lat.P99) > float64(b.Lat.P99)*(1+th.Tolerance) {
				fail(r, "p99 latency regressed %s against the baseline (%.2f -> %.2f us, tolerance %.1f%%)", delta(float64(r.Lat.P99), float64(b.Lat.P99)), float64(b.Lat.P99)/1e3, float64(r.Lat.P99)/1e3, 100*th.Tolerance)
			}
		} else if len(th.Baseline) > 0 {
			fail(r, "no baseline result with this configuration")
		}
	}
	return fails
}
