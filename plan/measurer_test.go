package plan

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/result"
)

type measureFunc func(context.Context, Config) (result.Result, error)

func (f measureFunc) Measure(ctx context.Context, c Config) (result.Result, error) { return f(ctx, c) }

// TestMeasureOnce: the searches' one run is timed on their clock, a failure is the
// result's error with its plan (so that its record resumes), an interruption is no data,
// and only a lost session stops the search.
func TestMeasureOnce(t *testing.T) {
	var clock time.Time
	now := func() time.Time { clock = clock.Add(3 * time.Second); return clock }
	cfg := Config{Op: "write", Test: "bw", MsgSizeBytes: 64}
	failed := errors.New("no such device")
	res, wall, merr, err := MeasureOnce(context.Background(), measureFunc(func(context.Context, Config) (result.Result, error) {
		return result.Result{}, failed
	}), cfg, now)
	if err != nil || merr != failed || wall != 3*time.Second || res.Error != failed.Error() || res.Config != cfg ||
		res.SchemaVersion != result.SchemaVersion || Stops(merr) {
		t.Errorf("a failed run: %+v, wall %v, %v, %v", res, wall, merr, err)
	}
	lost := &SessionLostError{errors.New("EOF")}
	_, _, merr, _ = MeasureOnce(context.Background(), measureFunc(func(context.Context, Config) (result.Result, error) {
		return result.Result{Error: "kept"}, lost
	}), cfg, now)
	if !Stops(merr) || Stops(failed) || Stops(nil) {
		t.Errorf("a lost session must stop the search, nothing else: %v", merr)
	}
	ctx, cancel := context.WithCancel(context.Background())
	res, _, merr, err = MeasureOnce(ctx, measureFunc(func(context.Context, Config) (result.Result, error) {
		cancel()
		return result.Result{BWGbps: 1}, errors.New("interrupted")
	}), cfg, now)
	if !errors.Is(err, context.Canceled) || merr != nil {
		t.Errorf("an interrupted run must be no data: %+v, %v, %v", res, merr, err)
	}
}
