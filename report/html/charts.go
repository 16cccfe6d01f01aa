package htmlreport

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	safe "github.com/rdmabench/rdmabench/internal/text"
	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/sweep"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/palette"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Charts are drawn with gonum/plot on its SVG canvas (vgsvg), without embedded fonts
// (the page's CSS names the fonts) and without raster images: what it writes is
// paths, rectangles and text, the text escaped by vgsvg (html.EscapeString). Every
// string drawn goes through svgText first.

var sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

// seriesColors are told apart with colour blindness (Okabe and Ito's palette).
var seriesColors = []color.RGBA{
	{0x00, 0x72, 0xB2, 0xff}, {0xD5, 0x5E, 0x00, 0xff}, {0x00, 0x9E, 0x73, 0xff}, {0xCC, 0x79, 0xA7, 0xff},
	{0xE6, 0x9F, 0x00, 0xff}, {0x56, 0xB4, 0xE9, 0xff}, {0x00, 0x00, 0x00, 0xff}, {0xF0, 0xE4, 0x42, 0xff},
}

func seriesColor(i int) color.Color { return seriesColors[i%len(seriesColors)] }

// opDashes: WRITE solid, READ dashed.
func opDashes(op string) []vg.Length {
	if op == "read" {
		return []vg.Length{vg.Points(6), vg.Points(3)}
	}
	return nil
}

var (
	grey      = color.RGBA{0xd9, 0xd9, 0xd9, 0xff}
	darkGrey  = color.RGBA{0x70, 0x70, 0x70, 0xff}
	green     = color.RGBA{0x1a, 0x98, 0x50, 0xff}
	red       = color.RGBA{0xd7, 0x30, 0x27, 0xff}
	magenta   = color.RGBA{0xc0, 0x00, 0xc0, 0xff}
	black     = color.RGBA{0, 0, 0, 0xff}
	white     = color.RGBA{0xff, 0xff, 0xff, 0xff}
	noiseGrey = color.RGBA{0x80, 0x80, 0x80, 0xff}
)

// svgText makes a string from a result file safe to draw: control and format
// characters written as escapes (text.Clean), at most n bytes, and no character XML
// forbids. vgsvg escapes the markup characters.
func svgText(s string, n int) string {
	s = safe.Clean(s, n)
	return strings.Map(func(r rune) rune {
		if r == 0xFFFE || r == 0xFFFF || r == utf8.RuneError {
			return '?'
		}
		return r
	}, s)
}

func style(sz vg.Length) text.Style {
	return text.Style{Color: black, Font: font.From(sans, sz), Handler: plot.DefaultTextHandler}
}

// newPlot is a plot in the page's style: sans-serif, a grid.
func newPlot(title, xLabel, yLabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font = font.From(sans, 11)
	p.Title.Padding = vg.Points(6)
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = font.From(sans, 10)
		a.Tick.Label.Font = font.From(sans, 8.5)
	}
	p.X.Label.Text, p.Y.Label.Text = xLabel, yLabel
	return p
}

func addGrid(p *plot.Plot) {
	g := plotter.NewGrid()
	g.Vertical.Color, g.Horizontal.Color = color.RGBA{0xe4, 0xe4, 0xe4, 0xff}, color.RGBA{0xe4, 0xe4, 0xe4, 0xff}
	p.Add(g)
}

func newLegend() plot.Legend {
	l := plot.NewLegend()
	l.TextStyle = style(9)
	l.Top, l.Left = true, true
	l.Padding = vg.Points(3)
	return l
}

// render draws on an SVG canvas of w x h and returns the <svg> element, without the
// XML prelude. gonum/plot panics on data it cannot draw: that is an error here.
func render(w, h vg.Length, drawFn func(dc draw.Canvas)) (svg template.HTML, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("drawing a chart: %v", r)
		}
	}()
	c := vgsvg.New(w, h)
	dc := draw.New(c)
	dc.SetColor(white)
	dc.Fill(dc.Rectangle.Path())
	drawFn(dc)
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return "", err
	}
	out := buf.String()
	i := strings.Index(out, "<svg")
	if i < 0 {
		return "", fmt.Errorf("drawing a chart: no <svg> element")
	}
	// The SVG is ours: drawn from numbers, its text escaped by vgsvg.
	return template.HTML(strings.TrimSpace(out[i:])), nil
}

// split divides a canvas into a plot area on the left and a strip of width w on the
// right.
func split(dc draw.Canvas, w vg.Length) (left, right draw.Canvas) {
	width := dc.Max.X - dc.Min.X
	return draw.Crop(dc, 0, -w, 0, 0), draw.Crop(dc, width-w, 0, 0, 0)
}

// panels draws plots side by side, each in an equal share of the width.
func panels(dc draw.Canvas, ps ...*plot.Plot) {
	width := (dc.Max.X - dc.Min.X) / vg.Length(len(ps))
	gap := vg.Points(14)
	for i, p := range ps {
		left := width * vg.Length(i)
		right := width * vg.Length(len(ps)-1-i)
		p.Draw(draw.Crop(dc, left+vg.Points(4), -(right + gap), vg.Points(4), -vg.Points(4)))
	}
}

