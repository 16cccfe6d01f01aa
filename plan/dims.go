package plan

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/rdmabench/rdmabench/result"
)

// Dim is one parameter of a plan that a search (the sweep, the hunt) can vary: the one
// place that says its key, its kind, its bounds, how it is read from and written to a
// plan, and how a point says its default. A point (Point) says every value as the text
// Get returns (the canonical text: a number in decimal, "write", "per-io", "true"); a
// plan may say the same value otherwise (the QP timeout's 0 for 14, no --mr for pool, no
// peers for one server), which Get and Set translate.
type Dim struct {
	// Key is the plan's JSON key (result.Config), which names the dimension everywhere:
	// profiles' grids, the sweep's outputs, the hunt's spaces and records.
	Key string
	// Ordered: the values are numbers with an order (a condition on them is a range);
	// else the dimension is a category of Values (a condition is a set).
	Ordered bool
	// An ordered dimension's bounds; Units: it reads sizes with units (4K, 1M); Pow2: only
	// powers of two.
	Lo, Hi int
	Units  bool
	Pow2   bool
	// Values are a category's values, the default first.
	Values []string
	// Optional: a search may leave the dimension out; its points then hold the plan's
	// default (Held: peers 1, a traffic class of 0).
	Optional bool
	// Aliases are the other names a user may give it (the CLI's flags, '-' as '_').
	Aliases []string
	// Word names it in a point's one-line text (Point.String); Cell, where set, is its
	// prefix in a point's one-cell form (report.FmtPoint) when it is off its default.
	Word string
	Cell string
	// Name names it in a report's tables, Short in the sweep's short table.
	Name, Short string
	// Get reads the value from a plan, as a point says it; Set writes a point's value
	// (a canonical text) into a plan, as a plan says it.
	Get func(c *Config) string
	Set func(c *Config, v string)
	// synonyms are other texts of a category's values ("yes" for "true").
	synonyms map[string]string
}

// Dims are the dimensions a search can vary, in the order a hunt's space lists them, a
// finding names them and the minimisation varies them. A new one is an entry here and
// a field of Point (point.go: the field and its case in Point.field), and, when the
// sweep varies it, an entry in profiles.Dims, Optional and Cheaper (profiles.go);
// nothing else: parsing, bounds, the conversions to and from a plan, a point's text and
// the reports' names, cells and CSV column all come from this table. (The hunt's default
// space takes an ordered one's values from the profile's grids; one no grid has, nor the
// hunt's defaultValues, is in a hunt's space only where --space names it.)
var Dims = []Dim{
	{Key: "op", Values: []string{Write.Name, Read.Name}, Aliases: []string{"operation", "ops"}, Word: "op",
		Name: "operation", Short: "operation",
		Get: func(c *Config) string { return c.Op }, Set: func(c *Config, v string) { c.Op = v }},
	ordered("msg_size_bytes", 1, math.MaxInt32, "size", func(c *Config) *int { return &c.MsgSizeBytes }, "size", "msg_size", "s").
		named("message size", "message size"),
	ordered("sq_depth", 1, MaxSQDepth, "depth", func(c *Config) *int { return &c.SQDepth }, "depth", "tx_depth", "t").
		named("SQ depth", "SQ depth"),
	ordered("post_list", 1, MaxSQDepth, "post-list", func(c *Config) *int { return &c.PostList }, "l").
		named("post-list length", "post list"),
	ordered("cq_mod", 1, MaxSQDepth, "cq-mod", func(c *Config) *int { return &c.CQMod }, "cqmod", "q_mod").
		named("signal every N (cq-mod)", "CQ moderation"),
	ordered("num_qps", 1, MaxQPs, "qps", func(c *Config) *int { return &c.NumQPs }, "qps", "qp", "q").
		named("queue pairs", "QPs"),
	ordered("buf_offset_bytes", 0, 1<<21-1, "offset", func(c *Config) *int { return &c.BufOffsetBytes }, "offset", "buf_offset").
		named("offset from 4 KiB", "buffer offset"),
	ordered("mtu_bytes", 256, 4096, "mtu", func(c *Config) *int { return &c.MTUBytes }, "mtu", "m").
		named("path MTU", "MTU"),
	{Key: "qp_timeout", Ordered: true, Lo: 1, Hi: 31, Aliases: []string{"u", "timeout"}, Word: "qp-timeout",
		Cell: "u", Name: "QP timeout (-u)", Short: "QP timeout (-u)",
		Get: func(c *Config) string { return strconv.Itoa(QPTimeout(c.QPTimeout)) },
		Set: func(c *Config, v string) { c.QPTimeout = ConfigQPTimeout(atoi(v)) }},
	{Key: "mr", Values: MRModes, Aliases: []string{"mr_mode"}, Word: "mr", Name: "memory registration", Short: "MR",
		Get: getMR, Set: setMR},
	{Key: "bidirectional", Values: []string{"false", "true"}, Aliases: []string{"bidi", "b"}, Word: "bidirectional",
		Name: "both directions", Short: "bidirectional",
		synonyms: map[string]string{"yes": "true", "on": "true", "1": "true", "no": "false", "off": "false", "0": "false"},
		Get:      func(c *Config) string { return strconv.FormatBool(c.Bidirectional) },
		Set:      func(c *Config, v string) { c.Bidirectional = v == "true" }},
	// One server is said as 1 by a point, as no peers (0) by a plan.
	{Key: "peers", Ordered: true, Lo: 1, Hi: MaxPeers, Optional: true, Aliases: []string{"servers", "fan_out", "fanout"}, Word: "peers",
		Name: "servers (fan-out)", Short: "servers",
		Get: func(c *Config) string { return strconv.Itoa(max(c.Peers, 1)) },
		Set: func(c *Config, v string) { c.Peers = peersOf(atoi(v)) }},
	// --tclass: the GRH's traffic class (RoCE: DSCP << 2 | ECN). Optional: a space without
	// it runs every point at the plan's (0, perftest's default).
	{Key: "traffic_class", Ordered: true, Lo: 0, Hi: 255, Optional: true, Aliases: []string{"tclass"}, Word: "tclass",
		Cell: "tc", Name: "traffic class (--tclass)", Short: "traffic class",
		Get: func(c *Config) string { return strconv.Itoa(c.TrafficClass) },
		Set: func(c *Config, v string) { c.TrafficClass = atoi(v) }},
}

