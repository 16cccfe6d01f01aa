package htmlreport

import (
	"fmt"
	"html/template"
	"image/color"
	"math"

	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/sweep"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// heatGrid is a heat map's values on index coordinates: column i is SQ depth i, row j
// CQ moderation j.
type heatGrid struct{ h *heat }

func (g heatGrid) Dims() (c, r int)   { return len(g.h.Depths), len(g.h.Mods) }
func (g heatGrid) Z(c, r int) float64 { return g.h.Z[c][r] }
func (g heatGrid) X(c int) float64    { return float64(c) }
func (g heatGrid) Y(r int) float64    { return float64(r) }

// scaleGrid is the colour bar: one column, n rows from min to max.
type scaleGrid struct {
	min, max float64
	n        int
}

func (g scaleGrid) Dims() (c, r int)   { return 1, g.n }
func (g scaleGrid) Z(c, r int) float64 { return g.Y(r) }
func (g scaleGrid) X(c int) float64    { return 0 }
func (g scaleGrid) Y(r int) float64 {
	return g.min + (float64(r)+0.5)*(g.max-g.min)/float64(g.n)
}

// colors is a palette.Palette of given colours.
type colors []color.Color

func (c colors) Colors() []color.Color { return c }

// heatPalette is the heat maps' colours: a luminance ramp (moreland's extended black
// body: dark purple, red, orange, yellow) without its black and white ends, so that
// no cell's colour is the page's white, or the grey of a cell never measured.
func heatPalette(n int) palette.Palette {
	cm := moreland.ExtendedBlackBody()
	cm.SetMin(0)
	cm.SetMax(1)
	out := make(colors, n)
	for i := range out {
		c, err := cm.At(0.2 + 0.7*float64(i)/float64(n-1))
		if err != nil {
			c = grey // cannot happen: within [0, 1]
		}
		out[i] = c
	}
	return out
}

// luminance is a colour's relative luminance, to pick a readable label colour.
func luminance(c color.Color) float64 {
	r, g, b, _ := c.RGBA()
	return (0.2126*float64(r) + 0.7152*float64(g) + 0.0722*float64(b)) / 0xffff
}

// cappedGrid is a grid whose values above top are top: the cells equal to the best
// (heat.equalBand) all get the palette's top colour.
type cappedGrid struct {
	plotter.GridXYZ
	top float64
}

func (g cappedGrid) Z(c, r int) float64 { return math.Min(g.GridXYZ.Z(c, r), g.top) } // NaN stays NaN

// fmtBand is a resolution as the heat maps' legend says it: "+-21%".
func fmtBand(r float64) string {
	if r > 1 {
		return fmt.Sprintf("+-%.0f%%", 100*r)
	}
	return sweep.FmtResolution(r)
}

// heatScale maps a heat map's cells to colours: lo to top over the palette, everything
// from top up the palette's top colour; the colour bar spans barLo to barHi.
type heatScale struct {
	lo, top      float64
	barLo, barHi float64
	banded       bool // top is the equal band's start (heat.equalBand), not the highest cell
}

// heatScaleOf is h's colour scale. Without a resolution the colours span the cells'
// range (a range of no width widened by 0.5% each way). With one, every cell within it
// of the best gets the top colour and the colours span the cells below the band; where
// every cell is within it, they all get the top colour, and the bar shows the band.
func heatScaleOf(h *heat) heatScale {
	lo, hi, measured := h.span()
	band, _, banded := h.equalBand()
	top := hi
	switch {
	case !measured: // nothing measured on this slice
		lo, hi, top = 0, 1, 1
	case banded:
		top = band
	case hi-lo < 1e-9*math.Max(1, math.Abs(hi)):
		d := math.Max(math.Abs(hi)*0.005, 1e-6)
		lo, hi = lo-d, hi+d
		top = hi
	}
	sc := heatScale{lo: lo, top: top, barLo: lo, barHi: hi, banded: banded}
	if banded && lo >= top {
		sc.barLo, sc.lo = top, top-math.Max(math.Abs(top)*0.005, 1e-6)
		if sc.barHi-sc.barLo < 1e-9*math.Max(1, math.Abs(sc.barHi)) {
			sc.barHi = sc.barLo + math.Max(math.Abs(sc.barLo)*0.005, 1e-6)
		}
	}
	return sc
}

// color is the colour of a cell of value v (not NaN) in pal, as plotter.HeatMap picks
// it for cappedGrid.
func (sc heatScale) color(pal palette.Palette, v float64) color.Color {
	c := pal.Colors()
	return c[int((math.Min(v, sc.top)-sc.lo)/(sc.top-sc.lo)*float64(len(c)-1)+0.5)]
}

// heatChart draws one heat map with its colour bar and markers. Without a resolution
// the colours span the cells' range; with one (heat.equalBand), every cell within it
// of the best gets the top colour, the colours span the cells below that band, and the
// bar shows the band as one colour above a line.
func heatChart(title string, h *heat) (template.HTML, error) {
	sc := heatScaleOf(h)
	pal := heatPalette(255)
	p := heatPlot(title, h, sc, pal)
	heatLabels(p, h, sc, pal)
	leg, err := heatLegend(p, h, sc, pal)
	if err != nil {
		return "", err
	}
	bar, err := heatBar(sc, pal)
	if err != nil {
		return "", err
	}
	return render(7.5*vg.Inch, 4.4*vg.Inch, func(dc draw.Canvas) {
		left, right := split(dc, 2.5*vg.Inch)
		p.Draw(draw.Crop(left, vg.Points(4), -vg.Points(8), vg.Points(4), -vg.Points(4)))
		width := right.Max.X - right.Min.X
		height := right.Max.Y - right.Min.Y
		barArea := draw.Crop(right, 0, -(width - 0.95*vg.Inch), height*0.42, -vg.Points(22))
		bar.Draw(barArea)
		legArea := draw.Crop(right, 0, 0, vg.Points(4), -(height*0.6 + vg.Points(4)))
		leg.Draw(legArea)
	})
}

// heatPlot is the heat map itself: its cells in sc's colours from pal (a cell never
// measured grey), SQ depth across and CQ moderation up, one tick a cell.
func heatPlot(title string, h *heat, sc heatScale, pal palette.Palette) *plot.Plot {
	p := newPlot(title, "SQ depth (WRs)", "CQ moderation (signal every N)")
	hm := plotter.NewHeatMap(cappedGrid{heatGrid{h}, sc.top}, pal)
	hm.Min, hm.Max, hm.NaN = sc.lo, sc.top, grey
	p.Add(hm)
	var depthTicks, modTicks []plot.Tick
	for i, d := range h.Depths {
		depthTicks = append(depthTicks, plot.Tick{Value: float64(i), Label: fmt.Sprint(d)})
	}
	for j, m := range h.Mods {
		modTicks = append(modTicks, plot.Tick{Value: float64(j), Label: fmt.Sprint(m)})
	}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.ConstantTicks(depthTicks), plot.ConstantTicks(modTicks)
	p.X.Min, p.X.Max = -0.5, float64(len(h.Depths))-0.5
	p.Y.Min, p.Y.Max = -0.5, float64(len(h.Mods))-0.5
	return p
}

// heatLabels writes the values in their cells on p (white on a dark cell); a cell that
// cannot run (CQ moderation above SQ depth) says "n/a".
func heatLabels(p *plot.Plot, h *heat, sc heatScale, pal palette.Palette) {
	var xys plotter.XYs
	var labels []string
	var styles []text.Style
	for i, d := range h.Depths {
		for j, m := range h.Mods {
			v := h.Z[i][j]
			sty := style(8)
			sty.XAlign, sty.YAlign = draw.XCenter, draw.YCenter
			var s string
			switch {
			case !math.IsNaN(v):
				s = fmtNum(v)
				if luminance(sc.color(pal, v)) < 0.45 {
					sty.Color = white
				}
			case m > d:
				s, sty.Color = "n/a", darkGrey
			default:
				continue
			}
			xys = append(xys, plotter.XY{X: float64(i), Y: float64(j)})
			labels = append(labels, s)
			styles = append(styles, sty)
		}
	}
	if len(xys) > 0 {
		p.Add(&plotter.Labels{XYs: xys, Labels: labels, TextStyle: styles})
	}
}

// heatLegend marks the base point and the article's on p, and returns the legend that
// names them, the grey of a cell never measured and, with a resolution, the colour of
// the cells equal to the best.
func heatLegend(p *plot.Plot, h *heat, sc heatScale, pal palette.Palette) (plot.Legend, error) {
	leg := newLegend()
	bi, bj := indexOf(h.Depths, h.Base.SQDepth), indexOf(h.Mods, h.Base.CQMod)
	if err := markCell(p, &leg, [2]int{bi, bj}, ringGlyph{vg.Points(2.5)}, black, vg.Points(15), h.BaseLabel); err != nil {
		return leg, err
	}
	if a := h.Article; a != nil {
		name := "article's point"
		if a.MsgSizeBytes != h.Size {
			name = "article's depth, cq-mod (at " + result.FormatSize(a.MsgSizeBytes) + ")"
		}
		if err := markCell(p, &leg, [2]int{indexOf(h.Depths, a.SQDepth), indexOf(h.Mods, a.CQMod)}, squareGlyph{vg.Points(2)}, magenta, vg.Points(19), name); err != nil {
			return leg, err
		}
	}
	swatch, err := legendSwatch(grey)
	if err != nil {
		return leg, err
	}
	leg.Add("not measured", swatch)
	if sc.banded {
		eq, err := legendSwatch(pal.Colors()[len(pal.Colors())-1])
		if err != nil {
			return leg, err
		}
		leg.Add("within "+fmtBand(h.Resolution)+" of the best: equal", eq)
	}
	return leg, nil
}

// markCell draws glyph g in colour c, of radius r, on cell q (column, row) of p, and
// adds it to leg as name.
func markCell(p *plot.Plot, leg *plot.Legend, q [2]int, g draw.GlyphDrawer, c color.Color, r vg.Length, name string) error {
	s, err := plotter.NewScatter(plotter.XYs{{X: float64(q[0]), Y: float64(q[1])}})
	if err != nil {
		return err
	}
	s.GlyphStyle = draw.GlyphStyle{Color: c, Radius: r, Shape: g}
	p.Add(s)
	// The legend's thumbnail: the same glyph, small enough for its row.
	t := *s
	t.GlyphStyle.Radius = vg.Points(5)
	leg.Add(name, &t)
	return nil
}

// legendSwatch is a legend thumbnail filled with colour c, without an outline.
func legendSwatch(c color.Color) (*plotter.Polygon, error) {
	s, err := plotter.NewPolygon(plotter.XYs{{X: 0, Y: 0}, {X: 1, Y: 0}, {X: 1, Y: 1}})
	if err != nil {
		return nil, err
	}
	s.Color, s.LineStyle.Width = c, 0
	return s, nil
}

// heatBar is the colour bar: sc's bar range in pal's colours, with a line where the
// equal band starts when that is inside it.
func heatBar(sc heatScale, pal palette.Palette) (*plot.Plot, error) {
	bar := newPlot("", "", "Gb/s")
	sg := scaleGrid{sc.barLo, sc.barHi, 64}
	bm := plotter.NewHeatMap(cappedGrid{sg, sc.top}, pal)
	bm.Min, bm.Max = sc.lo, sc.top
	bar.Add(bm)
	bar.HideX()
	bar.X.Min, bar.X.Max = -0.5, 0.5
	bar.Y.Min, bar.Y.Max = sc.barLo, sc.barHi
	if sc.banded && sc.top > sc.barLo && sc.top < sc.barHi {
		// The line the equal band starts at.
		l, err := plotter.NewLine(plotter.XYs{{X: -0.5, Y: sc.top}, {X: 0.5, Y: sc.top}})
		if err != nil {
			return nil, err
		}
		l.Color, l.Width = black, vg.Points(1.5)
		bar.Add(l)
	}
	return bar, nil
}
