package hunt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/plan"
	"github.com/rdmabench/rdmabench/profiles"
	"github.com/rdmabench/rdmabench/result"
)

// collect returns a record function that keeps every record (copies).
func collect(recs *[]Record) func(Record) error {
	return func(r Record) error {
		c := Record{Kind: r.Kind, SchemaVersion: r.SchemaVersion}
		if r.Measurement != nil {
			m := *r.Measurement
			c.Measurement = &m
		}
		if r.Finding != nil {
			f := *r.Finding
			c.Finding = &f
		}
		*recs = append(*recs, c)
		return nil
	}
}

// TestBudgetHolds: no run starts that would end past the budget (its estimate: the runs'
// setup, duration and drain, which here is what a run costs), whatever a run costs, and
// MaxRuns holds the same way; a point Validate refuses is never measured.
func TestBudgetHolds(t *testing.T) {
	p := cx6(t)
	for _, cost := range []time.Duration{2 * time.Second, 7 * time.Second, 61 * time.Second} {
		f := newFake(1, 0.1, plantFailure)
		f.cost = cost
		pl := testPlan(p, f, 1)
		pl.Budget = 5 * time.Minute
		pl.Validate = func(c result.Config) error {
			if c.NumQPs == 16 {
				return errors.New("refused: 16 QPs")
			}
			return CheckConfig(c)
		}
		t0 := f.clock
		o, err := Run(context.Background(), f, pl, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range f.starts {
			if s.Add(cost).After(t0.Add(pl.Budget)) {
				t.Errorf("cost %v: run %d started %v after the start and ended past the budget %v", cost, i+1, s.Sub(t0), pl.Budget)
			}
		}
		for _, c := range f.calls {
			if c.NumQPs == 16 || CheckConfig(c) != nil {
				t.Errorf("a refused config was measured: %+v", c)
			}
		}
		most := int(pl.Budget / cost)
		if !o.BudgetExhausted || o.Runs != len(f.calls) || o.Runs > most || o.BudgetSpentS > pl.Budget.Seconds() ||
			o.BudgetSpentS < (pl.Budget-2*cost).Seconds() || o.TooLong == 0 {
			t.Errorf("cost %v: %d runs (at most %d), exhausted %v, spent %.0f s, %d not started", cost, o.Runs, most, o.BudgetExhausted, o.BudgetSpentS, o.TooLong)
		}
	}
	f := newFake(2, 0.1, nil)
	pl := testPlan(p, f, 2)
	pl.Budget, pl.MaxRuns = 0, 40
	o, err := Run(context.Background(), f, pl, nil)
	if err != nil || o.Runs != 40 || len(f.calls) != 40 || !o.BudgetExhausted {
		t.Errorf("max runs 40: %d runs, %d measured, exhausted %v, %v", o.Runs, len(f.calls), o.BudgetExhausted, err)
	}
}

// TestBudgetChargesRuns: the budget is the runs' wall times (plan.Ledger, as a sweep's):
// time the hunt spends between runs (here a slow records stream, an hour after each
// tenth run) is not charged, so the same seed and measurements make the same hunt.
func TestBudgetChargesRuns(t *testing.T) {
	p := cx6(t)
	runs := func(stall time.Duration) (Outcome, int) {
		f := newFake(3, 0.1, plantFailure)
		pl := testPlan(p, f, 3)
		pl.Budget = 5 * time.Minute
		n := 0
		o, err := Run(context.Background(), f, pl, func(r Record) error {
			if r.Kind == KindPoint {
				if n++; n%10 == 0 {
					f.clock = f.clock.Add(stall)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return o, len(f.calls)
	}
	o1, n1 := runs(0)
	o2, n2 := runs(time.Hour)
	if n1 == 0 || n1 != n2 || o1.Runs != o2.Runs || o1.BudgetSpentS != o2.BudgetSpentS || o2.BudgetSpentS > 300 || !o2.BudgetExhausted {
		t.Errorf("without stalls %d runs, %.0f s; with an hour's stall every 10 runs %d runs, %.0f s: want the same, within 300 s",
			n1, o1.BudgetSpentS, n2, o2.BudgetSpentS)
	}
}

// TestInterruptKeepsFindings: a cancelled context ends the hunt with what it found, and
// a finding whose minimisation was cut short is kept, recorded as not minimal.
func TestInterruptKeepsFindings(t *testing.T) {
	p := cx6(t)
	for _, at := range []string{"after", "minimizing"} {
		f := newFake(0, 0.1, plantFailure)
		pl := testPlan(p, f, 0)
		ctx, cancel := context.WithCancel(context.Background())
		var recs []Record
		keep := collect(&recs)
		found, minimizing := 0, 0
		record := func(r Record) error {
			switch {
			case r.Kind == KindFinding:
				found = len(f.calls)
			case at == "after" && found > 0 && len(f.calls) >= found+10:
				cancel()
			case at == "minimizing" && r.Kind == KindPoint && r.Phase == PhaseMinimize:
				if minimizing++; minimizing == 5 {
					cancel()
				}
			}
			return keep(r)
		}
		o, err := Run(ctx, f, pl, record)
		cancel()
		if err != nil || !o.Interrupted || o.BudgetExhausted {
			t.Fatalf("%s: err %v, interrupted %v, budget exhausted %v", at, err, o.Interrupted, o.BudgetExhausted)
		}
		if len(o.Findings) != 1 || o.Findings[0].Class != Failed {
			t.Fatalf("%s: findings %+v", at, o.Findings)
		}
		g := o.Findings[0]
		if at == "after" && (!g.Minimal || !slices.Equal(setKey(g), planted[2].set)) {
			t.Errorf("after: %v minimal %v", setKey(g), g.Minimal)
		}
		if at == "minimizing" {
			held := 0
			for _, c := range g.Set {
				if c.Held {
					held++
				}
			}
			if g.Minimal || held == 0 || !g.Matches(g.Point) || g.Runs != 3 {
				t.Errorf("minimizing: minimal %v, %d held, set %v, runs %d", g.Minimal, held, g.SetString(), g.Runs)
			}
		}
		if n := len(recs); recs[n-1].Kind != KindFinding && !slices.ContainsFunc(recs, func(r Record) bool { return r.Kind == KindFinding }) {
			t.Errorf("%s: the finding was not recorded", at)
		}
		t.Logf("%s: %d runs; %s", at, o.Runs, strings.Join(Summary(o), " | "))
	}
}

// TestResume: a hunt resumed from its records measures no point it measured before,
// keeps its findings (and does not find them again), takes a candidate's unfinished
// confirmation from the prior runs, and with nothing left to spend measures nothing.
func TestResume(t *testing.T) {
	p := cx6(t)
	f := newFake(0, 0.1, plantFailure)
	pl := testPlan(p, f, 0)
	pl.Budget, pl.MaxRuns = 0, 300
	var first []Record
	o1, err := Run(context.Background(), f, pl, collect(&first))
	if err != nil || len(o1.Findings) != 1 || o1.Runs != 300 {
		t.Fatalf("first hunt: %v, %d findings, %d runs", err, len(o1.Findings), o1.Runs)
	}
	before := map[Point]bool{}
	for _, r := range first {
		if r.Kind == KindPoint {
			before[plan.PointOf(r.Config)] = true
		}
	}

	// Nothing left: nothing measured, the finding kept.
	g := newFake(1, 0.1, plantFailure)
	pl.Now, pl.Prior = g.now, first
	o, err := Run(context.Background(), g, pl, nil)
	if err != nil || o.Runs != 0 || len(g.calls) != 0 || !o.BudgetExhausted || len(o.Findings) != 1 || o.PriorRuns != 300 {
		t.Errorf("resumed with nothing left: %v, %d runs, %d findings, prior %d", err, o.Runs, len(o.Findings), o.PriorRuns)
	}

	// 300 more.
	g = newFake(1, 0.1, plantFailure)
	pl.Now, pl.MaxRuns, pl.Seed = g.now, 600, 5
	var second []Record
	o2, err := Run(context.Background(), g, pl, collect(&second))
	if err != nil {
		t.Fatal(err)
	}
	if o2.Runs != 300 || o2.PriorRuns != 300 || len(o2.Findings) < 1 || o2.Findings[0].ID != o1.Findings[0].ID || o2.New != len(o2.Findings)-1 {
		t.Errorf("resumed: %d runs, prior %d, findings %+v, new %d", o2.Runs, o2.PriorRuns, o2.Findings, o2.New)
	}
	for _, r := range second {
		if r.Kind == KindFinding && r.Class == Failed {
			t.Errorf("the known failure was found again: %s", r.SetString())
		}
		if r.Kind != KindPoint || r.Phase != PhaseSearch && r.Phase != PhaseReference {
			continue
		}
		if pt := plan.PointOf(r.Config); before[pt] {
			t.Errorf("run %d measured %v again (%s)", r.Seq, pt, r.Phase)
		}
		if r.Seq <= 300 {
			t.Errorf("a resumed run numbered %d", r.Seq)
		}
	}

	// Cut during a candidate's confirmation: the resumed hunt confirms it from the runs
	// already taken, then measures the rest.
	f = newFake(0, 0.1, plantFailure)
	pl = testPlan(p, f, 0)
	ctx, cancel := context.WithCancel(context.Background())
	var cut []Record
	keep := collect(&cut)
	o3, err := Run(ctx, f, pl, func(r Record) error {
		if r.Kind == KindPoint && r.Phase == PhaseConfirm && failKey(r.Error) != "" {
			cancel()
		}
		return keep(r)
	})
	cancel()
	if err != nil || !o3.Interrupted || len(o3.Findings) != 0 {
		t.Fatalf("cut: %v, interrupted %v, %d findings", err, o3.Interrupted, len(o3.Findings))
	}
	g = newFake(3, 0.1, plantFailure)
	pl.Now, pl.Prior, pl.Budget = g.now, cut, 0
	pl.MaxRuns = len(cut) + 200
	o4, err := Run(context.Background(), g, pl, nil)
	if err != nil || o4.Reused < 1 || len(o4.Findings) != 1 || !slices.Equal(setKey(o4.Findings[0]), planted[2].set) {
		t.Errorf("resumed mid-confirmation: %v, reused %d, findings %v", err, o4.Reused, o4.Findings)
	}
	t.Logf("resumed mid-confirmation: %d prior confirm runs taken, %d runs measured", o4.Reused, o4.Runs)
}

// TestRecordsRoundTrip: a hunt's records written as NDJSON read back as they were; the
// point and finding records share no key.
func TestRecordsRoundTrip(t *testing.T) {
	p := cx6(t)
	f := newFake(4, 0.1, plantCounter)
	pl := testPlan(p, f, 4)
	pl.Budget, pl.MaxRuns = 0, 150
	var recs []Record
	var buf bytes.Buffer
	w := NewRecorder(&buf)
	keep := collect(&recs)
	if _, err := Run(context.Background(), f, pl, func(r Record) error { _ = keep(r); return w(r) }); err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, r := range recs {
		kinds[r.Kind]++
	}
	if kinds[KindPoint] != 150 || kinds[KindFinding] != 1 {
		t.Fatalf("records: %v", kinds)
	}
	text := buf.String()
	got, err := ReadRecords(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, recs) {
		for i := range min(len(got), len(recs)) {
			if !reflect.DeepEqual(got[i], recs[i]) {
				t.Fatalf("record %d differs:\n got %+v\nwant %+v", i, got[i], recs[i])
			}
		}
		t.Fatalf("%d records read, %d written", len(got), len(recs))
	}
	if !strings.Contains(text, `"op":">="`) {
		t.Errorf("a condition's operator is escaped: %.300s", text[strings.Index(text, `"kind":"finding"`):])
	}
	line := strings.SplitN(text, "\n", 2)[0]
	if !strings.HasPrefix(line, `{"kind":"point","seq":1,"phase":"search","config":{`) {
		t.Errorf("a point record reads %s", line)
	}
	keys := func(t reflect.Type) map[string]bool {
		k := map[string]bool{}
		for i := range t.NumField() {
			name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
			k[name] = true
		}
		return k
	}
	for k := range keys(reflect.TypeFor[Measurement]()) {
		if keys(reflect.TypeFor[Finding]())[k] || k == "kind" {
			t.Errorf("key %q is in both record kinds", k)
		}
	}
	for _, bad := range []string{`{"kind":"point","seq":1`, `{"kind":"other"}`, `{"kind":"point","id":"F1"}`, `{"kind":"finding","seq":3,"id":"F1"}`, `{"kind":"point","nonesuch":1}`} {
		if _, err := ReadRecords(strings.NewReader(line + "\n" + bad + "\n")); err == nil || !strings.Contains(err.Error(), "line 2") {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

// TestRecordsSchemaVersion: a hunt's records carry schema_version; a stream from before
// the key reads as it was (SchemaVersion 0, the same fields), resumes a hunt as one of
// this version does, and is written again as this version; a line of a later version is
// refused before its fields are read, naming the line and both versions.
func TestRecordsSchemaVersion(t *testing.T) {
	p := cx6(t)
	f := newFake(4, 0.1, plantCounter)
	pl := testPlan(p, f, 4)
	pl.Budget, pl.MaxRuns = 0, 60
	var recs []Record
	var buf bytes.Buffer
	w := NewRecorder(&buf)
	keep := collect(&recs)
	o, err := Run(context.Background(), f, pl, func(r Record) error { _ = keep(r); return w(r) })
	if err != nil {
		t.Fatal(err)
	}
	if o.SchemaVersion != SchemaVersion {
		t.Errorf("the outcome's schema_version is %d, want %d", o.SchemaVersion, SchemaVersion)
	}
	text := buf.String()
	if n, lines := strings.Count(text, fmt.Sprintf(`,"schema_version":%d}`, SchemaVersion)), strings.Count(text, "\n"); n != lines || n != len(recs) {
		t.Fatalf("%d of %d lines (%d records) end in schema_version %d", n, lines, len(recs), SchemaVersion)
	}
	old := strings.ReplaceAll(text, fmt.Sprintf(`,"schema_version":%d}`, SchemaVersion), "}")
	got, err := ReadRecords(strings.NewReader(old))
	if err != nil {
		t.Fatalf("a stream from before schema_version: %v", err)
	}
	for i := range recs {
		recs[i].SchemaVersion = 0
	}
	if !reflect.DeepEqual(got, recs) {
		t.Fatalf("a stream from before schema_version reads otherwise than it was written")
	}
	var again bytes.Buffer
	w2 := NewRecorder(&again)
	for _, r := range got {
		if err := w2(r); err != nil {
			t.Fatal(err)
		}
	}
	if again.String() != text {
		t.Errorf("an old stream's records are not written again as this version's")
	}
	g := newFake(4, 0.1, plantCounter)
	pl = testPlan(p, g, 4)
	pl.Budget, pl.MaxRuns, pl.Prior = 0, 60, got
	o2, err := Run(context.Background(), g, pl, nil)
	if err != nil || o2.PriorRuns != o.Runs || o2.Runs != 0 || len(o2.Findings) != len(o.Findings) {
		t.Errorf("resumed from a stream before schema_version: %v, %d prior runs (want %d), %d measured, %d findings (want %d)",
			err, o2.PriorRuns, o.Runs, o2.Runs, len(o2.Findings), len(o.Findings))
	}
	line := strings.SplitN(text, "\n", 2)[0]
	for _, later := range []string{
		strings.Replace(line, fmt.Sprintf(`"schema_version":%d}`, SchemaVersion), fmt.Sprintf(`"schema_version":%d}`, SchemaVersion+1), 1),
		fmt.Sprintf(`{"kind":"point","seq":2,"later":true,"schema_version":%d}`, SchemaVersion+1), // a later version's fields
		`{"kind":"widget","schema_version":9}`,
	} {
		_, err := ReadRecords(strings.NewReader(line + "\n" + later + "\n"))
		var v *VersionError
		if err == nil || !strings.Contains(err.Error(), "line 2 has schema_version") || !strings.Contains(err.Error(), fmt.Sprintf("reads schema_version %d", SchemaVersion)) ||
			!errors.As(err, &v) || v.Line != 2 {
			t.Errorf("%s: %v", later, err)
		}
	}
}

// TestReproducers: the finding's command lines, and "" where perftest cannot say it.
func TestReproducers(t *testing.T) {
	base := result.Config{Test: result.BW, DurationS: 1, WarmupIterations: 1000, Counters: "auto"}
	pt := Point{Op: "read", MsgSizeBytes: 1 << 20, SQDepth: 512, PostList: 1, CQMod: 16, NumQPs: 1, MTUBytes: 4096, QPTimeout: 14, MR: MRPool}
	f := Finding{ReproConfig: pt.Config(base)}
	for _, c := range []struct{ got, want string }{
		{f.Reproducer("host-b"), "rdmabench read bw -s 1M -t 512 -l 1 -Q 16 -q 1 -m 4096 -D 1 --warmup 1000 host-b"},
		{f.Perftest("host-b"), "ib_read_bw -s 1048576 -t 512 -l 1 -Q 16 -q 1 -m 4096 -D 1 --report_gbits host-b"},
		{f.Reproducer(""), "rdmabench read bw -s 1M -t 512 -l 1 -Q 16 -q 1 -m 4096 -D 1 --warmup 1000 SERVER"},
	} {
		if c.got != c.want {
			t.Errorf("got  %s\nwant %s", c.got, c.want)
		}
	}
	q := pt
	q.Op, q.PostList, q.CQMod, q.NumQPs, q.QPTimeout, q.Bidirectional = "write", 8, 8, 4, 20, true
	base.Hugepages = true
	f = Finding{ReproConfig: q.Config(base)}
	if got, want := f.Perftest("h"), "ib_write_bw -s 1048576 -t 512 -l 8 -Q 8 -q 4 -m 4096 -u 20 -b -D 1 --use_hugepages --report_gbits h"; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if got, want := f.Reproducer("h"), "rdmabench write bw -s 1M -t 512 -l 8 -Q 8 -q 4 -m 4096 -u 20 -b -D 1 --hugepages --warmup 1000 h"; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	for name, bad := range map[string]Point{
		"per-io":            {Op: "write", MsgSizeBytes: 65536, SQDepth: 128, PostList: 1, CQMod: 1, NumQPs: 1, QPTimeout: 14, MR: MRPerIO},
		"cache":             {Op: "write", MsgSizeBytes: 65536, SQDepth: 128, PostList: 1, CQMod: 4, NumQPs: 1, QPTimeout: 14, MR: MRCache},
		"offset":            {Op: "read", MsgSizeBytes: 65536, SQDepth: 128, PostList: 1, CQMod: 1, NumQPs: 1, QPTimeout: 14, MR: MRPool, BufOffsetBytes: 64},
		"post list not x16": {Op: "read", MsgSizeBytes: 65536, SQDepth: 128, PostList: 8, CQMod: 16, NumQPs: 2, QPTimeout: 14, MR: MRPool},
	} {
		f := Finding{ReproConfig: bad.Config(result.Config{DurationS: 2})}
		if got := f.Perftest("h"); got != "" {
			t.Errorf("%s: perftest %q, want none", name, got)
		}
		if got := f.Reproducer("h"); !strings.HasPrefix(got, "rdmabench "+bad.Op+" bw ") {
			t.Errorf("%s: %s", name, got)
		}
	}
	if got := (Finding{ReproConfig: Point{Op: "write", MsgSizeBytes: 4096, SQDepth: 64, PostList: 1, CQMod: 1, NumQPs: 1, QPTimeout: 14, MR: MRPerIO}.Config(result.Config{DurationS: 1})}).Reproducer("h"); !strings.Contains(got, " --mr per-io ") {
		t.Errorf("per-io: %s", got)
	}
}

// TestSpace: the default space of a profile, overrides, and the points' configs.
func TestSpace(t *testing.T) {
	p := cx6(t)
	s := DefaultSpace(p)
	if err := s.check(); err != nil {
		t.Fatal(err)
	}
	if got := s.values(DimSize); !slices.Equal(got, []string{"4096", "16384", "32768", "65536", "131072", "262144", "1048576"}) {
		t.Errorf("sizes %v", got)
	}
	if got := s.values(DimQPs); !slices.Equal(got, []string{"1", "2", "4", "8", "16"}) {
		t.Errorf("qps %v", got)
	}
	// QP timeouts: the hunt section's (rxe: 14 beside the grid's 20), else the grid's, else
	// the defaults (cx6).
	if got := s.values(DimQPTimeout); !slices.Equal(got, []string{"8", "14", "20"}) {
		t.Errorf("cx6's qp timeouts %v", got)
	}
	rxe, err := profiles.Load("rxe")
	if err != nil {
		t.Fatal(err)
	}
	if got := DefaultSpace(rxe).values(DimQPTimeout); !slices.Equal(got, []string{"14", "20"}) {
		t.Errorf("rxe's qp timeouts %v", got)
	}
	rxe.Hunt = nil
	if got := DefaultSpace(rxe).values(DimQPTimeout); !slices.Equal(got, []string{"20"}) {
		t.Errorf("rxe's qp timeouts without its hunt section %v", got)
	}
	b := s.Baseline
	if b.Op != "write" || b.MsgSizeBytes != 65536 || b.SQDepth != 512 || b.CQMod != 16 || b.NumQPs != 1 || b.MTUBytes != 4096 || b.QPTimeout != 14 || b.MR != MRPool || b.Bidirectional {
		t.Errorf("baseline %v", b)
	}
	o, err := s.Override("sq_depth=1024,64; qps=1,8; mr=pool; size=4K,1M; bidi=false; tx-depth=64,1024")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(o.values(DimDepth), []string{"64", "1024"}) || !slices.Equal(o.values(DimSize), []string{"4096", "1048576"}) ||
		!slices.Equal(o.values(DimMR), []string{"pool"}) || !slices.Equal(o.values(DimQPs), []string{"1", "8"}) {
		t.Errorf("override: %+v", o.Dims)
	}
	if o.Baseline.SQDepth != 64 || o.Baseline.MsgSizeBytes != 4096 {
		t.Errorf("the baseline moved to %v", o.Baseline)
	}
	for _, bad := range []string{"nonesuch=1", "mtu=1500", "sq_depth", "qps=", "op=send", "mr=odp", "qp_timeout=40", "size=-1"} {
		if _, err := s.Override(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	for _, pt := range []Point{b, {Op: "read", MsgSizeBytes: 4096, SQDepth: 64, PostList: 1, CQMod: 1, NumQPs: 1, MTUBytes: 1024, QPTimeout: 8, MR: MRCache}} {
		c := pt.Config(result.Config{DurationS: 1})
		if plan.PointOf(c) != pt || c.Test != result.BW {
			t.Errorf("%v: config %+v reads back as %v", pt, c, plan.PointOf(c))
		}
		if pt.MR == MRCache && (c.MR != MRCache || c.MRCache != 64) {
			t.Errorf("cache: %+v", c)
		}
		if pt.QPTimeout == 14 && c.QPTimeout != 0 {
			t.Errorf("the default QP timeout is said as 0: %d", c.QPTimeout)
		}
	}
	r := repair(Point{Op: "write", MsgSizeBytes: 4096, SQDepth: 64, PostList: 8, CQMod: 64, NumQPs: 8, MTUBytes: 1024, QPTimeout: 8, MR: MRPerIO, Bidirectional: true}, s)
	if r.NumQPs != 1 || r.PostList != 1 || r.CQMod != 1 || r.Bidirectional || CheckConfig(r.Config(result.Config{})) != nil {
		t.Errorf("repaired to %v", r)
	}
}

// TestConditions: how a condition reads and which points it holds.
func TestConditions(t *testing.T) {
	pt := Point{Op: "read", MsgSizeBytes: 1 << 20, SQDepth: 2048, PostList: 8, NumQPs: 4, MR: MRCache}
	for _, c := range []struct {
		c    Condition
		text string
		hold bool
	}{
		{Condition{DimDepth, ">=", []string{"512", "1024"}, false}, "sq_depth >= 512", true},
		{Condition{DimSize, "=", []string{"1048576"}, false}, "msg_size_bytes = 1M", true},
		{Condition{DimSize, ">=", []string{"1048576"}, false}, "msg_size_bytes >= 1M", true},
		{Condition{DimQPs, "<=", []string{"1", "2"}, false}, "num_qps <= 2", false},
		{Condition{DimPostList, "in", []string{"2", "4"}, false}, "post_list in 2..4", false},
		{Condition{DimOp, "=", []string{"read"}, false}, "op = read", true},
		{Condition{DimMR, "in", []string{"pool", "cache"}, false}, "mr in {pool, cache}", true},
		{Condition{DimBidi, "=", []string{"true"}, true}, "bidirectional = true (held)", false},
	} {
		if got := c.c.String(); got != c.text {
			t.Errorf("%+v reads %q, want %q", c.c, got, c.text)
		}
		if got := c.c.Holds(pt); got != c.hold {
			t.Errorf("%s holds for %v: %v", c.text, pt, got)
		}
	}
	if s := (Finding{}).SetString(); s != "any configuration" {
		t.Errorf("an empty set reads %q", s)
	}
}

// TestTailAndUnfair: the tail and fairness rules find their planted anomalies in a small
// space (3 seeds each): a tail, directions and fan-out servers served unevenly (peers: a
// hunt against 4 servers); and a point slow only for its queues' ramp is no anomaly.
func TestTailAndUnfair(t *testing.T) {
	p := cx6(t)
	for _, c := range []struct {
		name  string
		plant func(result.Config, *result.Result)
		class Class
		key   string
		set   []string
		peers int
	}{
		{"tail", func(c result.Config, r *result.Result) {
			if c.CQMod >= 32 && r.Lat.P99 != nil {
				v := *r.Lat.P99 * 20
				r.Lat.P99 = &v
			}
		}, Tail, "", []string{"cq_mod >= 64"}, 0},
		{"unfair", func(c result.Config, r *result.Result) {
			if c.Bidirectional && c.NumQPs >= 8 {
				r.Reverse.BWGbps *= 0.3
			}
		}, Unfair, KeyDirections, []string{"num_qps >= 8", "bidirectional = true"}, 0},
		// Server 0 of a fan-out to 3 servers or more gets 0.3x the others' share.
		{"unfair peers", func(c result.Config, r *result.Result) {
			if c.Peers >= 3 {
				g := make([]float64, len(r.Fan.Peers))
				for i, p := range r.Fan.Peers {
					g[i] = p.BWGbps
				}
				g[0] *= 0.3
				setPeers(c, r, g)
			}
		}, Unfair, KeyPeers, []string{"peers >= 3,4"}, 4},
		// A slow point that measured its queues' ramp, not the NIC, is not judged.
		{"ramp", func(c result.Config, r *result.Result) {
			sh := 0.01
			if c.MsgSizeBytes == 1<<20 && c.SQDepth >= 512 {
				r.BWGbps, sh = r.BWGbps*0.3, 0.8
				if r.Reverse != nil {
					r.Reverse.BWGbps *= 0.3
				}
			}
			r.RampShare = &sh
		}, "", "", nil, 0},
	} {
		for seed := range uint64(3) {
			f := newFake(seed+40, 0.1, c.plant)
			pl := testPlan(p, f, seed)
			s, err := pl.Space.Override("size=64K,1M; depth=128,512; cq_mod=1,16,64; post_list=1; qps=1,8; offset=0; mtu=4096; qp_timeout=14")
			if err != nil {
				t.Fatal(err)
			}
			pl.Space, pl.Budget = s.WithPeers(c.peers), 15*time.Minute
			o, err := Run(context.Background(), f, pl, nil)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, g := range o.Findings {
				got = append(got, fmt.Sprintf("%s [%s] %s", g.Class, strings.Join(setKey(g), "; "), g.Effect.Text))
			}
			switch {
			case c.class == "" && (len(o.Findings) != 0 || o.RampBound == 0):
				t.Errorf("%s seed %d: %v, %d runs not judged for their ramp", c.name, seed, got, o.RampBound)
			case c.class != "" && (len(o.Findings) != 1 || o.Findings[0].Class != c.class || o.Findings[0].Key != c.key ||
				!slices.Equal(setKey(o.Findings[0]), c.set)):
				t.Errorf("%s seed %d: %v", c.name, seed, got)
			}
			t.Logf("%s seed %d: %d runs (%d ramp-bound), exhausted %v: %v", c.name, seed, o.Runs, o.RampBound, o.Exhausted, got)
		}
	}
}

type lost struct{}

func (lost) Error() string    { return "lost the server" }
func (lost) StopsSweep() bool { return true }

type losing struct {
	*fakeNIC
	at int
}

func (l losing) Measure(ctx context.Context, c result.Config) (result.Result, error) {
	r, err := l.fakeNIC.Measure(ctx, c)
	if len(l.calls) == l.at {
		return r, lost{}
	}
	return r, err
}

// TestStopsOnLostSession: an error that stops a sweep stops a hunt, with what it found.
func TestStopsOnLostSession(t *testing.T) {
	f := newFake(0, 0.1, plantFailure)
	pl := testPlan(cx6(t), f, 0)
	o, err := Run(context.Background(), losing{f, 250}, pl, nil)
	if !errors.As(err, &lost{}) || o.Runs != 249 || len(f.calls) != 250 {
		t.Errorf("err %v after %d runs (%d measured)", err, o.Runs, len(f.calls))
	}
}

// TestSummary: the terminal's lines.
func TestSummary(t *testing.T) {
	f := newFake(0, 0.1, plantFailure)
	pl := testPlan(cx6(t), f, 0)
	pl.Budget = 10 * time.Minute
	o, err := Run(context.Background(), f, pl, nil)
	if err != nil || len(o.Findings) != 1 {
		t.Fatal(err, o.Findings)
	}
	lines := Summary(o)
	text := strings.Join(lines, "\n")
	for _, want := range []string{fmt.Sprintf("hunt: %d runs of ", o.Runs), " of a budget of 10m0s (budget spent); 1 finding, ",
		"F1 failed: post_list >= 8, num_qps >= 4: failed in 3 of 3 runs: IBV_WC_REM_INV_REQ_ERR",
		"    rdmabench write bw -s 64K -t 512 -l 8 -Q 16 -q ",
		"    (perftest cannot express this configuration)"} {
		if !strings.Contains(text, want) {
			t.Errorf("the summary lacks %q:\n%s", want, text)
		}
	}
	t.Log("\n" + text)
}

// A paused run (result.Result.Paused: pause frames moved on a port during it) is
// recorded as paused, and a finding says how many of its runs were paused, beside its
// reproducer; a finding none of whose runs was paused says nothing of pauses.
func TestPausedRunsAreSaidSo(t *testing.T) {
	for _, pausing := range []bool{true, false} {
		f := newFake(0, 0.1, func(c result.Config, r *result.Result) {
			plantFailure(c, r)
			r.Paused = pausing && r.Error != ""
		})
		pl := testPlan(cx6(t), f, 0)
		pl.Budget = 10 * time.Minute
		var recs []Record
		o, err := Run(context.Background(), f, pl, collect(&recs))
		if err != nil || len(o.Findings) != 1 {
			t.Fatal(err, o.Findings)
		}
		for _, r := range recs {
			if m := r.Measurement; m != nil && m.Paused != (pausing && m.Error != "") {
				t.Fatalf("pausing %v: run %d (error %q) recorded paused %v", pausing, m.Seq, m.Error, m.Paused)
			}
		}
		fd := o.Findings[0]
		text := strings.Join(Summary(o), "\n")
		if want := map[bool]int{true: fd.Runs}[pausing]; fd.PausedRuns != want || fd.Runs != 3 ||
			strings.Contains(text, "    paused: 3 of its 3 runs (pause frames") != pausing {
			t.Errorf("pausing %v: the finding has %d of %d runs paused, want %d; the summary:\n%s", pausing, fd.PausedRuns, fd.Runs, want, text)
		}
	}
}
