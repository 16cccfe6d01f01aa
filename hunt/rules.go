package hunt

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/rdmabench/rdmabench/counters"
	"github.com/rdmabench/rdmabench/profiles"
	"github.com/rdmabench/rdmabench/result"
)

// Class names a kind of anomaly (see the package documentation for each rule).
type Class string

const (
	LowThroughput Class = "low-throughput"
	Counters      Class = "counters"
	Failed        Class = "failed"
	Tail          Class = "tail"
	Unfair        Class = "unfair"
)

// Classes are every class, in the order a run is screened for them: a failure first
// (nothing else of a failed run is a number), then the counters, the throughput, the
// tail and the fairness.
var Classes = []Class{Failed, Counters, LowThroughput, Tail, Unfair}

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
	return "", fmt.Errorf("unknown anomaly class %q (want %s)", s, strings.Join(names, ", "))
}

// The keys of a low-throughput finding: which bar its runs fell below.
const (
	KeyBestSeen = "best-seen" // a fraction of the best its operation and size reached in the hunt
	KeyLink     = "link"      // a fraction of the nominal link rate
)

// The keys of an unfair finding: what its runs served unevenly, in the order a run is
// screened for them.
const (
	KeyPeers      = "peers"      // the servers of a fan-out run (result.Fan)
	KeyQPs        = "qps"        // the QPs of a run of several (result.QPShares)
	KeyThreads    = "threads"    // the loop threads of a --threads run (result.Threads)
	KeyDirections = "directions" // the two directions of a bidirectional run (result.Reverse)
)

// unfairKeys are the unfair keys in the order a run is screened for them.
var unfairKeys = []string{KeyPeers, KeyQPs, KeyThreads, KeyDirections}

// The default thresholds (a profile's hunt section, or Rules, may set others).
const (
	// DefaultLowThroughput: half the best seen. Benign differences within one size (depth,
	// moderation, offset, MTU) are tens of percent on the NICs profiled; a point at half
	// the best is beyond them and beyond the run-to-run noise of 5-30%.
	DefaultLowThroughput = 0.5
	// DefaultTailRatio: p99 five times p50. A bandwidth run's completion latency under
	// load stays within 1-3x of its median when nothing stalls.
	DefaultTailRatio = 5
	// DefaultUnfairRatio: the slowest peer, QP, thread or direction below half the fastest.
	DefaultUnfairRatio = 0.5
	// DefaultConfirm: a candidate is an anomaly when this many fresh runs all show it.
	DefaultConfirm = 3
	// DefaultMaxRampShare: a quarter of a run's window at most can be its queues' ramp.
	DefaultMaxRampShare = 0.25
)

// Rules are the anomaly rules' thresholds and switches. A zero threshold is its default.
type Rules struct {
	// LowThroughput: a run is slow below this fraction of the reference: the best
	// throughput its operation and size reached elsewhere, re-measured alongside it.
	LowThroughput float64 `json:"low_throughput"`
	// LinkFraction: with Plan.LinkGbps, a run is slow below this fraction of the link
	// too (0: off; small messages never fill a link, so set it with a size range).
	LinkFraction float64 `json:"link_fraction,omitempty"`
	// TailRatio: p99 above this many times p50 (both supported by the run's samples).
	TailRatio float64 `json:"tail_ratio"`
	// UnfairRatio: the slowest peer (a run against several servers), QP (a run of
	// several), thread (--threads) or direction (a bidirectional run) below this
	// fraction of the fastest; the peers', QPs' and threads' only where the run's
	// fairness verdict is uneven (see Share).
	UnfairRatio float64 `json:"unfair_ratio"`
	// CounterClasses: the classes of the counters whose movement is an anomaly (default
	// error and congestion: the flags a run carries).
	CounterClasses []counters.Class `json:"counter_classes"`
	// MaxRampShare: a run whose queues held more than this share of the bytes it moved
	// (result.Result.RampShare) measured its ramp-up and drain, not the NIC: neither its
	// throughput nor its fairness is judged, and it is no reference (default 0.25; a
	// longer point duration judges such points).
	MaxRampShare float64 `json:"max_ramp_share"`
	// Confirm: the fresh runs that must all show a candidate (default 3).
	Confirm int `json:"confirm"`
	// Off: classes not looked for.
	Off []Class `json:"off,omitempty"`
}

