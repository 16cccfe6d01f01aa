package sweep

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/oob"
	"github.com/rdmabench/rdmabench/plan"
	"github.com/rdmabench/rdmabench/result"
)

// syncCounter is a stream that counts its syncs.
type syncCounter struct {
	bytes.Buffer
	syncs int
}

func (s *syncCounter) Sync() error { s.syncs++; return nil }

// The stream a sweep writes resumes it: an interrupted sweep written to a file, read
// back, measures only what the file lacks.
func TestStreamResumesTheSweep(t *testing.T) {
	p := rxe(t)
	path := filepath.Join(t.TempDir(), "sweep.ndjson")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	pl := sweepPlan(p, "grid")
	if _, err := NewRunner(&fake{stopAfter: 10, cancel: cancel}, StreamRecorder(f), nil).Run(ctx, pl); err != nil {
		t.Fatal(err)
	}
	f.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// One line per measurement, but for the interrupted 10th: no data point.
	if n := bytes.Count(b, []byte("\n")); n != 9 || bytes.Count(b, []byte(`"sweep_wall_ns":`)) != 9 {
		t.Fatalf("%d lines, want 9, each with its wall time", n)
	}
	prior, err := ReadStream(bytes.NewReader(b))
	if err != nil || len(prior) != 9 || prior[0].WallNS <= 0 || prior[0].SchemaVersion != result.SchemaVersion {
		t.Fatalf("read back %d: %v", len(prior), err)
	}
	f2 := &fake{}
	out, err := NewRunner(f2, nil, prior).Run(context.Background(), pl)
	if err != nil || out.Reused != 9 || f2.calls != out.Runs {
		t.Fatalf("resumed: reused %d, measured %d of %d runs: %v", out.Reused, f2.calls, out.Runs, err)
	}

	var s syncCounter
	rec := StreamRecorder(&s)
	for range 3 {
		if err := rec(prior[0]); err != nil {
			t.Fatal(err)
		}
	}
	if s.syncs != 3 || bytes.Count(s.Bytes(), []byte("\n")) != 3 {
		t.Fatalf("every line synced: %d syncs, %q", s.syncs, s.String())
	}
}

// The resume reader refuses what it cannot trust, saying where.
func TestReadStreamRefuses(t *testing.T) {
	line := func(v int) string {
		r := result.Result{SchemaVersion: v, Config: result.Config{Op: "write", Test: result.BW, MsgSizeBytes: 65536, Iterations: 1000, SQDepth: 128, PostList: 1, CQMod: 1, NumQPs: 1}}
		b, err := json.Marshal(Recorded{Result: r, WallNS: 5})
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	good := line(3)
	for _, tc := range []struct{ doc, want string }{
		{good + "\n" + line(1) + "\n", "line 2: result has schema_version 1; this rdmabench reads schema_version 3"},
		{good + "\n" + "[" + line(99) + "]\n", "line 2: element 0 of an array: result has schema_version 99"},
		{good + "\n" + `{"schema_version":3,"config":{"op":"write"},"sweep_wall_ns":5}` + "\n", "line 2: not a result of schema version 3"},
		{good + "\n" + good + "\n" + `{"schema_version": 3,"conf`, "line 3"},
	} {
		got, err := ReadStream(strings.NewReader(tc.doc))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("want an error with %q, got %v", tc.want, err)
		}
		if len(got) == 0 || got[0].WallNS != 5 {
			t.Errorf("the lines before the bad one come back: %+v", got)
		}
	}
}

