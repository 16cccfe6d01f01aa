package hunt

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/rdmabench/rdmabench/counters"
	"github.com/rdmabench/rdmabench/profiles"
	"github.com/rdmabench/rdmabench/result"
)

// fakeNIC is a NIC on a simulated clock: each run costs 2 s and measures the landscape's
// throughput (truth) times lognormal noise of sigma, a completion latency whose p99 is
// 1.2-2.5x its p50, a reverse direction within a few percent of the forward one, QPs
// (several) and servers (a fan-out) that share the run within a few percent of each
// other, and in 2% of runs a stray error counter (local_ack_timeout_err +1) that a real
// bed shows now and then. plant adds the anomaly a test plants.
type fakeNIC struct {
	rng   *rand.Rand
	srng  *rand.Rand // the shares' noise (a stream of its own: the rest draws as before)
	sigma float64
	clock time.Time
	cost  time.Duration
	plant func(c result.Config, r *result.Result)
	// costOf, when set, is what a run of c that measured bw Gb/s costs (else cost)
	costOf func(c result.Config, bw float64) time.Duration
	// what was asked, and when each run started
	calls  []result.Config
	starts []time.Time
	// after, when set, runs after each measurement (a test's hook: cancel, count)
	after func(n int)
}

func newFake(seed uint64, sigma float64, plant func(result.Config, *result.Result)) *fakeNIC {
	return &fakeNIC{rng: rand.New(rand.NewPCG(seed, 0xfa4e)), srng: rand.New(rand.NewPCG(seed, 0x54a3)), sigma: sigma, clock: time.Unix(1_700_000_000, 0),
		cost: 2 * time.Second, plant: plant}
}

func (f *fakeNIC) now() time.Time { return f.clock }

func (f *fakeNIC) Measure(ctx context.Context, c result.Config) (result.Result, error) {
	f.starts = append(f.starts, f.clock)
	f.calls = append(f.calls, c)
	bw := truthGbps(c) * math.Exp(f.sigma*f.rng.NormFloat64())
	if f.costOf != nil {
		f.clock = f.clock.Add(f.costOf(c, bw))
	} else {
		f.clock = f.clock.Add(f.cost)
	}
	r := result.Result{SchemaVersion: result.SchemaVersion, Config: c, Server: "fake", DurationNS: 1e9}
	r.BWGbps, r.MsgRateMpps = bw, bw*1e3/8/float64(c.MsgSizeBytes)
	p50 := int64(float64(c.SQDepth) * float64(c.MsgSizeBytes) * 8 / bw)
	p99 := int64(float64(p50) * (1.2 + 0.4*math.Abs(f.rng.NormFloat64())))
	r.Lat = result.Latency{Samples: 10000, P50: &p50, P99: &p99}
	if c.Bidirectional {
		r.Reverse = &result.Direction{BWGbps: bw * math.Exp(0.05*f.rng.NormFloat64())}
		r.BWSumGbps = bw + r.Reverse.BWGbps
	}
	if f.rng.Float64() < 0.02 {
		r.CountersFlags = append(r.CountersFlags, flag("local_ack_timeout_err", 1))
		r.Tainted = true
	}
	noise := func() float64 { return math.Exp(0.03 * f.srng.NormFloat64()) }
	if c.Peers > 1 {
		g := make([]float64, c.Peers)
		for i := range g {
			g[i] = bw / float64(c.Peers) * noise()
		}
		setPeers(c, &r, g)
	}
	if c.NumQPs > 1 {
		per := bw * float64(r.DurationNS) / 8 / float64(c.MsgSizeBytes) / float64(c.NumQPs) // Gb/s is bits a ns
		msgs := make([]uint64, c.NumQPs)
		for i := range msgs {
			msgs[i] = uint64(per * noise())
		}
		r.QPs = result.NewQPShares(c, msgs, r.DurationNS)
	}
	if f.plant != nil {
		f.plant(c, &r)
	}
	var err error
	if r.Error != "" {
		err = errors.New(r.Error)
	}
	if f.after != nil {
		f.after(len(f.calls))
	}
	return r, err
}

// setPeers makes r a fan-out's result whose servers got g Gb/s each, with its verdict.
func setPeers(c result.Config, r *result.Result, g []float64) {
	fan := &result.Fan{JainFairness: result.Jain(g), MinPeerGbps: slices.Min(g)}
	for i, x := range g {
		fan.Peers = append(fan.Peers, result.Peer{Server: fmt.Sprintf("fake-%d", i), BWGbps: x})
	}
	v, spread, edge := result.FairnessOf(g, r.DurationNS, c.MsgSizeBytes, c.SQDepth, c.CQMod)
	fan.Fairness, fan.FairnessSpreadMessages, fan.FairnessEdgeMessages = v, &spread, edge
	r.Fan = fan
}

func flag(name string, delta uint64) counters.Flag {
	return counters.Flag{Counter: name, Scope: counters.HWPort, Side: "local", Class: counters.Error, Unit: counters.Count,
		Status: counters.OK, Delta: &delta}
}

