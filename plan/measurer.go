package plan

import (
	"context"

	"github.com/rdmabench/rdmabench/result"
)

// Measurer runs one test: the seam between a search (a sweep, a hunt) and the engine,
// so that the engine a sweep uses serves a hunt as it is, and tests give a fake. An
// error with a method StopsSweep() returning true (a lost session) ends the search; any
// other error is the run's (a failed point, result.Error).
type Measurer interface {
	Measure(ctx context.Context, cfg Config) (result.Result, error)
}
