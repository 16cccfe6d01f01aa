package htmlreport

import (
	"fmt"
	"math"
	"sort"
	"strings"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/rdmabench/rdmabench/internal/stat"
	"github.com/rdmabench/rdmabench/plan"
	"github.com/rdmabench/rdmabench/profiles"
	"github.com/rdmabench/rdmabench/report"
	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/sweep"
)

// ops are the operations, in the order the page shows them.
var ops = []string{"write", "read"}

// cell is one configuration of a series with the numbers of its runs: the runs of a
// results file, or a tuned report's summary of a point (Summary: medians only).
type cell struct {
	Key      string // report.ConfigKey; a summary's: the op and the point
	Cfg      result.Config
	Point    plan.Point
	BW, Rate []float64 // per run, Gb/s and Mpps (nil for a summary)
	Runs     int
	BWMed    float64
	RateMed  float64
	Tainted  int            // runs measured while NIC counters moved
	Counted  int            // runs whose NIC counters were read
	Flags    map[string]int // a flagged counter -> the runs it was flagged in
	Hists    []string       // the runs' encoded histograms (those that have one)
	HistN    uint64         // samples in those
	Summary  bool
}

// measured says whether a result is a measurement to plot: not failed, not interrupted,
// something completed.
func measured(r result.Result) bool {
	return r.Error == "" && !r.Interrupted && r.Iterations > 0
}

