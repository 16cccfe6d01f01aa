package sweep

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/rdmabench/rdmabench/internal/stat"
	"github.com/rdmabench/rdmabench/plan"
	"github.com/rdmabench/rdmabench/profiles"
	"github.com/rdmabench/rdmabench/result"
)

// Modes compares two ways of running the same transfer size by size (the tuning article's
// C2: a registration per IO against a pre-registered pool): at every size both are
// measured in interleaved rounds (A B, B A, ...), and B's throughput over A's is
// judged on the paired runs as the sweep judges points. The break-even size is the
// smallest from which B is no longer significantly slower than A, through the
// largest size measured.
type Modes struct {
	Op        string
	Base      result.Config // everything but the size and the mode
	Sizes     []int         // ascending
	A, B      string        // the modes (result.Config.MR values; "" or "pool" is the pool)
	Repeat    int           // rounds per size, at least 2
	Tolerance float64
	Budget    time.Duration // for the whole comparison; <= 0: no limit
	// TCP asks for a --baseline tcp after each run of A: the same transfer over TCP,
	// measured in the same round, so B can be judged against TCP too.
	TCP bool
}

// ModesOptions are a registration-mode comparison's settings as rdmabench sweep --mr's
// flags give them; Modes makes one operation's comparison of them.
type ModesOptions struct {
	Profile    profiles.Profile
	A, B       string // the modes: pool, per-io or cache
	Sizes      []int  // nil: the profile's message sizes
	TCP        bool   // also over TCP (--baseline tcp)
	Repeat     int
	Resolution float64 // the equality band; 0: 2%
	Budget     time.Duration
	// PointDurationS: seconds per run (0: the profile's).
	PointDurationS float64
	Counters       string
	QPTimeout      int
	Fabric         result.Config // --disable-pcie-relaxed, --sl and --tclass, for every run
	// Defaults fills in what a config of its operation leaves unset the way perftest
	// does (the bench's Defaults: package sweep imports no bench package); nil: the
	// config is left as it is.
	Defaults func(*result.Config)
}

// Config is what every run of a comparison of op in mode shares: one QP, one
// signalled WR at a time in the queue's window (cq-mod 1, post list 1: per-io needs
// them, and the pool is measured the same way so that registration is the only
// difference).
func (o ModesOptions) Config(op, mode string) result.Config {
	c := result.Config{Op: op, Test: result.BW, MsgSizeBytes: 4096, PostList: 1, CQMod: 1, NumQPs: 1, Counters: o.Counters, QPTimeout: o.QPTimeout,
		DisablePCIeRelaxed: o.Fabric.DisablePCIeRelaxed, SL: o.Fabric.SL, TrafficClass: o.Fabric.TrafficClass}
	c.MR = modeMR(mode)
	if o.Defaults != nil {
		o.Defaults(&c)
	}
	return c
}

// Modes is op's comparison: every size (the profile's for op without Sizes), each run
// as long as a point of the profile (without PointDurationS).
func (o ModesOptions) Modes(op string) Modes {
	sizes := o.Sizes
	if len(sizes) == 0 {
		sizes = o.Profile.Grid[op]["msg_size_bytes"]
	}
	base := o.Config(op, "pool")
	base.DurationS, base.WarmupIterations = pointDuration(o.PointDurationS, o.Profile), o.Profile.WarmupIterations
	return Modes{Op: op, Base: base, Sizes: sizes, A: modeMR(o.A), B: modeMR(o.B), Repeat: o.Repeat,
		Tolerance: modeTolerance(o.Resolution), Budget: o.Budget, TCP: o.TCP}
}

// modeMR is a mode as a config's MR: the pool is "".
func modeMR(mode string) string {
	if mode == "pool" {
		return ""
	}
	return mode
}

// modeTolerance is the equality band of a registration-mode comparison: the asked
// resolution, or 2%.
func modeTolerance(r float64) float64 {
	if r > 0 {
		return r
	}
	return 0.02
}

