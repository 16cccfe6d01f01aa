package plan_test

import (
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/plan"
	"github.com/rdmabench/rdmabench/result"
)

// Every dimension's value survives a plan: Set then Get gives it back, and a plan's
// default reads as the point's word for it.
func TestDimsRoundTrip(t *testing.T) {
	values := map[string]string{"op": "read", "msg_size_bytes": "1048576", "sq_depth": "512", "post_list": "4", "cq_mod": "16",
		"num_qps": "8", "buf_offset_bytes": "64", "mtu_bytes": "1024", "qp_timeout": "20", "mr": "cache", "bidirectional": "true",
		"peers": "3", "traffic_class": "104"}
	var c result.Config
	for _, d := range plan.Dims {
		v, ok := values[d.Key]
		if !ok {
			t.Fatalf("no test value for %s", d.Key)
		}
		d.Set(&c, v)
	}
	for _, d := range plan.Dims {
		if got := d.Get(&c); got != values[d.Key] {
			t.Errorf("%s: set %s, got %s", d.Key, values[d.Key], got)
		}
	}
	if c.MRCache != 512 || c.QPTimeout != 20 || c.Peers != 3 || c.TrafficClass != 104 {
		t.Errorf("plan %+v", c)
	}
	held := map[string]string{"qp_timeout": "14", "mr": "pool", "peers": "1", "traffic_class": "0", "bidirectional": "false"}
	for k, want := range held {
		d, _ := plan.DimOf(k)
		if d.Held() != want {
			t.Errorf("%s: held %q, want %q", k, d.Held(), want)
		}
	}
	// A point's word for the default is the plan's absence of it.
	var z result.Config
	for _, k := range []string{"qp_timeout", "mr", "peers"} {
		d, _ := plan.DimOf(k)
		d.Set(&z, held[k])
	}
	if z != (result.Config{}) {
		t.Errorf("the defaults written as %+v, want a zero plan", z)
	}
}

func TestDimParse(t *testing.T) {
	for _, c := range []struct{ key, in, want, err string }{
		{"msg_size_bytes", "4K", "4096", ""},
		{"buf_offset_bytes", "0", "0", ""},
		{"buf_offset_bytes", "2M", "", "want 0 to 2097151"},
		{"op", "READ", "read", ""},
		{"op", "send", "", "want write or read"},
		{"mr", "per-io", "per-io", ""},
		{"bidirectional", "on", "true", ""},
		{"mtu_bytes", "1000", "", "want 256, 512, 1024, 2048 or 4096"},
		{"qp_timeout", "32", "", "want 1 to 31"},
		{"num_qps", "x", "", "want a number"},
		{"traffic_class", "104", "104", ""},
		{"traffic_class", "256", "", "want 0 to 255"},
	} {
		d, _ := plan.DimOf(c.key)
		got, err := d.Parse(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s %q: %q, %v; want an error with %q", c.key, c.in, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s %q: %q, %v; want %q", c.key, c.in, got, err, c.want)
		}
	}
	for in, want := range map[string]string{"tx-depth": "sq_depth", "tclass": "traffic_class", "fan-out": "peers", "Size": "msg_size_bytes"} {
		if got, err := plan.DimName(in); err != nil || got != want {
			t.Errorf("DimName(%q) = %q, %v; want %s", in, got, err, want)
		}
	}
	for _, d := range plan.Dims { // the words help and points say are names a user may give
		if got, err := plan.DimName(d.Word); err != nil || got != d.Key {
			t.Errorf("DimName(%q) = %q, %v; want %s", d.Word, got, err, d.Key)
		}
	}
	if _, err := plan.DimName("speed"); err == nil {
		t.Error("DimName(speed): no error")
	}
}

// Every dimension says itself in a point's text and in a report's tables, and Canon
// says a plan's value as a point does.
func TestDimsAreNamed(t *testing.T) {
	for _, d := range plan.Dims {
		if d.Word == "" || d.Name == "" || d.Short == "" {
			t.Errorf("%s: word %q, name %q, short %q: every dimension needs all three", d.Key, d.Word, d.Name, d.Short)
		}
	}
	for _, c := range []struct {
		key     string
		v, want int
	}{{"qp_timeout", 0, plan.DefaultQPTimeout}, {"qp_timeout", 20, 20}, {"peers", 0, 1}, {"peers", 3, 3}, {"sq_depth", 8, 8}} {
		d, _ := plan.DimOf(c.key)
		if got := d.Canon(c.v); got != c.want {
			t.Errorf("%s.Canon(%d) = %d, want %d", c.key, c.v, got, c.want)
		}
	}
}