// DefaultRules are the rules with their defaults.
func DefaultRules() Rules {
	return Rules{LowThroughput: DefaultLowThroughput, TailRatio: DefaultTailRatio, UnfairRatio: DefaultUnfairRatio,
		CounterClasses: []counters.Class{counters.Error, counters.Congestion}, MaxRampShare: DefaultMaxRampShare, Confirm: DefaultConfirm}
}

// RulesFor are the default rules with profile p's hunt thresholds.
func RulesFor(p profiles.Profile) Rules {
	r := DefaultRules()
	if h := p.Hunt; h != nil {
		r.LowThroughput = cmp(h.LowThroughput, r.LowThroughput)
		r.LinkFraction = h.LinkFraction
		r.TailRatio = cmp(h.TailRatio, r.TailRatio)
		r.UnfairRatio = cmp(h.UnfairRatio, r.UnfairRatio)
	}
	return r
}

func cmp(v, def float64) float64 {
	if v != 0 {
		return v
	}
	return def
}

// normalised fills the defaults and checks the ranges.
func (r Rules) normalised() (Rules, error) {
	d := DefaultRules()
	r.LowThroughput = cmp(r.LowThroughput, d.LowThroughput)
	r.TailRatio = cmp(r.TailRatio, d.TailRatio)
	r.UnfairRatio = cmp(r.UnfairRatio, d.UnfairRatio)
	r.MaxRampShare = cmp(r.MaxRampShare, d.MaxRampShare)
	if len(r.CounterClasses) == 0 {
		r.CounterClasses = d.CounterClasses
	}
	if r.Confirm == 0 {
		r.Confirm = d.Confirm
	}
	for _, f := range []float64{r.LowThroughput, r.UnfairRatio} {
		if !(f > 0 && f < 1) {
			return r, fmt.Errorf("hunt rules: a fraction %v: want above 0 and below 1", f)
		}
	}
	switch {
	case !(r.LinkFraction >= 0 && r.LinkFraction < 1):
		return r, fmt.Errorf("hunt rules: link fraction %v: want 0 (off) to below 1", r.LinkFraction)
	case !(r.TailRatio > 1):
		return r, fmt.Errorf("hunt rules: tail ratio %v: want above 1", r.TailRatio)
	case r.Confirm < 1:
		return r, fmt.Errorf("hunt rules: confirm %d: want 1 or more runs", r.Confirm)
	case !(r.MaxRampShare > 0):
		return r, fmt.Errorf("hunt rules: max ramp share %v: want above 0", r.MaxRampShare)
	}
	for _, c := range r.Off {
		if _, err := ParseClass(string(c)); err != nil {
			return r, fmt.Errorf("hunt rules: %w", err)
		}
	}
	return r, nil
}

func (r Rules) on(c Class) bool { return !slices.Contains(r.Off, c) }

// Measurement is one measured run as a hunt keeps it (a "point" record): its config, what it was
// measured for, and the numbers the rules read.
type Measurement struct {
	Seq    int           `json:"seq"`   // the run's number in the hunt, from 1 (a resumed hunt goes on counting)
	Phase  string        `json:"phase"` // search, reference, confirm, minimize or probe
	Config result.Config `json:"config"`
	Server string        `json:"server,omitempty"` // the server that measured it (result.Result.Server)
	BWGbps float64       `json:"bw_gbit_per_s"`
	// MsgRateMpps and the completion latency's median and p99 (nil where the run's
	// samples do not support it).
	MsgRateMpps float64 `json:"msg_rate_mpps"`
	P50NS       *int64  `json:"p50_ns,omitempty"`
	P99NS       *int64  `json:"p99_ns,omitempty"`
	// ShareRatio: the lowest of the judged Shares' ratios (the slowest peer's, QP's,
	// thread's or direction's share over the fastest's), where the run has one.
	ShareRatio *float64 `json:"share_ratio,omitempty"`
	// Shares: how evenly the run served each kind of share it has, by unfair key (peers,
	// qps, threads, directions).
	Shares map[string]Share `json:"shares,omitempty"`
	// RampShare: result.Result.RampShare (the bytes its queues held over those it moved).
	RampShare     *float64        `json:"ramp_share,omitempty"`
	Error         string          `json:"error,omitempty"`
	CountersFlags []counters.Flag `json:"counters_flags,omitempty"`
	Tainted       bool            `json:"tainted,omitempty"`
	// Paused: result.Result.Paused, pause frames moved on either side's port during the
	// run (the flags of class pause have the counts).
	Paused bool  `json:"paused,omitempty"`
	WallNS int64 `json:"wall_ns"` // what the run cost the budget
}