// SessionMeasurer: a lost connection ends the sweep, a refused plan is a failed point.
func TestSessionMeasurer(t *testing.T) {
	for _, tc := range []struct {
		err  error
		lost bool
	}{
		{nil, false},
		{&oob.PeerError{Msg: "--size too large"}, false},
		{errors.New("ibv_post_send: no memory"), false},
		{&oob.LostError{Err: io.EOF}, true},
		{fmt.Errorf("receiving: %w", &oob.LostError{Err: io.ErrUnexpectedEOF}), true},
		{errors.Join(errors.New("measured nothing"), &oob.LostError{Err: &net.OpError{Op: "read", Err: errors.New("connection reset by peer")}}), true},
		{&oob.LostError{Err: &oob.ProtocolError{Msg: "bad frame"}}, true},
	} {
		m := SessionMeasurer(func(_ context.Context, c result.Config) (result.Result, error) {
			return result.Result{Config: c, Error: fmt.Sprint(tc.err)}, tc.err
		})
		r, err := m.Measure(context.Background(), result.Config{Op: "read"})
		var lost *SessionLostError
		if errors.As(err, &lost) != tc.lost || plan.Stops(err) != tc.lost || !errors.Is(err, tc.err) || r.Config.Op != "read" {
			t.Errorf("%v: got %v (lost %v), want lost %v, the error kept and the result passed on", tc.err, err, errors.As(err, &lost), tc.lost)
		}
	}
	// A sweep over it stops at the loss.
	n := 0
	m := SessionMeasurer(func(ctx context.Context, c result.Config) (result.Result, error) {
		if n++; n > 2 {
			return result.Result{Config: c}, &oob.LostError{Err: io.EOF}
		}
		return (&fake{}).Measure(ctx, c)
	})
	var lost *SessionLostError
	if _, err := NewRunner(m, nil, nil).Run(context.Background(), sweepPlan(rxe(t), "grid")); !errors.As(err, &lost) || n != 3 {
		t.Fatalf("a lost session ends the sweep at once: %v after %d runs", err, n)
	}
}

// A measurer that fails with no result at all still leaves a line the resume reads.
func TestBareFailureResumes(t *testing.T) {
	var s syncCounter
	m := SessionMeasurer(func(context.Context, result.Config) (result.Result, error) {
		return result.Result{}, &oob.PeerError{Msg: "no"}
	})
	pl := sweepPlan(rxe(t), "grid")
	NewRunner(m, StreamRecorder(&s), nil).Run(context.Background(), pl) // every point failed: no optimum
	prior, err := ReadStream(bytes.NewReader(s.Bytes()))
	if err != nil || len(prior) == 0 || prior[0].Error != "peer: no" {
		t.Fatalf("%d lines: %v", len(prior), err)
	}
	f := &fake{}
	if out, err := NewRunner(f, nil, prior).Run(context.Background(), pl); errors.Is(err, ErrStreamMismatch) || f.calls != 0 || out.Reused != len(prior) {
		t.Fatalf("resumed: %d measured, %d reused of %d: %v", f.calls, out.Reused, len(prior), err)
	}
}
func TestResumeDoesNotRemeasure(t *testing.T) {
	p := rxe(t)
	var stream []Recorded
	record := func(r Recorded) error { stream = append(stream, r); return nil }
	ctx, cancel := context.WithCancel(context.Background())
	f := &fake{stopAfter: 10, cancel: cancel}
	pl := sweepPlan(p, "grid")
	pl.References = map[string]plan.Point{"perftest_defaults": pt(65536, 128, 0, 100, 1)}
	first, err := NewRunner(f, record, nil).Run(ctx, pl)
	if err != nil || !first.Interrupted || len(stream) != 9 {
		t.Fatalf("interrupted run: err %v, interrupted %v, %d recorded", err, first.Interrupted, len(stream))
	}
	f2 := &fake{}
	second, err := NewRunner(f2, record, stream).Run(context.Background(), pl)
	if err != nil {
		t.Fatal(err)
	}
	if second.Reused != 9 || second.Points != 160 || f2.calls != second.Runs {
		t.Fatalf("resume measured %d, reused %d, points %d", f2.calls, second.Reused, second.Points)
	}
	// A finished sweep resumed from its own stream measures nothing, and decides the same.
	f3 := &fake{}
	third, err := NewRunner(f3, nil, stream).Run(context.Background(), pl)
	if err != nil || f3.calls != 0 || third.Chosen.Point != second.Chosen.Point {
		t.Fatalf("resuming a finished sweep: %d measured, chosen %v vs %v, %v", f3.calls, third.Chosen.Point, second.Chosen.Point, err)
	}
}

