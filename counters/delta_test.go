package counters

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func u(v uint64) *uint64 { return &v }

func snap(cs ...Counter) Snapshot {
	return Snapshot{Device: "d0", Port: 1, Time: time.Unix(100, 0), State: "ACTIVE", Counters: cs}
}

func ok(scope Scope, name string, v uint64) Counter {
	c := Counter{Name: name, Scope: scope, Unit: Count, Status: OK, Value: u(v)}
	if scope == Port && words4[name] {
		c.Unit = Words4
	}
	return c
}

func TestDelta(t *testing.T) {
	na := Counter{Name: "port_xmit_wait", Scope: Port, Unit: Count, Status: NotAvailable, Text: "N/A (no PMA)"}
	bad := Counter{Name: "send_err", Scope: HWPort, Unit: Count, Status: Unreadable, Text: "x/send_err: not a counter value"}
	before := snap(ok(Port, "port_xmit_data", 1000), ok(Port, "symbol_error", 7), na, ok(HWPort, "sent_pkts", 10),
		ok(HWPort, "rcvd_pkts", 50), ok(HWPort, "gone", 1), ok(HWPort, "send_err", 0), ok(Netdev, "rx_dropped", 3),
		ok(HWPort, "link_downed", 2), ok(Port, "link_downed", 255))
	after := snap(ok(Port, "port_xmit_data", 1250), ok(Port, "symbol_error", 65535), na, ok(HWPort, "sent_pkts", 10),
		ok(HWPort, "rcvd_pkts", 40), ok(HWPort, "new", 5), bad, ok(Netdev, "rx_dropped", 4),
		ok(HWPort, "link_downed", 3), ok(Port, "link_downed", 255))
	after.Time = before.Time.Add(1500 * time.Millisecond)
	after.State, after.NetdevMTU = "DOWN", 9000
	d, err := Delta(before, after)
	if err != nil {
		t.Fatal(err)
	}
	if d.Interval != 1500*time.Millisecond || d.Start != before.Time || d.Device != "d0" || d.Port != 1 {
		t.Errorf("%+v", d)
	}
	type want struct {
		status    Status
		delta     int64 // -1: nil
		unit      Unit
		saturated bool
	}
	for k, w := range map[[2]string]want{
		{"port", "port_xmit_data"}: {OK, 1000, Bytes, false}, // 250 words
		{"port", "symbol_error"}:   {OK, 65528, Count, true}, // 16 bits: stuck at 65535
		{"port", "port_xmit_wait"}: {NotAvailable, -1, Count, false},
		{"hw_port", "sent_pkts"}:   {OK, 0, Count, false},
		{"hw_port", "rcvd_pkts"}:   {Backwards, -1, Count, false},
		{"hw_port", "new"}:         {Appeared, -1, Count, false},
		{"hw_port", "gone"}:        {Disappeared, -1, Count, false},
		{"hw_port", "send_err"}:    {Unreadable, -1, Count, false},
		{"netdev", "rx_dropped"}:   {OK, 1, Count, false},
		{"hw_port", "link_downed"}: {OK, 1, Count, false},
		{"port", "link_downed"}:    {OK, 0, Count, true}, // same name, other scope
	} {
		c, found := d.Get(Scope(k[0]), k[1])
		got := want{c.Status, -1, c.Unit, c.Saturated}
		if c.Delta != nil {
			got.delta = int64(*c.Delta)
		}
		if !found || got != w {
			t.Errorf("%v: got %+v, want %+v", k, got, w)
		}
	}
	if len(d.Counters) != 11 || d.Counters[len(d.Counters)-1].Name != "gone" {
		t.Errorf("order: %+v", d.Counters)
	}
	if c, _ := d.Get(HWPort, "rcvd_pkts"); *c.RawBefore != 50 || *c.RawAfter != 40 {
		t.Errorf("backwards keeps both values: %+v", c)
	}
	if c, _ := d.Get(Port, "port_xmit_data"); *c.RawBefore != 1000 || *c.RawAfter != 1250 {
		t.Errorf("raw words: %+v", c)
	}
	if c, _ := d.Get(HWPort, "send_err"); !strings.Contains(c.Text, "send_err") {
		t.Errorf("unreadable says why: %+v", c)
	}
	notes := strings.Join(d.Notes, "\n")
	if !strings.Contains(notes, "port state changed: ACTIVE -> DOWN") || !strings.Contains(notes, "netdev MTU changed: 0 -> 9000") || len(d.Notes) != 2 {
		t.Errorf("notes: %q", d.Notes)
	}

	var names []string
	for _, c := range d.Changed().Counters {
		names = append(names, string(c.Scope)+"/"+c.Name)
	}
	if got := strings.Join(names, " "); got != "port/port_xmit_data port/symbol_error hw_port/rcvd_pkts hw_port/new netdev/rx_dropped hw_port/link_downed hw_port/gone" {
		t.Errorf("changed: %s", got)
	}

	// JSON: a missing delta is null, never 0.
	b, _ := json.Marshal(d)
	for _, s := range []string{`"name":"rcvd_pkts","scope":"hw_port","unit":"count","status":"backwards","delta":null,"raw_before":50,"raw_after":40`,
		`"interval_ns":1500000000`, `"name":"port_xmit_data","scope":"port","unit":"bytes","status":"ok","delta":1000`} {
		if !strings.Contains(string(b), s) {
			t.Errorf("JSON lacks %s:\n%s", s, b)
		}
	}
}

