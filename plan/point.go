package plan

import (
	"slices"
	"strconv"
	"strings"

	"github.com/rdmabench/rdmabench/result"
)

// Point is one value per dimension of Dims: a configuration of the parameters a search
// varies, the sweep's (profiles.Dims, the others left at their zero) and the hunt's (all
// of them). It is a comparable value (a map key, ==) with the plan's JSON and YAML keys.
// A point says a value as Dim.Get does: QPTimeout is the exponent itself (14, where a
// plan says 0 for the default), MR is "pool", "per-io" or "cache", Peers is 0 for one
// server (the peers dimension's value 1, as a plan says it), else the k servers of a
// fan-out run (the first k of the plan's servers).
//
// A zero field is a dimension the point does not hold (a sweep's point has no op, QPs,
// MTU, MR or direction; a grid may leave out the QP timeout): it is left out of the
// point's JSON, YAML and String. buf_offset_bytes, which a point holds at 0, is always
// written.
type Point struct {
	Op             string `json:"op,omitempty" yaml:"op,omitempty"`
	MsgSizeBytes   int    `json:"msg_size_bytes" yaml:"msg_size_bytes"`
	SQDepth        int    `json:"sq_depth" yaml:"sq_depth"`
	PostList       int    `json:"post_list" yaml:"post_list"`
	CQMod          int    `json:"cq_mod" yaml:"cq_mod"`
	NumQPs         int    `json:"num_qps,omitempty" yaml:"num_qps,omitempty"`
	BufOffsetBytes int    `json:"buf_offset_bytes" yaml:"buf_offset_bytes"`
	MTUBytes       int    `json:"mtu_bytes,omitempty" yaml:"mtu_bytes,omitempty"`
	QPTimeout      int    `json:"qp_timeout,omitempty" yaml:"qp_timeout,omitempty"`
	MR             string `json:"mr,omitempty" yaml:"mr,omitempty"`
	Bidirectional  bool   `json:"bidirectional,omitempty" yaml:"bidirectional,omitempty"`
	Peers          int    `json:"peers,omitempty" yaml:"peers,omitempty"`
	TrafficClass   int    `json:"traffic_class,omitempty" yaml:"traffic_class,omitempty"`
}

// field is the point's field that holds dimension key: a number, a text or a switch. It
// panics on an unknown key (a programming error: spaces and grids are checked when made).
func (p *Point) field(key string) (n *int, s *string, b *bool) {
	switch key {
	case "op":
		return nil, &p.Op, nil
	case "msg_size_bytes":
		return &p.MsgSizeBytes, nil, nil
	case "sq_depth":
		return &p.SQDepth, nil, nil
	case "post_list":
		return &p.PostList, nil, nil
	case "cq_mod":
		return &p.CQMod, nil, nil
	case "num_qps":
		return &p.NumQPs, nil, nil
	case "buf_offset_bytes":
		return &p.BufOffsetBytes, nil, nil
	case "mtu_bytes":
		return &p.MTUBytes, nil, nil
	case "qp_timeout":
		return &p.QPTimeout, nil, nil
	case "mr":
		return nil, &p.MR, nil
	case "bidirectional":
		return nil, nil, &p.Bidirectional
	case "peers":
		return &p.Peers, nil, nil
	case "traffic_class":
		return &p.TrafficClass, nil, nil
	}
	panic("plan: unknown dimension " + key)
}

// Get returns dimension key's value as its canonical text (a number in decimal,
// "write", "per-io", "true"; peers 1 for one server).
func (p Point) Get(key string) string {
	n, s, b := p.field(key)
	switch {
	case key == "peers":
		return strconv.Itoa(max(*n, 1))
	case n != nil:
		return strconv.Itoa(*n)
	case s != nil:
		return *s
	}
	return strconv.FormatBool(*b)
}

