// Package profiles holds NIC profiles: how to recognise a NIC, its nominal link rate
// (per model where a family's products differ), the sweep grid and start point, the
// tuning article's reference values and the counter classes. Profiles are embedded YAML
// (cx5, cx6, cx7, bnxt_re, irdma, efa, rxe); users add their own with --profile FILE.
//
// The tuning article is the practitioner's write-up (in Chinese) that rdmabench's
// defaults and claims C1-C8 come from; docs/claims.md identifies it, gives its claims
// and its hand-made tuning table, and what rdmabench measured for each.
package profiles

import (
	"embed"
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/rdmabench/rdmabench/counters"
	"github.com/rdmabench/rdmabench/plan"
	"go.yaml.in/yaml/v3"
)

//go:embed *.yaml
var embedded embed.FS

// Dims are the swept parameters, in the order the search walks them: a subset of
// plan.Dims (the one table of what a search can vary, its bounds and its conversions to
// and from a plan), each a field of plan.Point: a sweep's points hold only these (the
// others zero, left out of their JSON and YAML).
var Dims = []string{"msg_size_bytes", "sq_depth", "buf_offset_bytes", "cq_mod", "post_list", "qp_timeout"}

// Optional dimensions may be left out of a profile's grid: the sweep then holds them at
// one value (for qp_timeout, -u or the plan's default, plan.Dim.Held). A dimension added
// to Dims is optional (the profiles written before it do not grid it): the tuned CSV
// writes the optional ones after its fixed columns, so that its columns only ever grow
// at the end, and a point's one-cell form (report.FmtPoint) names them only off their
// defaults.
var Optional = []string{"qp_timeout"}

// Cheaper orders Dims for statistically equal configurations (sweep: the cheaper of
// two equals is chosen): a smaller SQ depth (fewer WRs in flight, less memory), then a
// smaller moderation and a shorter post list (the simpler loop), then the smaller
// message and offset, then the shorter QP timeout (a lost packet is sent again sooner).
var Cheaper = []string{"sq_depth", "cq_mod", "post_list", "msg_size_bytes", "buf_offset_bytes", "qp_timeout"}

func init() {
	for _, d := range Dims {
		if _, ok := plan.DimOf(d); !ok {
			panic("profiles: dimension " + d + " is not one of plan.Dims")
		}
	}
	for _, d := range Optional {
		if !slices.Contains(Dims, d) {
			panic("profiles: optional dimension " + d + " is not one of Dims")
		}
	}
	if !slices.Equal(slices.Sorted(slices.Values(Cheaper)), slices.Sorted(slices.Values(Dims))) {
		panic("profiles: Cheaper must order each of Dims once")
	}
}

// Complete fills the optional dimensions a grid leaves out with one value each: the
// grid gets [v] and the start point v, where v is fixed (non-zero), or the dimension's
// default. It returns the grid (a copy) and the start point.
func Complete(grid map[string][]int, start plan.Point, fixed map[string]int) (map[string][]int, plan.Point) {
	g := maps.Clone(grid)
	for _, d := range Optional {
		if v := fixed[d]; v != 0 {
			g[d], start = []int{v}, start.WithInt(d, v)
			continue
		}
		if len(g[d]) == 0 {
			g[d], start = []int{optionalDefault(d)}, start.WithInt(d, optionalDefault(d))
		}
	}
	return g, start
}

// optionalDefault is the value a point holds on a dimension the grid leaves out: the
// plan's default, as a point says it (the QP timeout's exponent 14, where a plan says 0).
func optionalDefault(d string) int {
	pd, _ := plan.DimOf(d)
	return pd.Int(&plan.Config{})
}

