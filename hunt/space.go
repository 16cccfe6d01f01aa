package hunt

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/rdmabench/rdmabench/plan"
	"github.com/rdmabench/rdmabench/profiles"
	"github.com/rdmabench/rdmabench/result"
)

// The dimensions a hunt varies, by the result.Config key each sets.
const (
	DimOp        = "op"
	DimSize      = "msg_size_bytes"
	DimDepth     = "sq_depth"
	DimPostList  = "post_list"
	DimCQMod     = "cq_mod"
	DimQPs       = "num_qps"
	DimOffset    = "buf_offset_bytes"
	DimMTU       = "mtu_bytes"
	DimQPTimeout = "qp_timeout"
	DimMR        = "mr"
	DimBidi      = "bidirectional"
	// DimPeers: one server (1), or a fan-out run against the first k of the plan's servers
	// (result.Config.Peers; the CLI's SERVER a,b,c). A space of one server has no such
	// dimension (optionalDims): its points are all of one server.
	DimPeers = "peers"
	// DimTClass: the traffic class (--tclass). A space lacks it unless told (--space
	// traffic_class=0,104): its points then run at 0.
	DimTClass = "traffic_class"
)

// DimNames are the dimensions in the order a Space lists them, a finding's set names
// them and the minimisation varies them: plan.Dims' keys. A space may lack an optional
// one (peers, traffic_class): its points then hold the plan's default (plan.Dim.Held).
var DimNames = plan.DimKeys()

// The --mr modes as a point says them (a config says pool as ""): plan's.
const (
	MRPool  = plan.MRPool
	MRPerIO = plan.MRPerIO
	MRCache = plan.MRCache
)

// Ordered says whether a dimension's values are numbers with an order (a condition on it
// is a range); op, mr and bidirectional are categories (a condition is a set).
func Ordered(dim string) bool {
	d, ok := plan.DimOf(dim)
	return !ok || d.Ordered
}

// Dim is one dimension of the space and the values the hunt tries, each as its canonical
// text (a number in decimal, "write", "per-io", "true"); an ordered dimension's ascend.
// A dimension with one value is held at it.
type Dim struct {
	Name   string   `json:"name"`
	Values []string `json:"values"`
}

// Space is what a hunt searches: every dimension of DimNames with its values (peers only
// where the hunt has several servers: WithPeers), and the baseline, a benign
// configuration the minimisation moves each parameter towards (the reproducer of a
// finding holds every parameter its set does not name at the baseline).
type Space struct {
	Dims     []Dim `json:"dims"`
	Baseline Point `json:"baseline"`
}

// Point is one configuration of the space, plan's one point type: a comparable value
// (a map key) holding every dimension (see plan.Point for how it says each).
type Point = plan.Point

// Default values of the dimensions a profile's sweep grid does not have (a profile's
// hunt section may give its own): QPs, path MTUs (4096 is the ports' active MTU where
// that is smaller) and QP timeouts (4.096 us x 2^N: 1 ms, perftest's 67 ms, 4.3 s).
var (
	DefaultQPs        = []int{1, 2, 4, 8, 16}
	DefaultMTUs       = []int{1024, 4096}
	DefaultQPTimeouts = []int{8, plan.DefaultQPTimeout, 20}
)

// defaultValues are the values of an ordered dimension a profile neither grids nor
// gives in its hunt section.
var defaultValues = map[string][]int{DimQPs: DefaultQPs, DimMTU: DefaultMTUs, DimQPTimeout: DefaultQPTimeouts}

// benign is the baseline's value of an ordered dimension no profile's start point
// says, before it is fitted to the space's values (fitBaseline: the nearest one): one
// QP, the largest MTU.
var benign = map[string]int{DimQPs: 1, DimMTU: math.MaxInt}

