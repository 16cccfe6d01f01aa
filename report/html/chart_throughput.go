package htmlreport

import (
	"html/template"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// throughputLine is one series' best-per-size curve for one operation.
type throughputLine struct {
	Label  string
	Index  int
	Points []sizePoint
}

// throughputChart draws bandwidth and message rate against message size for one
// operation, one line per series.
func throughputChart(op string, lines []throughputLine) (template.HTML, error) {
	OP := strings.ToUpper(op)
	bw := newPlot(OP+": bandwidth", "message size (bytes, log2 scale)", "bandwidth (Gb/s)")
	rate := newPlot(OP+": message rate", "message size (bytes, log2 scale)", "message rate (Mpps, log)")
	for _, p := range []*plot.Plot{bw, rate} {
		p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, sizeTicks{}
		addGrid(p)
	}
	rate.Y.Scale, rate.Y.Tick.Marker = plot.LogScale{}, logTicks{}
	leg := newLegend()
	for _, tl := range lines {
		var b, r plotter.XYs
		for _, pt := range tl.Points {
			x := clampPos(float64(pt.Size), 1)
			b = append(b, plotter.XY{X: x, Y: pt.BW})
			r = append(r, plotter.XY{X: x, Y: clampPos(pt.Rate, 1e-6)})
		}
		c := seriesColor(tl.Index)
		bl, bs, err := line(b, c, nil, true)
		if err != nil {
			return "", err
		}
		rl, rs, err := line(r, c, nil, true)
		if err != nil {
			return "", err
		}
		bw.Add(bl, bs)
		rate.Add(rl, rs)
		leg.Add(svgText(tl.Label, 48), bl, bs)
	}
	bw.Y.Min = 0
	padLog(&bw.X)
	padLog(&rate.X)
	padLog(&rate.Y)
	if !(bw.Y.Max > 0) {
		bw.Y.Max = 1
	}
	bw.Y.Max *= 1.05
	return render(10*vg.Inch, 4*vg.Inch, func(dc draw.Canvas) {
		left, right := split(dc, 1.9*vg.Inch)
		panels(left, bw, rate)
		drawLegend(right, leg)
	})
}