// MaxQPs bounds --qps.
const MaxQPs = 1024

// ordered is a numeric dimension that a plan says as the point does, in field f.
func ordered(key string, lo, hi int, word string, f func(*Config) *int, aliases ...string) Dim {
	return Dim{Key: key, Ordered: true, Lo: lo, Hi: hi, Units: key == "msg_size_bytes" || key == "buf_offset_bytes",
		Pow2: key == "mtu_bytes", Aliases: aliases, Word: word,
		Get: func(c *Config) string { return strconv.Itoa(*f(c)) },
		Set: func(c *Config, v string) { *f(c) = atoi(v) }}
}

// named gives d its names in tables (Dim.Name, Dim.Short).
func (d Dim) named(name, short string) Dim {
	d.Name, d.Short = name, short
	return d
}

// getMR and setMR: pool is said as no --mr; a cache holds max(DefaultMRCache, depth)
// registrations (the CLI's default), so the depth is set first (Dims' order).
func getMR(c *Config) string {
	if c.MR == "" {
		return MRPool
	}
	return c.MR
}

func setMR(c *Config, v string) {
	c.MR, c.MRCache = "", 0
	switch v {
	case MRPerIO:
		c.MR = MRPerIO
	case MRCache:
		c.MR, c.MRCache = MRCache, max(DefaultMRCache, c.SQDepth)
	}
}

func peersOf(k int) int {
	if k <= 1 {
		return 0 // one server
	}
	return k
}

func atoi(v string) int {
	x, err := strconv.Atoi(v)
	if err != nil {
		panic("plan: a dimension's value is not a number: " + v)
	}
	return x
}

var dimIndex = func() map[string]int {
	m := map[string]int{}
	for i, d := range Dims {
		m[d.Key] = i
	}
	return m
}()

// DimOf returns the dimension with key k.
func DimOf(k string) (Dim, bool) {
	i, ok := dimIndex[k]
	if !ok {
		return Dim{}, false
	}
	return Dims[i], true
}

// DimKeys are the keys of Dims, in their order.
func DimKeys() []string {
	out := make([]string, len(Dims))
	for i, d := range Dims {
		out[i] = d.Key
	}
	return out
}

// DimName reads a dimension's name as a user gives it: a key, or one of its aliases,
// with '-' or '_'.
func DimName(s string) (string, error) {
	n := strings.ReplaceAll(strings.ToLower(strings.TrimSpace(s)), "-", "_")
	for _, d := range Dims {
		if n == d.Key || slices.Contains(d.Aliases, n) {
			return d.Key, nil
		}
	}
	return "", fmt.Errorf("unknown dimension %q: want one of %s", s, strings.Join(DimKeys(), ", "))
}

// Held is the value a point holds on a dimension a search leaves out: the default's, as
// a point says it.
func (d Dim) Held() string { return d.Get(&Config{}) }

// Canon is an ordered dimension's value v as a point says it, where a plan may say it
// otherwise (the QP timeout's 0 is 14, the peers' 0 is 1).
func (d Dim) Canon(v int) int {
	var c Config
	d.SetInt(&c, v)
	return d.Int(&c)
}

// Int reads an ordered dimension's value from a plan as a number.
func (d Dim) Int(c *Config) int { return atoi(d.Get(c)) }

// SetInt writes an ordered dimension's value v into a plan.
func (d Dim) SetInt(c *Config, v int) { d.Set(c, strconv.Itoa(v)) }

// Parse reads one value as its canonical text, checking its range: a category's value
// in any case (or a synonym), a number (with units where the dimension takes them).
func (d Dim) Parse(v string) (string, error) {
	if !d.Ordered {
		l := strings.ToLower(strings.TrimSpace(v))
		if s, ok := d.synonyms[l]; ok {
			l = s
		}
		if slices.Contains(d.Values, l) {
			return l, nil
		}
		return "", fmt.Errorf("%s %q: want %s", d.Key, v, orList(d.Values))
	}
	var x int
	var err error
	if d.Units {
		x, err = result.ParseSize(v)
	} else {
		x, err = strconv.Atoi(strings.TrimSpace(v))
	}
	if err != nil {
		return "", fmt.Errorf("%s %q: want a number", d.Key, v)
	}
	return strconv.Itoa(x), d.Check(x)
}

// Check says whether x is in an ordered dimension's range.
func (d Dim) Check(x int) error {
	if d.Pow2 && (x < d.Lo || x > d.Hi || x&(x-1) != 0) {
		var p []string
		for v := d.Lo; v <= d.Hi; v *= 2 {
			p = append(p, strconv.Itoa(v))
		}
		return fmt.Errorf("%s %d: want %s", d.Key, x, orList(p))
	}
	if x < d.Lo || x > d.Hi {
		return fmt.Errorf("%s %d: want %d to %d", d.Key, x, d.Lo, d.Hi)
	}
	return nil
}

// orList is "a, b or c".
func orList(v []string) string {
	if len(v) < 2 {
		return strings.Join(v, "")
	}
	return strings.Join(v[:len(v)-1], ", ") + " or " + v[len(v)-1]
}
