package hunt

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/rdmabench/rdmabench/result"
)

// The kinds of record.
const (
	KindPoint   = "point"   // one measured run (Measurement's fields)
	KindFinding = "finding" // one confirmed anomaly (Finding's fields)
)

// SchemaVersion is the version of a hunt's records stream (each line's schema_version)
// and of its outcome's JSON (Outcome.SchemaVersion); their JSON Schemas are
// docs/schemas/hunt-record.schema.json and hunt.schema.json (make docs).
//
// History: 1, the records and outcome as the first hunts wrote them, schema_version
// added later. A line without schema_version (0 here) is a hunt's from before the key,
// the same fields as 1: ReadRecords reads it as 1. 2: a point (plan.Point, the sweep's
// point type too) writes "bidirectional" only when true; a 1's false reads as before. A
// line of a later version is refused, naming it, before its fields are read.
const SchemaVersion = 2

// Record is one line of a hunt's NDJSON stream: its kind, the fields of a Measurement
// ("point") or of a Finding ("finding") at the top level, and its schema_version. The
// two types share no key (a test sees to it), so a line is either and reads back as it
// was written. schema_version comes last: the first hunts' lines began with kind, and
// still do.
type Record struct {
	Kind string `json:"kind"`
	*Measurement
	*Finding
	// SchemaVersion is SchemaVersion in the records a hunt makes; 0 in one ReadRecords
	// read from a line written before the key (the same fields).
	SchemaVersion int `json:"schema_version"`
}

// pointRecord and findingRecord are the records a hunt makes, of this SchemaVersion.
func pointRecord(m *Measurement) Record {
	return Record{Kind: KindPoint, Measurement: m, SchemaVersion: SchemaVersion}
}

func findingRecord(f *Finding) Record {
	return Record{Kind: KindFinding, Finding: f, SchemaVersion: SchemaVersion}
}

// The operators of a Condition. "=", ">=", "<=" and "in" are those of the first hunts'
// records and keep their meaning; "one-of" is later, and a reader that does not know it
// reads it as the set of its values (Holds' fallback), which it is.
const (
	OpEq = "=" // the one value
	// OpGE, OpLE: an ordered dimension from Values[0] up, or up to Values[last] (any
	// number, a value a later space adds too).
	OpGE = ">="
	OpLE = "<="
	// OpIn: an ordered dimension's range Values[0]..Values[last], bounds included (any
	// number within it); a category's set of values.
	OpIn = "in"
	// OpOneOf: an ordered dimension's values that trigger where they are not one range
	// (a value between two of them does not): exactly the values listed.
	OpOneOf = "one-of"
)

// Condition is one parameter of a finding's set and the values it must hold for the
// anomaly to trigger, all else as the finding's point has it: Op is one of the operators
// above; Values are the space's values it holds for, in the space's order.
type Condition struct {
	Dim    string   `json:"dim"`
	Op     string   `json:"op"`
	Values []string `json:"values"`
	// Held: not varied, the hunt stopped first (the finding is then not Minimal); the
	// condition is the value the anomaly was confirmed at.
	Held bool `json:"held,omitempty"`
}

// Holds says whether point p meets the condition. A range (">=", "<=", an ordered "in")
// holds for any number within it (">= 512" for 2048 too, a value a later space may add);
// a set (a category's "=" and "in", "one-of"), for its members.
func (c Condition) Holds(p Point) bool {
	v := p.Get(c.Dim)
	if !Ordered(c.Dim) || len(c.Values) == 0 {
		return slices.Contains(c.Values, v)
	}
	x, _ := strconv.Atoi(v)
	lo, _ := strconv.Atoi(c.Values[0])
	hi, _ := strconv.Atoi(c.Values[len(c.Values)-1])
	switch c.Op {
	case OpGE:
		return x >= lo
	case OpLE:
		return x <= hi
	case OpIn:
		return x >= lo && x <= hi
	}
	return slices.Contains(c.Values, v)
}

