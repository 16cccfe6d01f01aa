package result

import "testing"

// The verdict on a stream's shares: the spread in messages over the window against two
// send queues and one CQ moderation.
func TestFairnessOf(t *testing.T) {
	const size, window = 65536, 2e9 // 2 s of 64 KiB messages
	gbps := func(msgs ...float64) []float64 {
		var g []float64
		for _, m := range msgs {
			g = append(g, m*size*8/window)
		}
		return g
	}
	for _, c := range []struct {
		shares  []float64
		verdict string
		spread  float64
	}{
		{[]float64{512, 464, 384}, FairnessCannotTell, 128}, // the test bed's -D 2 at depth 128
		{[]float64{512, 512, 512}, FairnessCannotTell, 0},
		{[]float64{600, 342}, FairnessUneven, 258},
		{[]float64{600, 343}, FairnessCannotTell, 257},
	} {
		v, spread, edge := FairnessOf(gbps(c.shares...), window, size, 128, 1)
		if v != c.verdict || edge != 257 || spread < c.spread-1e-6 || spread > c.spread+1e-6 {
			t.Errorf("%v: %q, spread %g, edge %d; want %q, %g, 257", c.shares, v, spread, edge, c.verdict, c.spread)
		}
	}
	if v, _, _ := FairnessOf([]float64{1}, window, size, 128, 1); v != "" {
		t.Errorf("one server: %q", v)
	}
	if v, _, _ := FairnessOf([]float64{1, 2}, 0, size, 128, 1); v != "" {
		t.Errorf("no window: %q", v)
	}
}

func TestNewQPShares(t *testing.T) {
	c := Config{MsgSizeBytes: 4096, SQDepth: 8, CQMod: 1}
	if NewQPShares(c, []uint64{100}, 1e9) != nil || NewQPShares(c, []uint64{1, 2}, 0) != nil {
		t.Fatal("shares of one QP or of no window")
	}
	s := NewQPShares(c, []uint64{100, 100}, 1e9)
	if s.JainFairness == nil || *s.JainFairness != 1 || s.Fairness != "" {
		t.Fatalf("a counted run: %+v", s)
	}
	c.DurationS = 1
	s = NewQPShares(c, []uint64{1000, 100}, 1e9)
	if s.Fairness != FairnessUneven || *s.FairnessSpreadMessages != 900 || s.FairnessEdgeMessages != 17 {
		t.Fatalf("uneven: %+v", s)
	}
	if j := *s.JainFairness; j < 0.59 || j > 0.61 { // 1100^2 / (2 * 1010000)
		t.Fatalf("jain %v", j)
	}
	if s = NewQPShares(c, []uint64{110, 100}, 1e9); s.Fairness != FairnessCannotTell {
		t.Fatalf("within the edge: %+v", s)
	}
	if s = NewQPShares(c, []uint64{0, 0}, 1e9); s.JainFairness != nil {
		t.Fatalf("all zero: %+v", s)
	}
}
