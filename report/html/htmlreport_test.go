package htmlreport

import (
	"bytes"
	"encoding/xml"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/result"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden.html from what the package writes now")

func readFiles(t *testing.T, names ...string) []File {
	t.Helper()
	var fs []File
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join("testdata", n))
		if err != nil {
			t.Fatal(err)
		}
		fs = append(fs, File{Path: filepath.Join("testdata", n), Data: b})
	}
	return fs
}

func makePage(t *testing.T, labels []string, names ...string) ([]*Series, string) {
	t.Helper()
	ss, err := Build(readFiles(t, names...), labels)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := Write(&buf, ss, Options{Title: "test page", ToolVersion: "test"}); err != nil {
		t.Fatal(err)
	}
	return ss, buf.String()
}

// golden compares the page with testdata/name (rewritten with -update).
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (make it with -update)", err)
	}
	if got != string(want) {
		gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		for i := 0; i < len(gl) && i < len(wl); i++ {
			if gl[i] != wl[i] {
				t.Fatalf("%s differs from the page at line %d (rewrite it with -update if the change is meant):\n got %.300s\nwant %.300s", path, i+1, gl[i], wl[i])
			}
		}
		t.Fatalf("%s differs from the page: %d lines, want %d (rewrite it with -update if the change is meant)", path, len(gl), len(wl))
	}
}

var svgRE = regexp.MustCompile(`(?s)<svg[\s>].*?</svg>`)

// svgs returns every <svg> element of the page (they do not nest).
func svgs(page string) []string { return svgRE.FindAllString(page, -1) }

// checkSVGs parses every SVG as XML, whole, and counts them.
func checkSVGs(t *testing.T, page string, want int) {
	t.Helper()
	all := svgs(page)
	if n := strings.Count(page, "<svg"); n != len(all) || n != want {
		t.Errorf("%d <svg elements (%d whole), want %d", n, len(all), want)
	}
	for i, s := range all {
		d := xml.NewDecoder(strings.NewReader(s))
		d.Strict = true
		for {
			if _, err := d.Token(); err == io.EOF {
				break
			} else if err != nil {
				t.Errorf("svg %d does not parse as XML: %v", i, err)
				break
			}
		}
	}
}

var (
	refAttrRE = regexp.MustCompile(`(?i)(?:^|[\s"'<])((?:xlink:)?href|src|srcset|action|poster|data)\s*=\s*("[^"]*"|'[^']*'|[^\s>]+)`)
	cssURLRE  = regexp.MustCompile(`(?i)url\(\s*([^)]*)\)`)
	importRE  = regexp.MustCompile(`(?i)@import`)
	tagRE     = regexp.MustCompile(`(?i)<(script|link|img|iframe|object|embed|image|use|foreignObject|audio|video|source)[\s>/]`)
)

// checkSelfContained: no reference that leaves the page. Namespace declarations
// (xmlns="http://www.w3.org/2000/svg") name, they do not load: they are not references.
func checkSelfContained(t *testing.T, page string) {
	t.Helper()
	for _, p := range leaks(page) {
		t.Error(p)
	}
	if n := strings.Count(page, "xmlns="); n != len(svgs(page)) {
		t.Errorf("%d xmlns declarations for %d charts", n, len(svgs(page)))
	}
}

// leaks lists what in a page would load or run something.
func leaks(page string) []string {
	var out []string
	for _, m := range refAttrRE.FindAllStringSubmatch(page, -1) {
		v := strings.Trim(m[2], `"'`)
		if strings.Contains(v, "http:") || strings.Contains(v, "https:") || strings.Contains(v, "//") || !strings.HasPrefix(v, "#") {
			out = append(out, fmt.Sprintf("%s=%q: a reference that leaves the page", m[1], v))
		}
	}
	for _, m := range cssURLRE.FindAllStringSubmatch(page, -1) {
		out = append(out, fmt.Sprintf("url(%s): the page must not load anything", m[1]))
	}
	if importRE.MatchString(page) {
		out = append(out, "@import in the page")
	}
	for _, m := range tagRE.FindAllStringSubmatch(page, -1) {
		out = append(out, fmt.Sprintf("<%s> in the page: it must load nothing and run nothing", m[1]))
	}
	return out
}