// String is the condition as a reader says it: "sq_depth >= 512", "op = read",
// "msg_size_bytes = 1M", "mr in {pool, cache}", "cq_mod in 4..16" (a range),
// "sq_depth in {64, 1024}" (one-of: those values only).
func (c Condition) String() string {
	show := func(v string) string {
		if c.Dim == DimSize || c.Dim == DimOffset {
			if x, err := strconv.Atoi(v); err == nil {
				return result.FormatSize(x)
			}
		}
		return v
	}
	held := ""
	if c.Held {
		held = " (held)"
	}
	switch {
	case len(c.Values) == 0:
		return c.Dim + " in {}"
	case c.Op == OpGE:
		return fmt.Sprintf("%s >= %s%s", c.Dim, show(c.Values[0]), held)
	case c.Op == OpLE:
		return fmt.Sprintf("%s <= %s%s", c.Dim, show(c.Values[len(c.Values)-1]), held)
	case len(c.Values) == 1:
		return fmt.Sprintf("%s = %s%s", c.Dim, show(c.Values[0]), held)
	case Ordered(c.Dim) && c.Op != OpOneOf:
		return fmt.Sprintf("%s in %s..%s%s", c.Dim, show(c.Values[0]), show(c.Values[len(c.Values)-1]), held)
	}
	vs := make([]string, len(c.Values))
	for i, v := range c.Values {
		vs[i] = show(v)
	}
	return fmt.Sprintf("%s in {%s}%s", c.Dim, strings.Join(vs, ", "), held)
}

// Effect is how far a finding's runs were from the rule's bar: the median of the
// confirming runs' metric and its range.
type Effect struct {
	// Metric: bw_over_best_seen and bw_over_link (low-throughput), p99_over_p50 (tail),
	// share_ratio (unfair), counter_delta (counters: the key counter's delta a run),
	// failed_runs (failed: 1 a run that failed so).
	Metric string  `json:"metric"`
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	Runs   int     `json:"runs"`
	Text   string  `json:"text"`
	// Reference (bw_over_best_seen): the point whose throughput the runs were divided by,
	// measured alongside them, and its median Gb/s in those runs; Gbps, the finding's.
	Reference     *Point  `json:"reference,omitempty"`
	ReferenceGbps float64 `json:"reference_gbit_per_s,omitempty"`
	Gbps          float64 `json:"effect_gbit_per_s,omitempty"`
}

// Finding is one confirmed anomaly (a "finding" record).
//
// A finding's ID is its own: a resumed hunt that completes a finding cut short (Minimal
// false) records it again under the same ID, so a reader of a stream takes the last
// record of each ID (LatestFindings).
type Finding struct {
	ID    string `json:"id"` // F1, F2, ... in the order found
	Class Class  `json:"class"`
	// Key: the counter (counters), the completion status or "timeout" (failed), the bar
	// (low-throughput: best-seen or link), what was served unevenly (unfair: peers, qps,
	// threads or directions; empty in the records of a hunt before those keys, which
	// stand for any); empty for tail.
	Key string `json:"key,omitempty"`
	// Set is the minimal set: the parameters that must hold these values for the anomaly
	// to trigger (every other parameter can take any value of the space, each tried at
	// its bounds). Empty: it triggers everywhere the hunt looked.
	Set     []Condition `json:"set"`
	Minimal bool        `json:"minimal"` // false: the hunt stopped before every parameter was varied
	Effect  Effect      `json:"effect"`
	// CountersMoved: the error and congestion counters that moved in its runs ("local
	// error roce_adp_retrans").
	CountersMoved []string `json:"counters_moved,omitempty"`
	// Runs: the fresh runs that showed it (all of the runs asked for: Rules.Confirm);
	// PausedRuns, those of them that were paused (pause frames moved on a port during the
	// run: its numbers are also the fabric's flow control's).
	Runs       int `json:"runs"`
	PausedRuns int `json:"paused_runs,omitempty"`
	// Point: the reproducer's configuration (the set's parameters at the values it was
	// confirmed at, every other at the space's baseline where it still triggered there);
	// FoundAt: the search's point that raised it.
	Point   Point `json:"point"`
	FoundAt Point `json:"found_at"`
	// TrialRuns: the runs its confirmation and minimisation took (references included).
	TrialRuns int `json:"trial_runs"`
	// ErrorText: a failed run's error, as the first confirming run had it (failed).
	ErrorText string `json:"error_text,omitempty"`
	// ReproConfig is the reproducer's whole config; Command and PerftestCommand its
	// command lines for the plan's server (Reproducer and Perftest for another), the
	// latter "" where perftest cannot express it.
	ReproConfig     result.Config `json:"reproducer_config"`
	Command         string        `json:"reproducer"`
	PerftestCommand string        `json:"perftest"`
}

