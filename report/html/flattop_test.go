package htmlreport

import (
	"image/color"
	"math"
	"strings"
	"testing"
)

// A heat map at a resolution R shows differences within +-R of the best as none: every
// cell within a factor 1+R of the best has the palette's top colour, the colours span
// the cells below that, and the legend says so. Without a resolution, the colours span
// the cells as before.
func TestHeatMapEqualBand(t *testing.T) {
	pal := heatPalette(255)
	cs := pal.Colors()
	topColor, bottom := cs[len(cs)-1], cs[0]
	same := func(a, b color.Color) bool {
		ar, ag, ab, aa := a.RGBA()
		br, bg, bb, ba := b.RGBA()
		return ar == br && ag == bg && ab == bb && aa == ba
	}
	// The demo's flat top: 0.2545 to 0.2555 Gb/s (0.4%), and a slower cell.
	h := &heat{Op: "write", Depths: []int{32, 128, 512}, Mods: []int{1}, Z: [][]float64{{0.2}, {0.2545}, {0.2555}}}

	sc := heatScaleOf(h) // no resolution: today's scale
	if sc.banded || sc.lo != 0.2 || sc.top != 0.2555 || sc.barLo != 0.2 || sc.barHi != 0.2555 {
		t.Errorf("without a resolution: %+v", sc)
	}
	if !same(sc.color(pal, 0.2555), topColor) || same(sc.color(pal, 0.2545), topColor) || !same(sc.color(pal, 0.2), bottom) {
		t.Error("without a resolution the colours must span the cells")
	}
	svg, err := heatChart("no resolution", h)
	if err != nil || strings.Contains(string(svg), "of the best: equal") {
		t.Errorf("without a resolution: %v, an equal band in the legend", err)
	}

	h.Resolution = 0.007
	sc = heatScaleOf(h)
	if band := 0.2555 / 1.007; !sc.banded || math.Abs(sc.top-band) > 1e-12 || sc.lo != 0.2 || sc.barLo != 0.2 || sc.barHi != 0.2555 {
		t.Errorf("at +-0.7%%: %+v", sc)
	}
	if !same(sc.color(pal, 0.2555), topColor) || !same(sc.color(pal, 0.2545), topColor) || !same(sc.color(pal, 0.2), bottom) {
		t.Error("at +-0.7%: 0.2545 and 0.2555 are equal (the top colour), 0.2 the bottom")
	}
	if c := sc.color(pal, 0.25); same(c, topColor) || same(c, bottom) { // 2.2% below the best: on the ramp
		t.Error("at +-0.7%: 0.25 Gb/s is below the band, above the slowest")
	}
	svg, err = heatChart("at a resolution", h)
	if err != nil || !strings.Contains(string(svg), "within +-0.7% of the best: equal") {
		t.Errorf("the legend must name the band: %v", err)
	}

	// Every cell within the band: one colour; the bar shows the band alone.
	h.Z = [][]float64{{0.2545}, {0.2550}, {0.2555}}
	sc = heatScaleOf(h)
	if !(sc.lo < sc.top) || sc.barLo != sc.top || sc.barHi != 0.2555 {
		t.Errorf("all equal: %+v", sc)
	}
	for _, col := range h.Z {
		if !same(sc.color(pal, col[0]), topColor) {
			t.Errorf("all equal: %g is not the top colour", col[0])
		}
	}
	if _, err := heatChart("all equal", h); err != nil {
		t.Error(err)
	}
	// Nothing measured, or all zero: still a chart.
	for _, z := range []float64{math.NaN(), 0} {
		h.Z = [][]float64{{z}, {z}, {z}}
		if _, err := heatChart("degenerate", h); err != nil {
			t.Errorf("%g: %v", z, err)
		}
	}
}

// The demo's heat maps take the tuned report's resolution, and their captions say what
// it makes equal.
func TestDemoHeatMapsAtTheResolution(t *testing.T) {
	ss, pg := makePage(t, nil, "demo4-sweep.ndjson", "demo4-tuned.json")
	for _, c := range []struct {
		op   string
		want float64
	}{{"write", 1}, {"read", 0.21306519266910087}} {
		h := ss[0].heatOf(ss[0].cells("bw"), c.op)
		if h == nil || h.Resolution != c.want {
			t.Errorf("%s: resolution %v, want %g", c.op, h, c.want)
		}
	}
	for _, want := range []string{
		"Within &#43;-100% of the best (0.369 Gb/s), the tuned report&#39;s resolution for WRITE: equal. Every cell is within it: one colour.",
		"Within &#43;-21% of the best (0.260 Gb/s), the tuned report&#39;s resolution for READ: equal. Every cell from 0.215 Gb/s up has the top colour",
		"within +-21% of the best: equal",
	} {
		if !strings.Contains(pg, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	// A p99 sweep's resolution is the latency's: the bandwidth map keeps its own scale.
	o := ss[0].Tuned.Ops["read"]
	o.Unit = "ns"
	ss[0].Tuned.Ops["read"] = o
	if h := ss[0].heatOf(ss[0].cells("bw"), "read"); h.Resolution != 0 {
		t.Errorf("a p99 sweep's resolution on the bandwidth map: %g", h.Resolution)
	}
}

// The tuned table's chosen cells show a flat top as the text report does.
func TestTunedTableFlatTop(t *testing.T) {
	ss, _ := makePage(t, nil, "demo4-sweep.ndjson", "demo4-tuned.json")
	o := ss[0].Tuned.Ops["read"]
	v := o.Verdicts["sq_depth"]
	v.Equal = []int{32, 128, 512}
	o.Verdicts["sq_depth"] = v
	sec := tunedTables(ss[0])
	params := sec.Tables[0]
	if !strings.Contains(params.Caption, "(32-512 equal)") {
		t.Errorf("caption: %s", params.Caption)
	}
	for _, row := range params.Rows {
		if row[0].Text == "SQ depth" {
			if row[1].Text != "512 ?" || row[4].Text != "512 ? (32-512 equal)" {
				t.Errorf("SQ depth row: %+v", row)
			}
			return
		}
	}
	t.Error("no SQ depth row")
}