// The phases a run is measured in.
const (
	PhaseSearch    = "search"    // the search's point
	PhaseReference = "reference" // a point measured so that its operation and size have a reference
	PhaseConfirm   = "confirm"   // a candidate's fresh runs (and its reference's)
	PhaseMinimize  = "minimize"  // the minimal set's trials
	// PhaseProbe: the runs that settle a counter that moved at its control: fresh runs of
	// the control, and of the baseline with one parameter moved (see the package
	// documentation). A reader that does not know the phase counts it as a trial's run.
	PhaseProbe = "probe"
)

// Share is how evenly a run served one kind of its shares (Measurement.Shares).
type Share struct {
	// Ratio: the slowest share over the fastest: messages (QPs and threads, over the
	// run's window alike) or Gb/s (peers, directions).
	Ratio float64 `json:"ratio"`
	// Fairness: the run's verdict on its QPs', threads' or peers' shares
	// (result.FairnessOf): "uneven", beyond what the run's edges make (a queue at the
	// start and one in flight at the end, a moderation), or "cannot tell"; absent where
	// it has none (a run of a number of messages, where every QP completes them all).
	// Only an uneven share is judged: the others' ratio says nothing the edges do not.
	// Directions have no verdict: their Gb/s is judged as it is.
	Fairness string `json:"fairness,omitempty"`
}

// judged says whether the share of key k can be judged (see Share.Fairness).
func (s Share) judged(k string) bool {
	return k == KeyDirections || s.Fairness == result.FairnessUneven
}

// summarise is a result as the hunt keeps it.
func summarise(res result.Result, cfg result.Config, phase string, seq int, wallNS int64) Measurement {
	r := Measurement{Seq: seq, Phase: phase, Config: cfg, Server: res.Server, BWGbps: res.BWGbps, MsgRateMpps: res.MsgRateMpps,
		P50NS: res.Lat.P50, P99NS: res.Lat.P99, RampShare: res.RampShare, Error: res.Error, CountersFlags: res.CountersFlags,
		Tainted: res.Tainted, Paused: res.Paused, WallNS: wallNS, Shares: shares(res)}
	if s, ok := r.share(""); ok {
		r.ShareRatio = &s
	}
	return r
}