func drawLegend(dc draw.Canvas, l plot.Legend) {
	l.Draw(draw.Crop(dc, vg.Points(6), 0, 0, -vg.Points(18)))
}

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

func line(xys plotter.XYs, c color.Color, dashes []vg.Length, points bool) (*plotter.Line, *plotter.Scatter, error) {
	l, err := plotter.NewLine(xys)
	if err != nil {
		return nil, nil, err
	}
	l.Color, l.Width, l.Dashes = c, vg.Points(1.5), dashes
	if !points {
		return l, nil, nil
	}
	s, err := plotter.NewScatter(xys)
	if err != nil {
		return nil, nil, err
	}
	s.GlyphStyle = draw.GlyphStyle{Color: c, Radius: vg.Points(2.5), Shape: draw.CircleGlyph{}}
	return l, s, nil
}

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

// ringGlyph is a circle outline with a line width of its own (draw.RingGlyph's is
// fixed at half a point, too thin to see on a coloured cell).
type ringGlyph struct{ width vg.Length }

func (g ringGlyph) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	c.SetLineStyle(draw.LineStyle{Color: sty.Color, Width: g.width})
	p := make(vg.Path, 0, 3)
	p.Move(vg.Point{X: pt.X + sty.Radius, Y: pt.Y})
	p.Arc(pt, sty.Radius, 0, 2*math.Pi)
	p.Close()
	c.Stroke(p)
}

// squareGlyph is a square outline with a line width of its own.
type squareGlyph struct{ width vg.Length }

func (g squareGlyph) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	c.SetLineStyle(draw.LineStyle{Color: sty.Color, Width: g.width})
	r := sty.Radius
	p := make(vg.Path, 0, 5)
	p.Move(vg.Point{X: pt.X - r, Y: pt.Y - r})
	p.Line(vg.Point{X: pt.X + r, Y: pt.Y - r})
	p.Line(vg.Point{X: pt.X + r, Y: pt.Y + r})
	p.Line(vg.Point{X: pt.X - r, Y: pt.Y + r})
	p.Close()
	c.Stroke(p)
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
	lo, top := sc.lo, sc.top
	pal := heatPalette(255)

	p := newPlot(title, "SQ depth (WRs)", "CQ moderation (signal every N)")
	hm := plotter.NewHeatMap(cappedGrid{heatGrid{h}, top}, pal)
	hm.Min, hm.Max, hm.NaN = lo, top, grey
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

	// The values, written in their cells; a cell that cannot run says so.
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

	leg := newLegend()
	mark := func(q [2]int, g draw.GlyphDrawer, c color.Color, r vg.Length, name string) error {
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
	bi, bj := indexOf(h.Depths, h.Base.SQDepth), indexOf(h.Mods, h.Base.CQMod)
	if err := mark([2]int{bi, bj}, ringGlyph{vg.Points(2.5)}, black, vg.Points(15), h.BaseLabel); err != nil {
		return "", err
	}
	if a := h.Article; a != nil {
		name := "article's point"
		if a.MsgSizeBytes != h.Size {
			name = "article's depth, cq-mod (at " + result.FormatSize(a.MsgSizeBytes) + ")"
		}
		if err := mark([2]int{indexOf(h.Depths, a.SQDepth), indexOf(h.Mods, a.CQMod)}, squareGlyph{vg.Points(2)}, magenta, vg.Points(19), name); err != nil {
			return "", err
		}
	}
	swatch, err := plotter.NewPolygon(plotter.XYs{{X: 0, Y: 0}, {X: 1, Y: 0}, {X: 1, Y: 1}})
	if err != nil {
		return "", err
	}
	swatch.Color, swatch.LineStyle.Width = grey, 0
	leg.Add("not measured", swatch)
	if sc.banded {
		eq, err := plotter.NewPolygon(plotter.XYs{{X: 0, Y: 0}, {X: 1, Y: 0}, {X: 1, Y: 1}})
		if err != nil {
			return "", err
		}
		eq.Color, eq.LineStyle.Width = pal.Colors()[len(pal.Colors())-1], 0
		leg.Add("within "+fmtBand(h.Resolution)+" of the best: equal", eq)
	}

	bar := newPlot("", "", "Gb/s")
	sg := scaleGrid{sc.barLo, sc.barHi, 64}
	bm := plotter.NewHeatMap(cappedGrid{sg, top}, pal)
	bm.Min, bm.Max = lo, top
	bar.Add(bm)
	bar.HideX()
	bar.X.Min, bar.X.Max = -0.5, 0.5
	bar.Y.Min, bar.Y.Max = sc.barLo, sc.barHi
	if sc.banded && top > sc.barLo && top < sc.barHi {
		// The line the equal band starts at.
		l, err := plotter.NewLine(plotter.XYs{{X: -0.5, Y: top}, {X: 0.5, Y: top}})
		if err != nil {
			return "", err
		}
		l.Color, l.Width = black, vg.Points(1.5)
		bar.Add(l)
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

// fmtNum writes a number with three significant digits, without an exponent for the
// ranges rdmabench measures.
func fmtNum(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	case a >= 1:
		return fmt.Sprintf("%.2f", v)
	case a >= 0.01 || a == 0:
		return fmt.Sprintf("%.3f", v)
	}
	return fmt.Sprintf("%.2g", v)
}
