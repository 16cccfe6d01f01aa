package bench

import (
	"time"

	"github.com/rdmabench/rdmabench/counters"
	"github.com/rdmabench/rdmabench/result"
)

// intervals follows a measured bandwidth loop (--interval): every interval of wall
// time, the messages the loop has completed (it stores its per-QP counts atomically
// and a goroutine reads them), the throughput over that interval, and this side's NIC
// counters that moved. The lines go to Client.OnInterval as the run goes on; the
// result keeps the smallest and largest full interval after the ramp (result.Interval).
type intervals struct {
	c     *Client
	cfg   result.Config
	every time.Duration

	last     time.Time
	lastN    uint64
	lastSnap *counters.Snapshot
	sum      result.Intervals
}

func (c *Client) intervals(cfg result.Config) *intervals {
	if cfg.IntervalS <= 0 || cfg.Test != result.BW {
		return nil
	}
	return &intervals{c: c, cfg: cfg, every: time.Duration(cfg.IntervalS * float64(time.Second))}
}

// begin marks the start of the measured loop.
func (iv *intervals) begin() {
	iv.last = time.Now()
	iv.sum.IntervalNS = iv.every.Nanoseconds()
	if CountersOn(iv.cfg) {
		if s, err := iv.c.dev.Counters(); err == nil {
			iv.lastSnap = &s
		}
	}
}

// tick is called from the loop's progress goroutine with the messages completed so far.
func (iv *intervals) tick(completed uint64) {
	now := time.Now()
	d := now.Sub(iv.last)
	n := completed - min(completed, iv.lastN)
	line := result.Interval{Index: iv.sum.Count + iv.sum.Ramp + 1, Start: iv.last, DurationNS: d.Nanoseconds(), Messages: n,
		Bytes: n * uint64(iv.cfg.MsgSizeBytes), Ramp: completed == 0}
	if d > 0 {
		line.BWGbps = float64(line.Bytes) * 8 / d.Seconds() / 1e9
		line.MsgRateMpps = float64(n) / d.Seconds() / 1e6
	}
	if iv.lastSnap != nil {
		if s, err := iv.c.dev.Counters(); err == nil {
			if dl, err := counters.Delta(*iv.lastSnap, s); err == nil {
				ch := dl.Changed()
				keep(&ch, iv.cfg.Counters)
				line.Counters = &ch
			}
			iv.lastSnap = &s
		}
	}
	switch {
	case line.Ramp:
		iv.sum.Ramp++
	case iv.sum.Count == 0:
		iv.sum.MinBWGbps, iv.sum.MaxBWGbps = line.BWGbps, line.BWGbps
		iv.sum.Count++
	default:
		iv.sum.MinBWGbps = min(iv.sum.MinBWGbps, line.BWGbps)
		iv.sum.MaxBWGbps = max(iv.sum.MaxBWGbps, line.BWGbps)
		iv.sum.Count++
	}
	iv.last, iv.lastN = now, completed
	if iv.c.OnInterval != nil {
		iv.c.OnInterval(line)
	}
}

// summary is what the result keeps (nil without a full interval, ramp or not).
func (iv *intervals) summary() *result.Intervals {
	if iv.sum.Count+iv.sum.Ramp == 0 {
		return nil
	}
	s := iv.sum
	return &s
}
