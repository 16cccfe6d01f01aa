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

// TestLedger: a budget is charged with the runs' wall times (an interrupted run's too,
// a resumed run's as recorded), is reached at its end, and a run fits only if it ends by
// the end asked; without a budget nothing is ever reached and everything fits.
func TestLedger(t *testing.T) {
	var clock time.Time
	now := func() time.Time { clock = clock.Add(2 * time.Second); return clock }
	ok := measureFunc(func(context.Context, Config) (result.Result, error) { return result.Result{BWGbps: 1}, nil })
	l := Ledger{Budget: 10 * time.Second}
	if _, wall, _, err := l.Measure(context.Background(), ok, Config{Op: "write"}, now); err != nil || wall != 2*time.Second || l.Spent() != 2*time.Second {
		t.Fatalf("one run: wall %v, spent %v, %v", wall, l.Spent(), err)
	}
	clock = clock.Add(time.Hour) // the search's own time between runs is not charged
	l.Charge(5 * time.Second)    // a resumed run
	l.Charge(-time.Second)       // a clock that stepped back charges nothing
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, _, err := l.Measure(ctx, ok, Config{Op: "write"}, now); err == nil || l.Spent() != 9*time.Second {
		t.Fatalf("an interrupted run is charged and no data: spent %v, %v", l.Spent(), err)
	}
	if l.Reached(10*time.Second) || !l.Reached(9*time.Second) || !l.Fits(time.Second, 10*time.Second) || l.Fits(2*time.Second, 10*time.Second) {
		t.Errorf("at 9 s of 10: reached %v, fits 1 s %v, fits 2 s %v", l.Reached(10*time.Second), l.Fits(time.Second, 10*time.Second), l.Fits(2*time.Second, 10*time.Second))
	}
	var none Ledger
	none.Charge(time.Hour)
	if none.Reached(0) || !none.Fits(time.Hour, 0) {
		t.Errorf("no budget: reached %v, fits %v", none.Reached(0), none.Fits(time.Hour, 0))
	}
}

// TestSameSettings: a prior run matches a plan with its common settings, a setting the
// plan left to its default matching the default the run recorded; another length,
// warm-up or counters mode is named.
func TestSameSettings(t *testing.T) {
	recorded := Config{Op: "write", Test: "bw", MsgSizeBytes: 65536, SQDepth: 128, Iterations: 5000, DurationS: 0.4, WarmupIterations: 16}
	want := Config{DurationS: 0.4, WarmupIterations: 16} // a search's base: iterations left to the default
	if err := SameSettings(recorded, want); err != nil {
		t.Errorf("the same settings: %v", err)
	}
	for _, c := range []struct {
		key string
		set func(*Config)
	}{
		{"duration_s", func(c *Config) { c.DurationS = 0.8 }},
		{"warmup_iterations", func(c *Config) { c.WarmupIterations = 4 }},
		{"counters", func(c *Config) { c.Counters = "off" }},
		{"hugepages", func(c *Config) { c.Hugepages = true }},
		{"completion_events", func(c *Config) { c.CompletionEvents = true }},
		{"iterations", func(c *Config) { c.Iterations = 7 }},
	} {
		w := want
		c.set(&w)
		var se *SettingError
		if err := SameSettings(recorded, w); !errors.As(err, &se) || se.Key != c.key {
			t.Errorf("%s changed: %v", c.key, err)
		}
	}
	// What a sweep holds fixed (Fixed) is checked only where asked: the hunt varies the
	// QPs by point. One thread is said as 0 or 1.
	w := want
	w.NumQPs, w.Threads = 4, 1
	var se *SettingError
	if err := SameSettings(recorded, w); err != nil {
		t.Errorf("QPs without the fixed keys: %v", err)
	}
	if err := SameSettings(recorded, w, Fixed...); !errors.As(err, &se) || se.Key != "num_qps" {
		t.Errorf("QPs with the fixed keys: %v", err)
	}
}
