package htmlreport

import (
	"math"
	"strconv"

	"github.com/rdmabench/rdmabench/result"
	"gonum.org/v1/plot"
)

// sizeTicks marks powers of two on a message-size axis, labelled as sizes.
type sizeTicks struct{}

func (sizeTicks) Ticks(min, max float64) []plot.Tick {
	lo, hi := int(math.Floor(math.Log2(min))), int(math.Ceil(math.Log2(max)))
	every := 1
	for (hi-lo)/every > 6 {
		every *= 2
	}
	var ts []plot.Tick
	for e := lo; e <= hi; e++ {
		v := math.Ldexp(1, e)
		if v < min*0.999 || v > max*1.001 {
			continue
		}
		t := plot.Tick{Value: v}
		if e%every == 0 {
			t.Label = result.FormatSize(int(v))
		}
		ts = append(ts, t)
	}
	return ts
}

// logTicks marks a log axis: every 1..9 multiple of each power of ten, labelled at
// the powers of ten, and at the 2 and 5 multiples too where the range spans less
// than three decades. (plot.LogTicks starts a decade late below 1.)
type logTicks struct{}

func (logTicks) Ticks(min, max float64) []plot.Tick {
	lo, hi := int(math.Floor(math.Log10(min))), int(math.Ceil(math.Log10(max)))
	few := hi-lo <= 2
	var ts []plot.Tick
	for e := lo; e <= hi; e++ {
		for m := 1; m <= 9; m++ {
			v := float64(m) * math.Pow10(e)
			if v < min*(1-1e-9) || v > max*(1+1e-9) {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || (few && (m == 2 || m == 5)) {
				t.Label = fmtTick(v)
			}
			ts = append(ts, t)
		}
	}
	return ts
}

// fmtTick writes a tick value without trailing zeros or an exponent.
func fmtTick(v float64) string {
	s := strconv.FormatFloat(v, 'f', -1, 64)
	if len(s) > 12 {
		s = strconv.FormatFloat(v, 'g', 3, 64)
	}
	return s
}

// padLog keeps a log axis' range positive and non-empty.
func padLog(a *plot.Axis) {
	if !(a.Min > 0) || math.IsInf(a.Min, 0) {
		a.Min = 1e-3
	}
	if !(a.Max > a.Min) {
		a.Min, a.Max = a.Min/2, a.Min*2
	}
}

// clampPos replaces values <= 0 with floor, for a log axis.
func clampPos(v, floor float64) float64 {
	if !(v > floor) {
		return floor
	}
	return v
}
