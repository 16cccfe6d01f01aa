package report

import (
	"fmt"
	"strings"
	"time"

	"github.com/rdmabench/rdmabench/counters"
	"github.com/rdmabench/rdmabench/internal/text"
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
	// NoTaint fails results measured while NIC counters moved (result.Tainted).
	NoTaint bool
}

// Check returns one line per failure (none means the results pass) and notes: checks
// that could not be made, said rather than passed in silence.
//
// A p99 the sample count does not support (nil) is never compared: --max-p99 on such
// a result fails, since the bound was asked for and cannot be shown to hold. Against a
// baseline, p99 regression is checked when both have a p99; a result that lacks the
// p99 its baseline has fails (the run lost a measurement CI relied on), and a baseline
// without one only earns a note (there is nothing to regress from).
func Check(rs []result.Result, th Thresholds) (fails, notes []string) {
	// Every line is cleaned whole: a results file is input (its error, its
	// verification's detail).
	fail := func(r result.Result, format string, a ...any) {
		fails = append(fails, ConfigKey(r.Config)+": "+text.Clean(fmt.Sprintf(format, a...), maxErrorText))
	}
	base := index(th.Baseline)
	if len(rs) == 0 {
		return []string{"no results to check"}, nil
	}
	if VirtualClock(rs) || VirtualClock(th.Baseline) {
		notes = append(notes, VirtualTime)
	}
	for _, r := range rs {
		if r.Error != "" {
			fail(r, "the run failed: %s", r.Error) // text: cleaned by fail
			continue
		}
		if r.Config.Test != result.BW && r.Config.Test != result.Lat || r.Iterations == 0 {
			// What the tool writes always measured something or says why not: this
			// is a damaged or hand-made record, and a gate must not pass it.
			fail(r, "not a measurement: test %s, %d messages or rounds, and no error", text.Quote(string(r.Config.Test)), r.Iterations)
			continue
		}
		if th.NoTaint && r.Tainted {
			fail(r, "tainted: %s", flagList(TaintFlags(r)))
		}
		if v := r.Verify; v != nil && !v.OK {
			if v.FirstBadOffset >= 0 {
				fail(r, "data verification failed at byte %d", v.FirstBadOffset)
			} else {
				fail(r, "data verification failed: %s", v.Detail) // text: cleaned by fail
			}
		}
		if r.Config.Test == result.BW {
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
		if th.MaxP99 > 0 {
			if p := r.Lat.P99; p == nil {
				fail(r, "cannot check --max-p99: %s", unsupportedP99(r))
			} else if *p > th.MaxP99.Nanoseconds() {
				fail(r, "p99 latency %s us above the maximum %.2f us", us(*p), float64(th.MaxP99.Nanoseconds())/1e3)
			}
		}
		b, ok := base[ConfigKey(r.Config)]
		switch why := ClockMismatch("this result", r.VirtualClock(), "the baseline", b.VirtualClock()); {
		case ok && why != "":
			// Neither a regression nor a pass: virtual time counts instructions.
			fail(r, "%s; check it against a baseline measured on the same clock", why)
		case ok:
			if r.Config.Test == result.BW && r.BWGbps < b.BWGbps*(1-th.Tolerance) {
				fail(r, "bandwidth regressed %s against the baseline (%.3f -> %.3f Gb/s, tolerance %.1f%%)", delta(r.BWGbps, b.BWGbps), b.BWGbps, r.BWGbps, 100*th.Tolerance)
			}
			switch p, bp := r.Lat.P99, b.Lat.P99; {
			case p != nil && bp != nil:
				if float64(*p) > float64(*bp)*(1+th.Tolerance) {
					fail(r, "p99 latency regressed %s against the baseline (%s -> %s us, tolerance %.1f%%)", deltaP(p, bp), us(*bp), us(*p), 100*th.Tolerance)
				}
			case bp != nil:
				fail(r, "cannot compare p99 with the baseline's %s us: %s", us(*bp), unsupportedP99(r))
			default:
				notes = append(notes, ConfigKey(r.Config)+": cannot compare p99 with the baseline: its "+unsupportedP99(b))
			}
		case len(th.Baseline) > 0:
			fail(r, "no baseline result with this configuration")
		}
	}
	return fails, notes
}

// flagList is flags on one line.
func flagList(flags []counters.Flag) string {
	var s []string
	for _, f := range flags {
		s = append(s, text.Clean(f.String(), 200)) // a result file is input
	}
	return strings.Join(s, ", ")
}

// unsupportedP99 says why a result has no p99 and what would give it one.
func unsupportedP99(r result.Result) string {
	s := fmt.Sprintf("p99 not supported by %d samples; run with at least %d samples", r.Lat.Samples, result.MinSamples(0.99))
	if r.Config.Test == result.BW {
		s += " (bandwidth tests sample the signalled WRs: iterations x QPs / cq-mod)"
	}
	return s
}
