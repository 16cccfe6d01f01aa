package htmlreport

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"
	"math"
	"strings"
	"unicode/utf8"

	safe "github.com/rdmabench/rdmabench/internal/text"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
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
