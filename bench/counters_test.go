package bench

import (
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/counters"
)

// A server's deltas are input from another machine: strings cleaned and bounded, no
// delta without the status that gives one, a bound on their number.
func TestCleanDeltas(t *testing.T) {
	d := counters.Deltas{Device: "evil\x1b[2J\nPASS", Port: 1, Counters: []counters.Change{
		{Name: "retry_exceeded_err", Scope: counters.HWPort, Status: counters.OK}, // ok without a delta
		{Name: "x\ny", Scope: counters.HWPort, Status: counters.Backwards, Delta: new(uint64)},
	}}
	got, why := cleanDeltas(&d)
	if why != "" || strings.ContainsAny(got.Device, "\x1b\n") || strings.Contains(got.Counters[1].Name, "\n") {
		t.Fatalf("not cleaned: %q %+v (%s)", got.Device, got.Counters, why)
	}
	if got.Counters[0].Status != counters.Unreadable || got.Counters[1].Delta != nil {
		t.Fatalf("deltas and statuses must agree: %+v", got.Counters)
	}
	for _, f := range counters.Classify(counters.Classification{"retry_exceeded_err": counters.Error}, *got) {
		t.Errorf("nothing to flag: %v", f)
	}
	d.Counters = make([]counters.Change, maxRemoteCounters+1)
	if got, why := cleanDeltas(&d); got != nil || why == "" {
		t.Fatalf("too many counters must be refused with a reason")
	}
}