// shares are how evenly run r served each kind of share it has: the peers of a run
// against several servers (their Gb/s), its QPs and its loop threads (their messages),
// and the two directions of a bidirectional run that succeeded (their Gb/s); each with
// the run's fairness verdict where it has one.
func shares(r result.Result) map[string]Share {
	out := map[string]Share{}
	add := func(k string, g []float64, verdict string) {
		if len(g) < 2 {
			return
		}
		if hi := slices.Max(g); hi > 0 {
			out[k] = Share{Ratio: slices.Min(g) / hi, Fairness: verdict}
		}
	}
	if f := r.Fan; f != nil {
		var g []float64
		for _, p := range f.Peers {
			g = append(g, p.BWGbps)
		}
		add(KeyPeers, g, f.Fairness)
	}
	if q := r.QPs; q != nil {
		var g []float64
		for _, m := range q.Messages {
			g = append(g, float64(m))
		}
		add(KeyQPs, g, q.Fairness)
	}
	if t := r.Threads; t != nil {
		var g []float64
		for _, th := range t.Threads {
			g = append(g, float64(th.Messages))
		}
		add(KeyThreads, g, t.Fairness)
	}
	if r.Reverse != nil && r.Reverse.Error == "" && r.Error == "" {
		add(KeyDirections, []float64{r.BWGbps, r.Reverse.BWGbps}, "")
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// shareOf is the run's share of unfair key k: has false where its config has nothing
// to be unfair between (one server, one QP, one thread, one direction); judged false
// where it has, but its shares cannot be judged: their verdict is not uneven
// (Share.judged), or the run carries none (a direction that failed; a record of a hunt
// before Shares, whose ShareRatio stands for a fan-out's peers or a bidirectional run's
// directions only).
func (m Measurement) shareOf(k string) (s Share, has, judged bool) {
	c := m.Config
	switch k {
	case KeyPeers:
		has = c.Peers > 1
	case KeyQPs:
		has = c.NumQPs > 1
	case KeyThreads:
		has = c.Threads > 1
	case KeyDirections:
		has = c.Bidirectional
	}
	if !has {
		return Share{}, false, false
	}
	if m.Shares == nil && m.ShareRatio != nil && (k == KeyPeers || k == KeyDirections) {
		return Share{Ratio: *m.ShareRatio}, true, true
	}
	s, ok := m.Shares[k]
	return s, true, ok && s.judged(k)
}

// share is the run's judged share ratio of unfair key k, or with k "" the lowest over
// every key (a finding of a hunt before the keys: its peers or directions).
func (m Measurement) share(k string) (float64, bool) {
	keys := unfairKeys
	if k != "" {
		keys = []string{k}
	}
	lo, any := 0.0, false
	for _, k := range keys {
		if s, _, judged := m.shareOf(k); judged && (!any || s.Ratio < lo) {
			lo, any = s.Ratio, true
		}
	}
	return lo, any
}

var wcStatus = regexp.MustCompile(`IBV_WC_[A-Z0-9_]+`)

// failKey is what a failed run's error is as an anomaly: its completion status
// (IBV_WC_...), or "timeout" for a loop that saw no progress from the peer; "" for no
// error and for errors that are no anomaly of the configuration (a plan refused, a setup
// that failed: those points are skipped).
func failKey(err string) string {
	switch {
	case err == "":
		return ""
	case wcStatus.MatchString(err):
		s := wcStatus.FindString(err)
		if s == "IBV_WC_WR_FLUSH_ERR" { // a flush follows the error that counts; look further
			for _, m := range wcStatus.FindAllString(err, -1) {
				if m != s {
					return m
				}
			}
		}
		return s
	case strings.Contains(err, "no progress for"):
		return "timeout"
	}
	return ""
}

// moved are a run's flagged counters of the rules' classes that moved (a delta above 0;
// a counter that went backwards, appeared or disappeared is a reading's oddity, no
// traffic's), by counter name.
func (r Rules) moved(run Measurement) map[string]counters.Flag {
	out := map[string]counters.Flag{}
	for _, f := range run.CountersFlags {
		if !slices.Contains(r.CounterClasses, f.Class) || f.Status != counters.OK || f.Delta == nil || *f.Delta == 0 {
			continue
		}
		if g, seen := out[f.Counter]; seen { // both sides: one counter, the deltas added
			d := *g.Delta + *f.Delta
			g.Delta, g.Side = &d, "both"
			f = g
		}
		out[f.Counter] = f
	}
	return out
}

// pickCounter is the key of a counters finding among the counters that moved in every
// run: an error counter before a congestion one, then by name.
func pickCounter(names map[string]counters.Class) string {
	keys := make([]string, 0, len(names))
	for n := range names {
		keys = append(keys, n)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := names[keys[i]] == counters.Error, names[keys[j]] == counters.Error
		if a != b {
			return a
		}
		return keys[i] < keys[j]
	})
	if len(keys) == 0 {
		return ""
	}
	return keys[0]
}

// judgeable says whether a run's throughput can be judged: it succeeded and measured
// more than its queues' ramp (MaxRampShare).
func (r Rules) judgeable(m Measurement) bool {
	return m.Error == "" && m.BWGbps > 0 && (m.RampShare == nil || *m.RampShare <= r.MaxRampShare)
}

func tailRatio(r Measurement) (float64, bool) {
	if r.Error != "" || r.P50NS == nil || r.P99NS == nil || *r.P50NS <= 0 {
		return 0, false
	}
	return float64(*r.P99NS) / float64(*r.P50NS), true
}