// Profile describes one NIC family.
type Profile struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	Match       struct {
		Drivers       []string `yaml:"drivers"`
		VendorIDs     []uint32 `yaml:"vendor_ids"`
		VendorPartIDs []uint32 `yaml:"vendor_part_ids"`
	} `yaml:"match"`
	// LinkGbps is the nominal link rate of a part no model lists (Models).
	LinkGbps float64 `yaml:"link_gbit_per_s"`
	// Models tell the family's products apart by vendor part ID, each with its own
	// nominal rate. Optional; every part ID a model lists must be one Match lists, and
	// in one model only. Model and LinkGbpsFor look a part up.
	Models           []Model                     `yaml:"models,omitempty"`
	PointDurationS   float64                     `yaml:"point_duration_s"`
	WarmupIterations uint64                      `yaml:"warmup_iterations"`
	Grid             map[string]map[string][]int `yaml:"grid"`      // op -> dim -> values
	Start            map[string]plan.Point       `yaml:"start"`     // op -> start point
	Reference        map[string]map[string][]int `yaml:"reference"` // op -> dim -> [lo, hi]
	// Counters classifies the NIC's counters: class (error, congestion, sanity, info)
	// -> counter names, any scope. Optional: a counter it does not name is info.
	Counters map[string][]string `yaml:"counters,omitempty"`
	// Hunt holds the settings of rdmabench hunt (package hunt) for this NIC: its anomaly
	// thresholds and the values of the dimensions the sweep grid lacks. Optional: what it
	// leaves out (or all of it) is the hunt's default.
	Hunt   *Hunt  `yaml:"hunt,omitempty"`
	Source string `yaml:"-"` // "embedded" or the file
}

// Hunt is a profile's hunt section. A threshold of 0 is the hunt's default (package
// hunt: DefaultRules); a list left out, the hunt's default values.
type Hunt struct {
	// LowThroughput: a run is slow below this fraction of the best throughput its
	// operation and size reached elsewhere in the hunt (0 to 1).
	LowThroughput float64 `yaml:"low_throughput,omitempty"`
	// LinkFraction: a run is slow below this fraction of the nominal link rate too (0 to
	// 1; 0: that bar is off).
	LinkFraction float64 `yaml:"link_fraction,omitempty"`
	// TailRatio: a run's latency tail is far above its median when p99 is more than this
	// many times p50 (above 1).
	TailRatio float64 `yaml:"tail_ratio,omitempty"`
	// UnfairRatio: a run is unfair when its slowest peer (or direction) got less than this
	// fraction of its fastest's throughput (0 to 1).
	UnfairRatio float64 `yaml:"unfair_ratio,omitempty"`
	// The values the hunt tries for the QPs, the path MTU and the QP timeout exponent (for
	// the QP timeout: these where given, else the grid's qp_timeout values).
	NumQPs    []int `yaml:"num_qps,omitempty"`
	MTUBytes  []int `yaml:"mtu_bytes,omitempty"`
	QPTimeout []int `yaml:"qp_timeout,omitempty"`
}

// Values are the values the hunt section gives dimension key (nil where it gives none).
func (h Hunt) Values(key string) []int {
	switch key {
	case "num_qps":
		return h.NumQPs
	case "mtu_bytes":
		return h.MTUBytes
	case "qp_timeout":
		return h.QPTimeout
	}
	return nil
}

// check refuses a fraction outside 0 to 1, a ratio of 1 or less, and values out of their
// range or not ascending.
func (h *Hunt) check(name string) error {
	if h == nil {
		return nil
	}
	for _, f := range []struct {
		key string
		v   float64
	}{{"low_throughput", h.LowThroughput}, {"link_fraction", h.LinkFraction}, {"unfair_ratio", h.UnfairRatio}} {
		if math.IsNaN(f.v) || f.v < 0 || f.v >= 1 {
			return fmt.Errorf("profile %s: hunt: %s %v: want a fraction from 0 to below 1 (0: the default)", name, f.key, f.v)
		}
	}
	if math.IsNaN(h.TailRatio) || h.TailRatio < 0 || (h.TailRatio > 0 && h.TailRatio <= 1) {
		return fmt.Errorf("profile %s: hunt: tail_ratio %v: want a ratio above 1 (0: the default)", name, h.TailRatio)
	}
	// Their bounds are plan.Dims'.
	for _, key := range []string{"num_qps", "mtu_bytes", "qp_timeout"} {
		v := h.Values(key)
		if !sort.IntsAreSorted(v) {
			return fmt.Errorf("profile %s: hunt: %s values must be ascending", name, key)
		}
		d, _ := plan.DimOf(key)
		for _, x := range v {
			if err := d.Check(x); err != nil {
				return fmt.Errorf("profile %s: hunt: %w", name, err)
			}
		}
	}
	return nil
}

// Model is one product of a profile's family: its name, the vendor part IDs it has
// (ibv_query_device's vendor_part_id; for PCI NICs the PCI device ID), and the nominal
// rate of one of its ports, in Gb/s: the fastest the product ships at, which a slower
// SKU of the same part ID will not reach.
type Model struct {
	Name     string   `yaml:"name"`
	PartIDs  []uint32 `yaml:"part_ids"`
	LinkGbps float64  `yaml:"link_gbit_per_s"`
}

