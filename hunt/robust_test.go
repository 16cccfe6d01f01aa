package hunt

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/result"
)

// A bed's own behaviour the planted tests do not have: a counter that moves wherever the
// hunt looks, runs too short for their queues, triggers with a gap, failed setups, runs
// that cost their queues' drain.

// plants returns one plant made of several (applied in their order).
func plants(ps ...func(result.Config, *result.Result)) func(result.Config, *result.Result) {
	return func(c result.Config, r *result.Result) {
		for _, p := range ps {
			if p != nil {
				p(c, r)
			}
		}
	}
}

// plantBackground: an error counter (roce_slow_restart) moves in a share rate of all runs,
// wherever they are (Soft-RoCE at its default QP timeout, a NIC's background error).
func plantBackground(rate float64, seed uint64) func(result.Config, *result.Result) {
	rng := rand.New(rand.NewPCG(seed, 0xb6))
	return func(c result.Config, r *result.Result) {
		if rng.Float64() < rate {
			r.CountersFlags = append(r.CountersFlags, flag("roce_slow_restart", 7))
			r.Tainted = true
		}
	}
}

// seedsRight hunts plant(seed) with 10 seeds, the noise from 5% to 14% a run, in 30
// simulated minutes (tune changes the plan), and counts the seeds whose outcome check
// accepts (nil).
func seedsRight(t *testing.T, name string, plant func(seed uint64) func(result.Config, *result.Result), tune func(*Plan),
	check func(o Outcome) error) int {
	t.Helper()
	p := cx6(t)
	right := 0
	for seed := range uint64(10) {
		sigma := 0.05 + 0.01*float64(seed)
		f := newFake(seed*7+101, sigma, plant(seed))
		pl := testPlan(p, f, seed)
		if tune != nil {
			tune(&pl)
		}
		o, err := Run(context.Background(), f, pl, nil)
		if err != nil {
			t.Fatal(err)
		}
		cerr := check(o)
		if cerr == nil {
			right++
		}
		var got []string
		for _, g := range o.Findings {
			got = append(got, fmt.Sprintf("%s %s [%s] minimal %v", g.Class, g.Key, strings.Join(setKey(g), "; "), g.Minimal))
		}
		t.Logf("%s seed %d (noise %.0f%%): %v; %d runs, %d candidates, %d rejected, exhausted %v, background %v; %v",
			name, seed, 100*sigma, cerr, o.Runs, o.Candidates, o.Rejected, o.Exhausted, o.Background, got)
	}
	return right
}

// only says whether the outcome's findings are exactly one, of class c and key k with the
// set want, minimal; and the hunt went on to its budget.
func only(o Outcome, c Class, k string, want []string) error {
	switch {
	case o.Exhausted || !o.BudgetExhausted:
		return fmt.Errorf("the hunt stopped before its budget (exhausted %v)", o.Exhausted)
	case len(o.Findings) != 1:
		return fmt.Errorf("%d findings, want 1", len(o.Findings))
	}
	f := o.Findings[0]
	if f.Class != c || f.Key != k || !f.Minimal || !slices.Equal(setKey(f), want) {
		return fmt.Errorf("found %s %s [%s] minimal %v, want %s %s [%s]", f.Class, f.Key, strings.Join(setKey(f), "; "), f.Minimal,
			c, k, strings.Join(want, "; "))
	}
	return nil
}

