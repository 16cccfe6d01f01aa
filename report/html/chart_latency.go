package htmlreport

import (
	"html/template"
	"math"
	"sort"
	"strings"

	"github.com/rdmabench/rdmabench/result"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// latencyLine is one series' latency curve for one operation.
type latencyLine struct {
	Label string
	Index int
	Curve *latCurve
}

// nines is the spectrum's x for percentile p (a fraction): -log10(1-p).
func nines(p float64) float64 { return -math.Log10(1 - p) }

// spectrum is the percentile spectrum of h from p50 to the highest percentile its
// samples support (result.Supported), at most p99.99: x in nines, y in us.
func spectrum(lc *latCurve) plotter.XYs {
	n := uint64(lc.Hist.TotalCount())
	xs := []float64{math.Log10(2), 1, 2, 3, 4}
	for x := math.Log10(2); x < 4; x += 0.025 {
		xs = append(xs, x)
	}
	if stop := math.Log10(float64(n) / 10); stop > math.Log10(2) && stop < 4 {
		xs = append(xs, stop) // the highest supported percentile itself
	}
	sort.Float64s(xs)
	var out plotter.XYs
	last := math.Inf(-1)
	for _, x := range xs {
		if x-last < 1e-9 {
			continue
		}
		p := 1 - math.Pow(10, -x)
		if !result.Supported(p, n) {
			// nudge: the exact stop may land a hair above in floating point
			if q := 1 - 10/float64(n); math.Abs(q-p) < 1e-9 && result.Supported(q, n) {
				p = q
			} else {
				break
			}
		}
		v := min(max(lc.Hist.ValueAtQuantile(p*100), lc.Hist.Min()), lc.Hist.Max())
		out = append(out, plotter.XY{X: x, Y: clampPos(float64(v)/1e3, 1e-3)})
		last = x
	}
	return out
}

// cdf is the cumulative distribution of h: x in us, y the fraction at or below,
// thinned to steps of at least 0.2% in x (log) or 0.1% in y.
func cdf(lc *latCurve) plotter.XYs {
	total := float64(lc.Hist.TotalCount())
	var out plotter.XYs
	var cum float64
	lastX, lastY := math.Inf(-1), -1.0
	bars := lc.Hist.Distribution()
	for i, b := range bars {
		if b.Count == 0 {
			continue
		}
		cum += float64(b.Count)
		x := clampPos(float64(b.To)/1e3, 1e-3)
		y := cum / total
		lastBar := y >= 1 || i == len(bars)-1
		if len(out) == 0 || math.Log10(x)-lastX >= 0.002 || y-lastY >= 0.001 || lastBar {
			if len(out) == 0 {
				out = append(out, plotter.XY{X: clampPos(float64(b.From)/1e3, 1e-3), Y: 0})
			}
			out = append(out, plotter.XY{X: x, Y: y})
			lastX, lastY = math.Log10(x), y
		}
	}
	return out
}

// latencyChart draws the percentile spectra and the CDFs, one line per series and
// operation.
func latencyChart(lines []latencyLine) (template.HTML, error) {
	spec := newPlot("percentile spectrum", "percentile (log \"nines\" scale: -log10(1-p))", "latency (us, log)")
	dist := newPlot("cumulative distribution", "latency (us, log scale)", "fraction at or below")
	for _, p := range []*plot.Plot{spec, dist} {
		addGrid(p)
	}
	spec.Y.Scale, spec.Y.Tick.Marker = plot.LogScale{}, logTicks{}
	dist.X.Scale, dist.X.Tick.Marker = plot.LogScale{}, logTicks{}
	var nt []plot.Tick
	for _, q := range []struct {
		p float64
		s string
	}{{0.5, "p50"}, {0.9, "p90"}, {0.99, "p99"}, {0.999, "p99.9"}, {0.9999, "p99.99"}} {
		nt = append(nt, plot.Tick{Value: nines(q.p), Label: q.s})
	}
	spec.X.Tick.Marker = plot.ConstantTicks(nt)
	spec.X.Min, spec.X.Max = 0.25, 4.05
	dist.Y.Min, dist.Y.Max = 0, 1
	leg := newLegend()
	for _, ll := range lines {
		c, dashes := seriesColor(ll.Index), opDashes(ll.Curve.Op)
		name := svgText(ll.Label, 40) + " " + strings.ToUpper(ll.Curve.Op)
		var thumb *plotter.Line
		if xys := spectrum(ll.Curve); len(xys) > 0 {
			l, _, err := line(xys, c, dashes, false)
			if err != nil {
				return "", err
			}
			spec.Add(l)
			thumb = l
		}
		l, _, err := line(cdf(ll.Curve), c, dashes, false)
		if err != nil {
			return "", err
		}
		dist.Add(l)
		if thumb == nil {
			thumb = l
		}
		leg.Add(name, thumb)
	}
	padLog(&spec.Y)
	padLog(&dist.X)
	return render(10*vg.Inch, 4*vg.Inch, func(dc draw.Canvas) {
		left, right := split(dc, 1.9*vg.Inch)
		panels(left, spec, dist)
		drawLegend(right, leg)
	})
}