// moved says whether counter n moved in the finding's confirming runs: a counters
// finding stands for every counter that moved with its key (one anomaly seen through
// several counters, e.g. a requester's retries and its responder's duplicates), so
// they raise no finding of their own inside its set.
func (f Finding) moved(n string) bool {
	for _, m := range f.CountersMoved {
		if m == n || strings.HasSuffix(m, " "+n) {
			return true
		}
	}
	return false
}

// Matches says whether point p is in the finding's set: every condition holds.
func (f Finding) Matches(p Point) bool {
	for _, c := range f.Set {
		if !c.Holds(p) {
			return false
		}
	}
	return true
}

// SetString is the set as one line: "op = read, msg_size_bytes = 1M, sq_depth >= 512"
// ("any configuration" for an empty set).
func (f Finding) SetString() string {
	if len(f.Set) == 0 {
		return "any configuration"
	}
	s := make([]string, len(f.Set))
	for i, c := range f.Set {
		s[i] = c.String()
	}
	return strings.Join(s, ", ")
}

// LatestFindings are the findings of a hunt's records, each ID's last record (a resumed
// hunt records a finding it completed again under its ID), in the order their IDs first
// appear.
func LatestFindings(recs []Record) []Finding {
	var out []Finding
	at := map[string]int{}
	for _, r := range recs {
		if r.Kind != KindFinding || r.Finding == nil {
			continue
		}
		if i, ok := at[r.Finding.ID]; ok {
			out[i] = *r.Finding
			continue
		}
		at[r.Finding.ID] = len(out)
		out = append(out, *r.Finding)
	}
	return out
}

func sameSet(a, b []Condition) bool {
	return slices.EqualFunc(a, b, func(x, y Condition) bool {
		return x.Dim == y.Dim && x.Op == y.Op && slices.Equal(x.Values, y.Values)
	})
}

// NewRecorder returns a Run's record function for an NDJSON stream written to w: one
// line a record, each one Write; where w can Sync (an *os.File), each line is synced
// before the hunt goes on. Every record is written as this SchemaVersion, one read from
// an earlier version's stream too: its fields are written as this version writes them.
func NewRecorder(w io.Writer) func(Record) error {
	write := result.AppendLine[Record](w)
	return func(r Record) error {
		r.SchemaVersion = SchemaVersion
		return write(r)
	}
}

// VersionError is ReadRecords' error for a line of another schema_version than it reads.
type VersionError struct {
	Line    int // from 1
	Version int
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("reading the hunt stream: line %d has schema_version %d; this rdmabench reads schema_version %d (and streams from before it): read it with the rdmabench that wrote it",
		e.Line, e.Version, SchemaVersion)
}

// ReadRecords reads a hunt's NDJSON stream (a Plan's Prior, for --resume). Blank lines
// are skipped; a line that is not a record (bad JSON, an unknown kind, a point without
// its config) is an error naming it: a stream cut short by a crash ends in such a line,
// which can be deleted. A line without schema_version is read as version 1 (a hunt's from
// before the key; its Record's SchemaVersion stays 0); one of a later version than
// SchemaVersion is a *VersionError naming its line and both versions.
func ReadRecords(r io.Reader) ([]Record, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	var out []Record
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var v struct {
			V int `json:"schema_version"`
		}
		if err := json.Unmarshal(line, &v); err == nil && (v.V > SchemaVersion || v.V < 0) {
			return out, &VersionError{Line: n, Version: v.V} // first: a later version's fields are not this one's
		}
		var rec Record
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&rec); err != nil {
			return out, fmt.Errorf("reading the hunt stream: line %d: %w", n, err)
		}
		switch {
		case rec.Kind == KindPoint && rec.Measurement != nil && rec.Finding == nil && rec.Measurement.Config.Op != "":
		case rec.Kind == KindFinding && rec.Finding != nil && rec.Measurement == nil && rec.Finding.ID != "":
		default:
			return out, fmt.Errorf("reading the hunt stream: line %d: not a point or a finding record", n)
		}
		out = append(out, rec)
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("reading the hunt stream: %w", err)
	}
	return out, nil
}