// Model returns the model that lists partID; false when none does (the profile's
// LinkGbps is then the part's nominal rate).
func (p Profile) Model(partID uint32) (Model, bool) {
	for _, m := range p.Models {
		if slices.Contains(m.PartIDs, partID) {
			return m, true
		}
	}
	return Model{}, false
}

// LinkGbpsFor is the nominal link rate of part partID: its model's, else the profile's.
func (p Profile) LinkGbpsFor(partID uint32) float64 {
	if m, ok := p.Model(partID); ok {
		return m.LinkGbps
	}
	return p.LinkGbps
}

// LinkGbpsRange is the lowest and highest nominal rate of the profile's parts: its
// models' and, when a matched part has no model, the profile's own (for a listing:
// "10-400").
func (p Profile) LinkGbpsRange() (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, id := range p.Match.VendorPartIDs {
		r := p.LinkGbpsFor(id)
		lo, hi = min(lo, r), max(hi, r)
	}
	if len(p.Match.VendorPartIDs) == 0 {
		lo, hi = p.LinkGbps, p.LinkGbps
	}
	return lo, hi
}

// Parse reads and checks one profile.
func Parse(data []byte, source string) (Profile, error) {
	var p Profile
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	dec.KnownFields(true)
	if err := dec.Decode(&p); err != nil {
		return p, fmt.Errorf("profile %s: %w", source, err)
	}
	p.Source = source
	return p, p.check()
}

// notSwept are the keys of plan.Dims a start point sets that the sweep does not vary
// (a plan.Point can hold every dimension; a profile's start holds Dims only).
func notSwept(st plan.Point) []string {
	var out []string
	for _, d := range plan.Dims {
		if !slices.Contains(Dims, d.Key) && (st.Get(d.Key) != (plan.Point{}).Get(d.Key) || d.Key == "peers" && st.Peers != 0) {
			out = append(out, d.Key)
		}
	}
	return out
}

func (p Profile) check() error {
	if p.Name == "" {
		return fmt.Errorf("profile %s: no name", p.Source)
	}
	for _, op := range []string{"write", "read"} {
		g, ok := p.Grid[op]
		if !ok {
			return fmt.Errorf("profile %s: no grid for %s", p.Name, op)
		}
		for _, d := range Dims {
			if len(g[d]) == 0 && slices.Contains(Optional, d) {
				if s := p.Start[op].Int(d); s != 0 {
					return fmt.Errorf("profile %s: %s start %s=%d, but the grid has no %s values", p.Name, op, d, s, d)
				}
				continue
			}
			if len(g[d]) == 0 {
				return fmt.Errorf("profile %s: %s grid has no %s values", p.Name, op, d)
			}
			if !sort.IntsAreSorted(g[d]) {
				return fmt.Errorf("profile %s: %s grid's %s values must be ascending", p.Name, op, d)
			}
			pd, _ := plan.DimOf(d)
			for _, v := range g[d] {
				if err := pd.Check(v); err != nil { // a 0 would be replaced by the default and measured as another point
					return fmt.Errorf("profile %s: %s grid: %w", p.Name, op, err)
				}
			}
			if _, ok := p.Start[op]; !ok {
				return fmt.Errorf("profile %s: no start point for %s", p.Name, op)
			}
			if s := p.Start[op].Int(d); !slices.Contains(g[d], s) {
				return fmt.Errorf("profile %s: %s start %s=%d is not on the grid %v", p.Name, op, d, s, g[d])
			}
		}
		if extra := notSwept(p.Start[op]); len(extra) > 0 {
			return fmt.Errorf("profile %s: %s start sets %s, which the sweep does not vary (want only %s)", p.Name, op, strings.Join(extra, ", "), strings.Join(Dims, ", "))
		}
		for d := range g {
			if !slices.Contains(Dims, d) {
				return fmt.Errorf("profile %s: unknown dimension %q (want one of %s)", p.Name, d, strings.Join(Dims, ", "))
			}
		}
		for d, r := range p.Reference[op] {
			if !slices.Contains(Dims, d) || len(r) != 2 || r[0] > r[1] {
				return fmt.Errorf("profile %s: %s reference %s=%v: want a dimension and [lo, hi]", p.Name, op, d, r)
			}
		}
	}
	if err := p.checkModels(); err != nil {
		return err
	}
	if err := p.Hunt.check(p.Name); err != nil {
		return err
	}
	return p.checkCounters()
}

