package report

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/plan"
	"github.com/rdmabench/rdmabench/profiles"
	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/sweep"
)

func fp(v float64) *float64 { return &v }
func ip(v int) *int         { return &v }

// tunedFixture is a WRITE and a READ outcome as a sweep writes them: WRITE decided
// (differs from the tuning article on size), READ left undecided on SQ depth by the budget.
func tunedFixture(t *testing.T) Tuned {
	p, err := profiles.Load("cx5")
	if err != nil {
		t.Fatal(err)
	}
	pt := func(size, depth, off, mod int) plan.Point {
		return plan.Point{MsgSizeBytes: size, SQDepth: depth, BufOffsetBytes: off, CQMod: mod, PostList: 1}
	}
	est := func(p plan.Point, bw float64) sweep.Estimate {
		return sweep.Estimate{Point: p, Runs: 5, Median: bw, CILow: fp(bw * 0.99), CIHigh: fp(bw * 1.01), BWGbps: bw, MsgRateMpps: bw / 8, P99NS: ptr(9000)}
	}
	gain := func(m, lo, hi float64) sweep.Gain {
		return sweep.Gain{Pairs: 5, GainMedian: fp(m), GainLow: fp(lo), GainHigh: fp(hi)}
	}
	chosen := est(pt(262144, 512, 0, 16), 95)
	w := sweep.Outcome{Op: "write", Objective: "bw", Unit: "gbit_per_s", Search: "descent", GridPoints: 2520, Points: 40, Runs: 90,
		Resolution: 0.02, ResolutionBasis: "budget", Repeat: 3, BudgetS: 900, BudgetSpentS: 412, FinalRounds: 5, Noise: 0.011, Decided: true, Chosen: chosen, Best: chosen,
		References: map[string]sweep.Reference{
			"article":           {Estimate: est(pt(65536, 512, 0, 8), 90), Gain: gain(0.0556, 0.041, 0.070)},
			"perftest_defaults": {Estimate: est(pt(65536, 128, 0, 1), 80), Gain: gain(0.1875, 0.17, 0.205)},
		},
		Verdicts: map[string]sweep.Verdict{
			"msg_size_bytes": {Article: []int{65536, 131072}, Chosen: 262144, ArticleValue: ip(131072), Verdict: sweep.Differs, Decided: true,
				Ratio: &sweep.Ratio{N: 5, Median: 1.03, Low: fp(1.025), High: fp(1.035)}},
			"sq_depth":         {Article: []int{512, 512}, Chosen: 512, ArticleValue: ip(512), Verdict: sweep.Agrees, Decided: true},
			"buf_offset_bytes": {Article: []int{0, 0}, Chosen: 0, Verdict: sweep.Agrees, Decided: true},
			"cq_mod":           {Article: []int{8, 16}, Chosen: 16, ArticleValue: ip(16), Verdict: sweep.Agrees, Decided: true},
			"post_list":        {Chosen: 1, Decided: true, Verdict: sweep.NoArticle},
		},
		Optima: map[string]sweep.Optimum{
			"bw": {Objective: "bw", Unit: "gbit_per_s", Estimate: chosen, Basis: sweep.Searched, Contenders: 12, Decided: true,
				Gains: map[string]sweep.Gain{"article": gain(0.0556, 0.041, 0.070)}},
			"p99": {Objective: "p99", Unit: "ns", Estimate: sweep.Estimate{Point: pt(4096, 64, 0, 1), Runs: 3, Median: 9000, CILow: fp(8000), CIHigh: fp(10000)},
				Basis: sweep.BestMeasured, Contenders: 40},
		},
		All: []sweep.PointSummary{{Point: pt(4096, 1024, 64, 64), Error: "ibv_create_qp: cannot allocate memory"}},
	}
	rc := est(pt(32768, 256, 0, 8), 90)
	r := sweep.Outcome{Op: "read", Objective: "bw", Unit: "gbit_per_s", Search: "descent", Resolution: 0.08, ResolutionBasis: "budget", BudgetS: 900, BudgetSpentS: 905, BudgetExhausted: true,
		Chosen: rc, Best: rc,
		Verdicts: map[string]sweep.Verdict{
			"cq_mod": {Article: []int{4, 8}, Chosen: 1, ArticleValue: ip(8), Verdict: sweep.ArticleBetter, Decided: false,
				Ratio: &sweep.Ratio{N: 8, Median: 0.8, Low: fp(0.75), High: fp(0.85)}},
			"post_list": {Article: []int{1, 1}, Chosen: 4, ArticleValue: ip(1), Verdict: sweep.NotApplicable},
			"sq_depth": {Article: []int{1024, 1024}, Chosen: 256, ArticleValue: ip(1024), Verdict: sweep.CannotTell,
				Ratio:      &sweep.Ratio{N: 3, Median: 1.01, Low: fp(0.95), High: fp(1.07)},
				Unresolved: &sweep.Comparison{Point: pt(32768, 1024, 0, 8), Ratio: &sweep.Ratio{N: 3, Median: 0.99, Low: fp(0.93), High: fp(1.05)}}},
		},
		Optima: map[string]sweep.Optimum{"bw": {Objective: "bw", Unit: "gbit_per_s", Estimate: rc, Basis: sweep.Searched, Contenders: 7, ContendersCut: 2}},
	}
	return NewTuned(p, map[string]sweep.Outcome{"write": w, "read": r}, result.Device{Model: "ConnectX-5"}, result.Device{}, "test")
}

