package htmlreport

import (
	"bufio"
	"bytes"
	"flag"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/counters"
	"github.com/rdmabench/rdmabench/plan"
	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/sweep"
)

// The fixtures in testdata/:
//
//	demo4-sweep.ndjson  a subset of a real Soft-RoCE sweep stream (make demo's
//	                    out/demo4/sweep.ndjson): up to 4 runs of each chosen point, up to 2
//	                    of every other; counters cut to those that moved (Deltas.Changed);
//	                    histograms kept on the chosen points' runs only
//	demo4-tuned.json    that sweep's tuned report, as written
//	gen1.ndjson         a synthetic NIC generation (ConnectX-5 like), made by synthGen
//	gen2.ndjson         the next one (ConnectX-6 like), its device named
//	                    <script>alert(1)</script> on a host with quotes and ampersands
//
// go test ./report/html -run Fixtures -make-fixtures remakes them (the demo's from
// ../../out/demo4, which must exist).
var makeFixtures = flag.Bool("make-fixtures", false, "remake testdata's input fixtures")

func TestFixtures(t *testing.T) {
	if *makeFixtures {
		makeDemoFixture(t)
		for gen := 1; gen <= 2; gen++ {
			writeStream(t, filepath.Join("testdata", genFile(gen)), synthGen(gen))
		}
	}
	// The generator and the committed files agree.
	for gen := 1; gen <= 2; gen++ {
		var buf bytes.Buffer
		if err := result.WriteAll(result.NewNDJSONEncoder(&buf), synthGen(gen)); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join("testdata", genFile(gen)))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, buf.Bytes()) {
			t.Errorf("testdata/%s is not what synthGen(%d) makes: remake it with -make-fixtures", genFile(gen), gen)
		}
	}
	// Every line of every stream is a result of the schema.
	for _, name := range []string{"demo4-sweep.ndjson", "gen1.ndjson", "gen2.ndjson"} {
		f, err := os.Open(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<22)
		n := 0
		for sc.Scan() {
			n++
			if err := result.Validate(sc.Bytes()); err != nil {
				t.Errorf("%s line %d: %v", name, n, err)
			}
		}
		f.Close()
		if err := sc.Err(); err != nil || n == 0 {
			t.Fatalf("%s: %d lines, %v", name, n, err)
		}
	}
	if fi, err := os.Stat("testdata/demo4-sweep.ndjson"); err != nil || fi.Size() > 400<<10 {
		t.Errorf("demo4-sweep.ndjson: keep it under 400 KB (%v)", err)
	}
}

func genFile(gen int) string { return map[int]string{1: "gen1.ndjson", 2: "gen2.ndjson"}[gen] }

