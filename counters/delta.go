package counters

import (
	"fmt"
	"time"
)

// Change is one counter's movement between two snapshots.
type Change struct {
	Name   string `json:"name"`
	Scope  Scope  `json:"scope"`
	Unit   Unit   `json:"unit"`   // of Delta: count or bytes (4-byte words converted)
	Status Status `json:"status"` // OK, or why Delta is nil
	// Delta is after - before, in Unit; nil unless Status is OK: a counter that went
	// backwards, appeared, disappeared, or is not available on either side has none.
	Delta *uint64 `json:"delta"`
	// Saturated: a PMA counter narrower than 64 bits stopped at its maximum (they do
	// not wrap), so Delta is a lower bound.
	Saturated bool `json:"saturated,omitempty"`
	// RawBefore and RawAfter are the values as sysfs showed them (4-byte words for
	// port_xmit_data and port_rcv_data); nil where absent or not a number.
	RawBefore *uint64 `json:"raw_before"`
	RawAfter  *uint64 `json:"raw_after"`
	Text      string  `json:"text,omitempty"` // why a side is not a number
}

// Changed says whether the change is worth showing: a non-zero delta, or a counter that
// went backwards, appeared or disappeared.
func (c Change) Changed() bool {
	switch c.Status {
	case OK:
		return c.Delta != nil && *c.Delta != 0
	case Backwards, Appeared, Disappeared:
		return true
	}
	return false
}

// Deltas are the changes of one port's counters over Interval.
type Deltas struct {
	Device   string        `json:"device"`
	Port     int           `json:"port"`
	Start    time.Time     `json:"start"`
	Interval time.Duration `json:"interval_ns"` // after.Time - before.Time
	Counters []Change      `json:"counters"`
	// Notes say what else changed: the port state, the rate, the netdev or its MTU.
	Notes []string `json:"notes,omitempty"`
}

// Changed returns d with only the changes worth showing (Change.Changed); its Counters
// are empty, not nil, when nothing moved.
func (d Deltas) Changed() Deltas {
	out := d
	out.Counters = []Change{}
	for _, c := range d.Counters {
		if c.Changed() {
			out.Counters = append(out.Counters, c)
		}
	}
	return out
}

// Get returns the change of the counter with this scope and name.
func (d Deltas) Get(scope Scope, name string) (Change, bool) {
	for _, c := range d.Counters {
		if c.Scope == scope && c.Name == name {
			return c, true
		}
	}
	return Change{}, false
}

// pmaBits are the widths of the PMA PortCounters fields narrower than 64 bits (the
// data and packet counters are 64-bit where the port has extended counters, 32-bit
// otherwise). They saturate at their maximum.
var pmaBits = map[string]uint{
	"symbol_error": 16, "link_error_recovery": 8, "link_downed": 8, "port_rcv_errors": 16,
	"port_rcv_remote_physical_errors": 16, "port_rcv_switch_relay_errors": 16,
	"port_xmit_discards": 16, "port_xmit_constraint_errors": 8, "port_rcv_constraint_errors": 8,
	"local_link_integrity_errors": 4, "excessive_buffer_overrun_errors": 4, "VL15_dropped": 16,
	"port_xmit_data": 32, "port_rcv_data": 32, "port_xmit_packets": 32, "port_rcv_packets": 32,
	"port_xmit_wait": 32,
}

// Delta compares two snapshots of the same port, counter by counter (by scope and
// name), in after's order, then the counters only before has.
func Delta(before, after Snapshot) (Deltas, error) {
	if before.Device != after.Device || before.Port != after.Port {
		return Deltas{}, fmt.Errorf("counters: cannot compare %s port %d with %s port %d", before.Device, before.Port, after.Device, after.Port)
	}
	d := Deltas{Device: after.Device, Port: after.Port, Start: before.Time, Interval: after.Time.Sub(before.Time)}
	type key struct {
		scope Scope
		name  string
	}
	old := map[key]Counter{}
	for _, c := range before.Counters {
		old[key{c.Scope, c.Name}] = c
	}
	for _, a := range after.Counters {
		k := key{a.Scope, a.Name}
		b, ok := old[k]
		delete(old, k)
		if !ok {
			d.Counters = append(d.Counters, change(nil, &a, Appeared))
			continue
		}
		d.Counters = append(d.Counters, change(&b, &a, ""))
	}
	for _, b := range before.Counters {
		if _, ok := old[key{b.Scope, b.Name}]; ok {
			d.Counters = append(d.Counters, change(&b, nil, Disappeared))
		}
	}
	for _, f := range []struct{ what, b, a string }{
		{"port state", before.State, after.State},
		{"physical state", before.PhysState, after.PhysState},
		{"rate", before.Rate, after.Rate},
		{"netdev", before.Netdev, after.Netdev},
		{"netdev operstate", before.NetdevOperState, after.NetdevOperState},
		{"netdev MTU", fmt.Sprint(before.NetdevMTU), fmt.Sprint(after.NetdevMTU)},
	} {
		if f.b != f.a {
			d.Notes = append(d.Notes, fmt.Sprintf("%s changed: %s -> %s", f.what, f.b, f.a))
		}
	}
	return d, nil
}

func change(b, a *Counter, status Status) Change {
	ref := a
	if ref == nil {
		ref = b
	}
	c := Change{Name: ref.Name, Scope: ref.Scope, Unit: ref.Unit, Status: status}
	if c.Unit == Words4 {
		c.Unit = Bytes
	}
	if b != nil {
		c.RawBefore = b.Value
	}
	if a != nil {
		c.RawAfter = a.Value
	}
	if status != "" {
		return c
	}
	switch {
	case a.Status == Unreadable || b.Status == Unreadable:
		c.Status, c.Text = Unreadable, texts(b, a)
		return c
	case a.Status == NotAvailable || b.Status == NotAvailable:
		c.Status, c.Text = NotAvailable, texts(b, a)
		return c
	case *a.Value < *b.Value:
		c.Status = Backwards
		return c
	}
	v := *a.Value - *b.Value
	if ref.Unit == Words4 {
		v *= 4
	}
	c.Status, c.Delta = OK, &v
	if bits, ok := pmaBits[c.Name]; ok && c.Scope == Port && *a.Value == 1<<bits-1 {
		c.Saturated = true
	}
	return c
}

// texts joins what the two sides said when they are not numbers.
func texts(b, a *Counter) string {
	switch {
	case b.Text == a.Text || b.Text == "":
		return a.Text
	case a.Text == "":
		return b.Text
	}
	return "before: " + b.Text + "; after: " + a.Text
}
