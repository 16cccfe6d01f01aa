package plan

import (
	"context"
	"errors"

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
