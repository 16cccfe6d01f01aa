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
	// Congestion: ECN marks, CNPs, RNR and buffer drops: the fabric or a receiver
	// pushed back.
	Congestion Class = "congestion"
	// Sanity: counts that should match the traffic (packets, bytes, requests).
	Sanity Class = "sanity"
	// Info: anything else, and every counter a profile does not name.
	Info Class = "info"
)

// Classes are the class names, in the order profiles list them.
var Classes = []Class{Error, Congestion, Sanity, Info}

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

// Flag is an error or congestion counter that moved during a run.
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
}

func (f Flag) String() string {
	side := ""
	if f.Side != "" {
		side = f.Side + " "
	}
	if f.Status != OK {
		return fmt.Sprintf("%s%s counter %s (%s) %s", side, f.Class, f.Counter, f.Scope, f.Status)
	}
	return fmt.Sprintf("%s%s counter %s (%s) +%d", side, f.Class, f.Counter, f.Scope, *f.Delta)
}

// Classify flags the error and congestion counters that changed (Change.Changed: a
// non-zero delta, or one that went backwards, appeared or disappeared), in d's order.
// Counters that are not available or unreadable are not flagged: they are in d.
func Classify(c Classification, d Deltas) []Flag {
	var out []Flag
	for _, ch := range d.Counters {
		k := c.Of(ch.Name)
		if (k != Error && k != Congestion) || !ch.Changed() {
			continue
		}
		out = append(out, Flag{Counter: ch.Name, Scope: ch.Scope, Class: k, Unit: ch.Unit, Status: ch.Status, Delta: ch.Delta})
	}
	return out
}

// Select returns the changes of the counters in class k, in d's order: Select(c, d,
// Sanity) are the ones to compare with the traffic the run made.
func Select(c Classification, d Deltas, k Class) []Change {
	var out []Change
	for _, ch := range d.Counters {
		if c.Of(ch.Name) == k {
			out = append(out, ch)
		}
	}
	return out
}