// truthGbps is the benign landscape on a 100 Gb/s link: small messages are slower
// (a size's own reference takes that out), and within one size the depth, moderation,
// offset, MTU, QPs, registration mode, direction and operation each cost a few percent.
// Its worst point is about 0.66 of its size's best (benignWorst checks it): differences
// of that order are no anomaly at a bar of 0.5.
func truthGbps(c result.Config) float64 {
	bw := 100 * math.Min(1, math.Pow(float64(c.MsgSizeBytes)/65536, 0.35))
	mul := func(cond bool, x float64) {
		if cond {
			bw *= x
		}
	}
	mul(c.SQDepth <= 64, 0.93)
	mul(c.SQDepth == 128, 0.97)
	mul(c.CQMod == 1, 0.92)
	mul(c.BufOffsetBytes%64 != 0, 0.96)
	mul(c.MTUBytes == 1024, 0.95)
	mul(c.NumQPs == 1, 0.97)
	mul(c.MR == MRPerIO, 0.88)
	mul(c.MR == MRCache, 0.95)
	mul(c.Bidirectional, 0.97)
	mul(c.Op == "read", 0.93)
	return bw
}

// The planted anomalies.
var (
	// plantCliff: READ of 1 MiB at a depth of 512 or more runs at a quarter, both ways.
	plantCliff = func(c result.Config, r *result.Result) {
		if c.Op == "read" && c.MsgSizeBytes == 1<<20 && c.SQDepth >= 512 {
			r.BWGbps *= 0.25
			r.MsgRateMpps *= 0.25
			if r.Reverse != nil { // both directions
				r.Reverse.BWGbps *= 0.25
			}
		}
	}
	// plantCounter: two error counters move together at a depth of 256 or more (one
	// anomaly: one finding, keyed by the first).
	plantCounter = func(c result.Config, r *result.Result) {
		if c.SQDepth >= 256 {
			r.CountersFlags = append(r.CountersFlags, flag("roce_adp_retrans", uint64(50+c.SQDepth/4)),
				flag("roce_adp_retrans_to", uint64(3+c.SQDepth/64)))
			r.Tainted = true
		}
	}
	// plantFailure: a post list of 8 or more with 4 QPs or more fails its completions.
	plantFailure = func(c result.Config, r *result.Result) {
		if c.PostList >= 8 && c.NumQPs >= 4 {
			r.Error = "work completion failed: IBV_WC_REM_INV_REQ_ERR (remote invalid request error) on QP 0x1a, wr_id 7, vendor error 0x8a"
			r.BWGbps, r.MsgRateMpps, r.Lat, r.Reverse = r.BWGbps*0.1, r.MsgRateMpps*0.1, result.Latency{}, nil
		}
	}
)

// The planted anomalies of the fairness rule and the fan-out.
var (
	// plantQPUnfair: with 4 QPs or more at a depth of 256 or more, QP 0 gets a quarter of
	// the messages of the others (the run's throughput as it was: they take up the slack).
	plantQPUnfair = func(c result.Config, r *result.Result) {
		if c.NumQPs >= 4 && c.SQDepth >= 256 && r.QPs != nil {
			m := slices.Clone(r.QPs.Messages)
			m[0] /= 4
			r.QPs = result.NewQPShares(c, m, r.DurationNS)
		}
	}
	// plantFanSlow: a fan-out (2 servers or more) of messages of 256 KiB or more runs at
	// 0.3x, every server alike.
	plantFanSlow = func(c result.Config, r *result.Result) {
		if c.Peers >= 2 && c.MsgSizeBytes >= 256<<10 {
			r.BWGbps *= 0.3
			r.MsgRateMpps *= 0.3
			g := make([]float64, len(r.Fan.Peers))
			for i, p := range r.Fan.Peers {
				g[i] = p.BWGbps * 0.3
			}
			setPeers(c, r, g)
		}
	}
)

// plantWithinEdge makes QP 0's messages (a run of several QPs) and server 0's (a
// fan-out) fall short of the most any got by 0.9 of the run's edge (2 x depth + the
// moderation, result.FairnessOf): a share below half the fastest where the runs move
// few messages a QP (large messages, many QPs or servers, deep queues), but never more
// uneven than the edges can make. below counts the runs whose slowest share it put
// below half the fastest.
func plantWithinEdge(below *int) func(result.Config, *result.Result) {
	return func(c result.Config, r *result.Result) {
		edge := 0.9 * float64(2*c.SQDepth+c.CQMod)
		if q := r.QPs; q != nil {
			m := slices.Clone(q.Messages)
			m[0] = uint64(max(0, float64(slices.Max(m))-edge))
			r.QPs = result.NewQPShares(c, m, r.DurationNS)
			if float64(slices.Min(m)) < 0.5*float64(slices.Max(m)) {
				*below++
			}
		}
		if f := r.Fan; f != nil {
			perMsg := float64(c.MsgSizeBytes) * 8 / float64(r.DurationNS) // the Gb/s of one message over the window
			g := make([]float64, len(f.Peers))
			for i, p := range f.Peers {
				g[i] = p.BWGbps
			}
			g[0] = max(0, slices.Max(g)-edge*perMsg)
			setPeers(c, r, g)
			if slices.Min(g) < 0.5*slices.Max(g) {
				*below++
			}
		}
	}
}

func cx6(t interface{ Fatal(...any) }) profiles.Profile {
	p, err := profiles.Load("cx6")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// testPlan is the hunt the planted tests run: cx6's space, 1 s points, counters auto,
// a budget of 30 simulated minutes (900 runs of 2 s).
func testPlan(p profiles.Profile, f *fakeNIC, seed uint64) Plan {
	return Plan{Space: DefaultSpace(p), Base: result.Config{Test: result.BW, DurationS: p.PointDurationS,
		WarmupIterations: p.WarmupIterations, Counters: "auto"}, Budget: 30 * time.Minute, Seed: seed,
		Rules: RulesFor(p), Now: f.now, Server: "host-b"}
}