// TestBackgroundCounter: a counter that moves everywhere, in every run or in half of
// them, is background: no counters finding (an empty set or junk), the hunt goes on to
// its budget and still finds the planted cliff with its set, in 9 seeds of 10 or more.
func TestBackgroundCounter(t *testing.T) {
	for _, rate := range []float64{1, 0.5} {
		t.Run(fmt.Sprintf("rate %.0f%%", 100*rate), func(t *testing.T) {
			right := seedsRight(t, "background", func(seed uint64) func(result.Config, *result.Result) {
				return plants(plantCliff, plantBackground(rate, seed))
			}, nil, func(o Outcome) error {
				if err := only(o, LowThroughput, KeyBestSeen, planted[0].set); err != nil {
					return err
				}
				if rate == 1 && !slices.ContainsFunc(o.Background, func(b BackgroundCounter) bool {
					return b.Counter == "roce_slow_restart" && b.Moved == b.Runs && b.Probed
				}) {
					return fmt.Errorf("background %+v: want roce_slow_restart, moved in every run", o.Background)
				}
				for _, b := range o.Background {
					if b.Counter != "roce_slow_restart" && b.Counter != "local_ack_timeout_err" {
						return fmt.Errorf("background %+v", b)
					}
				}
				return nil
			})
			if right < 9 {
				t.Errorf("right in %d of 10 seeds, want 9 or more", right)
			}
		})
	}
}

// TestCounterBaselineHolds: a counter whose trigger the baseline holds (the QP timeout
// of 14 or less retransmits; the baseline's is 14) is an anomaly, not background: the
// probe finds the timeout of 20 silences it, and its set is the triggering timeouts.
func TestCounterBaselineHolds(t *testing.T) {
	plant := func(c result.Config, r *result.Result) {
		if c.QPTimeout == 0 || c.QPTimeout <= 14 { // 0: the default, 14
			r.CountersFlags = append(r.CountersFlags, flag("roce_adp_retrans_to", 2))
			r.Tainted = true
		}
	}
	right := seedsRight(t, "baseline holds", func(uint64) func(result.Config, *result.Result) { return plant }, nil, func(o Outcome) error {
		if len(o.Background) > 0 && o.Background[0].Counter == "roce_adp_retrans_to" {
			return fmt.Errorf("the counter was taken for background")
		}
		return only(o, Counters, "roce_adp_retrans_to", []string{"qp_timeout <= 8,14"})
	})
	if right < 9 {
		t.Errorf("right in %d of 10 seeds, want 9 or more", right)
	}
}

// TestEmptySetDoesNotEndHunt: a finding whose set is empty (every run fails the same
// way) is made once, and neither ends the search nor is made again: the hunt goes on to
// its budget. A finding whose set is empty makes no point known.
func TestEmptySetDoesNotEndHunt(t *testing.T) {
	f := newFake(3, 0.1, func(c result.Config, r *result.Result) {
		r.Error = "work completion failed: IBV_WC_RETRY_EXC_ERR (transport retry counter exceeded) on QP 0x11"
		r.BWGbps, r.Lat, r.Reverse = 0, result.Latency{}, nil
	})
	pl := testPlan(cx6(t), f, 3)
	pl.Budget = 10 * time.Minute
	o, err := Run(context.Background(), f, pl, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Findings) != 1 || len(o.Findings[0].Set) != 0 || o.Findings[0].Key != "IBV_WC_RETRY_EXC_ERR" || o.Duplicates != 0 {
		t.Errorf("findings %v, %d duplicates", o.Findings, o.Duplicates)
	}
	if o.Exhausted || !o.BudgetExhausted || o.Runs < 250 {
		t.Errorf("%d runs, exhausted %v, budget spent %v: the hunt stopped at the empty set", o.Runs, o.Exhausted, o.BudgetExhausted)
	}
	h := newHunter(f, pl, nil)
	h.found = []Finding{{ID: "F1", Class: Counters, Key: "x", Set: []Condition{}}}
	for _, p := range []Point{pl.Space.Baseline, {Op: "read", MsgSizeBytes: 4096, SQDepth: 64, PostList: 1, CQMod: 1, NumQPs: 1, MTUBytes: 1024, QPTimeout: 8, MR: MRPool}} {
		if h.known(p) {
			t.Errorf("a finding whose set is empty makes %v known", p)
		}
	}
	t.Logf("%d runs: %s", o.Runs, strings.Join(Summary(o), " | "))
}