// ModeRow is one size's comparison.
type ModeRow struct {
	Size  int     `json:"msg_size_bytes"`
	Pairs int     `json:"pairs"`
	A     float64 `json:"a_gbit_per_s"` // medians of the runs
	B     float64 `json:"b_gbit_per_s"`
	// BOverA is B's throughput over A's (below 1: B slower), with its verdict.
	BOverA  Ratio    `json:"b_over_a"`
	Verdict Relation `json:"verdict"`
	// TCP (with Modes.TCP): the baseline's median and B over TCP, paired by round.
	TCP        *float64 `json:"tcp_gbit_per_s,omitempty"`
	BOverTCP   *Ratio   `json:"b_over_tcp,omitempty"`
	TCPVerdict Relation `json:"tcp_verdict,omitempty"`
	Failed     []string `json:"failed,omitempty"` // runs that failed, why
}

// ModeOutcome is a whole comparison.
type ModeOutcome struct {
	Op        string    `json:"op"`
	A         string    `json:"a"`
	B         string    `json:"b"`
	Tolerance float64   `json:"tolerance"`
	Rows      []ModeRow `json:"rows"`
	// BreakEven: the smallest size from which B is not significantly slower than A
	// (equal within the tolerance, or better) at every larger size; 0 when there is
	// none. BreakEvenNote says it in words, "cannot tell" where the noise decides.
	BreakEven     int    `json:"break_even_bytes"`
	BreakEvenNote string `json:"break_even"`
	// TCPBreakEven is the same against TCP (with Modes.TCP).
	TCPBreakEven     int    `json:"tcp_break_even_bytes,omitempty"`
	TCPBreakEvenNote string `json:"tcp_break_even,omitempty"`
	Interrupted      bool   `json:"interrupted,omitempty"`
	BudgetSpent      bool   `json:"budget_spent,omitempty"`
}

// CompareModes measures p with m, recording every run.
func CompareModes(ctx context.Context, m Measurer, record func(Recorded) error, p Modes) (ModeOutcome, error) {
	out := ModeOutcome{Op: p.Op, A: modeName(p.A), B: modeName(p.B), Tolerance: p.Tolerance}
	led := &plan.Ledger{Budget: p.Budget}
	for _, size := range p.Sizes {
		row, lost, err := compareSize(ctx, m, record, p, size, led)
		if err != nil {
			if lost {
				out.Rows = append(out.Rows, row)
			}
			return out, err
		}
		out.Rows = append(out.Rows, row)
		if ctx.Err() != nil {
			out.Interrupted = true
			break
		}
		if led.Reached(p.Budget) {
			out.BudgetSpent = true
			break
		}
	}
	out.BreakEven, out.BreakEvenNote = breakEven(out.Rows, func(r ModeRow) Relation { return r.Verdict }, out.B, out.A)
	if p.TCP {
		out.TCPBreakEven, out.TCPBreakEvenNote = breakEven(out.Rows, func(r ModeRow) Relation { return r.TCPVerdict }, out.B, "tcp")
	}
	if n := len(out.Rows); n > 0 && n < len(p.Sizes) { // cut short: say so where the answer is read
		cut := fmt.Sprintf(" (sizes above %s not measured)", result.FormatSize(out.Rows[n-1].Size))
		out.BreakEvenNote += cut
		if p.TCP {
			out.TCPBreakEvenNote += cut
		}
	}
	return out, nil
}