// cells groups a series' results of one kind ("bw": bandwidth tests, "lat": latency
// tests) by configuration, sorted by key. A tuned report alone gives its points'
// summaries (bandwidth only).
func (s *Series) cells(test string) []*cell {
	if !s.hasRuns {
		if test != "bw" || s.Tuned == nil {
			return nil
		}
		var out []*cell
		for _, op := range ops {
			o, ok := s.Tuned.Ops[op]
			if !ok {
				continue
			}
			for _, ps := range o.All {
				if ps.Error != "" || ps.Runs == 0 {
					continue
				}
				out = append(out, &cell{Key: op + " " + pointName(ps.Point), Cfg: sweep.Apply(result.Config{Op: op, Test: result.BW}, ps.Point),
					Point: ps.Point, Runs: ps.Runs, BWMed: ps.BWGbps, RateMed: ps.MsgRateMpps, Summary: true})
			}
		}
		sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
		return out
	}
	byKey := map[string]*cell{}
	for _, r := range s.Results {
		if !measured(r) || (r.Config.Test == result.Lat) != (test == "lat") {
			continue
		}
		k := report.ConfigKey(r.Config)
		c := byKey[k]
		if c == nil {
			c = &cell{Key: k, Cfg: r.Config, Point: sweep.PointOf(r.Config), Flags: map[string]int{}}
			byKey[k] = c
		}
		c.Runs++
		c.BW = append(c.BW, r.BWGbps)
		c.Rate = append(c.Rate, r.MsgRateMpps)
		if r.Tainted {
			c.Tainted++
		}
		if r.Counters != nil || len(r.CountersFlags) > 0 {
			c.Counted++
		}
		seen := map[string]bool{}
		for _, f := range r.CountersFlags {
			name := flagName(f.Counter, f.Side, string(f.Class))
			if !seen[name] {
				seen[name] = true
				c.Flags[name]++
			}
		}
		if r.Histogram != "" && r.Lat.Samples > 0 {
			c.Hists = append(c.Hists, r.Histogram)
			c.HistN += r.Lat.Samples
		}
	}
	out := make([]*cell, 0, len(byKey))
	for _, c := range byKey {
		c.BWMed, c.RateMed = stat.Median(c.BW), stat.Median(c.Rate)
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

func flagName(counter, side, class string) string {
	var what []string
	for _, w := range []string{side, class} {
		if w != "" {
			what = append(what, w)
		}
	}
	if len(what) == 0 {
		return counter
	}
	return counter + " (" + strings.Join(what, ", ") + ")"
}

// pointName is a point in one short cell: size/depth/offset/cq-mod/post-list.
func pointName(p plan.Point) string { return report.FmtPoint(p) }

// ofOp returns the cells of one operation.
func ofOp(cells []*cell, op string) []*cell {
	var out []*cell
	for _, c := range cells {
		if c.Cfg.Op == op {
			out = append(out, c)
		}
	}
	return out
}

// best is the cell with the highest median bandwidth (ties: the first by key).
func best(cells []*cell) *cell {
	var b *cell
	for _, c := range cells {
		if b == nil || c.BWMed > b.BWMed {
			b = c
		}
	}
	return b
}

// sizePoint is one message size's best configuration.
type sizePoint struct {
	Size     int
	BW, Rate float64
	Cell     *cell
}

// bestPerSize is, per message size, the configuration with the highest median
// bandwidth over its runs (the best over every other parameter), ascending by size.
// At one size, message rate and bandwidth are proportional: the same configuration is
// the best for both.
func bestPerSize(cells []*cell) []sizePoint {
	bySize := map[int][]*cell{}
	for _, c := range cells {
		bySize[c.Cfg.MsgSizeBytes] = append(bySize[c.Cfg.MsgSizeBytes], c)
	}
	var out []sizePoint
	for size, cs := range bySize {
		b := best(cs)
		out = append(out, sizePoint{Size: size, BW: b.BWMed, Rate: b.RateMed, Cell: b})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Size < out[j].Size })
	return out
}

// heat is one heat map: the bandwidth over SQ depth x CQ moderation at one message
// size, each cell the best (max) median over the configurations measured there (buffer
// offset, post list, QPs).
type heat struct {
	Op           string
	Size         int
	Depths, Mods []int
	Z            [][]float64 // [depth][mod], Gb/s; NaN: never measured
	At           [][]*cell   // the configuration each cell shows
	Base         plan.Point  // the chosen (or best) point: its size is the map's
	BaseLabel    string      // "chosen (tuned report)" or "best measured"
	Article      *plan.Point
	ArticleFrom  string // where the article's point comes from, or why there is none
	SizeNote     string // why the map is not at the best point's size
	// Resolution: the tuned report's for op (sweep.Outcome.Resolution, a fraction), where
	// its objective is bandwidth or message rate (at one size the one is the other's
	// multiple); 0 without one. Cells within it of the best are equal (equalBand).
	Resolution float64
}

// span is the lowest and the highest cell; ok is false where no cell was measured.
func (h *heat) span() (lo, hi float64, ok bool) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, col := range h.Z {
		for _, v := range col {
			if !math.IsNaN(v) {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
	}
	return lo, hi, !math.IsInf(lo, 1)
}

// equalBand is the bandwidth from which a cell is equal to the best (the highest cell)
// at the map's resolution: best/(1+R), as sweep.Ratio.JudgeAt's band. ok is false
// without a resolution or a measured cell: then the colours span the cells' range.
func (h *heat) equalBand() (from, best float64, ok bool) {
	_, best, ok = h.span()
	if !(h.Resolution > 0) || !ok {
		return 0, 0, false
	}
	return best / (1 + h.Resolution), best, true
}

// heatOf builds a series' heat map for op from its bandwidth cells (nil: none).
func (s *Series) heatOf(cells []*cell, op string) *heat {
	cs := ofOp(cells, op)
	if len(cs) == 0 {
		return nil
	}
	h := &heat{Op: op}
	if o, ok := s.tunedOp(op); ok {
		h.Base, h.BaseLabel = o.Chosen.Point, "chosen (tuned report)"
		if o.Unit == "gbit_per_s" || o.Unit == "mpps" {
			h.Resolution = o.Resolution
		}
		if r, ok := o.References[sweep.RefArticle]; ok {
			p := r.Point
			h.Article, h.ArticleFrom = &p, "the tuned report's article reference"
		} else {
			h.ArticleFrom = "unavailable: the tuned report has no article reference for " + op
		}
	} else {
		h.Base, h.BaseLabel = best(cs).Point, "best measured"
		h.Article, h.ArticleFrom = s.articleFromProfile(op)
		// A size measured at one depth and moderation only has no map to show: then the
		// size with the most of them (results that are not a sweep: a size series
		// plus a grid at one size).
		spread := map[int]map[[2]int]bool{}
		for _, c := range cs {
			if spread[c.Point.MsgSizeBytes] == nil {
				spread[c.Point.MsgSizeBytes] = map[[2]int]bool{}
			}
			spread[c.Point.MsgSizeBytes][[2]int{c.Point.SQDepth, c.Point.CQMod}] = true
		}
		if len(spread[h.Base.MsgSizeBytes]) < 2 {
			size := h.Base.MsgSizeBytes
			for _, sz := range sortedInts(keysOf(spread)) {
				if len(spread[sz]) > len(spread[size]) {
					size = sz
				}
			}
			if size != h.Base.MsgSizeBytes {
				var at []*cell
				for _, c := range cs {
					if c.Point.MsgSizeBytes == size {
						at = append(at, c)
					}
				}
				h.SizeNote = fmt.Sprintf("The best point measured (%s) is the only depth and moderation measured at its size: the map is at %s, "+
					"the size with the most of them, the ring at the best point there.", pointName(h.Base), result.FormatSize(size))
				h.Base, h.BaseLabel = best(at).Point, "best measured at "+result.FormatSize(size)
			}
		}
	}
	h.Size = h.Base.MsgSizeBytes
	depths, mods := map[int]bool{h.Base.SQDepth: true}, map[int]bool{h.Base.CQMod: true}
	if h.Article != nil {
		depths[h.Article.SQDepth], mods[h.Article.CQMod] = true, true
	}
	for _, c := range cs {
		depths[c.Point.SQDepth], mods[c.Point.CQMod] = true, true
	}
	h.Depths, h.Mods = sortedInts(depths), sortedInts(mods)
	h.Z, h.At = make([][]float64, len(h.Depths)), make([][]*cell, len(h.Depths))
	for i := range h.Depths {
		h.Z[i], h.At[i] = make([]float64, len(h.Mods)), make([]*cell, len(h.Mods))
		for j := range h.Mods {
			h.Z[i][j] = math.NaN()
		}
	}
	for _, c := range cs { // in key order: ties keep the first
		if c.Point.MsgSizeBytes != h.Size {
			continue
		}
		i, j := indexOf(h.Depths, c.Point.SQDepth), indexOf(h.Mods, c.Point.CQMod)
		if h.At[i][j] == nil || c.BWMed > h.Z[i][j] {
			h.Z[i][j], h.At[i][j] = c.BWMed, c
		}
	}
	return h
}

// articleFromProfile finds the tuning article's point on the built-in profile that matches
// the series' client device.
func (s *Series) articleFromProfile(op string) (*plan.Point, string) {
	if len(s.Results) == 0 {
		return nil, "unavailable: no tuned report"
	}
	d := s.Results[0].Client
	prof, err := profiles.Detect(d.Driver, d.VendorID, d.VendorPartID)
	if err != nil {
		return nil, "unavailable: no tuned report, and no built-in profile matches the client device"
	}
	ref := prof.Reference[op]
	if len(ref) == 0 || len(prof.Grid[op]) == 0 {
		return nil, fmt.Sprintf("unavailable: the built-in profile %s has no article reference for %s", prof.Name, op)
	}
	p := sweep.ArticlePoint(prof.Grid[op], ref, prof.Start[op])
	return &p, fmt.Sprintf("the built-in profile %s (detected from the client device), on its grid", prof.Name)
}

func (s *Series) tunedOp(op string) (sweep.Outcome, bool) {
	if s.Tuned == nil {
		return sweep.Outcome{}, false
	}
	o, ok := s.Tuned.Ops[op]
	return o, ok
}

func sortedInts(m map[int]bool) []int {
	out := make([]int, 0, len(m))
	for v := range m {
		out = append(out, v)
	}
	sort.Ints(out)
	return out
}

func keysOf[V any](m map[int]V) map[int]bool {
	out := map[int]bool{}
	for k := range m {
		out[k] = true
	}
	return out
}

func indexOf(v []int, x int) int {
	for i, y := range v {
		if y == x {
			return i
		}
	}
	return -1
}

// latCurve is one operation's latency distribution in a series: the merged
// histograms of one configuration's runs.
type latCurve struct {
	Op    string
	Kind  string // the results' lat_kind
	What  string // which configuration, and why that one
	Runs  int
	Hist  *hdrhistogram.Histogram
	Notes []string
}

// latencyOf picks a series' latency distribution for op: its latency tests if it has
// any (the smallest message size), else its bandwidth runs' completion latency at the
// chosen point (tuned report), the best point, or failing those the configuration with
// the most samples. nil: no histogram for op.
func (s *Series) latencyOf(lat, bw []*cell, op string) *latCurve {
	var pick *cell
	var why string
	if cs := withHists(ofOp(lat, op)); len(cs) > 0 {
		pick = cs[0]
		for _, c := range cs[1:] {
			if c.Cfg.MsgSizeBytes < pick.Cfg.MsgSizeBytes || (c.Cfg.MsgSizeBytes == pick.Cfg.MsgSizeBytes && c.HistN > pick.HistN) {
				pick = c
			}
		}
		why = "latency test, smallest message size"
	} else {
		cs := withHists(ofOp(bw, op))
		if len(cs) == 0 {
			return nil
		}
		if o, ok := s.tunedOp(op); ok {
			for _, c := range cs {
				if c.Point == o.Chosen.Point {
					pick, why = c, "bandwidth runs at the chosen point"
					break
				}
			}
		}
		if pick == nil && s.Tuned == nil {
			if b := best(ofOp(bw, op)); b != nil && len(b.Hists) > 0 {
				pick, why = b, "bandwidth runs at the best point"
			}
		}
		if pick == nil {
			pick = cs[0]
			for _, c := range cs[1:] {
				if c.HistN > pick.HistN {
					pick = c
				}
			}
			why = "bandwidth runs at the configuration with the most latency samples"
		}
	}
	lc := &latCurve{Op: op, Hist: result.NewHistogram()}
	for _, r := range s.Results {
		if !measured(r) || r.Histogram == "" || report.ConfigKey(r.Config) != pick.Key {
			continue
		}
		h, err := result.DecodeHistogram(r.Histogram)
		if err != nil {
			lc.Notes = append(lc.Notes, fmt.Sprintf("a run's histogram does not decode (%v): left out", err))
			continue
		}
		if dropped := lc.Hist.Merge(h); dropped > 0 {
			lc.Notes = append(lc.Notes, fmt.Sprintf("%d samples outside the histogram's range: left out", dropped))
		}
		lc.Runs++
		lc.Kind = r.LatKind
	}
	if lc.Hist.TotalCount() == 0 {
		return nil
	}
	lc.What = fmt.Sprintf("%s: %s, %d run(s) merged", why, configName(pick.Cfg), lc.Runs)
	return lc
}

func withHists(cs []*cell) []*cell {
	var out []*cell
	for _, c := range cs {
		if len(c.Hists) > 0 {
			out = append(out, c)
		}
	}
	return out
}

// configName is a configuration in a few words: size/depth/offset/cq-mod/post-list,
// and the QPs where more than one.
func configName(c result.Config) string {
	s := pointName(sweep.PointOf(c))
	if c.NumQPs > 1 {
		s += fmt.Sprintf(", %d QPs", c.NumQPs)
	}
	return s
}

// Comparison classes: whether a configuration's change exceeds the noise.
const (
	clsFaster  = "faster (beyond the noise)"
	clsSlower  = "slower (beyond the noise)"
	clsNoise   = "within the noise"
	clsOneRun  = "one run: cannot tell"
	clsSummary = "medians only: cannot tell"
	clsNoBW    = "no bandwidth on a side: cannot tell"
	clsOnlyA   = "only in the first"
	clsOnlyB   = "only in this one"
	// clsNotComparable begins the class of a configuration only in this one where the
	// first has its main configuration (report.MainKey) with other fields of the key:
	// "not comparable: bidirectional differs" (report.NotComparableTo).
	clsNotComparable = "not comparable"
)

// classFamily is a comparison class without what follows clsNotComparable.
func classFamily(class string) string {
	if strings.HasPrefix(class, clsNotComparable+":") {
		return clsNotComparable
	}
	return class
}

// cmpRow is one configuration of a comparison: B (a later series) against A (the first).
type cmpRow struct {
	Key    string
	A, B   *cell
	Ratio  float64  // B's bandwidth over A's: the ratio of geometric means (Welch), else of medians
	Lo, Hi *float64 // its 95% interval (Welch on the runs' log bandwidth)
	Class  string
}

// compareCells aligns two series' bandwidth cells by configuration (report.ConfigKey),
// in the order cellLess reads them. A configuration only in b, where a has its main
// configuration (report.MainKey) with other fields of the key (bidirectional, MTU,
// ...), is not compared: its class says which fields differ (clsNotComparable).
// Where each side has at least 2 runs, the ratio's 95% interval is Welch's t-interval
// on the difference of the mean log bandwidths; the change exceeds the noise when the
// interval excludes 1.
func compareCells(a, b []*cell) []cmpRow {
	ia, ib := map[string]*cell{}, map[string]*cell{}
	keys := map[string]bool{}
	for _, c := range a {
		ia[c.Key], keys[c.Key] = c, true
	}
	for _, c := range b {
		ib[c.Key], keys[c.Key] = c, true
	}
	var baseA []result.Config // a's measured configurations, in key order (not its summaries: their keys are not ConfigKey)
	for _, k := range sortedKeys(keys) {
		if c := ia[k]; c != nil && !c.Summary {
			baseA = append(baseA, c.Cfg)
		}
	}
	var out []cmpRow
	for _, k := range sortedKeys(keys) {
		ca, cb := ia[k], ib[k]
		row := cmpRow{Key: k, A: ca, B: cb}
		switch {
		case cb == nil:
			row.Class = clsOnlyA
		case ca == nil:
			row.Class = clsOnlyB
			if !cb.Summary {
				if why := report.NotComparableTo(baseA, cb.Cfg); why != "" {
					row.Ratio, row.Class = math.NaN(), why
				}
			}
		case !(ca.BWMed > 0) || !(cb.BWMed > 0):
			row.Ratio, row.Class = math.NaN(), clsNoBW
		case ca.Summary || cb.Summary:
			row.Ratio, row.Class = cb.BWMed/ca.BWMed, clsSummary
		case len(ca.BW) < 2 || len(cb.BW) < 2:
			row.Ratio, row.Class = cb.BWMed/ca.BWMed, clsOneRun
		default:
			r, lo, hi := welchRatio(ca.BW, cb.BW)
			row.Ratio, row.Lo, row.Hi = r, &lo, &hi
			switch {
			case lo > 1:
				row.Class = clsFaster
			case hi < 1:
				row.Class = clsSlower
			default:
				row.Class = clsNoise
			}
		}
		out = append(out, row)
	}
	sort.SliceStable(out, func(i, j int) bool { return cellLess(out[i].cell(), out[j].cell()) })
	return out
}

func (r cmpRow) cell() *cell {
	if r.A != nil {
		return r.A
	}
	return r.B
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
