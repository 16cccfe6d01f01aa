package sweep

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/rdmabench/rdmabench/result"
)

// Modes compares two ways of running the same transfer size by size (the article's
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
	start := time.Now()
	for _, size := range p.Sizes {
		row := ModeRow{Size: size}
		var a, b, tcp, dAB, dBT []float64
		for round := 0; round < max(p.Repeat, 2); round++ {
			if ctx.Err() != nil || (p.Budget > 0 && time.Since(start) >= p.Budget) {
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
				t0 := time.Now()
				r, err := m.Measure(ctx, cfg)
				if rerr := record(Recorded{Result: r, WallNS: time.Since(t0).Nanoseconds()}); rerr != nil {
					return out, rerr
				}
				if err != nil || r.Interrupted {
					if err != nil && ctx.Err() == nil {
						row.Failed = append(row.Failed, fmt.Sprintf("%s: %v", modeName(mode), err))
					}
					if stopsSweep(err) {
						out.Rows = append(out.Rows, row)
						return out, &SessionLostError{err}
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
		row.A, row.B = median(a), median(b)
		row.BOverA = pairRatio(dAB)
		row.Verdict = row.BOverA.Judge(p.Tolerance)
		if len(dBT) > 0 {
			t, r := median(tcp), pairRatio(dBT)
			row.TCP, row.BOverTCP, row.TCPVerdict = &t, &r, r.Judge(p.Tolerance)
		}
		out.Rows = append(out.Rows, row)
		if ctx.Err() != nil {
			out.Interrupted = true
			break
		}
		if p.Budget > 0 && time.Since(start) >= p.Budget {
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
