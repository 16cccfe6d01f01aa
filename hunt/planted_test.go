package hunt

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/result"
)

// want is a planted anomaly's right finding: its class and key, and its minimal set, each
// condition as "dim op v1,v2" over the space's values. servers: the hunt's servers where
// it has several (a peers dimension, Space.WithPeers): its reproducer must name those its
// point runs against.
type want struct {
	name    string
	plant   func(result.Config, *result.Result)
	class   Class
	key     string
	set     []string
	servers []string
}

var planted = []want{
	{"cliff", plantCliff, LowThroughput, KeyBestSeen, []string{"op = read", "msg_size_bytes >= 1048576", "sq_depth >= 512,1024"}, nil},
	{"counter", plantCounter, Counters, "roce_adp_retrans", []string{"sq_depth >= 256,512,1024"}, nil},
	{"failure", plantFailure, Failed, "IBV_WC_REM_INV_REQ_ERR", []string{"post_list >= 8", "num_qps >= 4,8,16"}, nil},
	{"none", nil, "", "", nil, nil},
	{"qp-unfair", plantQPUnfair, Unfair, KeyQPs, []string{"sq_depth >= 256,512,1024", "num_qps >= 4,8,16"}, nil},
	{"fan-out", plantFanSlow, LowThroughput, KeyBestSeen, []string{"msg_size_bytes >= 262144,1048576", "peers >= 2,3"},
		[]string{"host-a", "host-b", "host-c"}},
}

// servers are the servers a point of peers names on its command line: the first (one
// server: "host-b" where the hunt had one), the first k of a fan-out.
func servers(all []string, peers int) string {
	if len(all) == 0 {
		return "host-b"
	}
	return strings.Join(all[:max(peers, 1)], ",")
}

func setKey(f Finding) []string {
	var s []string
	for _, c := range f.Set {
		s = append(s, fmt.Sprintf("%s %s %s", c.Dim, c.Op, strings.Join(c.Values, ",")))
	}
	return s
}

// TestPlantedAnomalies hunts each planted anomaly (and none) with 10 seeds, the noise
// from 5% to 14% a run, in 30 simulated minutes: each must be found with exactly its
// minimal set, and nothing else reported, in 9 seeds of 10 or more; with nothing planted,
// nothing may be reported in 9 of 10.
func TestPlantedAnomalies(t *testing.T) {
	p := cx6(t)
	if w := benignWorst(p); w < 0.65 {
		t.Fatalf("the benign landscape's worst point is %.2f of its size's best: it would be an anomaly", w)
	}
	const seeds = 10
	for i, w := range planted {
		t.Run(w.name, func(t *testing.T) {
			right, extra, runs, firstAt := 0, 0, 0, 0
			for seed := range uint64(seeds) {
				sigma := 0.05 + 0.01*float64(seed)
				f := newFake(seed*7+uint64(i), sigma, w.plant)
				pl := testPlan(p, f, seed)
				if len(w.servers) > 1 {
					pl.Space, pl.Server = pl.Space.WithPeers(len(w.servers)), strings.Join(w.servers, ",")
				}
				var at int
				o, err := Run(context.Background(), f, pl, func(r Record) error {
					if r.Kind == KindFinding && at == 0 {
						at = len(f.calls)
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				if o.Runs > 900 || !o.BudgetExhausted {
					t.Errorf("seed %d: %d runs, budget exhausted %v: want at most 900 and the budget spent", seed, o.Runs, o.BudgetExhausted)
				}
				runs += o.Runs
				ok := w.class == "" && len(o.Findings) == 0
				var got []string
				for _, f := range o.Findings {
					got = append(got, fmt.Sprintf("%s %s [%s] %s", f.Class, f.Key, strings.Join(setKey(f), "; "), f.Effect.Text))
					if f.Class == w.class && f.Key == w.key && f.Minimal && slices.Equal(setKey(f), w.set) && len(o.Findings) == 1 &&
						strings.HasSuffix(f.Command, " "+servers(w.servers, f.Point.Peers)) {
						ok = true
						firstAt += at
					}
				}
				if len(o.Findings) > 1 || (w.class == "" && len(o.Findings) > 0) {
					extra++
				}
				if ok {
					right++
				}
				t.Logf("seed %d (noise %.0f%%): %v; %d runs, %d candidates, %d rejected, first finding at run %d; %v",
					seed, 100*sigma, ok, o.Runs, o.Candidates, o.Rejected, at, got)
			}
			t.Logf("%s: right %d of %d seeds, a seed with a false finding %d, %d runs in all, found after %.0f runs on average",
				w.name, right, seeds, extra, runs, float64(firstAt)/math.Max(1, float64(right)))
			if right < 9 {
				t.Errorf("%s: right in %d of %d seeds, want 9 or more", w.name, right, seeds)
			}
		})
	}
}

// benignWorst is the lowest ratio of a point's truth to the best of its operation and
// size over the space (the configurations rdmabench runs).
func benignWorst(p interface{}) float64 {
	s := DefaultSpace(cx6(fatalT{}))
	best := map[opSize]float64{}
	var all []Point
	var rec func(i int, pt Point)
	rec = func(i int, pt Point) {
		if i == len(s.Dims) {
			if CheckConfig(pt.Config(result.Config{})) == nil {
				all = append(all, pt)
			}
			return
		}
		for _, v := range s.Dims[i].Values {
			rec(i+1, pt.With(s.Dims[i].Name, v))
		}
	}
	rec(0, Point{})
	for _, pt := range all {
		k := opSize{pt.Op, pt.MsgSizeBytes}
		best[k] = max(best[k], truthGbps(pt.Config(result.Config{})))
	}
	worst := 1.0
	for _, pt := range all {
		worst = min(worst, truthGbps(pt.Config(result.Config{}))/best[opSize{pt.Op, pt.MsgSizeBytes}])
	}
	return worst
}

type fatalT struct{}

func (fatalT) Fatal(a ...any) { panic(fmt.Sprint(a...)) }
