package plan

import (
	"context"
	"errors"
	"time"

	"github.com/rdmabench/rdmabench/result"
)

// Measurer runs one test: the seam between a search (a sweep, a hunt) and the engine,
// so that the engine a sweep uses serves a hunt as it is, and tests give a fake. An
// error with a method StopsSweep() returning true (a lost session) ends the search; any
// other error is the run's (a failed point, result.Error).
type Measurer interface {
	Measure(ctx context.Context, cfg Config) (result.Result, error)
}

// SessionLostError ends a search (a sweep, a hunt): the server of its session is gone,
// nothing more can be measured. Its home is here, below the searches and the engine,
// so that bench's Measurer says it and sweep and hunt read it.
type SessionLostError struct{ Err error }

func (e *SessionLostError) Error() string { return "lost the server: " + e.Err.Error() }
func (e *SessionLostError) Unwrap() error { return e.Err }

// StopsSweep says the search ends here (Measurer).
func (e *SessionLostError) StopsSweep() bool { return true }

// SessionLost is err as a search takes it from a session's run: a *SessionLostError
// where the session marks err as lost (a method SessionLost() returning true, as
// oob.LostError has), else err as it is (nil stays nil).
func SessionLost(err error) error {
	var lost interface{ SessionLost() bool }
	if errors.As(err, &lost) && lost.SessionLost() {
		return &SessionLostError{err}
	}
	return err
}

// Stops says whether a Measurer's error ends the search (a method StopsSweep() returning
// true: a lost session) rather than failing one run.
func Stops(err error) bool {
	var s interface{ StopsSweep() bool }
	return errors.As(err, &s) && s.StopsSweep()
}

// MeasureOnce is a search's one run of cfg (the sweep's and the hunt's, the same step):
// m measures it, timed by now from before the call to after its return (wall, what the
// run cost the budget). An interrupted run is no data (err, ctx's). The Measurer's error
// merr, if any, is also the result's Error, so that a failed run is recorded and read back
// as failed; a bare failure gets cfg as its config and this schema's version, so that its
// record resumes. Whether merr ends the search is the caller's (Stops).
func MeasureOnce(ctx context.Context, m Measurer, cfg Config, now func() time.Time) (res result.Result, wall time.Duration, merr, err error) {
	t0 := now()
	res, merr = m.Measure(ctx, cfg)
	wall = now().Sub(t0)
	if err := ctx.Err(); err != nil {
		return res, wall, nil, err
	}
	if merr != nil && res.Error == "" {
		res.Error = merr.Error()
	}
	if res.Config.Op == "" {
		res.Config = cfg
	}
	if res.SchemaVersion == 0 {
		res.SchemaVersion = result.SchemaVersion
	}
	return res, wall, merr, nil
}
