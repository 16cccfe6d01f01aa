//go:build e2e

// Package e2e runs rdmabench against a real verbs device: Soft-RoCE in the test bed
// (test/rxevm) or a device on the host. Nothing here fakes RDMA. The environment says
// what to use (test/e2e/run.sh sets it):
//
//	RDMABENCH_BIN        the rdmabench binary
//	E2E_SRV_DEV E2E_SRV_IP  the server's device and the IPv4 address of its netdev
//	E2E_CLI_DEV          the client's device for the two-device shape ("" to skip it)
//	E2E_NO_DEVICE=1      only TestNoDevice runs (a host without RDMA)
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/oob"
	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/verbs"
)

var (
	bin    = os.Getenv("RDMABENCH_BIN")
	srvDev = os.Getenv("E2E_SRV_DEV")
	srvIP  = os.Getenv("E2E_SRV_IP")
	cliDev = os.Getenv("E2E_CLI_DEV")
	noDev  = os.Getenv("E2E_NO_DEVICE") == "1"
	port   atomic.Int32
)

func TestMain(m *testing.M) {
	if bin == "" || (!noDev && (srvDev == "" || srvIP == "")) {
		fmt.Fprintln(os.Stderr, "e2e: set RDMABENCH_BIN, E2E_SRV_DEV and E2E_SRV_IP (test/e2e/run.sh does)")
		os.Exit(2)
	}
	port.Store(18700)
	os.Exit(m.Run())
}

func needDevice(t *testing.T) {
	if noDev {
		t.Skip("E2E_NO_DEVICE=1: this run checks the no-device path only")
	}
}

// shapes are the two test-bed shapes: one device in loopback, two devices as two hosts.
func shapes() map[string]string {
	s := map[string]string{"loop": srvDev}
	if cliDev != "" && cliDev != srvDev {
		s["pair"] = cliDev
	}
	return s
}

// signalAndWait sends sig and says whether the process ended within d (it is killed
// if not).
func signalAndWait(cmd *exec.Cmd, sig os.Signal, d time.Duration) bool {
	cmd.Process.Signal(sig)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		cmd.Process.Kill()
		return false
	}
}

func run(t *testing.T, args ...string) (string, int) {
	t.Helper()
	return runWithin(t, 120*time.Second, args...)
}

// runWithin is run with a bound of its own, for a command that bounds itself (a
// sweep's --budget) by more than run's two minutes.
func runWithin(t *testing.T, bound time.Duration, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return string(out), code
}

// startServer runs an rdmabench server on a fresh port and stops it at the end of the test.
func startServer(t *testing.T, extra ...string) int {
	t.Helper()
	p := int(port.Add(1))
	args := append([]string{"server", "-d", srvDev, "--bind", srvIP, "-p", fmt.Sprint(p), "--timeout", "10s"}, extra...)
	cmd := exec.Command(bin, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !signalAndWait(cmd, syscall.SIGTERM, 10*time.Second) {
			t.Errorf("server did not stop on SIGTERM")
		}
		if t.Failed() {
			t.Logf("server log:\n%s", out.String())
		}
	})
	if !listening(p) {
		t.Fatalf("server did not listen on %d:\n%s", p, out.String())
	}
	return p
}

// listening waits up to 30 s for a server on port p.
func listening(p int) bool {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.Dial("tcp", net.JoinHostPort(srvIP, fmt.Sprint(p))); err == nil {
			c.Close()
			return true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}

func client(op, test, dev string, port int, extra ...string) []string {
	return append([]string{op, test, "-d", dev, "-p", fmt.Sprint(port), srvIP}, extra...)
}

// measure runs a client, checks its exit code, validates and returns its JSON result.
func measure(t *testing.T, args ...string) result.Result {
	t.Helper()
	file := filepath.Join(t.TempDir(), "r.json")
	out, code := run(t, append(args, "--json", file)...)
	if code != 0 {
		t.Fatalf("rdmabench %s: exit %d\n%s", strings.Join(args, " "), code, out)
	}
	doc, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := result.Validate(doc); err != nil {
		t.Fatalf("result does not validate against result/schema.json: %v\n%s", err, doc)
	}
	var r result.Result
	if err := json.Unmarshal(doc, &r); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s %s %d B: %.3f Gb/s %.4f Mpps, lat p50 %s us p99 %s us (%d samples, %s)",
		r.Config.Op, r.Config.Test, r.Config.MsgSizeBytes, r.BWGbps, r.MsgRateMpps,
		us(r.Lat.P50), us(r.Lat.P99), r.Lat.Samples, r.LatKind)
	return r
}

