package plan

import (
	"encoding/json"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestPointShapes: one point type says both searches' points. A sweep's point (six
// dimensions) keeps its JSON and YAML keys, offset 0 included; a hunt's holds every
// dimension and reads back from its plan.
func TestPointShapes(t *testing.T) {
	sw := Point{MsgSizeBytes: 65536, SQDepth: 8, CQMod: 8, PostList: 1, QPTimeout: 14}
	b, _ := json.Marshal(sw)
	if want := `{"msg_size_bytes":65536,"sq_depth":8,"post_list":1,"cq_mod":8,"buf_offset_bytes":0,"qp_timeout":14}`; string(b) != want {
		t.Errorf("sweep point JSON %s, want %s", b, want)
	}
	y, _ := yaml.Marshal(sw)
	var back Point
	if err := yaml.Unmarshal(y, &back); err != nil || back != sw {
		t.Errorf("sweep point YAML %s reads back as %+v (%v)", y, back, err)
	}
	if got, want := sw.String(), "64K depth 8 post-list 1 cq-mod 8 offset 0 qp-timeout 14"; got != want {
		t.Errorf("sweep point %q, want %q", got, want)
	}

	h := PointOf(Config{Op: "read", MsgSizeBytes: 1 << 20, SQDepth: 512, PostList: 1, CQMod: 16, NumQPs: 1, MTUBytes: 4096, Peers: 3, TrafficClass: 104})
	if h.QPTimeout != DefaultQPTimeout || h.MR != MRPool || h.Peers != 3 || h.Int("peers") != 3 {
		t.Errorf("hunt point %+v: want the default QP timeout's exponent, pool and 3 peers", h)
	}
	if got, want := h.String(), "read 1M depth 512 post-list 1 cq-mod 16 qps 1 offset 0 mtu 4096 qp-timeout 14 mr pool peers 3 tclass 104"; got != want {
		t.Errorf("hunt point %q, want %q", got, want)
	}
	c := h.Config(Config{DurationS: 1})
	if c.QPTimeout != 0 || c.MR != "" || c.Peers != 3 || c.Test != "bw" || PointOf(c) != h {
		t.Errorf("config %+v of %v reads back as %v", c, h, PointOf(c))
	}
	one := h.With("peers", "1").With("bidirectional", "true").WithInt("traffic_class", 0)
	if one.Peers != 0 || one.Get("peers") != "1" || !one.Bidirectional || one.Config(Config{}).Peers != 0 {
		t.Errorf("one server, bidirectional: %+v", one)
	}
	if got := PointOf(c, "sq_depth", "cq_mod"); got != (Point{SQDepth: 512, CQMod: 16}) {
		t.Errorf("PointOf with two keys: %+v", got)
	}
	// A sweep's point writes only the dimensions it holds: a QP timeout the grid left
	// out keeps the plan's (-u 20), a hunt's point one server even over a fan-out plan.
	base := Config{Op: "write", QPTimeout: 20, NumQPs: 4, Peers: 3}
	if got := (Point{MsgSizeBytes: 64, SQDepth: 8, CQMod: 1, PostList: 1}).Apply(base, "msg_size_bytes", "sq_depth", "cq_mod", "qp_timeout"); got.QPTimeout != 20 ||
		got.SQDepth != 8 || got.CQMod != 1 || got.PostList != 0 || got.NumQPs != 4 || got.Peers != 3 {
		t.Errorf("a sweep point's Apply: %+v", got)
	}
	if got := one.Config(base); got.Peers != 0 || got.QPTimeout != 0 || got.NumQPs != 1 {
		t.Errorf("a hunt point's Config over a fan-out plan: %+v", got)
	}
	for _, d := range Dims { // every dimension is a field of Point
		if v := h.Get(d.Key); h.With(d.Key, v) != h {
			t.Errorf("%s: With(Get) is not the point", d.Key)
		}
	}
}

// TestReplay: a point's runs come back in the order added, Next names the earliest run
// left of all, and a taken run is never taken again.
func TestReplay(t *testing.T) {
	a, b := Point{SQDepth: 8}, Point{SQDepth: 16}
	var r Replay[int]
	if _, ok := r.Next(); ok || r.Len() != 0 {
		t.Fatal("an empty replay has a run")
	}
	for i, pt := range []Point{a, b, a, b, b} {
		r.Add(pt, i)
	}
	if pt, ok := r.Next(); !ok || pt != a || r.Len() != 5 {
		t.Fatalf("next %v %v, %d left", pt, ok, r.Len())
	}
	if v, ok := r.Take(b); !ok || v != 1 {
		t.Fatalf("b's first: %d %v", v, ok)
	}
	if pt, _ := r.Next(); pt != a { // a's run 0 is still the earliest left
		t.Fatalf("next after taking b out of order: %v", pt)
	}
	for _, want := range []int{0, 2} {
		if v, ok := r.Take(a); !ok || v != want {
			t.Fatalf("a: %d %v, want %d", v, ok, want)
		}
	}
	if _, ok := r.Take(a); ok {
		t.Fatal("a taken more often than added")
	}
	if pt, ok := r.Next(); !ok || pt != b || r.Len() != 2 {
		t.Fatalf("next %v %v, %d left", pt, ok, r.Len())
	}
	r.Take(b)
	r.Take(b)
	if _, ok := r.Next(); ok || r.Len() != 0 {
		t.Fatalf("all taken: %d left", r.Len())
	}
}
