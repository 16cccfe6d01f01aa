package htmlreport

import (
	"html/template"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// compareChart draws each configuration's bandwidth change of b against a, with its
// interval where the runs give one, coloured by whether it exceeds the noise.
func compareChart(title string, rows []cmpRow) (template.HTML, error) {
	var both []cmpRow
	for _, r := range rows {
		if r.A != nil && r.B != nil && !math.IsNaN(r.Ratio) && !math.IsInf(r.Ratio, 0) {
			both = append(both, r)
		}
	}
	// Top to bottom in key order.
	n := len(both)
	p := newPlot(title, "bandwidth change (%)", "")
	addGrid(p)
	var ticks []plot.Tick
	groups := map[string]plotter.XYs{}
	var bars plotter.XYs
	var errs plotter.XErrors
	xmin, xmax := 0.0, 0.0
	for i, r := range both {
		y := float64(n - 1 - i)
		ticks = append(ticks, plot.Tick{Value: y, Label: svgText(r.Key, 96)})
		x := (r.Ratio - 1) * 100
		groups[r.Class] = append(groups[r.Class], plotter.XY{X: x, Y: y})
		xmin, xmax = math.Min(xmin, x), math.Max(xmax, x)
		if r.Lo != nil && r.Hi != nil {
			lo, hi := (*r.Lo-1)*100, (*r.Hi-1)*100
			bars = append(bars, plotter.XY{X: x, Y: y})
			errs = append(errs, struct{ Low, High float64 }{x - lo, hi - x})
			xmin, xmax = math.Min(xmin, lo), math.Max(xmax, hi)
		}
	}
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	p.Y.Tick.Label.Font = font.From(sans, 7.5)
	p.Y.Min, p.Y.Max = -0.7, float64(n)-0.3
	pad := math.Max((xmax-xmin)*0.05, 0.5)
	p.X.Min, p.X.Max = xmin-pad, xmax+pad
	zero, err := plotter.NewLine(plotter.XYs{{X: 0, Y: -0.7}, {X: 0, Y: float64(n) - 0.3}})
	if err != nil {
		return "", err
	}
	zero.Color, zero.Width = black, vg.Points(0.8)
	p.Add(zero)
	if len(bars) > 0 {
		eb, err := plotter.NewXErrorBars(struct {
			plotter.XYs
			plotter.XErrors
		}{bars, errs})
		if err != nil {
			return "", err
		}
		eb.Color, eb.Width = darkGrey, vg.Points(1)
		p.Add(eb)
	}
	leg := newLegend()
	for _, cls := range []struct {
		name  string
		c     color.Color
		shape draw.GlyphDrawer
	}{{clsFaster, green, draw.CircleGlyph{}}, {clsSlower, red, draw.CircleGlyph{}}, {clsNoise, noiseGrey, draw.CircleGlyph{}},
		{clsOneRun, black, ringGlyph{vg.Points(1.2)}}, {clsSummary, black, squareGlyph{vg.Points(1.2)}}} {
		xys, ok := groups[cls.name]
		if !ok {
			continue
		}
		s, err := plotter.NewScatter(xys)
		if err != nil {
			return "", err
		}
		s.GlyphStyle = draw.GlyphStyle{Color: cls.c, Radius: vg.Points(3.2), Shape: cls.shape}
		p.Add(s)
		leg.Add(cls.name, s)
	}
	h := vg.Length(n)*0.2*vg.Inch + 1.2*vg.Inch
	return render(10*vg.Inch, h, func(dc draw.Canvas) {
		left, right := split(dc, 2.1*vg.Inch)
		p.Draw(draw.Crop(left, vg.Points(4), -vg.Points(8), vg.Points(4), -vg.Points(4)))
		drawLegend(right, leg)
	})
}