func writeStream[T result.Record](t *testing.T, path string, rs []T) {
	t.Helper()
	var buf bytes.Buffer
	enc := result.NewNDJSONEncoder(&buf)
	for _, r := range rs {
		if err := enc.Encode(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// makeDemoFixture cuts the demo's stream down (see the list above).
func makeDemoFixture(t *testing.T) {
	dir := filepath.Join("..", "..", "out", "demo4")
	tunedData, err := os.ReadFile(filepath.Join(dir, "tuned.json"))
	if err != nil {
		t.Fatal(err)
	}
	tuned, ok, err := readTunedForTest(tunedData)
	if err != nil || !ok {
		t.Fatalf("tuned.json: %v", err)
	}
	f, err := os.Open(filepath.Join(dir, "sweep.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := sweep.ReadStream(f)
	if err != nil {
		t.Fatal(err)
	}
	type key struct {
		op string
		pt plan.Point
	}
	count := map[key]int{}
	var out []sweep.Recorded
	for _, r := range recs {
		k := key{r.Config.Op, sweep.PointOf(r.Config)}
		chosen := tuned[r.Config.Op] == k.pt
		limit := 2
		if chosen {
			limit = 4
		}
		if count[k] >= limit {
			continue
		}
		count[k]++
		if r.Counters != nil {
			c := *r.Counters
			for _, side := range []**counters.Deltas{&c.Local, &c.Remote} {
				if *side != nil {
					d := (*side).Changed()
					*side = &d
				}
			}
			r.Counters = &c
		}
		if !chosen {
			r.Histogram = ""
		}
		out = append(out, r)
	}
	writeStream(t, filepath.Join("testdata", "demo4-sweep.ndjson"), out)
	if err := os.WriteFile(filepath.Join("testdata", "demo4-tuned.json"), tunedData, 0o644); err != nil {
		t.Fatal(err)
	}
}

// readTunedForTest returns the chosen point per operation of a tuned report.
func readTunedForTest(data []byte) (map[string]plan.Point, bool, error) {
	files := []File{{Path: "tuned.json", Data: data}}
	ss, err := Build(files, nil)
	if err != nil || len(ss) != 1 || ss[0].Tuned == nil {
		return nil, false, err
	}
	out := map[string]plan.Point{}
	for op, o := range ss[0].Tuned.Ops {
		out[op] = o.Chosen.Point
	}
	return out, true, nil
}

// synthGen makes a NIC generation's results: bandwidth against size at one
// configuration (3 runs a size), a heat map's grid at 64K (2 runs a cell), and a
// latency test per operation. Generation 2 is faster at large sizes, the same at 4K
// (rate bound: within the noise), measured once at 1M (one run: cannot tell), lacks
// READ 16K and adds WRITE 2M; some of its 256K runs are tainted.
func synthGen(gen int) []result.Result {
	rng := rand.New(rand.NewPCG(uint64(gen), 42))
	client := result.Device{Name: "mlx5_0", Driver: "mlx5_core", Model: "ConnectX-5", VendorID: 0x02c9, VendorPartID: 4119,
		FirmwareVer: "16.35.2000", NodeGUID: "b859:9f03:0012:3456", Port: 1, LinkLayer: "Ethernet", RateGbps: 100,
		ActiveMTU: 4096, GIDIndex: 3, GIDType: "RoCE v2", Host: "lab-a"}
	peak, s0 := 92.0, 3000.0
	if gen == 2 {
		client = result.Device{Name: "<script>alert(1)</script>", Driver: "mlx5_core", Model: "ConnectX-6 Dx", VendorID: 0x02c9, VendorPartID: 4125,
			FirmwareVer: "22.39.1002", NodeGUID: "0c42:a103:00ab:cdef", Port: 1, LinkLayer: "Ethernet", RateGbps: 200,
			ActiveMTU: 4096, GIDIndex: 3, GIDType: "RoCE v2", Host: `lab-b "rack 7" & co's`}
		peak, s0 = 188.0, 10406.0 // the same bandwidth at 4K: bound by the message rate
	}
	server := client
	server.NodeGUID, server.Host = client.NodeGUID[:15]+"9", client.Host+"-peer"
	t0 := time.Date(2026, 3, gen, 9, 0, 0, 0, time.UTC)
	var out []result.Result
	add := func(op, test string, size, depth, mod int, tainted bool, bw float64, lat []int64) {
		cfg := result.Config{Op: op, Test: result.Test(test), MsgSizeBytes: size, Iterations: 5000, DurationS: 2, WarmupIterations: 100, SQDepth: depth,
			PostList: 1, CQMod: mod, NumQPs: 1, Counters: "auto"}
		r := result.Result{SchemaVersion: result.SchemaVersion, ToolVersion: "synthetic", Time: t0.Add(time.Duration(len(out)) * 3 * time.Second),
			Server: "192.0.2.1:18515", Client: client, ServerDevice: server, Config: cfg, PathMTU: 4096, MaxRdAtom: 16,
			WarmupDone: 100, LatKind: "completion_under_load", Clock: "tsc", ClockNote: "TSC: constant and nonstop"}
		if test == "lat" {
			cfg.Iterations, cfg.DurationS = uint64(len(lat)), 0
			r.Config = cfg
			r.LatKind = map[string]string{"write": "one_way", "read": "read_completion"}[op]
			var sum int64
			for _, v := range lat {
				sum += v
			}
			r.SetThroughput(uint64(len(lat)), size, sum)
			h, m := result.FromSamples(lat)
			l, enc, err := result.NewLatency(h, m)
			if err != nil {
				panic(err)
			}
			r.Lat, r.Histogram = l, enc
		} else {
			msgs := uint64(bw * 1e9 / 8 / float64(size) * 2)
			r.SetThroughput(msgs, size, 2_000_000_000)
		}
		local := counters.Deltas{Device: client.Name, Port: 1, Start: r.Time, Interval: 2100 * time.Millisecond,
			Counters: []counters.Change{{Name: "port_xmit_packets", Scope: counters.Port, Unit: counters.Count, Status: counters.OK, Delta: u64(r.Iterations)}}}
		r.Counters = &result.Counters{Local: &local}
		if tainted {
			d := u64(3 + uint64(len(out)%4))
			local.Counters = append(local.Counters, counters.Change{Name: "out_of_sequence", Scope: counters.HWPort, Unit: counters.Count, Status: counters.OK, Delta: d})
			r.CountersFlags = []counters.Flag{{Counter: "out_of_sequence", Scope: counters.HWPort, Side: "local", Class: counters.Error, Unit: counters.Count, Status: counters.OK, Delta: d, Taints: true}}
			r.Tainted = true
		}
		out = append(out, r)
	}
	noise := func(sd float64) float64 { return math.Exp(rng.NormFloat64() * sd) }
	model := func(size, depth, mod int) float64 {
		return peak * float64(size) / (float64(size) + s0) * math.Min(1, math.Pow(float64(depth)/128, 0.25)) * map[int]float64{1: 0.9, 8: 1, 64: 0.985}[mod]
	}
	for _, op := range []string{"write", "read"} {
		f := 1.0
		if op == "read" {
			f = 0.96
		}
		sizes := []int{4096, 16384, 65536, 262144, 1 << 20}
		if gen == 2 && op == "write" {
			sizes = append(sizes, 2<<20)
		}
		for _, size := range sizes {
			runs := 3
			switch {
			case gen == 2 && size == 1<<20:
				runs = 1
			case gen == 2 && op == "read" && size == 16384:
				runs = 0
			}
			for range runs {
				add(op, "bw", size, 128, 8, gen == 2 && size == 262144 && rng.IntN(2) == 0, f*model(size, 128, 8)*noise(0.012), nil)
			}
		}
		for _, depth := range []int{32, 128, 512} {
			for _, mod := range []int{1, 8, 64} {
				if mod > depth || (depth == 128 && mod == 8) {
					continue
				}
				for range 2 {
					add(op, "bw", 65536, depth, mod, false, f*model(65536, depth, mod)*noise(0.012), nil)
				}
			}
		}
		n, base := 20000, 1800.0
		if gen == 2 {
			n, base = 120000, 1500.0
		}
		if op == "read" {
			base *= 1.25
		}
		lat := make([]int64, n)
		for i := range lat {
			v := base * math.Exp(rng.NormFloat64()*0.08)
			if rng.IntN(200) == 0 {
				v *= 3 + 5*rng.Float64() // a tail
			}
			lat[i] = int64(v)
		}
		add(op, "lat", 64, 128, 1, false, 0, lat)
	}
	return out
}

func u64(v uint64) *uint64 { return &v }