// TestRampBoundNotAMiss: where the runs of 8 QPs or more are ramp-bound (their throughput
// cannot be judged), the cliff's set has no QPs condition: a value that cannot be judged
// is no value that does not trigger.
func TestRampBoundNotAMiss(t *testing.T) {
	ramp := func(c result.Config, r *result.Result) {
		sh := 0.01
		if c.NumQPs >= 8 {
			sh = 0.8
		}
		r.RampShare = &sh
	}
	right := seedsRight(t, "ramp", func(uint64) func(result.Config, *result.Result) { return plants(plantCliff, ramp) }, nil,
		func(o Outcome) error {
			if o.RampBound == 0 {
				return errors.New("no run was ramp-bound")
			}
			return only(o, LowThroughput, KeyBestSeen, planted[0].set)
		})
	if right < 9 {
		t.Errorf("right in %d of 10 seeds, want 9 or more", right)
	}
}

// TestGapInSet: a failure at the depths of 64 and 1024 only (with a post list of 8) has
// those two depths in its set, not the range between.
func TestGapInSet(t *testing.T) {
	plant := func(c result.Config, r *result.Result) {
		if c.PostList >= 8 && (c.SQDepth == 64 || c.SQDepth == 1024) {
			r.Error = "work completion failed: IBV_WC_LOC_LEN_ERR (local length error) on QP 0x2b"
			r.BWGbps, r.Lat, r.Reverse = 0, result.Latency{}, nil
		}
	}
	right := seedsRight(t, "gap", func(uint64) func(result.Config, *result.Result) { return plant }, nil, func(o Outcome) error {
		return only(o, Failed, "IBV_WC_LOC_LEN_ERR", []string{"sq_depth one-of 64,1024", "post_list >= 8"})
	})
	if right < 9 {
		t.Errorf("right in %d of 10 seeds, want 9 or more", right)
	}
	c := Condition{DimDepth, OpOneOf, []string{"64", "1024"}, false}
	for d, want := range map[int]bool{64: true, 128: false, 512: false, 1024: true, 2048: false} {
		if got := c.Holds(Point{SQDepth: d}); got != want {
			t.Errorf("%s holds for depth %d: %v", c, d, got)
		}
	}
	if got := c.String(); got != "sq_depth in {64, 1024}" {
		t.Errorf("one-of reads %q", got)
	}
}

// TestBothClassesAtOnePoint: a counter that moves at a depth of 256 or more and a cliff at
// READ 1M with a depth of 512 or more: the counters finding's set holds the cliff's
// points, which are still screened for their throughput; both are found.
func TestBothClassesAtOnePoint(t *testing.T) {
	want := map[Class][]string{Counters: planted[1].set, LowThroughput: planted[0].set}
	right := seedsRight(t, "both", func(uint64) func(result.Config, *result.Result) { return plants(plantCliff, plantCounter) }, nil,
		func(o Outcome) error {
			if len(o.Findings) != 2 {
				return fmt.Errorf("%d findings, want 2", len(o.Findings))
			}
			for _, f := range o.Findings {
				if !f.Minimal || !slices.Equal(setKey(f), want[f.Class]) {
					return fmt.Errorf("%s [%s]", f.Class, strings.Join(setKey(f), "; "))
				}
			}
			return nil
		})
	if right < 8 {
		t.Errorf("right in %d of 10 seeds, want 8 or more", right)
	}
}

