package sweep

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/profiles"
	"github.com/rdmabench/rdmabench/result"
)

// modeLink is a link where a registration per IO costs regNS per message: per-io's
// throughput is size / (size/bw + reg), the pool's size/bw; TCP runs at tcpGbps. Every
// run has noise of +-noise (relative, uniform).
type modeLink struct {
	bw, regNS, tcpGbps, noise float64
	rng                       *rand.Rand
	runs                      []result.Config
	fail                      map[int]error // by run number
}

func (l *modeLink) Measure(ctx context.Context, c result.Config) (result.Result, error) {
	l.runs = append(l.runs, c)
	if err := l.fail[len(l.runs)]; err != nil {
		return result.Result{Config: c, Error: err.Error()}, err
	}
	jit := func() float64 { return 1 + l.noise*(2*l.rng.Float64()-1) }
	gbps := l.bw
	if c.MR == "per-io" {
		bits := float64(c.MsgSizeBytes) * 8
		gbps = bits / (bits/l.bw + l.regNS)
	}
	r := result.Result{Config: c, BWGbps: gbps * jit(), Iterations: 10, DurationNS: 1}
	if c.Baseline == "tcp" {
		r.Baseline = &result.Baseline{Transport: "tcp", BWGbps: l.tcpGbps * jit()}
	}
	return r, nil
}

func sizes(lo, hi int) []int {
	var s []int
	for v := lo; v <= hi; v *= 4 {
		s = append(s, v)
	}
	return s
}

