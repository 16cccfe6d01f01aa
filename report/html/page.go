// Package htmlreport writes rdmabench results as one self-contained HTML page: curves
// of bandwidth and message rate against message size, heat maps of the bandwidth over
// SQ depth and CQ moderation, latency spectra and CDFs from the stored histograms, the
// tuned report's tables, the NIC counters' verdicts, and for several inputs the change
// of each against the first, judged against the runs' noise.
//
// The page loads nothing: the charts are inline SVG drawn by gonum/plot from numbers,
// the style is inline CSS, and there is no script. Every string that comes from a
// result file (device names, hosts, errors) is escaped by html/template in the page and
// by the SVG canvas in the charts. The output depends on the inputs only (no clock).
package htmlreport

import (
	_ "embed"
	"fmt"
	"github.com/rdmabench/rdmabench/internal/text"
	"html/template"
	"io"
	"math"
	"strings"

	"github.com/rdmabench/rdmabench/report"
	"github.com/rdmabench/rdmabench/result"
)

// Options shape the page.
type Options struct {
	Title       string // default "rdmabench report"
	ToolVersion string // shown in the footer when set
}

//go:embed page.html.tmpl
var pageTemplate string

var tmpl = template.Must(template.New("page").Parse(pageTemplate))

// figure is one chart: its SVG and what it shows.
type figure struct {
	Title   string
	SVG     template.HTML
	Caption []string
}

type section struct {
	ID      string
	Title   string
	Intro   []string
	Figures []figure
	Tables  []table
	Notes   []string
}

type page struct {
	Title       string
	ToolVersion string
	// VirtualTime is the banner of a page with results measured on a virtual clock
	// (report.VirtualTime, and which series, where not all): none without.
	VirtualTime []string
	Inputs      table
	Sections    []section
	Tuned       []*tunedSection
	Counters    []*countersSection
	Charts      int
}

// Write writes the page for the series (Build's) to w.
func Write(w io.Writer, series []*Series, o Options) error {
	if len(series) == 0 {
		return fmt.Errorf("nothing to report: no inputs")
	}
	pg, err := build(series, o)
	if err != nil {
		return err
	}
	return tmpl.Execute(w, pg)
}

// Charts is how many charts (<svg> elements) the page for series has.
func Charts(series []*Series) (int, error) {
	pg, err := build(series, Options{})
	if err != nil {
		return 0, err
	}
	return pg.Charts, nil
}

func build(series []*Series, o Options) (*page, error) {
	pg := &page{Title: o.Title, ToolVersion: o.ToolVersion, VirtualTime: virtualBanner(series), Inputs: inputsTable(series)}
	if pg.Title == "" {
		pg.Title = "rdmabench report"
	}
	bw := make([][]*cell, len(series))
	lat := make([][]*cell, len(series))
	for i, s := range series {
		bw[i], lat[i] = s.cells("bw"), s.cells("lat")
	}
	for _, f := range []func([]*Series, [][]*cell, [][]*cell) (section, error){throughputSection, heatSection, latencySection} {
		sec, err := f(series, bw, lat)
		if err != nil {
			return nil, err
		}
		pg.Sections = append(pg.Sections, sec)
	}
	for i, s := range series {
		if t := tunedTables(s); t != nil {
			pg.Tuned = append(pg.Tuned, t)
		}
		if c := countersTable(s, append(append([]*cell(nil), bw[i]...), lat[i]...)); c != nil {
			pg.Counters = append(pg.Counters, c)
		}
	}
	if len(series) > 1 {
		sec, err := comparisonSection(series, bw)
		if err != nil {
			return nil, err
		}
		pg.Sections = append(pg.Sections, sec)
	}
	if sec, ok := fleetSection(series); ok {
		pg.Sections = append(pg.Sections, sec)
	}
	if sec, ok := huntSection(series); ok {
		pg.Sections = append(pg.Sections, sec)
	}
	for _, s := range pg.Sections {
		pg.Charts += len(s.Figures)
	}
	return pg, nil
}

