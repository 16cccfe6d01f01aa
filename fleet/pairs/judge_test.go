package pairs

import (
	"strings"
	"testing"
)

// bwFleet is a pairwise bandwidth run of 8 hosts, every pair at gbps but for the
// changes.
func bwFleet(gbps float64, change func(*PairResult)) []PairResult {
	var out []PairResult
	rounds, _ := Schedule("pairwise", 8)
	for _, r := range rounds {
		for _, p := range r {
			res := PairResult{A: p.A, B: p.B, Gbps: gbps}
			if change != nil {
				change(&res)
			}
			out = append(out, res)
		}
	}
	return out
}

// bad is the verdicts' bad pairs, as "A-B".
func bad(vs []Verdict) []string {
	var out []string
	for _, v := range vs {
		if v.Bad {
			out = append(out, pairName(v.A, v.B))
		}
	}
	return out
}

func pairName(a, b int) string { return string(rune('0'+a)) + "-" + string(rune('0'+b)) }

func TestJudgeOneSlowLink(t *testing.T) {
	// 28 pairs at about 97 Gb/s, one at 80: below 0.93 x the median.
	rs := bwFleet(97, func(r *PairResult) {
		r.Gbps += float64(r.A+r.B) / 100 // not all equal
		if min(r.A, r.B) == 3 && max(r.A, r.B) == 6 {
			r.Gbps = 80
		}
	})
	vs := Judge(rs, OutlierOpts{})
	if len(vs) != len(rs) {
		t.Fatalf("%d verdicts for %d results", len(vs), len(rs))
	}
	got := bad(vs)
	if len(got) != 1 || !strings.Contains("3-6 6-3", got[0]) {
		t.Fatalf("bad pairs %v, want the 3-6 link alone", got)
	}
	for _, v := range vs {
		if v.Bad {
			if v.Metric != MetricBW || v.Value != 80 || v.Median < 97 || v.Median > 97.2 || !strings.Contains(v.Why, "80.000 Gb/s is below 0.93 x the fleet median") {
				t.Errorf("slow link verdict: %+v", v)
			}
		} else if !v.Good() || v.CannotTell || !strings.Contains(v.Why, "within 0.93") {
			t.Errorf("good link verdict: %+v", v)
		}
	}
}

func TestJudgeFailure(t *testing.T) {
	rs := bwFleet(100, func(r *PairResult) {
		if r.A == 1 && r.B == 2 || r.A == 2 && r.B == 1 {
			r.Gbps, r.Err = 0, "connect: no route to host\nretried"
		}
	})
	vs := Judge(rs, OutlierOpts{})
	got := bad(vs)
	if len(got) != 1 {
		t.Fatalf("bad pairs %v, want the failed one", got)
	}
	for _, v := range vs {
		if v.Bad && v.Why != "failed: connect: no route to host; retried" {
			t.Errorf("failure verdict: %+v", v)
		}
	}
}

func TestJudgeTiesAndThresholds(t *testing.T) {
	// All equal: the median is the value, nobody is below it.
	if got := bad(Judge(bwFleet(100, nil), OutlierOpts{})); len(got) != 0 {
		t.Errorf("a fleet of equal links has bad pairs %v", got)
	}
	// Exactly at the threshold is not bad; just under it is.
	rs := []PairResult{{0, 1, 100, 0, ""}, {1, 2, 100, 0, ""}, {2, 3, 100, 0, ""}, {3, 0, 50, 0, ""}}
	vs := Judge(rs, OutlierOpts{MinBWFraction: 0.5})
	if got := bad(vs); len(got) != 0 {
		t.Errorf("at the threshold: bad %v", got)
	}
	rs[3].Gbps = 49.99
	if got := bad(Judge(rs, OutlierOpts{MinBWFraction: 0.5})); len(got) != 1 || got[0] != "3-0" {
		t.Errorf("under the threshold: bad %v", got)
	}
	// An even count's median is the mean of the middle two: 90, 100 -> 95.
	vs = Judge([]PairResult{{0, 1, 80, 0, ""}, {1, 2, 90, 0, ""}, {2, 3, 100, 0, ""}, {3, 0, 110, 0, ""}}, OutlierOpts{})
	if vs[0].Median != 95 || !vs[0].Bad || vs[1].Bad {
		t.Errorf("even median: %+v", vs)
	}
}