// TestResumeCompletes: a hunt cut in a finding's minimisation, resumed, completes that
// finding under its ID (a new record of F1, minimal), and does not find it again.
func TestResumeCompletes(t *testing.T) {
	p := cx6(t)
	f := newFake(0, 0.1, plantFailure)
	pl := testPlan(p, f, 0)
	ctx, cancel := context.WithCancel(context.Background())
	var cut []Record
	keep := collect(&cut)
	minimizing := 0
	o1, err := Run(ctx, f, pl, func(r Record) error {
		if r.Kind == KindPoint && r.Phase == PhaseMinimize {
			if minimizing++; minimizing == 5 {
				cancel()
			}
		}
		return keep(r)
	})
	cancel()
	if err != nil || len(o1.Findings) != 1 || o1.Findings[0].Minimal {
		t.Fatalf("cut: %v, findings %v", err, o1.Findings)
	}
	g := newFake(7, 0.1, plantFailure)
	pl.Now, pl.Prior, pl.Budget = g.now, cut, 0
	pl.MaxRuns = len(cut) + 300
	var second []Record
	o2, err := Run(context.Background(), g, pl, collect(&second))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range second {
		if r.Kind == KindFinding {
			ids = append(ids, r.ID)
		}
	}
	if len(o2.Findings) != 1 || o2.Findings[0].ID != "F1" || !o2.Findings[0].Minimal || !slices.Equal(setKey(o2.Findings[0]), planted[2].set) ||
		o2.New != 0 || o2.Duplicates != 0 || !slices.Equal(ids, []string{"F1"}) || o2.Reused == 0 {
		t.Errorf("resumed: findings %v, new %d, duplicates %d, recorded %v, %d prior runs taken", o2.Findings, o2.New, o2.Duplicates, ids, o2.Reused)
	}
	all := LatestFindings(append(slices.Clone(cut), second...))
	if len(all) != 1 || all[0].ID != "F1" || !all[0].Minimal {
		t.Errorf("the streams' findings, each ID's last: %v", all)
	}
	t.Logf("resumed: %d prior runs taken, %d measured; %s", o2.Reused, o2.Runs, strings.Join(Summary(o2), " | "))
}

// TestResumeSamePlan: a resumed hunt refuses prior records of other common settings, or
// of a point outside its space, naming what differs.
func TestResumeSamePlan(t *testing.T) {
	p := cx6(t)
	f := newFake(0, 0.1, nil)
	pl := testPlan(p, f, 0)
	pl.Budget, pl.MaxRuns = 0, 30
	var prior []Record
	if _, err := Run(context.Background(), f, pl, collect(&prior)); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		tune func(*Plan)
		want []string
	}{
		"duration":  {func(p *Plan) { p.Base.DurationS = 2 }, []string{"duration_s 1", "this plan 2"}},
		"warm-up":   {func(p *Plan) { p.Base.WarmupIterations = 5 }, []string{"warmup_iterations 1000", "this plan 5"}},
		"counters":  {func(p *Plan) { p.Base.Counters = "off" }, []string{"counters auto", "this plan off"}},
		"hugepages": {func(p *Plan) { p.Base.Hugepages = true }, []string{"hugepages false", "this plan true"}},
		"events":    {func(p *Plan) { p.Base.CompletionEvents = true }, []string{"completion_events false", "this plan true"}},
		"space": {func(p *Plan) {
			s, err := p.Space.Override("qps=1,2")
			if err != nil {
				t.Fatal(err)
			}
			p.Space = s
		}, []string{"outside this space (num_qps ", "is not one of its values 1,2)"}},
	} {
		q := pl
		q.Prior, q.MaxRuns = prior, 60
		c.tune(&q)
		g := newFake(1, 0.1, nil)
		q.Now = g.now
		_, err := Run(context.Background(), g, q, nil)
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v, want an error with %q", name, err, w)
			}
		}
		if len(g.calls) != 0 {
			t.Errorf("%s: %d runs measured", name, len(g.calls))
		}
	}
	q := pl
	q.Prior, q.MaxRuns = prior, 60
	var err error
	if q.Space, err = q.Space.Override("qps=1,2,4,8,16,32"); err != nil { // a superset
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), newFake(1, 0.1, nil), q, nil); err != nil {
		t.Errorf("a superset space: %v", err)
	}
}