func throughputSection(series []*Series, bw, _ [][]*cell) (section, error) {
	sec := section{ID: "throughput", Title: "Bandwidth and message rate against message size"}
	for _, op := range ops {
		var lines []throughputLine
		for i, s := range series {
			if pts := bestPerSize(ofOp(bw[i], op)); len(pts) > 0 {
				lines = append(lines, throughputLine{Label: s.Label, Index: i, Points: pts})
			}
		}
		if len(lines) == 0 {
			sec.Notes = append(sec.Notes, strings.ToUpper(op)+": no bandwidth results.")
			continue
		}
		svg, err := throughputChart(op, lines)
		if err != nil {
			return sec, fmt.Errorf("%s throughput chart: %w", op, err)
		}
		f := figure{Title: strings.ToUpper(op) + ": bandwidth and message rate", SVG: svg, Caption: []string{
			"Per message size, the configuration with the highest median bandwidth over its runs: the best (max) median over SQ depth, " +
				"CQ moderation, buffer offset, post list and QPs. On the right that configuration's median message rate (at one size, " +
				"the rate is proportional to the bandwidth: the same configuration is the best for both). One line per input; " +
				"failed and interrupted runs are left out, tainted runs are included.",
		}}
		for _, l := range lines {
			var pts []string
			for _, p := range l.Points {
				pts = append(pts, fmt.Sprintf("%s: %s Gb/s, %s Mpps at %s (%d runs)", result.FormatSize(p.Size), fmtNum(p.BW), fmtNum(p.Rate), configName(p.Cell.Cfg), p.Cell.Runs))
			}
			f.Caption = append(f.Caption, clean(l.Label, 64)+": "+strings.Join(pts, "; ")+".")
		}
		sec.Figures = append(sec.Figures, f)
	}
	sec.Intro = []string{"A sweep measures most sizes at a few configurations only: a size's point is the best of what was measured at that size, not of the whole grid."}
	return sec, nil
}

func heatSection(series []*Series, bw, _ [][]*cell) (section, error) {
	sec := section{ID: "heatmaps", Title: "Bandwidth over SQ depth and CQ moderation",
		Intro: []string{"Each cell is a median bandwidth (Gb/s) over the runs of one configuration, at the message size of the chosen " +
			"point (the tuned report's; without one, the best measured point); where several configurations share a SQ depth and " +
			"CQ moderation (other buffer offsets, post lists or QPs), the cell shows the best (max) of their medians. " +
			"A grey cell was never measured at that size: it is blank, not zero. \"n/a\": a moderation larger than the SQ depth cannot run. " +
			"The axes hold every depth and moderation measured in the input for that operation. " +
			"With a tuned report, a difference within its resolution is no difference: the cells within it of the best share the top colour."}}
	for _, op := range ops {
		for i, s := range series {
			h := s.heatOf(bw[i], op)
			if h == nil {
				continue
			}
			dev := ""
			if len(s.Results) > 0 {
				dev = " on " + svgText(s.Results[0].Client.Name, 48)
			} else if s.Tuned != nil {
				dev = " on " + svgText(s.Tuned.Client.Name, 48)
			}
			title := fmt.Sprintf("%s%s: %s at %s", svgText(s.Label, 48), dev, strings.ToUpper(op), result.FormatSize(h.Size))
			svg, err := heatChart(title, h)
			if err != nil {
				return sec, fmt.Errorf("%s %s heat map: %w", text.Clean(s.Label, 48), op, err)
			}
			cells, mixed := 0, false
			for i, col := range h.Z {
				for j, v := range col {
					if !math.IsNaN(v) {
						cells++
						if c := h.At[i][j]; c.Point.BufOffsetBytes != h.Base.BufOffsetBytes || c.Point.PostList != h.Base.PostList {
							mixed = true
						}
					}
				}
			}
			capt := []string{fmt.Sprintf("%s, %s: median bandwidth at %s; %d of %d cells measured. Ring: %s (%s).",
				clean(s.Label, 64), strings.ToUpper(op), result.FormatSize(h.Size), cells, len(h.Depths)*len(h.Mods), h.BaseLabel, pointName(h.Base))}
			if band, best, ok := h.equalBand(); ok {
				c := fmt.Sprintf("Within %s of the best (%s Gb/s), the tuned report's resolution for %s: equal. ", fmtBand(h.Resolution), fmtNum(best), strings.ToUpper(op))
				if lo, _, _ := h.span(); lo >= band {
					c += "Every cell is within it: one colour."
				} else {
					c += fmt.Sprintf("Every cell from %s Gb/s up has the top colour (above the line on the scale); the colours span the cells below that.", fmtNum(band))
				}
				capt = append(capt, c)
			}
			if h.SizeNote != "" {
				capt = append(capt, h.SizeNote)
			}
			if mixed {
				var other []string
				for i, col := range h.At {
					for j, c := range col {
						if c != nil && (c.Point.BufOffsetBytes != h.Base.BufOffsetBytes || c.Point.PostList != h.Base.PostList) {
							other = append(other, fmt.Sprintf("depth %d, cq-mod %d: %s", h.Depths[i], h.Mods[j], pointName(c.Point)))
						}
					}
				}
				capt = append(capt, fmt.Sprintf("Cells at another offset or post list than the ring's (%d/%d): %s.",
					h.Base.BufOffsetBytes, h.Base.PostList, strings.Join(other, "; ")))
			}
			if h.Article != nil {
				capt = append(capt, fmt.Sprintf("Square: the article's point %s, from %s.", pointName(*h.Article), h.ArticleFrom))
			} else {
				capt = append(capt, "The article's point is not marked: "+h.ArticleFrom+".")
			}
			if !s.hasRuns {
				capt = append(capt, "From the tuned report's point summaries (medians of each point's runs): no result file was given for it.")
			}
			sec.Figures = append(sec.Figures, figure{Title: fmt.Sprintf("%s: %s heat map", clean(s.Label, 64), strings.ToUpper(op)), SVG: svg, Caption: capt})
		}
	}
	if len(sec.Figures) == 0 {
		sec.Notes = append(sec.Notes, "No bandwidth results: no heat map.")
	}
	return sec, nil
}