// us formats a percentile that may be unsupported by the sample count.
func us(p *int64) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprintf("%.2f", float64(*p)/1e3)
}

func TestNoDevice(t *testing.T) {
	if !noDev {
		t.Skip("devices are present")
	}
	out, code := run(t, "devices")
	if code != 1 || !strings.Contains(out, "no RDMA device found") || !strings.Contains(out, "rdma link add") {
		t.Fatalf("want exit 1 and the Soft-RoCE hint, got exit %d:\n%s", code, out)
	}
	if strings.Contains(out, "goroutine") || strings.Count(strings.TrimSpace(out), "\n") > 0 {
		t.Fatalf("want one line, no stack trace:\n%s", out)
	}
}

func TestDevicesReportsSoftRoCE(t *testing.T) {
	needDevice(t)
	out, code := run(t, "devices", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	var doc struct {
		SchemaVersion int                `json:"schema_version"`
		Devices       []verbs.DeviceInfo `json:"devices"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.SchemaVersion != 1 {
		t.Fatalf("devices --json: %v (schema_version %d)\n%s", err, doc.SchemaVersion, out)
	}
	devs := doc.Devices
	want := map[string]bool{srvDev: true, cliDev: cliDev != ""}
	for _, d := range devs {
		if !want[d.Name] {
			continue
		}
		delete(want, d.Name)
		if d.Driver == "rxe" && (d.Model != "Soft-RoCE (rxe)" || d.VendorID != 0xffffff) {
			t.Errorf("%s: rxe device reported as %q vendor 0x%x", d.Name, d.Model, d.VendorID)
		}
		if len(d.Ports) == 0 || d.Ports[0].State != "ACTIVE" || d.Ports[0].ActiveMTU == 0 {
			t.Errorf("%s: want an ACTIVE port with an MTU, got %+v", d.Name, d.Ports)
			continue
		}
		v4 := false
		for _, g := range d.Ports[0].GIDs {
			ip := net.ParseIP(g.GID)
			if g.Type == "RoCE v2" && ip != nil && ip.To4() != nil && g.Netdev != "" {
				v4 = true
			}
		}
		if d.Ports[0].LinkLayer == "Ethernet" && !v4 {
			t.Errorf("%s: no RoCE v2 IPv4-mapped GID with a netdev: %+v", d.Name, d.Ports[0].GIDs)
		}
	}
	for name, missing := range want {
		if missing {
			t.Errorf("device %s not listed:\n%s", name, out)
		}
	}
}

func TestWrongDevice(t *testing.T) {
	needDevice(t)
	out, code := run(t, "server", "-d", "nosuch0")
	if code != 1 || !strings.Contains(out, `"nosuch0" not found`) || !strings.Contains(out, srvDev) {
		t.Fatalf("want exit 1 naming the device and the available ones, got %d:\n%s", code, out)
	}
}

func TestBandwidthVerified(t *testing.T) {
	needDevice(t)
	p := startServer(t)
	for shape, dev := range shapes() {
		for _, op := range []string{"write", "read"} {
			t.Run(shape+"/"+op, func(t *testing.T) {
				r := measure(t, client(op, "bw", dev, p, "-s", "64K", "-n", "300", "--verify")...)
				if r.Iterations != 300 || r.Bytes != 300*65536 || r.BWGbps <= 0 || r.MsgRateMpps <= 0 {
					t.Fatalf("counts: %d msgs, %d bytes, %v Gb/s", r.Iterations, r.Bytes, r.BWGbps)
				}
				if r.Verify == nil || !r.Verify.OK || r.Verify.CheckedBytes != 128*65536 {
					t.Fatalf("verification: %+v", r.Verify)
				}
				// 64 KiB messages are signalled one by one (perftest's default above 8 KiB):
				// 300 samples support p50 and p90, not p99.
				if r.Lat.Samples != 300 || r.Lat.Min <= 0 || r.Lat.P90 == nil || r.Lat.P99 != nil || r.Histogram == "" {
					t.Fatalf("bandwidth runs must report completion latency, and only the percentiles 300 samples support: %+v", r.Lat)
				}
				if r.Client.Name != dev || r.ServerDevice.Name != srvDev || r.PathMTU == 0 {
					t.Fatalf("identity: client %s server %s mtu %d", r.Client.Name, r.ServerDevice.Name, r.PathMTU)
				}
			})
		}
	}
}

func TestLatency(t *testing.T) {
	needDevice(t)
	p := startServer(t)
	for shape, dev := range shapes() {
		for _, op := range []string{"write", "read"} {
			t.Run(shape+"/"+op, func(t *testing.T) {
				r := measure(t, client(op, "lat", dev, p, "-n", "500")...)
				l := r.Lat
				if l.Samples != 500 || r.WarmupDone == 0 {
					t.Fatalf("want 500 samples after a warm-up, got %d (warm-up %d)", l.Samples, r.WarmupDone)
				}
				// 500 samples support p50 and p90, not p99 (it would be the 5th largest of 500).
				if l.P50 == nil || l.P90 == nil || l.P99 != nil {
					t.Fatalf("percentiles supported by 500 samples: want p50 and p90 only: %+v", l)
				}
				if !(l.Min > 0 && l.Min <= *l.P50 && *l.P50 <= *l.P90 && *l.P90 <= l.Max && l.Stdev >= 0) {
					t.Fatalf("inconsistent distribution: %+v", l)
				}
				h, err := result.DecodeHistogram(r.Histogram)
				if err != nil || h.TotalCount() != 500 {
					t.Fatalf("embedded histogram: %v, count %d", err, h.TotalCount())
				}
			})
		}
	}
}

func TestMultiQPPostListModeration(t *testing.T) {
	needDevice(t)
	p := startServer(t)
	r := measure(t, client("write", "bw", srvDev, p, "-s", "4K", "-n", "400", "-q", "2", "-t", "64", "-l", "4", "-Q", "8", "--offset", "64")...)
	if r.Iterations != 800 || r.Config.NumQPs != 2 || r.Config.BufOffsetBytes != 64 {
		t.Fatalf("want 800 messages over 2 QPs, got %d", r.Iterations)
	}
	if r.Lat.Samples != 100 {
		t.Fatalf("with cq-mod 8, 800 WRs give 100 signalled completions; got %d", r.Lat.Samples)
	}
}

func TestTokenRequired(t *testing.T) {
	needDevice(t)
	p := startServer(t, "--token", "s3cret")
	out, code := run(t, client("write", "bw", srvDev, p, "-n", "10")...)
	if code != 1 || !strings.Contains(out, "authentication failed") {
		t.Fatalf("a client without the token must be refused with exit 1, got %d:\n%s", code, out)
	}
	out, code = run(t, client("write", "bw", srvDev, p, "-n", "10", "--token", "wrong")...)
	if code != 1 || !strings.Contains(out, "authentication failed") {
		t.Fatalf("a wrong token must be refused, got %d:\n%s", code, out)
	}
	measure(t, client("write", "bw", srvDev, p, "-n", "50", "-s", "4K", "--token", "s3cret")...)
}

func TestMaxBufferRefused(t *testing.T) {
	needDevice(t)
	p := startServer(t, "--max-buffer", "80K") // 64 KiB and the queues fit, 1 MiB does not
	out, code := run(t, client("read", "bw", srvDev, p, "-s", "1M", "-n", "10")...)
	if code != 1 || !strings.Contains(out, "--max-buffer") {
		t.Fatalf("a plan above --max-buffer must be refused with exit 1, got %d:\n%s", code, out)
	}
	measure(t, client("read", "bw", srvDev, p, "-s", "64K", "-n", "50")...) // the server still serves
}

func TestMalformedHandshakeDoesNotKillServer(t *testing.T) {
	needDevice(t)
	p := startServer(t)
	addr := net.JoinHostPort(srvIP, fmt.Sprint(p))
	for name, junk := range map[string][]byte{
		"garbage":     []byte("GET / HTTP/1.0\r\n\r\n"),
		"oversized":   append([]byte{'R', 'D', 'M', 'B', 0, oob.Version}, 0x7f, 0xff, 0xff, 0xff),
		"bad version": append([]byte("RDMB\x00\x09"), 0, 0, 0, 2, '{', '}'),
		"bad json":    append([]byte{'R', 'D', 'M', 'B', 0, oob.Version}, 0, 0, 0, 5, '{', 'x', 'x', 'x', '}'),
	} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		c.Write(junk)
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		reply := make([]byte, 4096)
		n, _ := c.Read(reply)
		c.Close()
		if !bytes.Contains(reply[:n], []byte(`"type":"error"`)) {
			t.Errorf("%s: want an error frame back, got %q", name, reply[:n])
		}
	}
	measure(t, client("write", "bw", srvDev, p, "-n", "50", "-s", "4K")...)
}

func TestInterruptKeepsResults(t *testing.T) {
	needDevice(t)
	p := startServer(t)
	file := filepath.Join(t.TempDir(), "r.json")
	cmd := exec.Command(bin, client("write", "bw", srvDev, p, "-s", "4K", "-D", "60", "--json", file)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(4 * time.Second)
	if !signalAndWait(cmd, os.Interrupt, 20*time.Second) {
		t.Fatalf("client did not stop on Ctrl-C:\n%s", out.String())
	}
	doc, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("no results written after Ctrl-C: %v\n%s", err, out.String())
	}
	var r result.Result
	json.Unmarshal(doc, &r)
	if !r.Interrupted || r.Iterations == 0 || r.DurationNS >= 60e9 {
		t.Fatalf("want an interrupted result with what was measured, got interrupted=%v msgs=%d", r.Interrupted, r.Iterations)
	}
	measure(t, client("read", "lat", srvDev, p, "-n", "50")...) // the server still serves
}

func TestPerftestSanity(t *testing.T) {
	needDevice(t)
	if _, err := exec.LookPath("ib_write_bw"); err != nil {
		t.Fatal("perftest is not installed: run 'make setup'")
	}
	dev := srvDev
	if cliDev != "" {
		dev = cliDev
	}
	// The scripts' perftest runner (retries, GIDs from `rdmabench devices --gid`).
	sh := `. test/rxevm/guest-lib.sh && rb_gid "$SRV_DEV" && SRV_GID=$RB_GID_INDEX && rb_gid "$CLI_DEV" && CLI_GID=$RB_GID_INDEX &&
		PT_DIR=$(mktemp -d) && pt ib_write_bw -n 200 -s 65536 && cat "$PT_DIR/pt-cli.log"`
	cmd := exec.Command("bash", "-c", sh)
	cmd.Dir = filepath.Dir(filepath.Dir(bin)) // the repository: bin is its bin/rdmabench
	cmd.Env = append(os.Environ(), "RDMABENCH_BIN="+bin, "SRV_DEV="+srvDev, "CLI_DEV="+dev, "SRV_IP="+srvIP, fmt.Sprint("PT_PORT=", port.Add(10)))
	out, err := cmd.CombinedOutput()
	port.Add(10)
	if err != nil || !strings.Contains(string(out), "65536") {
		t.Fatalf("ib_write_bw between %s and %s failed: %v\n%s", dev, srvDev, err, out)
	}
	t.Logf("ib_write_bw %s -> %s passed", dev, srvDev)
}

func TestSweepStreamsAndResumes(t *testing.T) {
	needDevice(t)
	p := startServer(t)
	dir := t.TempDir()
	prof := filepath.Join(dir, "tiny.yaml")
	// A 4-point grid: enough to exercise search, choice, report and resume for real.
	os.WriteFile(prof, []byte(`name: tiny
description: a tiny grid for the e2e test
match: {drivers: [rxe], vendor_ids: [0xffffff], vendor_part_ids: [0]}
link_gbit_per_s: 10
point_duration_s: 0.1
warmup_iterations: 4
grid:
  write: {msg_size_bytes: [4096, 16384], sq_depth: [16, 64], buf_offset_bytes: [0], cq_mod: [8], post_list: [1]}
  read: {msg_size_bytes: [4096], sq_depth: [16], buf_offset_bytes: [0], cq_mod: [8], post_list: [1]}
start:
  write: {msg_size_bytes: 4096, sq_depth: 16, buf_offset_bytes: 0, cq_mod: 8, post_list: 1}
  read: {msg_size_bytes: 4096, sq_depth: 16, buf_offset_bytes: 0, cq_mod: 8, post_list: 1}
reference:
  write: {msg_size_bytes: [65536, 131072], sq_depth: [512, 512], buf_offset_bytes: [0, 0], cq_mod: [8, 16]}
  read: {msg_size_bytes: [32768, 65536], sq_depth: [1024, 1024], buf_offset_bytes: [0, 0], cq_mod: [4, 8]}
`), 0o644)
	stream, tuned := filepath.Join(dir, "s.ndjson"), filepath.Join(dir, "t.json")
	// The sweep holds its --budget, so the command's bound is that budget and a minute
	// for the probe's first runs, the report and the page, whatever the bed's speed: on
	// a quiet 2-core host it ends on its own after about 110 s.
	const budget = 150 * time.Second
	args := []string{"sweep", "-d", srvDev, "-p", fmt.Sprint(p), srvIP, "--profile", prof, "--ops", "write", "--search", "grid", "--repeat", "2", "--budget", budget.String()}
	page := filepath.Join(dir, "report.html")
	out, code := runWithin(t, budget+time.Minute, append(args, "--records", stream, "--json", tuned, "--html", page)...)
	if code != 0 || !strings.Contains(out, "message size") {
		t.Fatalf("sweep: exit %d\n%s", code, out)
	}
	if html, _ := os.ReadFile(page); strings.Count(string(html), "<svg") < 2 {
		t.Errorf("sweep --html: %d bytes, %d charts", len(html), strings.Count(string(html), "<svg"))
	}
	f, _ := os.Open(stream)
	rs, err := result.ReadAll(f)
	f.Close()
	// 4 grid points, then at least 2 final runs of the chosen point and of perftest's
	// defaults (off the tiny grid); how many more, the statistics decide.
	if err != nil || len(rs) < 4+2+1 {
		t.Fatalf("stream: %d results, %v", len(rs), err)
	}
	doc, _ := os.ReadFile(tuned)
	if !strings.Contains(string(doc), `"points_measured": 4`) {
		t.Fatalf("tuned report:\n%s", doc)
	}
	// Within its budget the message-rate optimum has final rounds of its own, as the
	// bandwidth one does; one that the budget did not reach says it is the best measured.
	var tr struct {
		Ops map[string]struct {
			BudgetExhausted bool `json:"budget_exhausted"`
			Optima          map[string]struct {
				Basis      string `json:"basis"`
				Contenders int    `json:"contenders"`
			} `json:"optima"`
		} `json:"ops"`
	}
	if err := json.Unmarshal(doc, &tr); err != nil {
		t.Fatal(err)
	}
	switch w, r := tr.Ops["write"], tr.Ops["write"].Optima["rate"]; {
	case w.BudgetExhausted && r.Basis == "best_measured":
		t.Logf("the budget ran out before the rate optimum's final rounds: it is the best measured, as it says")
	case r.Basis != "searched" || r.Contenders < 1:
		t.Errorf("the rate optimum was not confirmed in final rounds (budget exhausted: %v): %+v", w.BudgetExhausted, r)
	}
	out, code = runWithin(t, budget+time.Minute, append(args, "--resume", stream)...)
	if code != 0 || !strings.Contains(out, fmt.Sprintf("write: 4 points (0 runs, %d reused)", len(rs))) {
		t.Fatalf("resume must re-measure nothing: exit %d\n%s", code, out)
	}
	out, code = run(t, "report", "check", stream, "--min-bw", "1000")
	if code != 1 || strings.Count(out, "FAIL") != len(rs) {
		t.Fatalf("report check must fail every point below 1000 Gb/s: exit %d\n%s", code, out)
	}
}

func TestCompletionEventsAndCQModeration(t *testing.T) {
	needDevice(t)
	p := startServer(t)
	// rxe completes transfers inside ibv_post_send in loopback, and small ones across
	// the veth pair too: only large ones between two devices leave the CQ empty and make
	// the loop sleep. 1 MiB messages, one in flight, from the second device if there is one.
	dev := srvDev
	if cliDev != "" {
		dev = cliDev
	}
	for _, op := range []string{"write", "read"} {
		r := measure(t, client(op, "bw", dev, p, "-s", "1M", "-n", "20", "-t", "1", "-Q", "1", "--events", "--verify")...)
		if r.Iterations != 20 || !r.Verify.OK || r.CQEvents == 0 || r.CQEvents > 20 {
			t.Fatalf("%s with events: %d msgs, %d events (want 1..20), verify %+v", op, r.Iterations, r.CQEvents, r.Verify)
		}
	}
	// CQ moderation needs ibv_modify_cq: where the device has it the run must work,
	// where it does not (rxe) the error must name the verb and the way out.
	file := filepath.Join(t.TempDir(), "m.json")
	out, code := run(t, client("write", "bw", srvDev, p, "-s", "16K", "-n", "200", "--events", "--cq-moderation", "16", "--cq-moderation-usec", "20", "--json", file)...)
	switch {
	case code == 0:
		doc, _ := os.ReadFile(file)
		if err := result.Validate(doc); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s supports CQ moderation", srvDev)
	case code == 1 && strings.Contains(out, "ibv_modify_cq(moderation 16 completions / 20 us)") && strings.Contains(out, "--cq-moderation"):
		t.Logf("%s: %s", srvDev, strings.TrimSpace(out))
	default:
		t.Fatalf("--cq-moderation: exit %d\n%s", code, out)
	}
	if out, code := run(t, client("write", "bw", srvDev, p, "--cq-moderation", "16")...); code != 2 || !strings.Contains(out, "add --events") {
		t.Fatalf("--cq-moderation without --events is a usage error: exit %d\n%s", code, out)
	}
}
