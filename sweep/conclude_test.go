package sweep

import (
	"context"
	"math"
	"testing"

	"github.com/rdmabench/rdmabench/plan"
)

func TestReferencesAreMeasuredAsOftenAsTheChosen(t *testing.T) {
	p := rxe(t)
	pl := sweepPlan(p, "descent")
	pl.Repeat = 3
	pl.Article = p.Reference["write"]
	pl.References = map[string]plan.Point{"perftest_defaults": pt(65536, 128, 0, 100, 1),
		"article": ArticlePoint(pl.Grid, pl.Article, pl.Start)}
	if a := pl.References["article"]; a != pt(65536, 512, 0, 8, 1) {
		t.Fatalf("article point on the rxe grid: %+v", a)
	}
	o, err := NewRunner(&fake{}, nil, nil).Run(context.Background(), pl)
	if err != nil {
		t.Fatal(err)
	}
	for name, r := range o.References {
		if r.Runs < 3 || r.Runs != o.Chosen.Runs || r.Pairs != r.Runs || r.GainLow == nil {
			t.Fatalf("%s: %d runs, %d pairs; chosen %d runs", name, r.Runs, r.Pairs, o.Chosen.Runs)
		}
		want := truth(o.Chosen.Point)/truth(r.Point) - 1
		if r.Point.CQMod == 100 {
			want = truth(o.Chosen.Point)/truth(pt(65536, 128, 0, 100, 1)) - 1
		}
		if r.GainMedian == nil || math.Abs(*r.GainMedian-want) > 1e-9 {
			t.Fatalf("%s: gain %v, want %v", name, r.GainMedian, want)
		}
	}
	for _, st := range o.All {
		if st.Point.CQMod == 100 {
			t.Fatal("an off-grid reference must not compete")
		}
	}
	if v := o.Verdicts["sq_depth"]; v.Verdict != Agrees || v.Chosen != 512 {
		t.Fatalf("depth 512 is the article's: %+v", v)
	}
	if v := o.Verdicts["msg_size_bytes"]; v.Verdict != Differs || v.Ratio == nil || v.ArticleValue == nil || *v.ArticleValue != 65536 {
		t.Fatalf("256K beats the article's 64K by far: %+v", v)
	}
}