// checkModels refuses a model without a name, part IDs or a positive rate, a part ID
// the match rules do not list, and a part ID in two models.
func (p Profile) checkModels() error {
	owner := map[uint32]string{}
	for i, m := range p.Models {
		switch {
		case strings.TrimSpace(m.Name) == "":
			return fmt.Errorf("profile %s: models[%d] has no name", p.Name, i)
		case len(m.PartIDs) == 0:
			return fmt.Errorf("profile %s: model %s lists no part_ids", p.Name, m.Name)
		case m.LinkGbps <= 0:
			return fmt.Errorf("profile %s: model %s needs a positive link_gbit_per_s", p.Name, m.Name)
		}
		for _, id := range m.PartIDs {
			if !slices.Contains(p.Match.VendorPartIDs, id) {
				return fmt.Errorf("profile %s: model %s's part ID %d (0x%x) is not in match.vendor_part_ids", p.Name, m.Name, id, id)
			}
			if o, dup := owner[id]; dup {
				return fmt.Errorf("profile %s: part ID %d (0x%x) is in both model %s and model %s", p.Name, id, id, o, m.Name)
			}
			owner[id] = m.Name
		}
	}
	return nil
}

// checkCounters refuses unknown classes, empty names, and a name listed twice.
func (p Profile) checkCounters() error {
	for _, class := range slices.Sorted(maps.Keys(p.Counters)) {
		if _, err := counters.ParseClass(class); err != nil {
			return fmt.Errorf("profile %s: counters: %w", p.Name, err)
		}
	}
	seen := map[string]counters.Class{}
	for _, class := range counters.Classes {
		for _, n := range p.Counters[string(class)] {
			if strings.TrimSpace(n) == "" {
				return fmt.Errorf("profile %s: counters: an empty name in %s", p.Name, class)
			}
			if c, dup := seen[n]; dup {
				if c == class {
					return fmt.Errorf("profile %s: counters: %s is listed twice in %s", p.Name, n, class)
				}
				return fmt.Errorf("profile %s: counters: %s is in both %s and %s", p.Name, n, c, class)
			}
			seen[n] = class
		}
	}
	return nil
}

// CounterClasses returns the profile's counter classification (counters.Classify);
// counters it does not name are info.
func (p Profile) CounterClasses() counters.Classification {
	c := counters.Classification{}
	for class, names := range p.Counters {
		for _, n := range names {
			c[n] = counters.Class(class)
		}
	}
	return c
}

// All returns the embedded profiles, sorted by name.
func All() ([]Profile, error) {
	names, err := embedded.ReadDir(".")
	if err != nil {
		return nil, err
	}
	var out []Profile
	for _, n := range names {
		data, err := embedded.ReadFile(n.Name())
		if err != nil {
			return nil, err
		}
		p, err := Parse(data, "embedded:"+n.Name())
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Load returns the profile named name, or read from a file when name is a path.
func Load(name string) (Profile, error) {
	if strings.ContainsAny(name, "/.") {
		data, err := os.ReadFile(name)
		if err != nil {
			return Profile{}, fmt.Errorf("cannot read profile: %w", err)
		}
		return Parse(data, name)
	}
	all, err := All()
	if err != nil {
		return Profile{}, err
	}
	var names []string
	for _, p := range all {
		if p.Name == name {
			return p, nil
		}
		names = append(names, p.Name)
	}
	return Profile{}, fmt.Errorf("no profile %q: built-in profiles are %s, or pass a YAML file", name, strings.Join(names, ", "))
}

// Detect finds the embedded profile for a device by driver, vendor and part IDs.
func Detect(driver string, vendorID, partID uint32) (Profile, error) {
	all, err := All()
	if err != nil {
		return Profile{}, err
	}
	for _, p := range all {
		m := p.Match
		if slices.Contains(m.VendorIDs, vendorID) && slices.Contains(m.VendorPartIDs, partID) &&
			(len(m.Drivers) == 0 || slices.Contains(m.Drivers, driver) || driver == "unknown") {
			return p, nil
		}
	}
	return Profile{}, fmt.Errorf("no built-in profile matches driver %s, vendor 0x%x, part %d: pass --profile NAME or a YAML file (see 'rdmabench profiles')", driver, vendorID, partID)
}
