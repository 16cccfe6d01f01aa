package hunt

import (
	"context"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/plan"
	"github.com/rdmabench/rdmabench/result"
)

// The traffic class is a dimension of plan.Dims and nothing more in the hunt than a field
// of Point: a default space lacks it (its points run at 0, the records as before); a
// space told of it varies it, writes it into the plans and reads it back.
func TestTrafficClassDimension(t *testing.T) {
	s := DefaultSpace(cx6(t))
	if _, ok := s.Dim(DimTClass); ok || !s.Contains(s.Baseline) || s.Baseline.Get(DimTClass) != "0" {
		t.Fatalf("a default space with a traffic class: %+v", s.Dims)
	}
	o, err := s.Override("tclass=104,0")
	if err != nil || strings.Join(o.values(DimTClass), ",") != "0,104" || o.Baseline.TrafficClass != 0 {
		t.Fatalf("override: %v, %v, baseline %v", o.values(DimTClass), err, o.Baseline)
	}
	p := o.Baseline.With(DimTClass, "104")
	c := p.Config(result.Config{})
	if c.TrafficClass != 104 || plan.PointOf(c) != p || !o.Contains(p) || s.Contains(p) {
		t.Errorf("point %v: plan's traffic class %d, read back %v", p, c.TrafficClass, plan.PointOf(c))
	}
	if !strings.HasSuffix(p.String(), " tclass 104") || strings.Contains(o.Baseline.String(), "tclass") {
		t.Errorf("strings %q, %q", p.String(), o.Baseline.String())
	}
	for _, bad := range []string{"tclass=256", "traffic_class=-1", "tclass=high"} {
		if _, err := s.Override(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// plantTClassSlow: READs at traffic class 104 (DSCP 26, a queue the fabric starves) run
// at 0.3x: the ConnectX report of issue 36.
func plantTClassSlow(c result.Config, r *result.Result) {
	if c.TrafficClass == 104 && c.Op == "read" {
		r.BWGbps *= 0.3
		r.MsgRateMpps *= 0.3
		if r.Reverse != nil { // both directions
			r.Reverse.BWGbps *= 0.3
		}
	}
}

// A hunt whose space has the traffic class finds a slowdown planted on one class, and
// names the class in its minimal set.
func TestPlantedTrafficClass(t *testing.T) {
	p := cx6(t)
	const seeds = 4
	right := 0
	for seed := range uint64(seeds) {
		f := newFake(seed*11+3, 0.05, plantTClassSlow)
		pl := testPlan(p, f, seed)
		var err error
		if pl.Space, err = pl.Space.Override("tclass=0,104"); err != nil {
			t.Fatal(err)
		}
		o, err := Run(context.Background(), f, pl, func(Record) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		for _, fd := range o.Findings {
			got := strings.Join(setKey(fd), "; ")
			t.Logf("seed %d: %s %s [%s]", seed, fd.Class, fd.Key, got)
			if fd.Class == LowThroughput && len(o.Findings) == 1 && got == "op = read; traffic_class >= 104" &&
				strings.Contains(fd.Command, " --tclass 104 ") && strings.Contains(fd.PerftestCommand, " --tclass 104 ") {
				right++
			}
		}
	}
	if right < seeds-1 {
		t.Errorf("found with its set in %d of %d seeds, want %d or more", right, seeds, seeds-1)
	}
}
