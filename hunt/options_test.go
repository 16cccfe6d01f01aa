package hunt

import (
	"reflect"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/plan"
	"github.com/rdmabench/rdmabench/result"
)

// TestNewPlan: a hunt's plan from its options, as the command line gives them: the
// profile's space, fan-out and duration, counters "auto" by default, the server as the
// findings' command lines name it; a fan-out beyond the servers given is refused.
func TestNewPlan(t *testing.T) {
	prof := cx6(t)
	o := Options{Profile: prof, Server: "host-a", Port: 1, GIDIndex: -1, Budget: 5, MaxRuns: 7, Seed: 3}
	p, err := NewPlan(o)
	if err != nil {
		t.Fatal(err)
	}
	want := result.Config{Test: result.BW, DurationS: prof.PointDurationS, WarmupIterations: uint64(prof.WarmupIterations),
		Counters: "auto", InlineBytes: plan.InlineAuto}
	if p.Base != want || p.Budget != 5 || p.MaxRuns != 7 || p.Seed != 3 || p.Server != "host-a" || !reflect.DeepEqual(p.Rules, RulesFor(prof)) {
		t.Errorf("plan: base %+v, budget %v, max runs %d, seed %d, server %q", p.Base, p.Budget, p.MaxRuns, p.Seed, p.Server)
	}
	if _, ok := p.Space.Dim(DimPeers); ok {
		t.Error("one server: a peers dimension")
	}
	o.PointDurationS, o.Counters = 0.5, "all"
	o.Servers, o.Device, o.Port, o.GIDIndex = []string{"host-a", "host-b"}, "mlx5_0", 2, 3
	o.Space = "size=64K; peers=1,2"
	if p, err = NewPlan(o); err != nil {
		t.Fatal(err)
	}
	if d, ok := p.Space.Dim(DimPeers); !ok || strings.Join(d.Values, ",") != "1,2" || p.Base.DurationS != 0.5 || p.Base.Counters != "all" {
		t.Errorf("two servers: peers %v, duration %g, counters %q", d.Values, p.Base.DurationS, p.Base.Counters)
	}
	if p.Server != "-d mlx5_0 -i 2 -x 3 host-a,host-b" {
		t.Errorf("the command lines' server: %q", p.Server)
	}
	o.Servers = nil
	if _, err := NewPlan(o); err == nil || err.Error() != "peers 2: 1 server given (a fan-out of k runs against the first k SERVERs)" {
		t.Errorf("a fan-out beyond the servers given: %v", err)
	}
	o.Space = "colour=red"
	if _, err := o.SpaceFor(); err == nil {
		t.Error("an unknown dimension must be refused")
	}
}