// DefaultSpace is the space of profile p for the operations ops (default write and
// read), every dimension of plan.Dims in its order: the operations; each ordered one
// with the values of p's hunt section (QPs, MTUs, QP timeouts), else of its sweep grids
// (all operations' values together: sizes, depths, offsets, moderations, post lists, a
// gridded QP timeout), else defaultValues; each category (--mr, the direction) with
// every value. An optional dimension with none of these (the servers, which WithPeers
// adds for several; the traffic class) is left out, its points at the plan's default.
// The baseline is p's start point for the first operation, with one QP, the largest
// MTU, each category's first value (pool, one direction) and one server.
func DefaultSpace(p profiles.Profile, ops ...string) Space {
	if len(ops) == 0 {
		ops = []string{"write", "read"}
	}
	var h profiles.Hunt
	if p.Hunt != nil {
		h = *p.Hunt
	}
	st := p.Start[ops[0]]
	s := Space{Baseline: Point{Op: ops[0]}}
	for _, d := range plan.Dims {
		var vals []string
		switch {
		case d.Key == DimOp:
			vals = slices.Clone(ops)
		case !d.Ordered:
			vals = slices.Clone(d.Values)
			s.Baseline = s.Baseline.With(d.Key, vals[0])
		default:
			v := h.Values(d.Key)
			if len(v) == 0 {
				for _, op := range ops {
					v = append(v, p.Grid[op][d.Key]...)
				}
			}
			if v = ascending(v); len(v) == 0 {
				v = defaultValues[d.Key]
			}
			vals = texts(v)
			if b, ok := benign[d.Key]; ok {
				s.Baseline = s.Baseline.WithInt(d.Key, b)
			} else if slices.Contains(profiles.Dims, d.Key) {
				s.Baseline = s.Baseline.WithInt(d.Key, d.Canon(st.Int(d.Key)))
			}
		}
		if len(vals) > 0 {
			s.Dims = append(s.Dims, Dim{d.Key, vals})
		}
	}
	s.fitBaseline()
	return s
}

// ascending is v sorted, without repeats.
func ascending(v []int) []int { return slices.Compact(slices.Sorted(slices.Values(v))) }

// WithPeers returns the space of a hunt against n servers: with n of 2 or more, a peers
// dimension of one server and the fan-outs to the first k of them (every k up to 8,
// then powers of two and n); with one, none (its points are of one server). The
// baseline stays at one server.
func (s Space) WithPeers(n int) Space {
	out := Space{Baseline: s.Baseline}
	out.Baseline.Peers = 0
	for _, d := range s.Dims {
		if d.Name != DimPeers {
			out.Dims = append(out.Dims, d)
		}
	}
	if n < 2 {
		return out
	}
	n = min(n, plan.MaxPeers)
	var v []int
	for k := 1; k <= n; k++ {
		if k <= 8 || k&(k-1) == 0 || k == n {
			v = append(v, k)
		}
	}
	out.Dims = append(out.Dims, Dim{DimPeers, texts(v)})
	out.fitBaseline()
	return out
}

func texts(v []int) []string {
	out := make([]string, len(v))
	for i, x := range v {
		out[i] = strconv.Itoa(x)
	}
	return out
}

// Dim returns the dimension named name.
func (s Space) Dim(name string) (Dim, bool) {
	for _, d := range s.Dims {
		if d.Name == name {
			return d, true
		}
	}
	return Dim{}, false
}

func (s Space) values(name string) []string {
	d, _ := s.Dim(name)
	return d.Values
}

// Size is the number of points in the space (valid or not).
func (s Space) Size() int {
	n := 1
	for _, d := range s.Dims {
		n *= len(d.Values)
	}
	return n
}

// Contains says whether every parameter of p is one of the space's values (a dimension
// the space lacks, at the value its points hold: one server).
func (s Space) Contains(p Point) bool {
	for _, d := range DimNames {
		if !slices.Contains(s.admits(d), p.Get(d)) {
			return false
		}
	}
	return true
}

// admits are the values dimension d can take in the space: its values, or for an
// optional dimension the space lacks, the one its points hold.
func (s Space) admits(d string) []string {
	if dim, ok := s.Dim(d); ok {
		return dim.Values
	}
	if pd, ok := plan.DimOf(d); ok && pd.Optional {
		return []string{pd.Held()}
	}
	return nil
}

