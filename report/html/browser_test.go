//go:build browser

package htmlreport

// A real browser renders the page (make browser, in make test): headless Chromium
// (Debian's chromium, installed by make setup) loads the demo fixture's page from a
// file with the network unreachable, dumps the DOM it built and takes a screenshot.

import (
	"bytes"
	"flag"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var screenshotOut = flag.String("screenshot-out", "", "also write the screenshot of the demo page here (docs/report.png)")

func chromium(t *testing.T, args ...string) []byte {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium is not installed (make setup installs Debian's chromium): %v", err)
	}
	// No sandbox: CI runs as root. The proxy points nowhere, so a page that tried to
	// fetch anything would render without it (and the self-contained checks forbid it).
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--hide-scrollbars",
		"--proxy-server=127.0.0.1:9", "--user-data-dir=" + t.TempDir()}
	cmd := exec.Command(bin, append(base, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	done := make(chan struct{})
	var out []byte
	go func() { out, err = cmd.Output(); close(done) }()
	select {
	case <-done:
	case <-time.After(120 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("chromium did not finish within 120 s\n%s", stderr.String())
	}
	if err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, stderr.String())
	}
	return out
}

func TestBrowserRendersTheDemoPage(t *testing.T) {
	_, pg := makePage(t, nil, "demo4-sweep.ndjson", "demo4-tuned.json")
	page := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(page, []byte(pg), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := string(chromium(t, "--dump-dom", "file://"+page))
	if n := strings.Count(dom, "<svg"); n != 5 {
		t.Errorf("the rendered DOM has %d <svg> elements, want 5 (2 throughput, 2 heat maps, 1 latency)", n)
	}
	if !strings.Contains(dom, "cannot tell, at +-21%") {
		t.Error("the rendered DOM lacks the tuned table")
	}
	shot := filepath.Join(t.TempDir(), "shot.png")
	chromium(t, "--screenshot="+shot, "--window-size=1280,2000", "file://"+page)
	b, err := os.ReadFile(shot)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	colours, ink := inked(img)
	t.Logf("screenshot %v: %d colours, %.1f%% of the pixels not white", img.Bounds().Size(), colours, 100*ink)
	if colours < 50 || ink < 0.05 {
		t.Errorf("the screenshot looks blank: %d colours, %.1f%% not white", colours, 100*ink)
	}
	if *screenshotOut != "" {
		if err := os.WriteFile(*screenshotOut, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// inked counts the distinct colours of img and the share of its pixels that are not white.
func inked(img image.Image) (int, float64) {
	seen := map[uint32]bool{}
	var ink, all int
	r := img.Bounds()
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			cr, cg, cb, _ := img.At(x, y).RGBA()
			seen[cr>>8<<16|cg>>8<<8|cb>>8] = true
			if cr < 0xf000 || cg < 0xf000 || cb < 0xf000 {
				ink++
			}
			all++
		}
	}
	return len(seen), float64(ink) / float64(all)
}