func TestTunedTableComparesWithTheArticle(t *testing.T) {
	tuned := tunedFixture(t)
	var out bytes.Buffer
	if err := TunedTable(&out, tuned); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{
		"message size", "256K", "64K-128K", "differs, at +-2.0%", "cannot tell, at +-8.0%", "256 ?",
		"offset from 4 KiB", "aligned",
		"+18.8% [+17.0%, +20.5%]",  // over perftest's defaults, with its interval
		"256K/512/0/16/1", "65536", // no: sizes are short
		"│ write │ p99       │ 4K/64/0/1/1", "9.0", "best of 40 measured", "yes, of 12", "no, of 7 (+2 left out)",
		"article's better", "n/a", "read: 2 more points came within reach",
		"read rate: no optimum", "read p99: no optimum",
		"read SQ depth: inconclusive: 32K/1024/0/8/1 against the best: 0.990 [0.930, 1.050] over 3 pairs",
		"write message size: ours 256K over the article's 128K: 1.030 [1.025, 1.035] over 5 pairs",
		"budget 900 s, 905 s used (exhausted)",
		"4K/1024/64/64/1 fails here (not measured again): ibv_create_qp", "write: resolution +-2.0%",
	} {
		if want == "65536" {
			continue
		}
		if !strings.Contains(s, want) {
			t.Errorf("tuned table lacks %q:\n%s", want, s)
		}
	}
	for i, line := range strings.Split(s, "\n") {
		if n := len([]rune(line)); n > 120 {
			t.Errorf("line %d is %d columns wide, want <= 120:\n%s", i, n, line)
		}
	}
}

func TestTunedJSONHoldsNumbersOnly(t *testing.T) {
	b, err := json.Marshal(tunedFixture(t))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	json.Unmarshal(b, &doc)
	w := doc["ops"].(map[string]any)["write"].(map[string]any)
	for _, k := range []string{"chosen", "references", "noise", "budget_s", "verdicts", "optima"} {
		if _, ok := w[k]; !ok {
			t.Errorf("tuned.json write lacks %q", k)
		}
	}
	art := w["references"].(map[string]any)["article"].(map[string]any)
	for _, k := range []string{"point", "runs", "median", "ci_low", "ci_high", "gain_median", "gain_ci_low", "gain_ci_high"} {
		if _, ok := art[k].(string); ok || art[k] == nil {
			t.Errorf("references.article.%s: %v (want a number or a point)", k, art[k])
		}
	}
	if strings.Contains(string(b), "Gb/s") || strings.Contains(string(b), "%") {
		t.Errorf("formatted strings in tuned.json: %s", b)
	}
	var back Tuned
	if err := json.Unmarshal(b, &back); err != nil || back.Ops["write"].Chosen.Point != tunedFixture(t).Ops["write"].Chosen.Point {
		t.Fatalf("round trip: %v", err)
	}
}

