package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/bench"
	"github.com/rdmabench/rdmabench/bench/benchtest"
	"github.com/rdmabench/rdmabench/bench/ops"
	"github.com/rdmabench/rdmabench/hunt"
	"github.com/rdmabench/rdmabench/oob"
	"github.com/rdmabench/rdmabench/plan"
	"github.com/rdmabench/rdmabench/profiles"
	"github.com/rdmabench/rdmabench/result"
)

func TestHuntFlags(t *testing.T) {
	t.Chdir(t.TempDir()) // --resume h.ndjson must exist
	os.WriteFile("h.ndjson", nil, 0o644)
	checkFlags(t, "hunt", newCmdHunt,
		func() huntOptions {
			return huntOptions{clientOptions: clientOptions{Server: "host", TCPPort: oob.DefaultPort, Local: bench.Local{Port: 1, GIDIndex: -1},
				Timeout: 30 * time.Second, Clock: "auto"},
				Ops: []string{"write", "read"}, Budget: 15 * time.Minute, Seed: 1}
		},
		func(o *huntOptions) { o.Out.Stdout, o.Out.Stderr = nil, nil },
		[]flagCase[huntOptions]{
			{args: []string{"host"}},
			{args: []string{"host", "--ops", "read", "--profile", "cx6", "--space", "size=64K,1M; qps=1,4", "--budget", "5m", "--max-runs", "200",
				"--seed", "7", "--point-duration", "0.5", "--resume", "h.ndjson", "--json", "h.json"}, want: func(o *huntOptions) {
				o.Ops, o.Profile, o.Space, o.Budget, o.MaxRuns, o.Seed, o.PointDuration = []string{"read"}, "cx6", "size=64K,1M; qps=1,4", 5*time.Minute, 200, 7, 0.5
				o.Resume, o.Out.JSON = "h.ndjson", "h.json"
			}},
			{args: []string{"host-a", "host-b,host-c:18601"}, want: func(o *huntOptions) {
				o.Server, o.Servers = "host-a", []string{"host-a", "host-b", "host-c:18601"}
			}},
			{args: []string{"host-a,host-b", "--space", "peers=1,2"}, want: func(o *huntOptions) {
				o.Server, o.Servers, o.Space = "host-a", []string{"host-a", "host-b"}, "peers=1,2"
			}},
			{args: nil, wantErr: "requires at least 1 arg(s), only received 0"},
			{args: []string{"host-a", "host-a"}, wantErr: "SERVER: server host-a:18600 appears twice"},
			{args: []string{"host-a,", "host-b"}, wantErr: "SERVER: server list"},
			{args: []string{"host-a", "host-b", "--space", "peers=1,3"}, wantErr: "--space: peers 3: 2 servers given"},
			{args: []string{"host", "--space", "peers=1,2"}, wantErr: "--space: peers 2: 1 server given"},
			{args: []string{"host", "--ops", "send"}, wantErr: `--ops: unknown operation "send"`},
			{args: []string{"host", "--ops", "write,write"}, wantErr: "--ops: write given twice"},
			{args: []string{"host", "--budget", "-1s"}, wantErr: "--budget"},
			{args: []string{"host", "--max-runs", "-1"}, wantErr: "--max-runs"},
			{args: []string{"host", "--point-duration", "-1"}, wantErr: "--point-duration"},
			{args: []string{"host", "--space", "colour=red"}, wantErr: "--space"},
			{args: []string{"host", "--space", "sq_depth=deep"}, wantErr: "--space"},
			{args: []string{"host", "--csv", "h.csv"}, wantErr: "hunt writes no CSV"},
			{args: []string{"host", "--counters", "off"}, wantErr: "--counters off"},
			{args: []string{"host", "--resume", "h.ndjson", "--records", "other.ndjson"}, wantErr: "drop --records"},
			{args: []string{"host", "--resume", "missing.ndjson"}, wantErr: "--resume missing.ndjson"},
		})
}

// TestHuntValidate: the hunt package's own rules (hunt.CheckConfig, what its tests and
// its repair go by) say of every point of a space with a fan-out what bench's rules say
// (the CLI's Plan.Validate), so that the hunt plans no point the CLI refuses; and every
// point the search repairs runs.
func TestHuntValidate(t *testing.T) {
	p, err := profiles.Load("cx6")
	if err != nil {
		t.Fatal(err)
	}
	s, err := hunt.DefaultSpace(p).WithPeers(3).Override("size=4K,1M; sq_depth=64,512; post_list=1,8; cq_mod=1,16; qps=1,2; offset=0,64; qp_timeout=14")
	if err != nil {
		t.Fatal(err)
	}
	base := result.Config{Test: result.BW, DurationS: 1, WarmupIterations: 1000, Counters: "auto", InlineBytes: plan.InlineAuto}
	n, fans := 0, 0
	var rec func(i int, pt hunt.Point)
	rec = func(i int, pt hunt.Point) {
		if i == len(s.Dims) {
			c := pt.Config(base)
			mine, cli := hunt.CheckConfig(c), huntValidate(c)
			if (mine == nil) != (cli == nil) {
				t.Errorf("%v: hunt says %v, the CLI %v", pt, mine, cli)
			}
			if cli == nil {
				n++
				if pt.Peers > 0 {
					fans++
				}
			}
			return
		}
		for _, v := range s.Dims[i].Values {
			rec(i+1, pt.With(s.Dims[i].Name, v))
		}
	}
	rec(0, s.Baseline)
	if n == 0 || fans == 0 {
		t.Errorf("%d points run, %d fan-outs", n, fans)
	}
}

