package sweep

import (
	"context"
	"io"

	"github.com/rdmabench/rdmabench/oob"
	"github.com/rdmabench/rdmabench/result"
)

// A sweep's results stream is NDJSON: one Recorded per line, appended as each point is
// measured, so that an interrupted sweep can be resumed from it (NewRunner's prior).

// StreamRecorder returns a Runner's Record for a results stream written to w: one line
// per measurement. Where w can Sync (an *os.File), each line is synced before the
// sweep goes on: a point on disk is a point not lost.
func StreamRecorder(w io.Writer) func(Recorded) error {
	enc := result.NewNDJSONEncoder(w)
	s, _ := w.(interface{ Sync() error })
	return func(r Recorded) error {
		if err := enc.Encode(r); err != nil {
			return err
		}
		if s != nil {
			return s.Sync()
		}
		return nil
	}
}

// ReadStream reads a results stream: its results, checked as every result reader
// checks them (the schema version of each), with the wall time the sweep charged for
// each. A stream cut short by a crash is an error naming its last line.
func ReadStream(r io.Reader) ([]Recorded, error) { return result.ReadJSON[Recorded](r) }

// SessionMeasurer measures over one server session: the function runs one test (a
// bench.Client's Run). A plan the server refuses is a failed point; an error that says
// the session is lost (oob.Lost) ends the sweep, as a *SessionLostError.
type SessionMeasurer func(ctx context.Context, cfg result.Config) (result.Result, error)

// Measure runs cfg (Measurer).
func (f SessionMeasurer) Measure(ctx context.Context, cfg result.Config) (result.Result, error) {
	r, err := f(ctx, cfg)
	if oob.Lost(err) {
		return r, &SessionLostError{err}
	}
	return r, err
}

// SessionLostError ends a sweep: the server is gone, nothing more can be measured.
type SessionLostError struct{ Err error }

func (e *SessionLostError) Error() string { return "lost the server: " + e.Err.Error() }
func (e *SessionLostError) Unwrap() error { return e.Err }

// StopsSweep says the sweep ends here (Measurer).
func (e *SessionLostError) StopsSweep() bool { return true }