func TestJudgeTinyFleets(t *testing.T) {
	for _, rs := range [][]PairResult{
		{{0, 1, 100, 0, ""}},
		{{0, 1, 100, 0, ""}, {1, 0, 10, 0, ""}},
		{{0, 1, 100, 0, ""}, {1, 2, 10, 0, ""}, {2, 0, 0, 0, "timeout"}},
	} {
		for _, v := range Judge(rs, OutlierOpts{}) {
			if v.Good() {
				t.Errorf("%v: a tiny fleet judged a pair good: %+v", rs, v)
			}
			if v.Bad != (v.Why == "failed: timeout") || v.Bad == v.CannotTell {
				t.Errorf("%v: %+v: want cannot tell, or bad for the failure", rs, v)
			}
			if v.CannotTell && (!strings.Contains(v.Why, "cannot tell") || v.Median != 0) {
				t.Errorf("%v: %+v", rs, v)
			}
		}
	}
	// Three measured pairs make a median.
	vs := Judge([]PairResult{{0, 1, 100, 0, ""}, {1, 2, 100, 0, ""}, {2, 0, 50, 0, ""}}, OutlierOpts{})
	if vs[0].CannotTell || !vs[0].Good() || !vs[2].Bad {
		t.Errorf("three pairs: %+v", vs)
	}
}

func TestJudgeLatency(t *testing.T) {
	// p50 of 2 us across the fleet, one pair at 5 us (above 2.1 x), one at 4.2 us
	// (exactly 2.1 x: not bad).
	rs := []PairResult{
		{A: 0, B: 1, LatP50NS: 2000}, {A: 1, B: 2, LatP50NS: 2000}, {A: 2, B: 3, LatP50NS: 2100},
		{A: 3, B: 0, LatP50NS: 1900}, {A: 0, B: 2, LatP50NS: 5000}, {A: 1, B: 3, LatP50NS: 4200},
	}
	vs := Judge(rs, OutlierOpts{})
	if got := bad(vs); len(got) != 1 || got[0] != "0-2" {
		t.Fatalf("bad %v, want 0-2", got)
	}
	v := vs[4]
	if v.Metric != MetricLat || v.Value != 5 || v.Median != 2.05 || !strings.Contains(v.Why, "p50 5.00 us is above 2.1 x the fleet median 2.05 us") {
		t.Errorf("latency verdict: %+v", v)
	}
	// A stricter factor catches the 4.2 us pair too.
	if got := bad(Judge(rs, OutlierOpts{MaxLatFactor: 1.5})); len(got) != 2 {
		t.Errorf("factor 1.5: bad %v", got)
	}
	// Latency and bandwidth pairs are judged apart: three fast latency pairs do not
	// make a median for two bandwidth pairs.
	mixed := append(rs[:3:3], PairResult{A: 0, B: 3, Gbps: 100}, PairResult{A: 3, B: 1, Gbps: 10})
	vs = Judge(mixed, OutlierOpts{})
	if vs[0].CannotTell || !vs[3].CannotTell || !vs[4].CannotTell {
		t.Errorf("mixed: %+v", vs)
	}
}

func TestJudgeMeasuredNothing(t *testing.T) {
	rs := bwFleet(100, func(r *PairResult) {
		if r.A == 0 && r.B == 1 {
			r.Gbps = 0
		}
	})
	vs := Judge(rs, OutlierOpts{})
	if got := bad(vs); len(got) != 1 || got[0] != "0-1" {
		t.Fatalf("bad %v", got)
	}
	for _, v := range vs {
		if v.Bad && v.Why != "ran but measured nothing" {
			t.Errorf("%+v", v)
		}
	}
}

// slowFleet is 8 hosts at 100 Gb/s but 0 -> 1 at 50 and 2 -> 3 failed.
func slowFleet() []PairResult {
	return bwFleet(100, func(r *PairResult) {
		switch {
		case r.A == 0 && r.B == 1:
			r.Gbps = 50
		case r.A == 3 && r.B == 2 || r.A == 2 && r.B == 3:
			r.A, r.B, r.Gbps, r.Err = 2, 3, 0, "timeout"
		}
	})
}