// TestHuntFanOut: a hunt against three servers (fake engines) through the CLI's
// Measurer and rules, over a small space (12 points): its fan-outs run against the
// first k servers, one QP each; no point is refused or fails to set up; the runs of
// several QPs carry their shares.
func TestHuntFanOut(t *testing.T) {
	const token = "hunt-test" // a server sends -b's traffic only to a client with its token
	rs := benchtest.NewRigs(t, 3, ops.All, func(s *bench.Server) { s.Token = token })
	c, err := rs[0].Dial(token)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	dials := map[int]int{}
	m := bench.Measurer{Client: c, Ops: ops.All, Fan: func(_ context.Context, k int) (*bench.Fan, error) {
		dials[k]++
		return benchtest.DialFan(rs[:k], token)
	}}
	s, err := hunt.DefaultSpace(mustProfile(t, "rxe")).WithPeers(3).Override("size=64K; sq_depth=32; post_list=1; cq_mod=1; qps=1,2; offset=0; mtu=1024; qp_timeout=14; mr=pool")
	if err != nil {
		t.Fatal(err)
	}
	p := hunt.Plan{Space: s, Base: result.Config{Test: result.BW, DurationS: 0.01, Counters: "off", InlineBytes: plan.InlineAuto},
		MaxRuns: 40, Seed: 3, Validate: huntValidate, Server: "a,b,c"}
	var runs []hunt.Measurement
	var stream bytes.Buffer
	record := hunt.NewRecorder(&stream)
	o, err := hunt.Run(context.Background(), m, p, func(r hunt.Record) error {
		if r.Measurement != nil {
			runs = append(runs, *r.Measurement)
		}
		return record(r)
	})
	if err != nil || o.Errors > 0 {
		t.Fatalf("%v; %d runs did not run, the first: %s", err, o.Errors, o.FirstError)
	}
	validateHunt(t, stream.Bytes(), o) // a fan-out's records and outcome too
	fans, qps := 0, 0
	for _, r := range runs {
		switch k := r.Config.Peers; {
		case k > 0:
			fans++
			if strings.Count(r.Server, ",") != k-1 || r.Config.NumQPs != 1 || r.Config.Bidirectional {
				t.Errorf("a fan-out of %d: server %q, %d QPs, bidirectional %v", k, r.Server, r.Config.NumQPs, r.Config.Bidirectional)
			}
		case r.Config.NumQPs > 1 && r.Error == "":
			qps++
			if _, ok := r.Shares[hunt.KeyQPs]; !ok {
				t.Errorf("a run of %d QPs has no QP shares: %+v", r.Config.NumQPs, r.Shares)
			}
		}
	}
	t.Logf("%d runs: %d fan-outs (dialled %v), %d of several QPs; %d findings (the fake engine's)", len(runs), fans, dials, qps, len(o.Findings))
	if fans == 0 || qps == 0 || dials[2]+dials[3] != fans {
		t.Errorf("%d runs: %d fan-outs (dialled %v), %d of several QPs", len(runs), fans, dials, qps)
	}
	pt := s.Baseline.With(hunt.DimPeers, "3")
	r, err := m.Measure(context.Background(), pt.Config(p.Base))
	if err != nil || r.Fan == nil || len(r.Fan.Peers) != 3 || r.Config.Peers != 3 {
		t.Errorf("a fan-out to 3: %v, %+v", err, r.Fan)
	}
}

// validateHunt checks a hunt's records stream and its outcome's --json against their
// schemas (docs/schemas/hunt-record and hunt); it returns the lines of each kind.
func validateHunt(t *testing.T, stream []byte, o hunt.Outcome) map[string]int {
	t.Helper()
	kinds := map[string]int{}
	for line := range bytes.Lines(stream) {
		validateDoc(t, "hunt-record", line)
		var k struct{ Kind string }
		json.Unmarshal(line, &k)
		kinds[k.Kind]++
	}
	var js bytes.Buffer
	if err := huntJSON(o)(&js); err != nil {
		t.Fatal(err)
	}
	validateDoc(t, "hunt", js.Bytes())
	return kinds
}