// TestPerftestDuration: perftest's -D is whole seconds, 1 or more: a fractional duration
// runs the next second up; with completion events perftest has no duration mode.
func TestPerftestDuration(t *testing.T) {
	pt := Point{Op: "write", MsgSizeBytes: 65536, SQDepth: 128, PostList: 1, CQMod: 16, NumQPs: 1, MTUBytes: 4096, QPTimeout: 14, MR: MRPool}
	for d, want := range map[float64]string{0.4: " -D 1 ", 1: " -D 1 ", 2.5: " -D 3 ", 3: " -D 3 "} {
		got := Perftest(pt.Config(result.Config{DurationS: d}), "h")
		if !strings.Contains(got, want) {
			t.Errorf("-D %v: %q, want %q", d, got, want)
		}
		if r := Reproducer(pt.Config(result.Config{DurationS: d}), "h"); !strings.Contains(r, fmt.Sprintf(" -D %g ", d)) {
			t.Errorf("rdmabench -D %v: %q", d, r)
		}
	}
	if got := Perftest(pt.Config(result.Config{DurationS: 2, CompletionEvents: true}), "h"); got != "" {
		t.Errorf("events and -D: %q, want none", got)
	}
	if got := Perftest(pt.Config(result.Config{Iterations: 1000, CompletionEvents: true}), "h"); !strings.Contains(got, " -n 1000 -e ") {
		t.Errorf("events and -n: %q", got)
	}
}

// TestBudgetEstimate: a run costs its setup, its duration and the drain of its queues
// (here at a tenth of its throughput: a slow drain); no run ends past the budget, and the
// runs that would have are counted.
func TestBudgetEstimate(t *testing.T) {
	p := cx6(t)
	for seed := range uint64(3) {
		f := newFake(seed, 0.1, nil)
		f.costOf = func(c result.Config, bw float64) time.Duration {
			q := float64(c.SQDepth) * float64(c.MsgSizeBytes) * float64(c.NumQPs)
			if c.Bidirectional {
				q *= 2
			}
			return time.Duration((1.5 + c.DurationS + q*8/(bw/10*1e9)) * float64(time.Second))
		}
		pl := testPlan(p, f, seed)
		pl.Budget = 4 * time.Minute
		t0 := f.clock
		o, err := Run(context.Background(), f, pl, nil)
		if err != nil {
			t.Fatal(err)
		}
		var late []string
		for i := range f.calls {
			end := f.clock // a run ends where the next starts
			if i+1 < len(f.starts) {
				end = f.starts[i+1]
			}
			if end.After(t0.Add(pl.Budget)) {
				late = append(late, fmt.Sprintf("run %d ended %v past", i+1, end.Sub(t0.Add(pl.Budget))))
			}
		}
		if len(late) > 0 || !o.BudgetExhausted || o.TooLong == 0 || o.BudgetSpentS > pl.Budget.Seconds() {
			t.Errorf("seed %d: %v; %d runs, %d not started, spent %.1f s", seed, late, o.Runs, o.TooLong, o.BudgetSpentS)
		}
		t.Logf("seed %d: %d runs, %d not started for the budget, spent %.1f of %.0f s", seed, o.Runs, o.TooLong, o.BudgetSpentS, pl.Budget.Seconds())
	}
}

