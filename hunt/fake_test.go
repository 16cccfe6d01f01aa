package hunt

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"time"

	"github.com/rdmabench/rdmabench/counters"
	"github.com/rdmabench/rdmabench/profiles"
	"github.com/rdmabench/rdmabench/result"
)

// fakeNIC is a NIC on a simulated clock: each run costs 2 s and measures the landscape's
// throughput (truth) times lognormal noise of sigma, a completion latency whose p99 is
// 1.2-2.5x its p50, a reverse direction within a few percent of the forward one, and in
// 2% of runs a stray error counter (local_ack_timeout_err +1) that a real bed shows now
// and then. plant adds the anomaly a test plants.
type fakeNIC struct {
	rng   *rand.Rand
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
	return &fakeNIC{rng: rand.New(rand.NewPCG(seed, 0xfa4e)), sigma: sigma, clock: time.Unix(1_700_000_000, 0),
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