var latKinds = map[string]string{
	"one_way":               "one-way latency (WRITE ping-pong round trip / 2)",
	"read_completion":       "READ latency, post to completion",
	"completion_under_load": "completion latency under load (a bandwidth run: post to completion of each signalled WR), not an unloaded latency",
	"round":                 "fan-out round latency",
}

func latencySection(series []*Series, bw, lat [][]*cell) (section, error) {
	sec := section{ID: "latency", Title: "Latency: percentile spectrum and CDF"}
	var lines []latencyLine
	for i, s := range series {
		for _, op := range ops {
			if lc := s.latencyOf(lat[i], bw[i], op); lc != nil {
				lines = append(lines, latencyLine{Label: s.Label, Index: i, Curve: lc})
			}
		}
	}
	if len(lines) == 0 {
		sec.Notes = append(sec.Notes, "No latency histograms in these inputs (a CSV holds none; a result without samples has none): no latency chart.")
		return sec, nil
	}
	svg, err := latencyChart(lines)
	if err != nil {
		return sec, fmt.Errorf("latency chart: %w", err)
	}
	f := figure{Title: "Latency", SVG: svg, Caption: []string{
		"Left: the latency at each percentile on the \"nines\" scale x = -log10(1-p) (p50 at 0.3, p99 at 2). Each line stops at the highest " +
			"percentile its samples support, rdmabench's rule n >= 10/(1-p) (p99 needs 1000 samples, p99.9 10000): beyond it a percentile " +
			"would be one of the few largest samples. Right: the fraction of samples at or below each latency (every sample). " +
			"Colour: input; solid: WRITE, dashed: READ. Latency tests where an input has them, else the bandwidth runs' completion latency.",
	}}
	for _, l := range lines {
		n := uint64(l.Curve.Hist.TotalCount())
		kind := latKinds[l.Curve.Kind]
		if kind == "" {
			kind = clean(l.Curve.Kind, 32)
		}
		stop := "no percentile: fewer than 20 samples"
		if result.Supported(0.5, n) {
			q := 1 - 10/float64(n)
			if q >= 0.9999 {
				stop = "spectrum to p99.99"
			} else {
				stop = fmt.Sprintf("spectrum to p%s, the highest the samples support", trimPct(100*q))
			}
		}
		c := fmt.Sprintf("%s %s: %s; %s; %d samples; %s.", clean(l.Label, 64), strings.ToUpper(l.Curve.Op), kind, l.Curve.What, n, stop)
		for _, note := range l.Curve.Notes {
			c += " " + clean(note, 200) + "."
		}
		f.Caption = append(f.Caption, c)
	}
	sec.Figures = append(sec.Figures, f)
	return sec, nil
}

// trimPct writes a percentile with up to two decimals, rounded down (a supported
// percentile must not be written above what is supported).
func trimPct(v float64) string {
	s := fmt.Sprintf("%.2f", math.Floor(v*100)/100)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s
}

