//go:build e2e

package e2e

// The loops' honesty on a real device: every combination the command line accepts
// completes, several QPs measure something in duration mode, verification covers the
// measured transfers, and a stalled or dead peer ends a run with an error, never a hang
// and never exit 0.

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/result"
)

func TestDurationWithSeveralQPs(t *testing.T) {
	needDevice(t)
	p := startServer(t)
	for _, q := range []string{"4", "8"} {
		for _, op := range []string{"write", "read"} {
			r := measure(t, client(op, "bw", srvDev, p, "-s", "4K", "-D", "2", "-q", q)...)
			if r.Iterations == 0 || r.Bytes != r.Iterations*4096 || r.BWGbps <= 0 {
				t.Fatalf("%s -D 2 -q %s measured %d messages, %d bytes", op, q, r.Iterations, r.Bytes)
			}
			if r.DurationNS < 19e8 || r.DurationNS > 40e8 {
				t.Fatalf("%s -D 2 -q %s: window %d ns, want about 2 s", op, q, r.DurationNS)
			}
		}
	}
}

// These post-list / depth / moderation combinations used to deadlock the loop: a chain
// was posted only whole, and no signalled WR was left outstanding.
func TestPostListCombinationsComplete(t *testing.T) {
	needDevice(t)
	p := startServer(t)
	for _, c := range [][]string{
		{"-t", "128", "-l", "64"},
		{"-t", "100", "-l", "8"},
		{"-t", "64", "-l", "32", "-Q", "50"},
		{"-t", "16", "-l", "16", "-Q", "10"},
	} {
		r := measure(t, client("write", "bw", srvDev, p, append([]string{"-s", "1K", "-n", "777"}, c...)...)...)
		if r.Iterations != 777 {
			t.Fatalf("%v: %d of 777 messages", c, r.Iterations)
		}
		r = measure(t, client("read", "bw", srvDev, p, append([]string{"-s", "1K", "-D", "0.5"}, c...)...)...)
		if r.Iterations == 0 {
			t.Fatalf("%v -D 0.5: nothing measured", c)
		}
	}
}

func TestVerifyCoversEverySlot(t *testing.T) {
	needDevice(t)
	p := startServer(t)
	for _, c := range []struct {
		op    string
		args  []string
		slots int
	}{
		{"write", []string{"-s", "64", "-q", "4", "-n", "1000"}, 4 * 128},
		{"read", []string{"-s", "100", "-q", "2", "-t", "7", "-Q", "3", "-n", "333"}, 2 * 7},
		{"write", []string{"-s", "1M", "-n", "50"}, 50},
		{"read", []string{"-s", "3", "-t", "1", "-Q", "1", "-n", "1"}, 1},
	} {
		r := measure(t, client(c.op, "bw", srvDev, p, append(c.args, "--verify")...)...)
		if r.Verify == nil || !r.Verify.OK || r.Verify.Slots != c.slots || r.Verify.CheckedBytes != c.slots*r.Config.MsgSizeBytes {
			t.Fatalf("%s %v: verification %+v, want %d slots checked", c.op, c.args, r.Verify, c.slots)
		}
	}
}

// runFailing runs a client that is expected to fail: exit 1 within limit, with a JSON
// result that says why.
func runFailing(t *testing.T, limit time.Duration, during func(), args ...string) result.Result {
	t.Helper()
	file := filepath.Join(t.TempDir(), "r.json")
	cmd := exec.Command(bin, append(args, "--json", file)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	if during != nil {
		during()
	}
	select {
	case <-done:
	case <-time.After(limit - time.Since(start)):
		cmd.Process.Kill()
		<-done
		t.Fatalf("%v: still running after %v:\n%s", args, limit, out.String())
	}
	if code := cmd.ProcessState.ExitCode(); code != 1 {
		t.Fatalf("%v: exit %d, want 1:\n%s", args, code, out.String())
	}
	doc, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v: no JSON result: %v\n%s", args, err, out.String())
	}
	var r result.Result
	if err := json.Unmarshal(doc, &r); err != nil || r.Error == "" {
		t.Fatalf("%v: the JSON result must carry the error: %v\n%s", args, err, doc)
	}
	t.Logf("%s %s failed after %v as it should: %s", r.Config.Op, r.Config.Test, time.Since(start).Round(time.Millisecond), r.Error)
	return r
}

// netem drops every packet leaving dev for d.
func netem(t *testing.T, dev string, after, d time.Duration) func() {
	return func() {
		time.Sleep(after)
		if out, err := exec.Command("tc", "qdisc", "add", "dev", dev, "root", "netem", "loss", "100%").CombinedOutput(); err != nil {
			t.Errorf("tc netem on %s: %v %s", dev, err, out)
			return
		}
		time.Sleep(d)
		exec.Command("tc", "qdisc", "del", "dev", dev, "root").Run()
	}
}

// A peer that stops answering mid-run (every packet dropped): the run ends with an
// error, with --events too, and its --verify does not say "verified".
func TestStalledPeerEndsTheRun(t *testing.T) {
	needDevice(t)
	if cliDev == "" || cliDev == srvDev {
		t.Skip("needs the two-device shape (a wire to cut)")
	}
	p := startServer(t)
	for _, op := range []string{"write", "read"} {
		for _, extra := range [][]string{{"--events"}, {"--verify"}} {
			args := client(op, "bw", cliDev, p, append([]string{"-s", "64K", "-D", "20", "--timeout", "3s"}, extra...)...)
			r := runFailing(t, 15*time.Second, netem(t, "vethB", time.Second, 4*time.Second), args...)
			if r.Verify != nil && r.Verify.OK {
				t.Fatalf("%s %v: a failed run must not be verified: %+v", op, extra, r.Verify)
			}
		}
	}
}