// TestHuntSchemas: a hunt's records (points and findings: a failure, a low throughput
// against the best seen, with its reference) and its --json validate against their
// schemas; a line or a document of another schema_version does not.
func TestHuntSchemas(t *testing.T) {
	s, err := hunt.DefaultSpace(mustProfile(t, "rxe"), "write", "read").Override("size=4K,1M; sq_depth=32,512; post_list=1; cq_mod=1; qps=1,2; offset=0; mtu=1024; qp_timeout=14; mr=pool")
	if err != nil {
		t.Fatal(err)
	}
	m := measureFunc(func(_ context.Context, c result.Config) (result.Result, error) {
		p50, p99 := int64(2000), int64(3000)
		r := result.Result{SchemaVersion: result.SchemaVersion, Config: c, Server: "fake", DurationNS: 1e8,
			BWGbps: 20, Lat: result.Latency{Samples: 1000, P50: &p50, P99: &p99}}
		switch {
		case c.Op == "read" && c.MsgSizeBytes == 1<<20:
			r.BWGbps, r.Error = 0, "ibv_poll_cq: IBV_WC_REM_ACCESS_ERR (opcode RDMA_READ, wr 3)"
			return r, errors.New(r.Error)
		case c.Op == "write" && c.SQDepth == 512:
			r.BWGbps = 2
		}
		return r, nil
	})
	p := hunt.Plan{Space: s, Base: result.Config{Test: result.BW, DurationS: 0.1, Counters: "off", InlineBytes: plan.InlineAuto},
		MaxRuns: 300, Seed: 5, Validate: huntValidate, Server: "host-b"}
	var stream bytes.Buffer
	o, err := hunt.Run(context.Background(), m, p, hunt.NewRecorder(&stream))
	if err != nil {
		t.Fatal(err)
	}
	classes := map[hunt.Class]bool{}
	for _, f := range o.Findings {
		classes[f.Class] = true
	}
	kinds := validateHunt(t, stream.Bytes(), o)
	if kinds[hunt.KindPoint] == 0 || kinds[hunt.KindFinding] == 0 || !classes[hunt.Failed] || !classes[hunt.LowThroughput] {
		t.Fatalf("records %v, findings %v: want points and findings, a failed one and a low-throughput one", kinds, classes)
	}
	first, _, _ := bytes.Cut(stream.Bytes(), []byte("\n"))
	var js bytes.Buffer
	huntJSON(o)(&js)
	for name, doc := range map[string][]byte{"hunt-record": first, "hunt": js.Bytes()} {
		var v map[string]any
		json.Unmarshal(doc, &v)
		v["schema_version"] = hunt.SchemaVersion + 1
		b, _ := json.Marshal(v)
		if err := validate(name, b); err == nil {
			t.Errorf("%s: a document of another schema_version must not validate", name)
		}
	}
}

// TestHuntRecordLines: the schema's two objects (huntPointLine, huntFindingLine) are
// hunt.Record's two kinds of line, key for key and in order.
func TestHuntRecordLines(t *testing.T) {
	var fields []string
	for f := range reflect.TypeFor[hunt.Record]().Fields() {
		fields = append(fields, f.Name)
	}
	if want := []string{"Kind", "Measurement", "Finding", "SchemaVersion"}; !reflect.DeepEqual(fields, want) {
		t.Fatalf("hunt.Record's fields are %v, the schema's lines were made for %v: make them one again", fields, want)
	}
	p50 := int64(5)
	m := hunt.Measurement{Seq: 1, Phase: hunt.PhaseSearch, Config: result.Config{Op: "write"}, P50NS: &p50, Error: "x", Tainted: true, Paused: true, Server: "s"}
	f := hunt.Finding{ID: "F1", Class: hunt.Unfair, Key: "qps", CountersMoved: []string{"c"}, PausedRuns: 1, ErrorText: "e"}
	for _, c := range []struct{ rec, line any }{
		{hunt.Record{Kind: hunt.KindPoint, Measurement: &m, SchemaVersion: hunt.SchemaVersion}, huntPointLine{hunt.KindPoint, m, hunt.SchemaVersion}},
		{hunt.Record{Kind: hunt.KindFinding, Finding: &f, SchemaVersion: hunt.SchemaVersion}, huntFindingLine{hunt.KindFinding, f, hunt.SchemaVersion}},
	} {
		a, _ := json.Marshal(c.rec)
		b, _ := json.Marshal(c.line)
		if !bytes.Equal(a, b) {
			t.Errorf("a record and the schema's line differ:\n%s\n%s", a, b)
		}
	}
}

func mustProfile(t *testing.T, name string) profiles.Profile {
	p, err := profiles.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// measureFunc is a fake engine as a function (hunt.Measurer).
type measureFunc func(ctx context.Context, cfg result.Config) (result.Result, error)

// Measure runs cfg (hunt.Measurer).
func (f measureFunc) Measure(ctx context.Context, cfg result.Config) (result.Result, error) {
	return f(ctx, cfg)
}