func TestCheckersCatchWhatTheyLookFor(t *testing.T) {
	for _, b := range []string{`<img src="https://x/y.png">`, `<a href="//evil/">x</a>`, `<image xlink:href="http://x"/>`,
		`<style>a{background:url(http://x)}</style>`, `<script>1</script>`, `<link rel=stylesheet href=x.css>`,
		`<svg xmlns="http://www.w3.org/2000/svg"><use href='https://x#a'/></svg>`} {
		if len(leaks(b)) == 0 {
			t.Errorf("leaks misses %q", b)
		}
	}
	if l := leaks(`<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink"><a href="#x">y</a></svg>`); len(l) != 0 {
		t.Errorf("a namespace declaration and a fragment link are not leaks: %v", l)
	}
	bad := "<svg><text>a &nope; b</text></svg>"
	d := xml.NewDecoder(strings.NewReader(bad))
	var err error
	for err == nil {
		_, err = d.Token()
	}
	if err == io.EOF {
		t.Error("the XML check must refuse an unknown entity")
	}
}

func TestDemoPage(t *testing.T) {
	ss, pg := makePage(t, nil, "demo4-sweep.ndjson", "demo4-tuned.json")
	if len(ss) != 1 || ss[0].Tuned == nil || len(ss[0].Files) != 2 || ss[0].Kinds[0] != KindStream {
		t.Fatalf("the tuned report must join its stream: %+v", ss)
	}
	// 2 throughput (WRITE, READ), 2 heat maps, 1 latency.
	checkSVGs(t, pg, 5)
	if n, err := Charts(ss); err != nil || n != 5 {
		t.Errorf("Charts: %d, %v", n, err)
	}
	checkSelfContained(t, pg)
	for _, want := range []string{
		"Ring: chosen (tuned report) (64K/512/0/1/1)", "Square: the article&#39;s point 64K/512/0/8/1/u20, from the tuned report&#39;s article reference",
		"completion latency under load", "spectrum to p99", "tuned parameters for Soft-RoCE (rxe) (profile rxe), objective bw", "cannot tell, at &#43;-21%",
		"best (max) median over SQ depth", "tainted runs", "it is blank, not zero",
	} {
		if !strings.Contains(pg, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	golden(t, "demo4.golden.html", pg)
}

func TestGenerationsPage(t *testing.T) {
	ss, pg := makePage(t, nil, "gen1.ndjson", "gen2.ndjson")
	if len(ss) != 2 {
		t.Fatalf("%d series", len(ss))
	}
	// 2 throughput, 2 x 2 heat maps, 1 latency, 1 comparison.
	checkSVGs(t, pg, 8)
	checkSelfContained(t, pg)
	for _, want := range []string{clsFaster, clsNoise, clsOneRun, clsOnlyA, clsOnlyB, "spectrum to p99.95", "spectrum to p99.99",
		"one-way latency", "READ latency, post to completion", "from the built-in profile cx5", "from the built-in profile cx6", "out_of_sequence (local, error) x"} {
		if !strings.Contains(pg, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	golden(t, "generations.golden.html", pg)
}

// A device named <script>alert(1)</script> on a host with quotes and ampersands comes
// out as text, in the HTML and in the charts.
func TestStringsFromResultsAreEscaped(t *testing.T) {
	_, pg := makePage(t, nil, "gen1.ndjson", "gen2.ndjson")
	if strings.Contains(pg, "<script") || strings.Contains(strings.ToLower(pg), "<script") {
		t.Fatal("a <script> element in the page")
	}
	esc := "&lt;script&gt;alert(1)&lt;/script&gt;"
	html, charts := svgRE.ReplaceAllString(pg, ""), strings.Join(svgs(pg), "\n")
	if !strings.Contains(html, esc) {
		t.Error("the device name is not in the page's text, escaped")
	}
	if !strings.Contains(charts, esc) {
		t.Error("the device name is not in a chart, escaped")
	}
	if strings.Contains(pg, `"rack 7" & co's`) || !strings.Contains(pg, "lab-b &#34;rack 7&#34; &amp; co&#39;s") {
		t.Error("the host is not escaped")
	}
	// The decoded text of the charts holds the name as it was.
	found := false
	for _, s := range svgs(pg) {
		d := xml.NewDecoder(strings.NewReader(s))
		for {
			tok, err := d.Token()
			if err != nil {
				break
			}
			if cd, ok := tok.(xml.CharData); ok && strings.Contains(string(cd), "<script>alert(1)</script>") {
				found = true
			}
		}
	}
	if !found {
		t.Error("no chart's text reads <script>alert(1)</script> once decoded")
	}
}

// Labels go into the charts too: markup and control characters in them come out as
// text of well-formed XML.
func TestLabelsInChartsAreText(t *testing.T) {
	label := "<b>\"x\" & 'y'</b>\x01\x7f\u2028\ufffe"
	ss, err := Build(readFiles(t, "gen1.ndjson", "gen2.ndjson"), []string{label, "second"})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := Write(&buf, ss, Options{}); err != nil {
		t.Fatal(err)
	}
	pg := buf.String()
	checkSVGs(t, pg, 8)
	if strings.Contains(pg, "<b>") || strings.Contains(pg, "\x01") {
		t.Error("the label's markup or control character came out raw")
	}
	if !strings.Contains(strings.Join(svgs(pg), ""), "&lt;b&gt;&#34;x&#34; &amp; &#39;y&#39;&lt;/b&gt;\\x01\\x7f\\u2028?") {
		t.Error("the label is not in the charts, escaped")
	}
	if !strings.Contains(pg, "<title>rdmabench report</title>") {
		t.Error("the default title")
	}
}

// vgsvg escapes what it draws; svgText removes what XML forbids.
func TestSVGTextIsXML(t *testing.T) {
	p := newPlot(svgText("a <b> & \"c\" 'd' \x00\x1b[31m \ufffe", 200), "x", "y")
	svg, err := render(3*vg.Inch, 2*vg.Inch, func(dc draw.Canvas) { p.Draw(dc) })
	if err != nil {
		t.Fatal(err)
	}
	checkSVGs(t, string(svg), 1)
	if strings.HasPrefix(string(svg), "<?xml") || !strings.HasPrefix(string(svg), "<svg") {
		t.Errorf("the chart must start with <svg>: %.40s", svg)
	}
}

func TestDeterministic(t *testing.T) {
	_, a := makePage(t, nil, "gen1.ndjson", "gen2.ndjson", "demo4-tuned.json")
	_, b := makePage(t, nil, "gen1.ndjson", "gen2.ndjson", "demo4-tuned.json")
	if a != b {
		t.Fatal("two pages of the same inputs differ")
	}
}

func TestLabels(t *testing.T) {
	ss, err := Build(readFiles(t, "gen1.ndjson", "gen2.ndjson"), []string{"cx5", "cx6"})
	if err != nil || ss[0].Label != "cx5" || ss[1].Label != "cx6" {
		t.Fatalf("%v %v", ss, err)
	}
	// The tuned report joins its stream: 1 series, 1 label.
	if _, err := Build(readFiles(t, "demo4-tuned.json", "demo4-sweep.ndjson"), []string{"a", "b"}); !errors.Is(err, ErrLabels) ||
		!strings.Contains(err.Error(), "2 given for 1 series (demo4-sweep.ndjson + demo4-tuned.json)") {
		t.Fatalf("want ErrLabels, got %v", err)
	}
}

// A tuned report joins the results of its device wherever it stands; one of another
// device stands alone, drawn from its point summaries.
func TestTunedReportPairing(t *testing.T) {
	ss, err := Build(readFiles(t, "demo4-tuned.json", "gen1.ndjson", "demo4-sweep.ndjson"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 2 || ss[0].Label != "gen1.ndjson" || ss[1].Tuned == nil || ss[1].Label != "demo4-sweep.ndjson" {
		t.Fatalf("series: %v", names(ss))
	}
	alone, err := Build(readFiles(t, "gen1.ndjson", "demo4-tuned.json"), nil)
	if err != nil || len(alone) != 2 || alone[1].Tuned == nil || alone[1].Results != nil || alone[1].Label != "demo4-tuned.json" {
		t.Fatalf("a tuned report of another device must stand alone: %v %v", names(alone), err)
	}
	var buf bytes.Buffer
	if err := Write(&buf, alone[1:], Options{}); err != nil {
		t.Fatal(err)
	}
	pg := buf.String()
	// 2 throughput and 2 heat maps from the summaries; no latency (no histogram).
	checkSVGs(t, pg, 4)
	if !strings.Contains(pg, "From the tuned report&#39;s point summaries") || !strings.Contains(pg, "No latency histograms") {
		t.Error("a tuned report alone must say what its charts come from")
	}
}

func names(ss []*Series) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.Label)
	}
	return out
}

func TestUnreadableInputNamesTheFile(t *testing.T) {
	for _, data := range []string{"not json", `{"schema_version":2,"op":"write"}`, `{"schema_version":2,"ops":{"write":{}}}`, ""} {
		_, err := Build([]File{{Path: "dir/broken.json", Data: []byte(data)}}, nil)
		if err == nil || !strings.HasPrefix(err.Error(), "dir/broken.json: ") {
			t.Errorf("%q: want an error naming the file, got %v", data, err)
		}
	}
	if err := Write(io.Discard, nil, Options{}); err == nil {
		t.Error("no series: want an error")
	}
}

// The spectrum stops at the highest percentile the samples support.
func TestSpectrumStopsWhereTheSamplesStop(t *testing.T) {
	for _, tc := range []struct {
		n    int
		last float64 // x of the last point
	}{{1000, 2}, {19, math.NaN()}, {20, math.Log10(2)}, {5000, math.Log10(500)}, {200000, 4}} {
		s := make([]int64, tc.n)
		for i := range s {
			s[i] = int64(1000 + i)
		}
		h, _ := result.FromSamples(s)
		xys := spectrum(&latCurve{Hist: h})
		if math.IsNaN(tc.last) {
			if len(xys) != 0 {
				t.Errorf("%d samples: no percentile is supported, got %d points", tc.n, len(xys))
			}
			continue
		}
		if len(xys) == 0 || math.Abs(xys[len(xys)-1].X-tc.last) > 1e-9 {
			t.Errorf("%d samples: the spectrum must end at x=%.4f, got %v", tc.n, tc.last, xys[len(xys)-1:])
			continue
		}
		for _, xy := range xys {
			if p := 1 - math.Pow(10, -xy.X); !result.Supported(p-1e-12, uint64(tc.n)) {
				t.Errorf("%d samples: p%.4f drawn, unsupported", tc.n, 100*p)
			}
		}
	}
}

func TestWelchRatio(t *testing.T) {
	a := []float64{10, 10.1, 9.9, 10.05}
	r, lo, hi := welchRatio(a, []float64{10.02, 9.95, 10.1, 10})
	if !(lo < 1 && hi > 1) || math.Abs(r-1) > 0.01 {
		t.Errorf("the same level: %v [%v, %v] must include 1", r, lo, hi)
	}
	r, lo, hi = welchRatio(a, []float64{12, 12.1, 11.9})
	if !(lo > 1) || math.Abs(r-1.2) > 0.01 || !(hi > r && lo < r) {
		t.Errorf("20%% faster: %v [%v, %v] must exclude 1", r, lo, hi)
	}
	rows := compareCells([]*cell{{Key: "k", BW: []float64{1}, BWMed: 1, Runs: 1}, {Key: "a", BW: a, BWMed: 10, Runs: 4}},
		[]*cell{{Key: "k", BW: []float64{2}, BWMed: 2, Runs: 1}, {Key: "b", BW: a, BWMed: 10, Runs: 4}})
	classes := map[string]string{}
	for _, r := range rows {
		classes[r.Key] = r.Class
	}
	if classes["k"] != clsOneRun || classes["a"] != clsOnlyA || classes["b"] != clsOnlyB {
		t.Errorf("classes: %v", classes)
	}
}

// Inputs at the edges still give a page whose charts parse: failed runs only, a run
// that measured no bandwidth, a latency test too short for any percentile, a tuned
// report with nothing in it.
func TestOddInputsStillMakeAPage(t *testing.T) {
	base := result.Result{SchemaVersion: result.SchemaVersion, Config: result.Config{Op: "write", Test: result.BW, MsgSizeBytes: 4096, SQDepth: 16, CQMod: 1, PostList: 1, NumQPs: 1}}
	failed := base
	failed.Error = "no progress"
	zero := base
	zero.Iterations = 10 // no duration: no bandwidth
	h, m := result.FromSamples([]int64{900, 1000, 1100, 1200, 5000})
	short := base
	short.Config.Test, short.Config.Op, short.Iterations, short.LatKind = "lat", "read", 5, "read_completion"
	short.Lat, short.Histogram, _ = result.NewLatency(h, m)
	enc := func(rs ...result.Result) []byte {
		var buf bytes.Buffer
		if err := result.WriteAll(result.NewNDJSONEncoder(&buf), rs); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	for name, files := range map[string][]File{
		"failed only": {{Path: "f.ndjson", Data: enc(failed)}},
		"zero bw":     {{Path: "z.ndjson", Data: enc(zero, zero)}, {Path: "b.ndjson", Data: enc(zero)}},
		"short lat":   {{Path: "s.ndjson", Data: enc(short)}},
		"empty tuned": {{Path: "t.json", Data: []byte(`{"schema_version":4,"ops":{"write":{"op":"write"}}}`)}},
	} {
		ss, err := Build(files, nil)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		var buf bytes.Buffer
		if err := Write(&buf, ss, Options{}); err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		n, _ := Charts(ss)
		checkSVGs(t, buf.String(), n)
		checkSelfContained(t, buf.String())
	}
}

// A unidirectional run against a bidirectional one, or another MTU, measured different
// things: the comparison says which field differs, and shows no change (a reviewer saw
// 10 Gb/s against 6 Gb/s bidirectional compared as "-40.0%").
func TestComparisonSaysWhatIsNotComparable(t *testing.T) {
	run := func(size int, gbps float64, set func(*result.Config)) result.Result {
		r := result.Result{SchemaVersion: result.SchemaVersion, Config: result.Config{Op: "write", Test: result.BW, MsgSizeBytes: size, DurationS: 2,
			SQDepth: 128, CQMod: 100, PostList: 1, NumQPs: 1}}
		if set != nil {
			set(&r.Config)
		}
		r.SetThroughput(uint64(gbps*1e9/8*2/float64(size)), size, 2_000_000_000)
		return r
	}
	bidi := func(c *result.Config) { c.Bidirectional = true }
	mtu := func(n int) func(*result.Config) { return func(c *result.Config) { c.MTUBytes = n } }
	enc := func(rs ...result.Result) []byte {
		var buf bytes.Buffer
		if err := result.WriteAll(result.NewNDJSONEncoder(&buf), rs); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	a := enc(run(65536, 10, nil), run(65536, 10.1, nil), run(4096, 4, mtu(1024)), run(4096, 4.1, mtu(1024)), run(1024, 1, mtu(2048)), run(1024, 1.01, mtu(2048)))
	b := enc(run(65536, 6, bidi), run(65536, 6.1, bidi), run(4096, 5, mtu(4096)), run(4096, 5.1, mtu(4096)), run(1024, 1.2, mtu(2048)), run(1024, 1.21, mtu(2048)))
	ss, err := Build([]File{{Path: "uni.ndjson", Data: a}, {Path: "bidi.ndjson", Data: b}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rows := compareCells(ss[0].cells("bw"), ss[1].cells("bw"))
	classes := map[string]string{}
	for _, r := range rows {
		classes[r.Key] = r.Class
	}
	const k64 = "write bw 64K qps=1 depth=128 post=1 cqmod=100 off=0 inline=0"
	const k4 = "write bw 4K qps=1 depth=128 post=1 cqmod=100 off=0 inline=0"
	const k1 = "write bw 1K qps=1 depth=128 post=1 cqmod=100 off=0 inline=0 mtu=2048"
	for k, want := range map[string]string{
		k64: clsOnlyA, k64 + " bidirectional": "not comparable: bidirectional differs",
		k4 + " mtu=1024": clsOnlyA, k4 + " mtu=4096": "not comparable: mtu differs",
		k1: clsFaster,
	} {
		if classes[k] != want {
			t.Errorf("%s: class %q, want %q", k, classes[k], want)
		}
	}
	if len(classes) != 5 {
		t.Errorf("classes: %v", classes)
	}
	var buf bytes.Buffer
	if err := Write(&buf, ss, Options{}); err != nil {
		t.Fatal(err)
	}
	pg := buf.String()
	for _, bad := range []string{"-40.0%", "-39.", "+25.0%", "+24."} {
		if strings.Contains(pg, bad) {
			t.Errorf("the page has a change %q between different measurements", bad)
		}
	}
	for _, want := range []string{"not comparable: bidirectional differs", "not comparable: mtu differs", "2 not comparable", "1 faster (beyond the noise)"} {
		if !strings.Contains(pg, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	n, _ := Charts(ss)
	checkSVGs(t, pg, n)
}