// A sweep under a budget, resumed from its own finished stream, charges the recorded
// runs their time, so it takes the same decisions and measures nothing.
func TestResumeUnderABudgetIsDeterministic(t *testing.T) {
	p := rxe(t)
	for seed := range 4 {
		f := &noisy{rng: rand.New(rand.NewPCG(uint64(seed), 7)), sigma: 0.15, phase: float64(seed)}
		var stream []Recorded
		r := NewRunner(f, func(x Recorded) error { stream = append(stream, x); return nil }, nil)
		r.Now = func() time.Time { return f.clock }
		pl := calibrationPlan(p)
		pl.Budget = 2 * time.Minute
		o1, err := r.Run(context.Background(), pl)
		if err != nil || !o1.BudgetExhausted {
			t.Fatalf("first: %v, exhausted %v", err, o1.BudgetExhausted)
		}
		f2 := &noisy{rng: rand.New(rand.NewPCG(uint64(seed), 99)), sigma: 0.15, phase: float64(seed)}
		r2 := NewRunner(f2, nil, stream)
		r2.Now = func() time.Time { return f2.clock }
		o2, err := r2.Run(context.Background(), pl)
		if err != nil || o2.Runs != 0 || o2.Chosen.Point != o1.Chosen.Point || o2.Decided != o1.Decided || o2.BudgetSpentS != o1.BudgetSpentS {
			t.Fatalf("seed %d: resumed %d new runs, chosen %v vs %v, spent %v vs %v: %v", seed, o2.Runs, o2.Chosen.Point, o1.Chosen.Point, o2.BudgetSpentS, o1.BudgetSpentS, err)
		}
	}
}

func TestResumeFromAnotherSweepFails(t *testing.T) {
	p := rxe(t)
	var stream []Recorded
	pl := sweepPlan(p, "descent")
	if _, err := NewRunner(&fake{}, func(x Recorded) error { stream = append(stream, x); return nil }, nil).Run(context.Background(), pl); err != nil {
		t.Fatal(err)
	}
	start := pl.Start
	pl.Start = pl.Start.WithInt("sq_depth", 1024)
	if _, err := NewRunner(&fake{}, nil, stream).Run(context.Background(), pl); !errors.Is(err, ErrStreamMismatch) {
		t.Fatalf("a stream of another sweep must be refused: %v", err)
	}
	// The same points with other common settings (plan.SameSettings) are another sweep's
	// too: runs of another length or warm-up measured something else.
	pl.Start = start
	for _, c := range []struct {
		key string
		set func(*result.Config)
	}{
		{"warmup_iterations", func(c *result.Config) { c.WarmupIterations += 7 }},
		{"completion_events", func(c *result.Config) { c.CompletionEvents = !c.CompletionEvents }},
		{"duration_s", func(c *result.Config) { c.DurationS += 0.5 }},
		{"num_qps", func(c *result.Config) { c.NumQPs = 4 }},
		{"threads", func(c *result.Config) { c.Threads = 2 }},
		{"traffic_class", func(c *result.Config) { c.TrafficClass = 104 }},
		{"cq_moderation_usec", func(c *result.Config) { c.CQModerationUS = 20 }},
	} {
		q := pl
		c.set(&q.Base)
		_, err := NewRunner(&fake{}, nil, stream).Run(context.Background(), q)
		if !errors.Is(err, ErrStreamMismatch) || !strings.Contains(fmt.Sprint(err), c.key) {
			t.Errorf("%s changed: %v, want a mismatch naming it", c.key, err)
		}
	}
}

// defaulting records what it measures as the engine does: the plan after its
// operation's defaults (iterations filled, inline and post API resolved).
type defaulting struct{ fake }

func (d *defaulting) Measure(ctx context.Context, c result.Config) (result.Result, error) {
	r, err := d.fake.Measure(ctx, c)
	plan.Defaults(&r.Config)
	r.Config.InlineBytes, r.Config.PostAPI = 0, "legacy"
	return r, err
}

// A stream recorded by an engine that fills a plan's defaults resumes: the settings are
// compared as the operation fills them (plan.SameSettings), a timed sweep's lengthened
// runs and an iterations sweep's p99 samples included.
func TestResumeFromAnEngineThatFillsDefaults(t *testing.T) {
	p := rxe(t)
	for _, c := range []struct {
		name string
		set  func(*Plan)
	}{
		{"timed", func(*Plan) {}},
		{"iterations, p99", func(pl *Plan) {
			pl.Base.DurationS, pl.Base.Iterations = 0, 0
			pl.Objective, _ = ParseObjective("p99", 0)
		}},
	} {
		pl := sweepPlan(p, "descent")
		pl.Base.WarmupIterations = 16
		c.set(&pl)
		var stream []Recorded
		if _, err := NewRunner(&defaulting{}, func(x Recorded) error { stream = append(stream, x); return nil }, nil).Run(context.Background(), pl); err != nil {
			t.Fatal(err)
		}
		f := &defaulting{}
		out, err := NewRunner(f, nil, stream).Run(context.Background(), pl)
		if err != nil || f.calls != 0 || out.Reused != len(stream) {
			t.Errorf("%s: resumed %d of %d, measured %d: %v", c.name, out.Reused, len(stream), f.calls, err)
		}
	}
}
