package hunt

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/plan"
	"github.com/rdmabench/rdmabench/result"
)

// TestPeersSpace: the peers dimension of a hunt against several servers: absent with
// one, its values, its points' configs, what a fan-out may not hold (one QP a server,
// one direction, pool), repair, and resuming across spaces with and without it.
func TestPeersSpace(t *testing.T) {
	s := DefaultSpace(cx6(t))
	if _, ok := s.Dim(DimPeers); ok || s.Baseline.Peers != 0 {
		t.Fatalf("one server: a peers dimension, or a baseline of %d", s.Baseline.Peers)
	}
	for n, want := range map[int][]string{1: nil, 2: {"1", "2"}, 3: {"1", "2", "3"}, 12: {"1", "2", "3", "4", "5", "6", "7", "8", "12"},
		40: {"1", "2", "3", "4", "5", "6", "7", "8", "16", "32", "40"}, 100: {"1", "2", "3", "4", "5", "6", "7", "8", "16", "32", "64"}} {
		w := s.WithPeers(n)
		if got := w.values(DimPeers); !slices.Equal(got, want) || w.check() != nil || w.Baseline != s.Baseline {
			t.Errorf("%d servers: peers %v (want %v), %v, baseline %v", n, got, want, w.check(), w.Baseline)
		}
	}
	w := s.WithPeers(3)
	if got := w.WithPeers(1); len(got.Dims) != len(s.Dims) || got.check() != nil {
		t.Errorf("back to one server: %+v", got.Dims)
	}
	o, err := w.Override("servers=1,3")
	if err != nil || !slices.Equal(o.values(DimPeers), []string{"1", "3"}) {
		t.Errorf("override: %v %v", o.values(DimPeers), err)
	}
	if o, err := s.Override("fan-out=2,3"); err != nil || o.Baseline.Peers != 2 || !o.Contains(o.Baseline) {
		t.Errorf("a space of fan-outs only: %v, baseline %v", err, o.Baseline)
	}
	for _, bad := range []string{"peers=0", "peers=65", "peers=two"} {
		if _, err := w.Override(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	b := w.Baseline
	fan := b.With(DimPeers, "3")
	if fan.Peers != 3 || fan.Get(DimPeers) != "3" || b.Get(DimPeers) != "1" || b.With(DimPeers, "1") != b {
		t.Errorf("with: %v, %v", fan, b)
	}
	if !strings.HasSuffix(fan.String(), " peers 3") || strings.Contains(b.String(), "peers") {
		t.Errorf("strings %q, %q", fan.String(), b.String())
	}
	c := fan.Config(result.Config{DurationS: 1})
	if c.Peers != 3 || plan.PointOf(c) != fan || b.Config(result.Config{}).Peers != 0 || plan.PointOf(b.Config(result.Config{})) != b {
		t.Errorf("configs: %+v reads back as %v", c, plan.PointOf(c))
	}
	if !w.Contains(fan) || s.Contains(fan) || !s.Contains(b) {
		t.Errorf("contains: %v %v %v", w.Contains(fan), s.Contains(fan), s.Contains(b))
	}
	if err := CheckConfig(c); err != nil {
		t.Errorf("a fan-out of one QP: %v", err)
	}
	for name, p := range map[string]Point{
		"qps":    fan.With(DimQPs, "4"),
		"bidi":   fan.With(DimBidi, "true"),
		"per-io": fan.With(DimMR, MRPerIO).With(DimCQMod, "1"),
		"cache":  fan.With(DimMR, MRCache),
	} {
		if err := CheckConfig(p.Config(result.Config{})); err == nil {
			t.Errorf("%s: a fan-out passes %v", name, p)
		}
	}
	if err := CheckConfig(result.Config{Op: "write", MsgSizeBytes: 1, SQDepth: 1, PostList: 1, CQMod: 1, NumQPs: 1, Peers: 1}); err == nil {
		t.Errorf("a fan-out of one server passes")
	}
	r := repair(fan.With(DimQPs, "8").With(DimBidi, "true"), w)
	if r.Peers != 3 || r.NumQPs != 1 || r.Bidirectional || CheckConfig(r.Config(result.Config{})) != nil {
		t.Errorf("a fan-out repaired to %v", r)
	}
	r = repair(fan.With(DimMR, MRCache), w)
	if r.Peers != 0 || r.MR != MRCache || CheckConfig(r.Config(result.Config{})) != nil {
		t.Errorf("a cache fan-out repaired to %v", r)
	}

	// A one-server hunt resumes with several servers (a superset); a hunt of several
	// does not resume with one where it measured a fan-out.
	f := newFake(0, 0.1, nil)
	pl := testPlan(cx6(t), f, 0)
	pl.Budget, pl.MaxRuns = 0, 40
	var one, many []Record
	if _, err := Run(context.Background(), f, pl, collect(&one)); err != nil {
		t.Fatal(err)
	}
	q := pl
	g := newFake(1, 0.1, nil)
	q.Space, q.Prior, q.MaxRuns, q.Now = w, one, 240, g.now
	if _, err := Run(context.Background(), g, q, collect(&many)); err != nil {
		t.Errorf("one server resumed with three: %v", err)
	}
	fans := 0
	for _, rec := range many {
		if rec.Kind == KindPoint && rec.Config.Peers > 0 {
			fans++
		}
	}
	q = pl
	q.Prior, q.MaxRuns = append(one, many...), 400
	g = newFake(2, 0.1, nil)
	if _, err := Run(context.Background(), g, q, nil); fans == 0 || err == nil || !strings.Contains(err.Error(), "(peers ") || len(g.calls) > 0 {
		t.Errorf("three servers' records (%d fan-outs) resumed with one: %v", fans, err)
	}
}

// TestPeersReproducers: a fan-out's command line names the first k of the plan's
// servers (the flags before them kept), a point of one server the first; perftest has
// no fan-out.
func TestPeersReproducers(t *testing.T) {
	base := result.Config{Test: result.BW, DurationS: 1}
	pt := Point{Op: "write", MsgSizeBytes: 1 << 18, SQDepth: 512, PostList: 1, CQMod: 16, NumQPs: 1, MTUBytes: 4096, QPTimeout: 14, MR: MRPool}
	fan := pt
	fan.Peers = 2
	for _, c := range []struct{ got, want string }{
		{Reproducer(fan.Config(base), "-d mlx5_0 -x 3 a,b:18601,c"), "rdmabench write bw -s 256K -t 512 -l 1 -Q 16 -q 1 -m 4096 -D 1 -d mlx5_0 -x 3 a,b:18601"},
		{Reproducer(pt.Config(base), "-d mlx5_0 -x 3 a,b:18601,c"), "rdmabench write bw -s 256K -t 512 -l 1 -Q 16 -q 1 -m 4096 -D 1 -d mlx5_0 -x 3 a"},
		{Perftest(pt.Config(base), "a,b,c"), "ib_write_bw -s 262144 -t 512 -l 1 -Q 16 -q 1 -m 4096 -D 1 --report_gbits a"},
		{Perftest(fan.Config(base), "a,b,c"), ""},
		{Reproducer(fan.Config(base), ""), "rdmabench write bw -s 256K -t 512 -l 1 -Q 16 -q 1 -m 4096 -D 1 SERVER1,SERVER2"},
		{Reproducer(fan.Config(base), "a"), "rdmabench write bw -s 256K -t 512 -l 1 -Q 16 -q 1 -m 4096 -D 1 a,SERVER2"},
	} {
		if c.got != c.want {
			t.Errorf("got  %q\nwant %q", c.got, c.want)
		}
	}
}

// TestShares: what a run's shares say to the unfair rule: the peers', QPs' and threads'
// only where the verdict is uneven; the directions' as they are; a hunt's records from
// before the keys (share_ratio alone) read as the peers or directions they were, and
// its unfair findings (no key) stand for every key.
func TestShares(t *testing.T) {
	c := result.Config{Op: "write", MsgSizeBytes: 65536, SQDepth: 128, CQMod: 16, NumQPs: 4, DurationS: 1,
		Threads: 2, Bidirectional: true, Peers: 2} // no such run: every kind of share at once
	r := result.Result{BWGbps: 80, DurationNS: 1e9, Reverse: &result.Direction{BWGbps: 20},
		QPs:     result.NewQPShares(c, []uint64{1000, 40000, 40000, 40000}, 1e9),
		Threads: &result.Threads{Threads: []result.Thread{{Messages: 10}, {Messages: 12}}, Evenness: result.Evenness{Fairness: result.FairnessCannotTell}}}
	setPeers(c, &r, []float64{30, 30.01}) // 19 messages apart, within the edge of 272
	m := summarise(r, c, PhaseSearch, 1, 0)
	for k, want := range map[string]struct {
		ratio         float64
		has, judged   bool
		fairnessWants string
	}{
		KeyQPs:        {0.025, true, true, result.FairnessUneven},
		KeyDirections: {0.25, true, true, ""},
		KeyThreads:    {10.0 / 12, true, false, result.FairnessCannotTell},
		KeyPeers:      {30 / 30.01, true, false, result.FairnessCannotTell},
	} {
		s, has, judged := m.shareOf(k)
		if has != want.has || judged != want.judged || s.Fairness != want.fairnessWants || abs(s.Ratio-want.ratio) > 1e-9 {
			t.Errorf("%s: %+v has %v judged %v, want %+v", k, s, has, judged, want)
		}
	}
	if m.ShareRatio == nil || *m.ShareRatio != 0.025 {
		t.Errorf("share ratio %v, want the lowest judged, 0.025", m.ShareRatio)
	}
	if one := summarise(result.Result{BWGbps: 10}, result.Config{NumQPs: 1}, PhaseSearch, 1, 0); one.Shares != nil || one.ShareRatio != nil {
		t.Errorf("one QP, one direction: %+v", one)
	}
	if _, has, judged := summarise(result.Result{BWGbps: 10}, result.Config{NumQPs: 4}, PhaseSearch, 1, 0).shareOf(KeyQPs); !has || judged {
		t.Errorf("4 QPs without their shares: has %v, judged %v; want a run that cannot be judged", has, judged)
	}
	old := 0.3
	for _, c := range []struct {
		cfg         result.Config
		key         string
		has, judged bool
	}{
		{result.Config{Peers: 3}, KeyPeers, true, true}, {result.Config{Peers: 3}, KeyDirections, false, false},
		{result.Config{Bidirectional: true}, KeyDirections, true, true}, {result.Config{Bidirectional: true, NumQPs: 2}, KeyQPs, true, false},
		{result.Config{NumQPs: 1}, KeyQPs, false, false},
	} {
		m := Measurement{Config: c.cfg, ShareRatio: &old}
		if s, has, judged := m.shareOf(c.key); has != c.has || judged != c.judged || judged && s.Ratio != old {
			t.Errorf("an old record of %+v: %s has %v, judged %v", c.cfg, c.key, has, judged)
		}
	}
	h := newHunter(nil, Plan{Space: DefaultSpace(cx6(t)), Now: time.Now}, nil)
	h.found = []Finding{{ID: "F1", Class: Unfair, Set: []Condition{{Dim: DimBidi, Op: OpEq, Values: []string{"true"}}}}}
	p := h.p.Space.Baseline
	p.Bidirectional = true
	if !h.knownFor(p, Unfair, KeyQPs) || !h.knownFor(p, Unfair, KeyDirections) || h.knownFor(h.p.Space.Baseline, Unfair, KeyQPs) {
		t.Errorf("an unfair finding without a key does not stand for every key where it holds")
	}
}

func abs(x float64) float64 { return max(x, -x) }
