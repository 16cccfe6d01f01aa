package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/rdmabench/rdmabench/internal/text"
	"github.com/rdmabench/rdmabench/oob"
	"github.com/rdmabench/rdmabench/plan"
	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/verbs"
)

// Bidirectional bandwidth tests (-b, as perftest's): both sides run the bandwidth loop
// at once, each from its source region into (WRITE) or from (READ) the other's. Each
// side's buffer then holds a source region (slots as bwSlots counts them for sources)
// followed by a destination region, both given the peer's access. The server warms up
// during the client's warm-up, starts its measured loop when the client says start, and
// reports what it moved; the result has both directions and their sum.

// sessionSpec is a side's session for a plan.
func sessionSpec(op Op, c result.Config, server bool) verbs.Spec {
	if !c.Bidirectional {
		if server {
			return op.ServerSpec(c)
		}
		return op.ClientSpec(c)
	}
	sl := bwSlots(c)
	s := Spec(c, sl.bytes(c, sl.src)+sl.bytes(c, sl.dst), op.ToServer, !op.ToServer, c.SQDepth)
	s.Events, s.ModCount, s.ModPeriodUS = c.CompletionEvents, c.CQModerationCount, c.CQModerationUS
	return s
}

// bwParams is a bandwidth loop of the plan, the same on both sides of a bidirectional
// test: sources at offset 0, destinations after them.
func bwParams(op Op, c result.Config, inline bool, timeout time.Duration) verbs.BWParams {
	p := verbs.BWParams{
		Op: verbs.Op(op.Name), Size: c.MsgSizeBytes, Layout: bwSlots(c).layout(op), SQDepth: c.SQDepth, PostList: c.PostList,
		CQMod: c.CQMod, Inline: inline, Events: c.CompletionEvents, Timeout: timeout, MR: c.MR, MRCache: c.MRCache,
	}
	if c.Bidirectional {
		sl := bwSlots(c)
		src := sl.bytes(c, sl.src)
		if op.ToServer {
			p.RemoteOffset = src // WRITE: from my sources into the peer's destinations
		} else {
			p.LocalOffset = src // READ: from the peer's sources into my destinations
		}
	}
	return p
}

// reverse is the server's loop of a bidirectional test.
type reverse struct {
	s      Session
	warm   chan struct{}
	done   chan verbs.BWResult
	err    error
	active bool
}

// startReverse starts the server's warm-up; nil when the plan is not bidirectional.
func startReverse(op Op, c result.Config, s Session, timeout time.Duration) *reverse {
	if !c.Bidirectional || c.Test != result.BW {
		return nil
	}
	rv := &reverse{s: s, warm: make(chan struct{}), done: make(chan verbs.BWResult, 1)}
	go func() {
		defer close(rv.warm)
		if c.WarmupIterations > 0 {
			p := bwParams(op, c, plan.Inline(c), timeout)
			p.Iters = c.WarmupIterations
			if _, err := s.Bandwidth(p); err != nil {
				rv.err = err
			}
		}
	}()
	return rv
}

// measure waits for the warm-up and starts the measured loop (at the client's start).
// The wait ends at the test's deadline or a shutdown: a warm-up the plan made too long
// for this server must not hold it past either (finish then stops the loop).
func (rv *reverse) measure(ctx context.Context, end time.Time, op Op, c result.Config, timeout, maxTest time.Duration) error {
	t := time.NewTimer(time.Until(end))
	defer t.Stop()
	select {
	case <-rv.warm:
	case <-ctx.Done():
		return errShutdown
	case <-t.C:
		return fmt.Errorf("%w (the server's warm-up of %d iterations per QP was still running)", errPastMax(maxTest), c.WarmupIterations)
	}
	if rv.err != nil {
		return nil // reported by finish
	}
	rv.active = true
	p := bwParams(op, c, plan.Inline(c), timeout)
	p.Iters = c.Iterations
	if c.DurationS > 0 {
		p.Duration = time.Duration(c.DurationS * float64(time.Second))
	}
	go func() {
		res, err := rv.s.Bandwidth(p)
		rv.err = err
		rv.done <- res
	}()
	return nil
}

// finish waits for the server's loop (stopping it first when the client was
// interrupted or failed, or when it is still running limit after the client's done:
// both directions run the same plan) and returns what it moved.
func (rv *reverse) finish(stop bool, limit time.Duration) *oob.Direction {
	if stop {
		rv.s.Stop() // also ends a warm-up still running
	}
	<-rv.warm
	if !rv.active {
		d := &oob.Direction{Error: "the server's direction never started"}
		if rv.err != nil {
			d.Error = "warm-up: " + rv.err.Error()
		}
		return d
	}
	var res verbs.BWResult
	late := false
	select {
	case res = <-rv.done:
	case <-time.After(limit):
		late = true
		rv.s.Stop()
		res = <-rv.done // the loop ends its WRs in flight, within its watchdog
	}
	d := &oob.Direction{Completed: res.Completed, DurationNS: res.DurationNS}
	switch {
	case rv.err != nil:
		d.Error = rv.err.Error()
	case late:
		d.Error = fmt.Sprintf("the server's direction was still running %v after the client's: stopped", limit)
	}
	return d
}

// setReverse puts the server's direction in the result.
func setReverse(r *result.Result, d *oob.Direction) {
	if d == nil {
		return
	}
	rv := &result.Direction{Messages: d.Completed, Bytes: d.Completed * uint64(r.Config.MsgSizeBytes), DurationNS: d.DurationNS,
		Error: text.Clean(d.Error, 300)}
	if d.DurationNS > 0 {
		rv.BWGbps = float64(rv.Bytes) * 8 / float64(d.DurationNS)
		rv.MsgRateMpps = float64(d.Completed) / float64(d.DurationNS) * 1e3
	}
	r.Reverse, r.BWSumGbps = rv, r.BWGbps+rv.BWGbps
}