func TestTunedCSV(t *testing.T) {
	var out bytes.Buffer
	if err := TunedCSV(&out, tunedFixture(t)); err != nil {
		t.Fatal(err)
	}
	want := "op,objective,msg_size_bytes,sq_depth,buf_offset_bytes,cq_mod,post_list,runs,median,ci_low,ci_high,gain_vs_article,gain_vs_perftest,verdict,resolution,runs_tainted,qp_timeout\n" +
		"write,bw,262144,512,0,16,1,5,95,94.05,95.95,0.0556,,decided,0.02,0,14\n" +
		"write,p99,4096,64,0,1,1,3,9000,8000,10000,,,best_measured,0.02,0,14\n" +
		"read,bw,32768,256,0,8,1,5,90,89.1,90.9,,,inconclusive,0.08,0,14\n"
	if out.String() != want {
		t.Fatalf("tuned CSV:\n%s\nwant:\n%s", out.String(), want)
	}
}

// A tuned report reads back only under its own schema version: another version's keys
// may mean something else. Results are not tuned reports.
func TestReadTunedChecksTheVersion(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteTunedJSON(&buf, tunedFixture(t)); err != nil {
		t.Fatal(err)
	}
	good := buf.String()
	back, ok, err := ReadTuned([]byte(good))
	if !ok || err != nil || back.Ops["write"].Chosen.Point != tunedFixture(t).Ops["write"].Chosen.Point || back.SchemaVersion != TunedSchemaVersion {
		t.Fatalf("round trip: ok %v, %v", ok, err)
	}
	for _, tc := range []struct{ doc, want string }{
		{strings.Replace(good, `"schema_version": 4`, `"schema_version": 3`, 1), "tuned report has schema_version 3; this rdmabench reads schema_version 4"},
		{strings.Replace(good, `"schema_version": 4`, `"schema_version": 5`, 1), "tuned report has schema_version 5; this rdmabench reads schema_version 4"},
		{`{"ops":{}}`, "tuned report without a schema_version; this rdmabench reads schema_version 4"},
		{`{"schema_version":5,"ops":["a new shape"]}`, "schema_version 5"},
		{`{"schema_version":4,"ops":["broken"]}`, "reading the tuned report"},
	} {
		if _, ok, err := ReadTuned([]byte(tc.doc)); !ok || err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%.60s: want a tuned report refused with %q, got ok %v, %v", tc.doc, tc.want, ok, err)
		}
	}
	for _, doc := range []string{`{"schema_version":2}`, `{"ops":null}`, `[{"ops":{}}]`, "{\"ops\":{}}\n{\"ops\":{}}", `not json`, ``} {
		if _, ok, err := ReadTuned([]byte(doc)); ok || err != nil {
			t.Errorf("%q is no tuned report: ok %v, %v", doc, ok, err)
		}
	}
}

// A point's cell: the required dimensions always, the QP timeout only off its default.
func TestFmtPoint(t *testing.T) {
	p := plan.Point{MsgSizeBytes: 64 << 10, SQDepth: 8, BufOffsetBytes: 2056, CQMod: 4, PostList: 2}
	for _, c := range []struct {
		u    int
		want string
	}{{0, "64K/8/2056/4/2"}, {plan.DefaultQPTimeout, "64K/8/2056/4/2"}, {20, "64K/8/2056/4/2/u20"}} {
		p.QPTimeout = c.u
		if got := FmtPoint(p); got != c.want {
			t.Errorf("QP timeout %d: FmtPoint = %q, want %q", c.u, got, c.want)
		}
	}
}

// An optional parameter (the QP timeout) has a row in the tables only where the sweep
// varied it: the fixture held it at 14 throughout; demo4 swept 14 and 20.
func TestTunedTablesShowOnlySweptOptionalParams(t *testing.T) {
	held := tunedFixture(t)
	var b bytes.Buffer
	if err := TunedShow(&b, held, FormatTable); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(held.Params(), "qp_timeout") || strings.Contains(b.String(), ParamName("qp_timeout")) {
		t.Errorf("a held QP timeout has a row: params %v", held.Params())
	}
	if swept := demoTuned(t); !slices.Contains(swept.Params(), "qp_timeout") {
		t.Errorf("a swept QP timeout has no row: params %v", swept.Params())
	}
}
