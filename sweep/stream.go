package sweep

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/rdmabench/rdmabench/plan"
	"github.com/rdmabench/rdmabench/result"
)

// A sweep's results stream is NDJSON: one Recorded per line, appended as each point is
// measured, so that an interrupted sweep can be resumed from it (NewRunner's prior).

// Recorded is one line of a sweep's results stream: the result (its fields at the top
// level, as the result schema has them) and the wall time the sweep charged to its
// budget for it, setup included, so that a resumed sweep charges the same.
type Recorded struct {
	result.Result
	WallNS int64 `json:"sweep_wall_ns,omitempty"`
}

// charge is what a recorded run costs the budget: its wall time, or for a stream
// written without one, its duration (a lower bound).
func (r Recorded) charge() time.Duration {
	if r.WallNS > 0 {
		return time.Duration(r.WallNS)
	}
	return time.Duration(r.DurationNS)
}

// ErrStreamMismatch means a resumed stream is not this sweep's: it was written with
// other options (grid, objective, tolerance, repeat, budget) or another version.
var ErrStreamMismatch = errors.New("the resumed stream does not match this sweep")

// StreamRecorder returns a Runner's Record for a results stream written to w: one line
// per measurement. Where w can Sync (an *os.File), each line is synced before the
// sweep goes on: a point on disk is a point not lost.
func StreamRecorder(w io.Writer) func(Recorded) error { return result.AppendLine[Recorded](w) }

// ReadStream reads a results stream: its results, checked as every result reader
// checks them (the schema version of each), with the wall time the sweep charged for
// each. A stream cut short by a crash is an error naming its last line.
func ReadStream(r io.Reader) ([]Recorded, error) { return result.ReadJSON[Recorded](r) }

// SessionMeasurer measures over one server session: the function runs one test (a
// bench.Client's Run). A plan the server refuses is a failed point; an error that the
// session marks as lost (a method SessionLost() returning true, as oob.LostError has:
// bench's client marks every loss so) ends the sweep, as a *SessionLostError
// (plan.SessionLost). bench.Measurer is the CLI's, with fan-out plans too.
type SessionMeasurer func(ctx context.Context, cfg result.Config) (result.Result, error)

// Measure runs cfg (Measurer).
func (f SessionMeasurer) Measure(ctx context.Context, cfg result.Config) (result.Result, error) {
	r, err := f(ctx, cfg)
	return r, plan.SessionLost(err)
}

// SessionLostError ends a sweep: the server is gone, nothing more can be measured
// (plan.SessionLostError, which bench's Measurer returns).
type SessionLostError = plan.SessionLostError
