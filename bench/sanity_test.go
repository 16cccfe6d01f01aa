package bench

import (
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/counters"
	"github.com/rdmabench/rdmabench/result"
)

// The responder's request counter (mlx5) against the messages completed: only fewer
// requests than messages taints; none, or more, is a note.
func TestSanityResponderRequests(t *testing.T) {
	deltas := func(dev string, kv ...any) *counters.Deltas {
		d := &counters.Deltas{Device: dev}
		for i := 0; i < len(kv); i += 2 {
			v := kv[i+1].(uint64)
			d.Counters = append(d.Counters, counters.Change{Name: kv[i].(string), Scope: counters.HWPort, Status: counters.OK, Delta: &v})
		}
		return d
	}
	for _, c := range []struct {
		op    string
		got   uint64
		taint bool
		note  string
	}{
		{"write", 2000, false, "2000 vs 2000"},
		{"write", 1995, false, "1995 vs 2000"}, // within 1%
		{"write", 1900, true, "1900 vs 2000"},
		{"read", 0, false, "did not move"},
		{"write", 128000, false, "cannot tell"}, // 64 packets per message
		{"read", 2010, false, "2010 vs 2000"},
	} {
		r := &result.Result{Config: result.Config{Op: c.op, Test: result.BW}, Iterations: 2000,
			Client: result.Device{Name: "mlx5_0", Host: "a"}, ServerDevice: result.Device{Name: "mlx5_0", Host: "b"}}
		name := map[string]string{"write": "rx_write_requests", "read": "rx_read_requests"}[c.op]
		flags, notes := sanity(r, name, deltas("mlx5_0"), deltas("mlx5_0", name, c.got))
		if (len(flags) > 0) != c.taint || len(notes) != 1 || !strings.Contains(notes[0], c.note) {
			t.Errorf("%s %d requests for 2000 messages: flags %+v, notes %q", c.op, c.got, flags, notes)
		}
		if c.taint && (flags[0].Class != counters.Sanity || *flags[0].Delta != 2000-c.got) {
			t.Errorf("%s %d: flag %+v", c.op, c.got, flags[0])
		}
	}
}