func TestRetestsConfirmed(t *testing.T) {
	rt := NewRetests(slowFleet(), OutlierOpts{}, 3)
	if got := bad(rt.First()); len(got) != 2 {
		t.Fatalf("first pass bad %v", got)
	}
	runs := 0
	for rounds := rt.Rounds(); len(rounds) > 0; rounds = rt.Rounds() {
		for _, r := range rounds {
			if len(r) != 1 {
				t.Fatalf("a retest round of %d pairs: %v", len(r), r)
			}
			res := PairResult{A: r[0].A, B: r[0].B, Gbps: 40}
			if r[0].A == 2 {
				res = PairResult{A: 2, B: 3, Err: "timeout"}
			}
			v, err := rt.Record(res)
			if err != nil || !v.Bad {
				t.Fatalf("retest %v: %+v %v", r, v, err)
			}
			runs++
		}
		if runs > 100 {
			t.Fatal("retests do not end")
		}
	}
	if runs != 6 {
		t.Errorf("%d retests, want 2 pairs x 3", runs)
	}
	final := rt.Final()
	if got := bad(final); len(got) != 2 {
		t.Fatalf("final bad %v", got)
	}
	for _, v := range final {
		if v.Bad && (v.Retests != 3 || v.BadRetests != 3 || !strings.Contains(v.Why, "bad again in 3 of 3 retests")) {
			t.Errorf("%+v", v)
		}
		if !v.Bad && (!v.Good() || v.Retests != 0) {
			t.Errorf("%+v", v)
		}
	}
	// Nothing is pending any more.
	if _, err := rt.Record(PairResult{A: 0, B: 1, Gbps: 40}); err == nil {
		t.Error("a fourth retest was booked")
	}
}

func TestRetestsFlaky(t *testing.T) {
	rt := NewRetests(slowFleet(), OutlierOpts{}, 3)
	if p := rt.Pending(); len(p) != 2 || p[0] != (Pair{0, 1}) && p[1] != (Pair{0, 1}) {
		t.Fatalf("pending %v", p)
	}
	// 0 -> 1 is slow again, then fine: flaky after two retests, no third.
	if v, _ := rt.Record(PairResult{A: 0, B: 1, Gbps: 45}); !v.Bad {
		t.Fatalf("45 Gb/s not bad: %+v", v)
	}
	if v, _ := rt.Record(PairResult{A: 0, B: 1, Gbps: 99}); v.Bad || !v.Good() {
		t.Fatalf("99 Gb/s not good: %+v", v)
	}
	// 2 -> 3 runs at full speed in its first retest.
	if v, _ := rt.Record(PairResult{A: 2, B: 3, Gbps: 100}); !v.Good() {
		t.Fatalf("%+v", v)
	}
	if p := rt.Pending(); len(p) != 0 {
		t.Errorf("flaky pairs still pending: %v", p)
	}
	if _, err := rt.Record(PairResult{A: 0, B: 1, Gbps: 99}); err == nil {
		t.Error("a flaky pair's retest was booked")
	}
	if _, err := rt.Record(PairResult{A: 4, B: 5, Gbps: 99}); err == nil {
		t.Error("a good pair's retest was booked")
	}
	final := rt.Final()
	if got := bad(final); len(got) != 0 {
		t.Errorf("final bad %v, want none: flaky is not bad", got)
	}
	flaky := 0
	for _, v := range final {
		if v.Flaky {
			flaky++
			if v.Good() || v.Bad || !strings.HasPrefix(v.Why, "flaky: ") {
				t.Errorf("%+v", v)
			}
			if v.A == 0 && (v.Retests != 2 || v.BadRetests != 1) {
				t.Errorf("0 -> 1: %+v", v)
			}
		}
	}
	if flaky != 2 {
		t.Errorf("%d flaky, want 2", flaky)
	}
}

func TestRetestsNone(t *testing.T) {
	rt := NewRetests(slowFleet(), OutlierOpts{}, 0)
	if r := rt.Rounds(); len(r) != 0 {
		t.Errorf("--retest 0 retests %v", r)
	}
	if got := bad(rt.Final()); len(got) != 2 {
		t.Errorf("final bad %v: without retests the first pass stands", got)
	}
	// A tiny fleet has nothing bad to retest but its failures.
	rt = NewRetests([]PairResult{{0, 1, 100, 0, ""}, {1, 0, 0, 0, "refused"}}, OutlierOpts{}, 2)
	if p := rt.Pending(); len(p) != 1 || p[0] != (Pair{1, 0}) {
		t.Errorf("pending %v", p)
	}
	// Its retest measures, but there is still no median: not bad, so flaky.
	if v, _ := rt.Record(PairResult{A: 1, B: 0, Gbps: 100}); !v.CannotTell {
		t.Errorf("%+v", v)
	}
	if f := rt.Final(); !f[1].Flaky || !f[0].CannotTell {
		t.Errorf("%+v", f)
	}
}