// fitBaseline moves each baseline value that is not in its dimension to the nearest
// value there (an ordered dimension) or the first (a category).
func (s *Space) fitBaseline() {
	for _, d := range s.Dims {
		if len(d.Values) == 0 || slices.Contains(d.Values, s.Baseline.Get(d.Name)) {
			continue
		}
		s.Baseline = s.Baseline.With(d.Name, nearest(d, s.Baseline.Get(d.Name)))
	}
	// A baseline that cannot run (a post list or moderation above the depth) takes the
	// largest that fits.
	s.Baseline = fitDepth(s.Baseline, *s)
}

// nearest is the value of d nearest to v: by number for an ordered dimension (the
// smaller on a tie), else d's first.
func nearest(d Dim, v string) string {
	if !Ordered(d.Name) {
		return d.Values[0]
	}
	x, _ := strconv.Atoi(v)
	best, bd := d.Values[0], math.Inf(1)
	for _, s := range d.Values {
		y, _ := strconv.Atoi(s)
		if dist := math.Abs(float64(y) - float64(x)); dist < bd {
			best, bd = s, dist
		}
	}
	return best
}

// check says what is wrong with a space: a dimension missing, repeated or unknown,
// without values, with a value that is not one, or out of order; a baseline off it.
func (s Space) check() error {
	seen := map[string]bool{}
	for _, d := range s.Dims {
		if !slices.Contains(DimNames, d.Name) {
			return fmt.Errorf("hunt space: unknown dimension %q (want one of %s)", d.Name, strings.Join(DimNames, ", "))
		}
		if seen[d.Name] {
			return fmt.Errorf("hunt space: dimension %s given twice", d.Name)
		}
		seen[d.Name] = true
		if len(d.Values) == 0 {
			return fmt.Errorf("hunt space: %s has no values", d.Name)
		}
		for i, v := range d.Values {
			if _, err := parseValue(d.Name, v); err != nil {
				return fmt.Errorf("hunt space: %w", err)
			}
			if canon, _ := parseValue(d.Name, v); canon != v {
				return fmt.Errorf("hunt space: %s value %q: want %q", d.Name, v, canon)
			}
			if slices.Contains(d.Values[:i], v) {
				return fmt.Errorf("hunt space: %s value %s given twice", d.Name, v)
			}
			if Ordered(d.Name) && i > 0 {
				a, _ := strconv.Atoi(d.Values[i-1])
				b, _ := strconv.Atoi(v)
				if a > b {
					return fmt.Errorf("hunt space: %s values must ascend", d.Name)
				}
			}
		}
	}
	for _, n := range DimNames {
		if d, _ := plan.DimOf(n); !seen[n] && !d.Optional {
			return fmt.Errorf("hunt space: no dimension %s", n)
		}
	}
	if !s.Contains(s.Baseline) {
		return fmt.Errorf("hunt space: the baseline %v is not in the space", s.Baseline)
	}
	return nil
}

// DimName reads a dimension's name as Override takes it: a DimNames key, or the CLI's
// name for it (size, depth, tx-depth, post-list, cq-mod, qps, offset, mtu, qp-timeout,
// mr, bidi, servers or fan-out for peers, tclass), '-' or '_' (plan.DimName).
func DimName(s string) (string, error) { return plan.DimName(s) }