func TestCompareModesFindsTheBreakEven(t *testing.T) {
	// 10 Gb/s, 20 us per registration: per-io is 0.3% slow at 64M, 70% slow at 4K.
	l := &modeLink{bw: 10, regNS: 20000, tcpGbps: 2, noise: 0.002, rng: rand.New(rand.NewPCG(1, 2))}
	var recorded []Recorded
	out, err := CompareModes(context.Background(), l, func(r Recorded) error { recorded = append(recorded, r); return nil },
		Modes{Op: "write", Sizes: sizes(4096, 64<<20), A: "", B: "per-io", Repeat: 4, Tolerance: 0.02, TCP: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(recorded) != len(l.runs) || len(l.runs) != 2*4*len(out.Rows) {
		t.Fatalf("%d runs, %d recorded, %d rows", len(l.runs), len(recorded), len(out.Rows))
	}
	// Interleaved: A B, B A, ...; TCP only after A.
	for i, c := range l.runs[:4] {
		want := []string{"", "per-io", "per-io", ""}[i]
		if c.MR != want || (c.Baseline == "tcp") != (c.MR == "") {
			t.Errorf("run %d: mr %q baseline %q", i, c.MR, c.Baseline)
		}
	}
	// 20 us per message: at 1M 0.977 of the pool (outside 2%), at 4M 0.994.
	if out.BreakEven != 4<<20 || !strings.Contains(out.BreakEvenNote, "from 4M") {
		t.Errorf("break-even %d: %s", out.BreakEven, out.BreakEvenNote)
	}
	if r := out.Rows[0]; r.Verdict != Worse || r.BOverA.Median > 0.2 || r.TCPVerdict != Worse {
		t.Errorf("4K: %+v", r)
	}
	// per-io beats TCP (2 Gb/s) from the size where size/(size/10 + 20us) > 2.
	if out.TCPBreakEven != 16384 || !strings.Contains(out.TCPBreakEvenNote, "per-io keeps up with tcp") {
		t.Errorf("tcp break-even %d: %s", out.TCPBreakEven, out.TCPBreakEvenNote)
	}
}

func TestCompareModesSaysCannotTell(t *testing.T) {
	// Noise of +-30% with 2 rounds: nothing is decided at the top.
	l := &modeLink{bw: 10, regNS: 1, noise: 0.3, rng: rand.New(rand.NewPCG(3, 4))}
	out, err := CompareModes(context.Background(), l, func(Recorded) error { return nil },
		Modes{Op: "read", Sizes: []int{4096, 65536}, B: "per-io", Repeat: 2, Tolerance: 0.02})
	if err != nil {
		t.Fatal(err)
	}
	if out.BreakEven != 0 || !strings.HasPrefix(out.BreakEvenNote, "cannot tell") {
		t.Errorf("%d: %s (%+v)", out.BreakEven, out.BreakEvenNote, out.Rows)
	}
	// Always slower: none.
	l = &modeLink{bw: 10, regNS: 1e9, noise: 0.001, rng: rand.New(rand.NewPCG(5, 6))}
	out, _ = CompareModes(context.Background(), l, func(Recorded) error { return nil },
		Modes{Op: "read", Sizes: []int{4096, 65536}, B: "per-io", Repeat: 3, Tolerance: 0.02})
	if out.BreakEven != 0 || !strings.HasPrefix(out.BreakEvenNote, "none: per-io is slower than pool up to 64K") {
		t.Errorf("%d: %s", out.BreakEven, out.BreakEvenNote)
	}
}

func TestCompareModesKeepsFailuresAndStopsOnALostSession(t *testing.T) {
	l := &modeLink{bw: 10, regNS: 1, noise: 0.001, rng: rand.New(rand.NewPCG(7, 8)), fail: map[int]error{2: errors.New("boom")}}
	out, err := CompareModes(context.Background(), l, func(Recorded) error { return nil },
		Modes{Op: "write", Sizes: []int{4096}, B: "per-io", Repeat: 3, Tolerance: 0.02})
	if err != nil || out.Rows[0].Pairs != 2 || len(out.Rows[0].Failed) != 1 || !strings.Contains(out.Rows[0].Failed[0], "per-io: boom") {
		t.Fatalf("%v: %+v", err, out.Rows)
	}
	l = &modeLink{bw: 10, noise: 0.001, rng: rand.New(rand.NewPCG(7, 8)), fail: map[int]error{3: &SessionLostError{Err: errors.New("gone")}}}
	_, err = CompareModes(context.Background(), l, func(Recorded) error { return nil },
		Modes{Op: "write", Sizes: []int{4096, 8192}, B: "per-io", Repeat: 3, Tolerance: 0.02})
	var lost *SessionLostError
	if !errors.As(err, &lost) || len(l.runs) != 3 {
		t.Fatalf("lost session: %v after %d runs", err, len(l.runs))
	}
}

// A TCP baseline that fails keeps the RDMA pair (the row says why TCP is missing);
// a comparison cut short says so in its break-even.
func TestCompareModesBaselineFailureAndCut(t *testing.T) {
	l := &tcpFails{modeLink{bw: 10, regNS: 20000, noise: 0.002, rng: rand.New(rand.NewPCG(1, 2))}}
	out, err := CompareModes(context.Background(), l, func(Recorded) error { return nil },
		Modes{Op: "write", Sizes: []int{4096, 1 << 20, 64 << 20}, B: "per-io", Repeat: 4, Tolerance: 0.02, TCP: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range out.Rows {
		if r.Pairs != 4 || r.TCP != nil || len(r.Failed) != 4 || !strings.HasPrefix(r.Failed[0], "tcp: ") {
			t.Errorf("%d B: %d pairs, tcp %v, failed %v", r.Size, r.Pairs, r.TCP, r.Failed)
		}
	}
	if !strings.HasPrefix(out.TCPBreakEvenNote, "cannot tell") || out.BreakEven == 0 {
		t.Errorf("break-even %d %q, tcp %q", out.BreakEven, out.BreakEvenNote, out.TCPBreakEvenNote)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	out, _ = CompareModes(ctx, &modeLink{bw: 10, regNS: 1, noise: 0.001, rng: rand.New(rand.NewPCG(9, 9))},
		func(Recorded) error {
			n++
			if n == 6 {
				cancel()
			}
			return nil
		},
		Modes{Op: "write", Sizes: []int{4096, 65536, 1 << 20}, B: "per-io", Repeat: 3, Tolerance: 0.02})
	if !out.Interrupted || len(out.Rows) != 1 || !strings.Contains(out.BreakEvenNote, "(sizes above 4K not measured)") {
		t.Errorf("cut: interrupted %v, %d rows, %q", out.Interrupted, len(out.Rows), out.BreakEvenNote)
	}
	// Interrupted inside a run: that run is no data, not recorded, and no run follows.
	ctx, cancel = context.WithCancel(context.Background())
	link := &modeLink{bw: 10, regNS: 1, noise: 0.001, rng: rand.New(rand.NewPCG(9, 9))}
	inside := measurerFunc(func(ctx context.Context, c result.Config) (result.Result, error) {
		r, err := link.Measure(ctx, c)
		if len(link.runs) == 5 {
			cancel()
			r.Interrupted = true
		}
		return r, err
	})
	var rec []Recorded
	out, _ = CompareModes(ctx, inside, func(r Recorded) error { rec = append(rec, r); return nil },
		Modes{Op: "write", Sizes: []int{4096, 65536, 1 << 20}, B: "per-io", Repeat: 3, Tolerance: 0.02})
	if !out.Interrupted || len(link.runs) != 5 || len(rec) != 4 || slices.ContainsFunc(rec, func(r Recorded) bool { return r.Interrupted }) {
		t.Errorf("interrupted in run 5: %d runs, %d recorded, interrupted %v", len(link.runs), len(rec), out.Interrupted)
	}
	cancel()
}

// tcpFails is a link whose TCP baseline always fails; the RDMA runs are fine.
type tcpFails struct{ modeLink }

func (l *tcpFails) Measure(ctx context.Context, c result.Config) (result.Result, error) {
	r, _ := l.modeLink.Measure(ctx, c)
	if c.Baseline == "tcp" {
		r.Baseline = &result.Baseline{Transport: "tcp", Error: "TCP baseline: connection refused"}
	}
	return r, nil
}

// ModesOptions.Modes assembles a --mr comparison: the profile's sizes and point
// duration unless given, the pool as no MR, the equality band 2% unless asked.
func TestModesOptions(t *testing.T) {
	p, err := profiles.Load("rxe")
	if err != nil {
		t.Fatal(err)
	}
	o := ModesOptions{Profile: p, A: "pool", B: "per-io", Repeat: 3, Budget: time.Minute, Counters: "all", QPTimeout: 20,
		Defaults: func(c *result.Config) { c.Iterations = 5000 }}
	m := o.Modes("write")
	base := result.Config{Op: "write", Test: result.BW, MsgSizeBytes: 4096, PostList: 1, CQMod: 1, NumQPs: 1, Counters: "all", QPTimeout: 20,
		Iterations: 5000, DurationS: 0.4, WarmupIterations: 16}
	if m.Op != "write" || m.Base != base || m.A != "" || m.B != "per-io" || m.Tolerance != 0.02 || m.Repeat != 3 ||
		m.Budget != time.Minute || m.TCP || !slices.Equal(m.Sizes, p.Grid["write"]["msg_size_bytes"]) {
		t.Fatalf("modes %+v", m)
	}
	o.Sizes, o.Resolution, o.PointDurationS, o.TCP, o.A = []int{4096, 65536}, 0.05, 1.5, true, "cache"
	m = o.Modes("read")
	if m.A != "cache" || m.Tolerance != 0.05 || m.Base.DurationS != 1.5 || !m.TCP || !slices.Equal(m.Sizes, o.Sizes) {
		t.Fatalf("modes %+v", m)
	}
	if c := o.Config("read", "per-io"); c.MR != "per-io" || c.Op != "read" || c.Iterations != 5000 {
		t.Fatalf("per-io config %+v", c)
	}
	o.Fabric = result.Config{DisablePCIeRelaxed: true, SL: 5, TrafficClass: 104}
	if c := o.Config("write", "pool"); !c.DisablePCIeRelaxed || c.SL != 5 || c.TrafficClass != 104 {
		t.Fatalf("--disable-pcie-relaxed --sl 5 --tclass 104: config %+v", c)
	}
}
