package counters

import (
	"fmt"
	"strings"
)

// Class says what a counter's movement means.
type Class string

const (
	// Error: loss, retransmission, a fatal retry, a bad link: it should not move.
	Error Class = "error"
	// Congestion: ECN marks, CNPs, RNR, buffer drops, transmit waits: the fabric or a
	// receiver pushed back. Reported (per million of the port's packets), not an error:
	// DCQCN sends CNPs by design, and an InfiniBand port at line rate waits routinely.
	Congestion Class = "congestion"
	// Sanity: counts that should match the traffic (packets, bytes, requests).
	Sanity Class = "sanity"
	// Info: anything else, and every counter a profile does not name.
	Info Class = "info"
)

// Classes are the class names, in the order profiles list them; Pause (ethtool.go),
// which profiles may name too, last.
var Classes = []Class{Error, Congestion, Sanity, Info, Pause}

// ParseClass checks a class name.
func ParseClass(s string) (Class, error) {
	for _, c := range Classes {
		if string(c) == s {
			return c, nil
		}
	}
	names := make([]string, len(Classes))
	for i, c := range Classes {
		names[i] = string(c)
	}
	return "", fmt.Errorf("unknown counter class %q (want %s)", s, strings.Join(names, ", "))
}

// Classification maps counter names (any scope) to classes, as a NIC profile's
// counters section gives them (profiles.Profile.CounterClasses).
type Classification map[string]Class

// Of returns name's class: Info for a name the classification does not list.
func (c Classification) Of(name string) Class {
	if k, ok := c[name]; ok {
		return k
	}
	return Info
}

// Flag is an error, congestion or pause counter that moved during a run, or a sanity
// check that failed.
type Flag struct {
	Counter string `json:"counter"`
	Scope   Scope  `json:"scope"`
	// Side is "local" or "remote": Classify leaves it empty for the caller, who knows
	// whose Deltas these are.
	Side   string  `json:"side,omitempty"`
	Class  Class   `json:"class"`
	Unit   Unit    `json:"unit"`
	Status Status  `json:"status"` // OK, Backwards, Appeared or Disappeared
	Delta  *uint64 `json:"delta"`  // nil unless Status is OK
	// Taints says the flag taints the run. Classify leaves it false; the caller who
	// judges a run sets it (bench: errors and failed sanity checks do, congestion does
	// not, pause frames the side sending the data received do).
	Taints bool `json:"taints,omitempty"`
	// PerMillionPkts (congestion and pause) is Delta per million packets the same
	// side's port sent and received over the same interval (its packet counters);
	// absent when the port counts no packets.
	PerMillionPkts *float64 `json:"per_million_pkts,omitempty"`
}

func (f Flag) String() string {
	side := ""
	if f.Side != "" {
		side = f.Side + " "
	}
	if f.Status != OK {
		return fmt.Sprintf("%s%s counter %s (%s) %s", side, f.Class, f.Counter, f.Scope, f.Status)
	}
	rate := ""
	if f.PerMillionPkts != nil {
		rate = fmt.Sprintf(" (%s per million packets)", perMillion(*f.PerMillionPkts))
	}
	return fmt.Sprintf("%s%s counter %s (%s) +%d%s", side, f.Class, f.Counter, f.Scope, *f.Delta, rate)
}

// perMillion prints a rate with three significant digits, at least one decimal.
func perMillion(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	case v >= 0.01 || v == 0:
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.2g", v)
}

// OfChange returns a change's class: an ethtool statistic's by its name
// (EthtoolClass: the profiles name sysfs counters), any other's from the
// classification.
func (c Classification) OfChange(ch Change) Class { return c.OfScope(ch.Name, ch.Scope) }

// OfScope is OfChange for a counter known by name and scope.
func (c Classification) OfScope(name string, scope Scope) Class {
	if scope == Ethtool {
		return EthtoolClass(name)
	}
	return c.Of(name)
}

// Classify flags the error, congestion and pause counters that changed
// (Change.Changed: a non-zero delta, or one that went backwards, appeared or
// disappeared), in d's order, with each congestion and pause flag's rate per million
// of the port's packets (Packets) where the port counts them. Counters that are not
// available or unreadable are not flagged: they are in d. Whether a flag taints is
// the caller's to say.
func Classify(c Classification, d Deltas) []Flag {
	var out []Flag
	pkts, havePkts := Packets(d)
	for _, ch := range d.Counters {
		k := c.OfChange(ch)
		if (k != Error && k != Congestion && k != Pause) || !ch.Changed() {
			continue
		}
		f := Flag{Counter: ch.Name, Scope: ch.Scope, Class: k, Unit: ch.Unit, Status: ch.Status, Delta: ch.Delta}
		if k != Error && ch.Status == OK && ch.Delta != nil && havePkts && pkts > 0 {
			r := float64(*ch.Delta) / float64(pkts) * 1e6
			f.PerMillionPkts = &r
		}
		out = append(out, f)
	}
	return out
}

// packetPairs are the counters of packets a port sent and received, in the order they
// are looked for: the PMA's, Soft-RoCE's, bnxt_re's and efa's, irdma's (IPv4 and
// IPv6 summed).
var packetPairs = [][]string{
	{"port_xmit_packets", "port_rcv_packets"},
	{"sent_pkts", "rcvd_pkts"},
	{"tx_pkts", "rx_pkts"},
	{"ip4OutPkts", "ip4InPkts", "ip6OutPkts", "ip6InPkts"},
}

// Packets is how many packets the port sent and received over d, from the first set
// of packetPairs whose counters all moved validly (irdma's IPv6 pair may be absent);
// false when the port counts none.
func Packets(d Deltas) (uint64, bool) {
	for _, set := range packetPairs {
		var sum uint64
		n := 0
		for i, name := range set {
			ok := false
			for _, ch := range d.Counters {
				if ch.Name == name && ch.Scope != Ethtool && ch.Status == OK && ch.Delta != nil {
					sum += *ch.Delta
					ok = true
					break
				}
			}
			if !ok && i < 2 {
				n = -1
				break
			}
			if ok {
				n++
			}
		}
		if n >= 2 {
			return sum, true
		}
	}
	return 0, false
}

// Select returns the changes of the counters in class k, in d's order: Select(c, d,
// Sanity) are the ones to compare with the traffic the run made.
func Select(c Classification, d Deltas, k Class) []Change {
	var out []Change
	for _, ch := range d.Counters {
		if c.OfChange(ch) == k {
			out = append(out, ch)
		}
	}
	return out
}
