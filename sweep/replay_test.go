package sweep

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/internal/stat"
	"github.com/rdmabench/rdmabench/plan"
	"github.com/rdmabench/rdmabench/profiles"
	"github.com/rdmabench/rdmabench/result"
)

// replay is a fake NIC that answers with runs recorded on a test bed (results streams
// of earlier sweeps): a run of a recorded point is one of its recorded runs, drawn at
// random (of the duration asked where there are such, else the nearest), charged what
// the recording charged; a point never recorded answers as the nearest recorded one.
// On the virtual-clock bed runs repeat within 0.01-0.5%, so a replay decides as the bed
// would: a way to try the sweep's rules on the bed's landscape in seconds.
type replay struct {
	rng    *rand.Rand
	by     map[plan.Point][]Recorded
	clock  time.Time
	misses map[plan.Point]bool
	// model: answer from a model of the point's runs (below) rather than the runs.
	model         bool
	floor, glitch float64
	n             int
}

func loadReplay(t *testing.T, op string, files []string, seed uint64) *replay {
	r := &replay{rng: rand.New(rand.NewPCG(seed, 1)), by: map[plan.Point][]Recorded{}, misses: map[plan.Point]bool{}}
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		recs, err := ReadStream(fh)
		fh.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range recs {
			if rec.Config.Op != op || rec.Config.Test != result.BW || !rec.Client.VirtualClock() {
				continue
			}
			p := PointOf(rec.Config)
			r.by[p] = append(r.by[p], rec)
		}
	}
	if len(r.by) == 0 {
		t.Skipf("no virtual-clock %s runs in %v", op, files)
	}
	return r
}

func (r *replay) nearest(p plan.Point) []Recorded {
	lg := func(a, b int) float64 { return math.Abs(math.Log2(float64(a+1)) - math.Log2(float64(b+1))) }
	best, bd := plan.Point{}, math.Inf(1)
	for q := range r.by {
		d := 10*lg(p.MsgSizeBytes, q.MsgSizeBytes) + lg(p.SQDepth, q.SQDepth) + 3*lg(p.BufOffsetBytes, q.BufOffsetBytes) +
			lg(p.CQMod, q.CQMod) + 5*lg(p.PostList, q.PostList) + 2*lg(p.QPTimeout, q.QPTimeout)
		if d < bd || d == bd && fmt.Sprint(q) < fmt.Sprint(best) {
			best, bd = q, d
		}
	}
	return r.by[best]
}

func (r *replay) Measure(ctx context.Context, c result.Config) (result.Result, error) {
	p := PointOf(c)
	recs := r.by[p]
	if len(recs) == 0 {
		r.misses[p] = true
		recs = r.nearest(p)
	}
	near := math.Inf(1)
	for _, rec := range recs {
		near = min(near, math.Abs(rec.Config.DurationS-c.DurationS))
	}
	var same []Recorded
	for _, rec := range recs {
		if math.Abs(rec.Config.DurationS-c.DurationS) == near {
			same = append(same, rec)
		}
	}
	rec := same[r.rng.IntN(len(same))]
	r.clock = r.clock.Add(rec.charge())
	res := rec.Result
	res.Config = c
	if !r.model {
		return res, nil
	}
	// The model: the point's median, its own robust spread, a drift every point shares
	// (the bed's runs drift by 0.5% over a sweep: pairs cancel it), and a rare glitch.
	var vs []float64
	for _, q := range recs {
		b, _ := Throughput(q.Result)
		vs = append(vs, b)
	}
	med := stat.Median(vs)
	var dev []float64
	for _, v := range vs {
		dev = append(dev, math.Abs(v/med-1))
	}
	sigma := max(1.4826*stat.Median(dev), r.floor)
	if sigma > 0.05 {
		return res, nil // bimodal: the recorded runs as they came
	}
	r.n++
	v := med * math.Exp(sigma*r.rng.NormFloat64()+0.003*math.Sin(2*math.Pi*float64(r.n)/97))
	if r.rng.Float64() < r.glitch {
		v *= 0.97 + 0.02*r.rng.Float64()
	}
	b, _ := Throughput(res)
	k := v / b
	res.BWGbps, res.MsgRateMpps = res.BWGbps*k, res.MsgRateMpps*k
	if res.Steady != nil {
		st := *res.Steady
		st.BWGbps, st.MsgRateMpps = st.BWGbps*k, st.MsgRateMpps*k
		res.Steady = &st
	}
	return res, nil
}

// TestReplay runs the demo's sweep (rxe profile, --budget 240s, --repeat 6) on recorded
// bed runs: RDMABENCH_REPLAY=a.ndjson,b.ndjson go test ./sweep -run TestReplay -v.
func TestReplay(t *testing.T) {
	files := os.Getenv("RDMABENCH_REPLAY")
	if files == "" {
		t.Skip("RDMABENCH_REPLAY not set")
	}
	prof, err := profiles.Load("rxe")
	if err != nil {
		t.Fatal(err)
	}
	seeds := 3
	fmt.Sscan(os.Getenv("RDMABENCH_REPLAY_SEEDS"), &seeds)
	for _, op := range []string{"write", "read"} {
		for seed := range seeds {
			f := loadReplay(t, op, strings.Split(files, ","), uint64(seed))
			f.model, f.floor, f.glitch = os.Getenv("RDMABENCH_REPLAY_MODEL") != "", 0.0002, 0.05
			fmt.Sscan(os.Getenv("RDMABENCH_REPLAY_GLITCH"), &f.glitch)
			opts := Options{Profile: prof, Search: "descent", Objective: Objective{Name: "bw"}, Repeat: 6, Budget: 240 * time.Second, QPs: 1,
				Defaults: func(c *result.Config) {
					c.MsgSizeBytes, c.SQDepth, c.CQMod, c.PostList, c.QPTimeout = 65536, 128, 1, 1, 14
				}}
			pl := opts.Plan(op)
			fmt.Sscan(os.Getenv("RDMABENCH_REPLAY_RES"), &pl.Resolution)
			r := NewRunner(f, nil, nil)
			if os.Getenv("RDMABENCH_REPLAY_NOTES") != "" {
				r.Notice = func(op, msg string) { t.Logf("  %s: %s", op, msg) }
			}
			r.Now = func() time.Time { return f.clock }
			o, err := r.Run(context.Background(), pl)
			if err != nil {
				t.Fatal(err)
			}
			var cells []string
			decided := 0
			for _, d := range profiles.Dims {
				v := o.Verdicts[d]
				if v.Verdict != NoArticle && v.Decided {
					decided++
				}
				cells = append(cells, fmt.Sprintf("%s=%d %s%v", d, v.Chosen, v.Verdict, v.Equal))
			}
			for _, u := range o.Optima["bw"].Unresolved {
				if u.Ratio != nil && u.Ratio.Low != nil {
					t.Logf("  open: %v %.4f [%.4f, %.4f] n=%d", u.Point, u.Ratio.Median, *u.Ratio.Low, *u.Ratio.High, u.Ratio.N)
				} else {
					t.Logf("  open: %v (no ratio)", u.Point)
				}
			}
			t.Logf("%s seed %d: decided %v R=%.2f%% runs %d spent %.0f s; %d article cells decided; chosen %v\n  %s\n  misses %d",
				op, seed, o.Decided, 100*o.Resolution, o.Runs, o.BudgetSpentS, decided, o.Chosen.Point, strings.Join(cells, "\n  "), len(f.misses))
		}
	}
}