// Int returns an ordered dimension's value (0 where the point does not hold it; peers
// 1 for one server).
func (p Point) Int(key string) int {
	n, _, _ := p.field(key)
	if n == nil {
		panic("plan: dimension " + key + " is not a number")
	}
	if key == "peers" {
		return max(*n, 1)
	}
	return *n
}

// With returns p with dimension key set to v, a canonical text (as Dim.Parse returns
// it); it panics on a value that is not one (a programming error).
func (p Point) With(key, v string) Point {
	n, s, b := p.field(key)
	switch {
	case n != nil:
		return p.WithInt(key, atoi(v))
	case s != nil:
		*s = v
	default:
		x, err := strconv.ParseBool(v)
		if err != nil {
			panic("plan: bad " + key + " value " + v)
		}
		*b = x
	}
	return p
}

// WithInt returns p with an ordered dimension set to v (peers 1, one server, held as 0).
func (p Point) WithInt(key string, v int) Point {
	n, _, _ := p.field(key)
	if n == nil {
		panic("plan: dimension " + key + " is not a number")
	}
	if key == "peers" {
		v = peersOf(v)
	}
	*n = v
	return p
}

// PointOf reads the dimensions keys (every one of Dims when none is named) out of a
// plan, each by its Dim: the inverse of Config.
func PointOf(c Config, keys ...string) Point {
	var p Point
	for _, d := range Dims {
		if len(keys) == 0 || slices.Contains(keys, d.Key) {
			p = p.With(d.Key, d.Get(&c))
		}
	}
	return p
}

// Config is the plan of p: base (the common settings: duration, warm-up, counters) with
// p's dimensions (Apply), as a bandwidth test unless base says otherwise.
func (p Point) Config(base Config) Config {
	if base.Test == "" {
		base.Test = result.BW
	}
	return p.Apply(base)
}

// Apply writes p's values on the dimensions keys (every one of Dims when none is named)
// into c, each by its Dim, in Dims' order (a cache point holds max(16, depth)
// registrations, the CLI's default; the default QP timeout is said as 0 and pool as no
// --mr; one server as no peers). A dimension p does not hold (Holds) leaves c's value.
func (p Point) Apply(c Config, keys ...string) Config {
	for _, d := range Dims {
		if (len(keys) == 0 || slices.Contains(keys, d.Key)) && p.Holds(d) {
			d.Set(&c, p.Get(d.Key))
		}
	}
	return c
}

// Holds says whether p holds a value on dimension d: a category's text is set, a number
// is within d's range (0 is no value where the range starts above it; peers' 0 is one
// server), a switch always is.
func (p Point) Holds(d Dim) bool {
	n, s, _ := p.field(d.Key)
	switch {
	case s != nil:
		return *s != ""
	case n != nil:
		return *n >= d.Lo || d.Key == "peers"
	}
	return true
}

// Valid says whether a point can run as far as its own values go: the moderation and
// the post list fit in the send queue.
func (p Point) Valid() bool { return p.CQMod <= p.SQDepth && p.PostList <= p.SQDepth }

// String is p as the parameters it holds, in Dims' order: "read 1M depth 512 post-list 1
// cq-mod 16 qps 1 offset 0 mtu 4096 qp-timeout 14 mr pool", then "bidirectional" where it
// is, and an optional dimension off its default by its word ("peers 3", "tclass 104").
// A sweep's point says only its dimensions: "64K depth 8 post-list 1 cq-mod 8 offset 0
// qp-timeout 14".
func (p Point) String() string {
	var w []string
	for _, d := range Dims {
		v := p.Get(d.Key)
		n, _, b := p.field(d.Key)
		switch {
		case d.Optional:
			if v != d.Held() {
				w = append(w, d.Word, v)
			}
		case b != nil:
			if *b {
				w = append(w, d.Word)
			}
		case !p.Holds(d):
		case d.Key == "op":
			w = append(w, v)
		case d.Key == "msg_size_bytes":
			w = append(w, result.FormatSize(*n))
		default:
			w = append(w, d.Word, v)
		}
	}
	return strings.Join(w, " ")
}