func TestDeltaOtherPort(t *testing.T) {
	a, b := snap(), snap()
	b.Port = 2
	if _, err := Delta(a, b); err == nil {
		t.Fatal("two ports compared")
	}
}

// Two snapshots of a fixture: nothing moves; every counter is there once.
func TestDeltaFixture(t *testing.T) {
	for _, root := range []string{"testdata/mlx5", "testdata/rxe-6.1", "testdata/rxe-old"} {
		dev := "rxe0"
		if root == "testdata/mlx5" {
			dev = "mlx5_1"
		}
		a, b := take(t, root, dev, 1), take(t, root, dev, 1)
		d, err := Delta(a, b)
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Counters) != len(a.Counters) || len(d.Changed().Counters) != 0 || len(d.Notes) != 0 || d.Interval <= 0 {
			t.Errorf("%s: %+v", root, d)
		}
	}
}

func TestSnapshotJSON(t *testing.T) {
	s := take(t, "testdata/mlx5", "mlx5_1", 1)
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{`"device":"mlx5_1"`, `"port":1`, `"state":"ACTIVE"`, `"rate_gbit_per_s":100`, `"netdev":"ens1f1np1"`,
		`"netdev_mtu_bytes":9000`, `"netdev_operstate":"up"`, `"hw_counters_lifespan_ns":10000000`, `"took_ns":`,
		`{"name":"port_xmit_wait","scope":"port","unit":"count","status":"not_available","value":null,"text":"N/A (no PMA)"}`,
		`{"name":"port_xmit_data","scope":"port","unit":"4_byte_words","status":"ok","value":11166778084}`} {
		if !strings.Contains(string(b), k) {
			t.Errorf("JSON lacks %s", k)
		}
	}
	var back Snapshot
	if err := json.Unmarshal(b, &back); err != nil || len(back.Counters) != len(s.Counters) || back.Lifespan != s.Lifespan || !back.Time.Equal(s.Time) {
		t.Errorf("round trip: %v", err)
	}
}

// A change that says ok without a delta (a peer's report, a hand-edited file) is not
// a change, and does not panic.
func TestChangedWithoutDelta(t *testing.T) {
	if (Change{Name: "x", Status: OK}).Changed() {
		t.Fatal("no delta, no change")
	}
}