// TestErrorsCounted: runs that did not run (a setup that failed) are counted and said;
// a hunt none of whose runs ran is an error, as is a space of which no point can run.
func TestErrorsCounted(t *testing.T) {
	p := cx6(t)
	f := newFake(0, 0.1, func(c result.Config, r *result.Result) {
		if c.MR == MRCache {
			r.Error = "server: --mr cache: registration cache not supported"
			r.BWGbps, r.Lat = 0, result.Latency{}
		}
	})
	pl := testPlan(p, f, 0)
	pl.Budget = 10 * time.Minute
	o, err := Run(context.Background(), f, pl, nil)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(Summary(o), "\n")
	if o.Errors == 0 || !strings.Contains(o.FirstError, "registration cache not supported") || len(o.Findings) != 0 ||
		!strings.Contains(text, fmt.Sprintf("errors: %d of %d runs did not run", o.Errors, o.Runs)) {
		t.Errorf("%d errors (%q), findings %v:\n%s", o.Errors, o.FirstError, o.Findings, text)
	}

	f = newFake(0, 0.1, func(c result.Config, r *result.Result) { r.Error = "connecting to the server: connection refused" })
	pl = testPlan(p, f, 0)
	o, err = Run(context.Background(), f, pl, nil)
	if err == nil || !strings.Contains(err.Error(), "connection refused") || o.Errors != o.Runs || o.Runs > 20 {
		t.Errorf("every run errored: %v; %d runs, %d errors", err, o.Runs, o.Errors)
	}

	f = newFake(0, 0.1, nil)
	pl = testPlan(p, f, 0)
	pl.Validate = func(result.Config) error { return errors.New("no such device") }
	o, err = Run(context.Background(), f, pl, nil)
	if err == nil || !strings.Contains(err.Error(), "no configuration in the space can run") || len(f.calls) != 0 {
		t.Errorf("nothing can run: %v, exhausted %v, %d runs", err, o.Exhausted, len(f.calls))
	}
}

// TestSummaryLines: the summary says the background counters, the runs that did not run
// and those not started for the budget.
func TestSummaryLines(t *testing.T) {
	o := Outcome{Runs: 40, Points: 30, Errors: 2, FirstError: "setup: no memory", TooLong: 1, BudgetS: 60, BudgetSpentS: 58, BudgetExhausted: true,
		Background: []BackgroundCounter{{Counter: "roce_slow_restart", Class: "error", Moved: 40, Runs: 40, ControlMoved: 3, ControlRuns: 3, Probed: true}}}
	text := strings.Join(Summary(o), "\n")
	for _, want := range []string{"; 1 run not started: it would have run past the budget",
		"errors: 2 of 40 runs did not run (a setup that failed, a server that refused: no anomaly); the first: setup: no memory",
		"background: error counter roce_slow_restart moved in 40 of 40 runs, at the baseline in every run (3), and with any one of its parameters moved: not judged as an anomaly"} {
		if !strings.Contains(text, want) {
			t.Errorf("the summary lacks %q:\n%s", want, text)
		}
	}
}

// TestUnfairWithinEdge: QP 0 of every multi-QP run, and server 0 of every fan-out, get
// fewer messages than the most any got by 0.9 of the run's edge (result.FairnessOf):
// below half the fastest's where the runs move few messages a QP (the space here: large
// messages, deep queues, many QPs), but within what the edges make ("cannot tell"),
// which is no anomaly: nothing is found, in 9 seeds of 10 or more, though many runs'
// shares fell below the bar.
func TestUnfairWithinEdge(t *testing.T) {
	below := 0
	right := seedsRight(t, "within the edge", func(uint64) func(result.Config, *result.Result) { return plantWithinEdge(&below) },
		func(pl *Plan) {
			s, err := pl.Space.WithPeers(4).Override("size=64K,256K,1M; sq_depth=512,1024; qps=1,8,16")
			if err != nil {
				t.Fatal(err)
			}
			pl.Space, pl.Server, pl.Budget = s, "host-a,host-b,host-c,host-d", 15*time.Minute
		},
		func(o Outcome) error {
			if len(o.Findings) > 0 || !o.BudgetExhausted {
				return fmt.Errorf("%d findings, budget spent %v", len(o.Findings), o.BudgetExhausted)
			}
			return nil
		})
	t.Logf("right in %d of 10 seeds; %d runs with a share below half the fastest's, within the edge", right, below)
	if right < 9 {
		t.Errorf("right in %d of 10 seeds, want 9 or more", right)
	}
	if below < 100 {
		t.Errorf("only %d runs had a share below the bar: the test tests nothing", below)
	}
}