// virtualClock says whether the series was measured on a virtual clock: one of its
// results, or its tuned report's hosts (result.Result.VirtualClock).
func (s *Series) virtualClock() bool {
	return report.VirtualClock(s.Results) || s.Tuned != nil && s.Tuned.VirtualClock()
}

// virtualBanner is what the page says first where a series was measured on a virtual
// clock: report.VirtualTime, and where not every series was, which were.
func virtualBanner(series []*Series) []string {
	var virtual []string
	for _, s := range series {
		if s.virtualClock() {
			virtual = append(virtual, clean(s.Label, 64))
		}
	}
	switch {
	case len(virtual) == 0:
		return nil
	case len(virtual) == len(series):
		return []string{report.VirtualTime + "."}
	}
	return []string{report.VirtualTime + ".", "Measured on a virtual clock (qemu icount): " + strings.Join(virtual, ", ") +
		". The other inputs were measured on a real or unknown clock: the two are not comparable."}
}

func comparisonSection(series []*Series, bw [][]*cell) (section, error) {
	a := series[0]
	sec := section{ID: "comparison", Title: "Comparison against " + clean(a.Label, 64),
		Intro: []string{"Per configuration (operation, test, size, QPs, SQ depth, post list, CQ moderation, offset, inline, and where set the QP " +
			"timeout, completion events, MR mode, fan-out, MTU, hugepages, verify and bidirectional: report.ConfigKey), " +
			"the bandwidth of each input against the first. Where both have at least 2 runs of a configuration, the change is the ratio of " +
			"the geometric means with a 95% Welch t-interval on the difference of the mean log bandwidths (unequal variances): green or red " +
			"when the interval excludes no change (faster or slower beyond the run-to-run noise), grey when it includes it. With a single " +
			"run on either side there is no spread to judge the noise by: \"one run: cannot tell\" (the change of the single values is " +
			"drawn as a ring, with no interval). Configurations measured in only one input are listed in the table, not drawn; where the " +
			"first has the same main configuration with other fields of the key (a bidirectional run against a unidirectional one, " +
			"another MTU), the verdict is \"not comparable\" and names the fields that differ: they measured different things. " +
			"Latency tests are compared in the latency chart."}}
	for i := 1; i < len(series); i++ {
		b := series[i]
		if why := report.ClockMismatch(clean(b.Label, 64), b.virtualClock(), clean(a.Label, 64), a.virtualClock()); why != "" {
			sec.Notes = append(sec.Notes, fmt.Sprintf("%s against %s: %s: no change is shown.", clean(b.Label, 64), clean(a.Label, 64), why))
			continue
		}
		rows := compareCells(bw[0], bw[i])
		common := 0
		for _, r := range rows {
			if r.A != nil && r.B != nil && !math.IsNaN(r.Ratio) {
				common++
			}
		}
		title := fmt.Sprintf("%s against %s", svgText(b.Label, 48), svgText(a.Label, 48))
		if common == 0 {
			sec.Notes = append(sec.Notes, fmt.Sprintf("%s against %s: no configuration in common: nothing to compare.", clean(b.Label, 64), clean(a.Label, 64)))
		} else {
			svg, err := compareChart(title, rows)
			if err != nil {
				return sec, fmt.Errorf("comparison chart: %w", err)
			}
			counts := map[string]int{}
			for _, r := range rows {
				counts[classFamily(r.Class)]++
			}
			var parts []string
			for _, cls := range []string{clsFaster, clsSlower, clsNoise, clsOneRun, clsSummary, clsNoBW, clsOnlyA, clsOnlyB, clsNotComparable} {
				if counts[cls] > 0 {
					parts = append(parts, fmt.Sprintf("%d %s", counts[cls], cls))
				}
			}
			sec.Figures = append(sec.Figures, figure{Title: fmt.Sprintf("%s against %s", clean(b.Label, 64), clean(a.Label, 64)), SVG: svg,
				Caption: []string{fmt.Sprintf("Bandwidth change of %s against %s per configuration, %% (dot), with its 95%% interval (bar) where both have 2 or more runs. %s.",
					clean(b.Label, 64), clean(a.Label, 64), strings.Join(parts, ", "))}})
		}
		sec.Tables = append(sec.Tables, compareTable(a.Label, b.Label, rows))
	}
	return sec, nil
}