// Override returns the space with the dimensions spec names set to its values:
// "sq_depth=64,1024", several separated by ';' ("size=4K,1M; qps=1,8; mr=pool"). Sizes
// and offsets take units (4K, 1M); an ordered dimension's values are sorted. A baseline
// value no longer in its dimension moves to the nearest one there.
func (s Space) Override(spec string) (Space, error) {
	out := Space{Dims: slices.Clone(s.Dims), Baseline: s.Baseline}
	for part := range strings.SplitSeq(spec, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, list, ok := strings.Cut(part, "=")
		if !ok {
			return s, fmt.Errorf("hunt space %q: want DIM=V1,V2 (e.g. sq_depth=64,1024)", part)
		}
		dim, err := DimName(name)
		if err != nil {
			return s, fmt.Errorf("hunt space %q: %w", part, err)
		}
		var vals []string
		for v := range strings.SplitSeq(list, ",") {
			if v = strings.TrimSpace(v); v == "" {
				continue
			}
			c, err := parseValue(dim, v)
			if err != nil {
				return s, fmt.Errorf("hunt space %q: %w", part, err)
			}
			if !slices.Contains(vals, c) {
				vals = append(vals, c)
			}
		}
		if len(vals) == 0 {
			return s, fmt.Errorf("hunt space %q: no values for %s", part, dim)
		}
		if Ordered(dim) {
			slices.SortFunc(vals, func(a, b string) int { x, _ := strconv.Atoi(a); y, _ := strconv.Atoi(b); return x - y })
		}
		i := slices.IndexFunc(out.Dims, func(d Dim) bool { return d.Name == dim })
		if i < 0 {
			out.Dims = append(out.Dims, Dim{dim, vals})
		} else {
			out.Dims[i] = Dim{dim, vals}
		}
	}
	out.fitBaseline()
	return out, out.check()
}

// parseValue reads one value of dimension dim as its canonical text, checking its range
// (plan.Dim.Parse).
func parseValue(dim, v string) (string, error) {
	d, ok := plan.DimOf(dim)
	if !ok {
		return "", fmt.Errorf("unknown dimension %q", dim)
	}
	return d.Parse(v)
}

// CheckConfig is the validation a Plan uses when it is given none: rdmabench's rules for
// a plan (package plan, which the CLI's bench rules are too), after its defaults. So a
// hunt plans no point the CLI would refuse: a post list and a moderation fit in the send
// queue; a fan-out runs 2 to 64 servers, one QP each, one direction; --mr per-io and
// cache run one QP, a post list of 1, one direction and one server (per-io: every WR
// signalled; cache: a registration for every WR in flight).
func CheckConfig(c result.Config) error {
	plan.Defaults(&c)
	return plan.Validate(c)
}

// repair makes a sampled point one that rdmabench can run, where the space lets it:
// --mr per-io and cache take one QP, a post list of 1, one direction and one server
// (per-io also a moderation of 1); a fan-out takes one QP (per server) and one
// direction; a post list or moderation above the depth takes the largest value that
// fits. The search samples with it (so that every mode gets its share of the points);
// the minimisation never repairs: it varies one parameter at a time.
func repair(p Point, s Space) Point {
	if p.MR != MRPool {
		p = lowest(p, s, DimQPs)
		p = lowest(p, s, DimPostList)
		p = lowest(p, s, DimBidi)
		p = lowest(p, s, DimPeers)
		if p.MR == MRPerIO {
			p = lowest(p, s, DimCQMod)
		}
	}
	if p.Peers > 1 {
		p = lowest(p, s, DimQPs)
		p = lowest(p, s, DimBidi)
	}
	return fitDepth(p, s)
}

// lowest sets dimension dim to its first value (the smallest; false for bidirectional).
func lowest(p Point, s Space, dim string) Point {
	if v := s.values(dim); len(v) > 0 {
		return p.With(dim, v[0])
	}
	return p
}

// fitDepth lowers a post list and a moderation above the depth to the largest value of
// theirs that fits (their smallest when none does).
func fitDepth(p Point, s Space) Point {
	for _, d := range []string{DimPostList, DimCQMod} {
		if x, _ := strconv.Atoi(p.Get(d)); x <= p.SQDepth {
			continue
		}
		vals := s.values(d)
		if len(vals) == 0 {
			continue
		}
		pick := vals[0]
		for _, v := range vals {
			if x, _ := strconv.Atoi(v); x <= p.SQDepth {
				pick = v
			}
		}
		p = p.With(d, pick)
	}
	return p
}