// compareSize measures one size of p in interleaved rounds (A B, B A, ...) while the
// comparison's budget (led: its runs' wall times, as a sweep's) lasts, and judges B over
// A (and over TCP) on the rounds where both ran. An interrupted run is no data (not
// recorded). An error recording a run ends it (the row is dropped), and so does a lost
// session (lost: the row keeps what was measured).
func compareSize(ctx context.Context, m Measurer, record func(Recorded) error, p Modes, size int, led *plan.Ledger) (row ModeRow, lost bool, err error) {
	row = ModeRow{Size: size}
	var a, b, tcp, dAB, dBT []float64
	for round := 0; round < max(p.Repeat, 2); round++ {
		if ctx.Err() != nil || led.Reached(p.Budget) {
			break
		}
		got := map[string]result.Result{}
		order := []string{p.A, p.B}
		if round%2 == 1 {
			order[0], order[1] = p.B, p.A
		}
		for _, mode := range order {
			cfg := p.Base
			cfg.Op, cfg.MsgSizeBytes, cfg.MR = p.Op, size, mode
			if mode == p.A && p.TCP {
				cfg.Baseline = "tcp"
			}
			r, wall, err, ierr := led.Measure(ctx, m, cfg, time.Now)
			if ierr != nil {
				break // interrupted: no data, and no more runs (the loop's check)
			}
			if rerr := record(Recorded{Result: r, WallNS: wall.Nanoseconds()}); rerr != nil {
				return row, false, rerr
			}
			if err != nil || r.Interrupted {
				if err != nil && ctx.Err() == nil {
					row.Failed = append(row.Failed, fmt.Sprintf("%s: %v", modeName(mode), err))
				}
				if plan.Stops(err) {
					return row, true, &SessionLostError{Err: err}
				}
				continue
			}
			got[mode] = r
		}
		ra, okA := got[p.A]
		rb, okB := got[p.B]
		if !okA || !okB || ra.BWGbps <= 0 || rb.BWGbps <= 0 {
			continue
		}
		a, b = append(a, ra.BWGbps), append(b, rb.BWGbps)
		dAB = append(dAB, math.Log(rb.BWGbps)-math.Log(ra.BWGbps))
		switch bl := ra.Baseline; {
		case bl != nil && bl.Error == "" && bl.BWGbps > 0:
			tcp = append(tcp, bl.BWGbps)
			dBT = append(dBT, math.Log(rb.BWGbps)-math.Log(bl.BWGbps))
		case bl != nil && bl.Error != "":
			row.Failed = append(row.Failed, "tcp: "+bl.Error)
		}
	}
	row.Pairs = len(dAB)
	row.A, row.B = stat.Median(a), stat.Median(b)
	row.BOverA = pairRatio(dAB)
	row.Verdict = row.BOverA.Judge(p.Tolerance)
	if len(dBT) > 0 {
		t, r := stat.Median(tcp), pairRatio(dBT)
		row.TCP, row.BOverTCP, row.TCPVerdict = &t, &r, r.Judge(p.Tolerance)
	}
	return row, false, nil
}

func modeName(m string) string {
	if m == "" {
		return "pool"
	}
	return m
}

// breakEven finds the smallest size from which b is not significantly slower than a
// through the largest size measured. A largest size whose comparison is undecided (or
// unmeasured) leaves it "cannot tell".
func breakEven(rows []ModeRow, verdict func(ModeRow) Relation, b, a string) (int, string) {
	if len(rows) == 0 {
		return 0, "cannot tell: nothing measured"
	}
	top := rows[len(rows)-1]
	switch verdict(top) {
	case Worse:
		return 0, fmt.Sprintf("none: %s is slower than %s up to %s", b, a, result.FormatSize(top.Size))
	case Undecided, "":
		return 0, fmt.Sprintf("cannot tell: at %s the runs do not decide between %s and %s", result.FormatSize(top.Size), b, a)
	}
	at := top.Size
	for i := len(rows) - 2; i >= 0; i-- {
		v := verdict(rows[i])
		if v == Worse {
			break
		}
		if v == Undecided || v == "" {
			return 0, fmt.Sprintf("cannot tell: %s keeps up with %s from %s, and at %s the runs do not decide", b, a, result.FormatSize(at), result.FormatSize(rows[i].Size))
		}
		at = rows[i].Size
	}
	if at == rows[0].Size {
		return at, fmt.Sprintf("%s keeps up with %s at every size measured, from %s", b, a, result.FormatSize(at))
	}
	return at, fmt.Sprintf("%s keeps up with %s from %s (slower below)", b, a, result.FormatSize(at))
}
