//go:build e2e

package e2e

// What the NIC saw: counters around every run, taint under loss, `counters`, `doctor`.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/counters"
	"github.com/rdmabench/rdmabench/result"
)

func needPair(t *testing.T) {
	needDevice(t)
	if cliDev == "" || cliDev == srvDev {
		t.Skip("needs the two-device shape")
	}
}

func delta(t *testing.T, d *counters.Deltas, name string) uint64 {
	t.Helper()
	if d == nil {
		t.Fatalf("no counters for %s", name)
	}
	c, ok := d.Get(counters.HWPort, name)
	if !ok || c.Delta == nil {
		t.Fatalf("%s: no delta for %s: %+v", d.Device, name, c)
	}
	return *c.Delta
}

// A run on two Soft-RoCE devices: the client sent at least a packet per 1 KiB of
// payload and the server received what the client sent (within 1%). At perftest's QP
// timeout (14: 67 ms) rxe 6.1 retransmits without any loss: its retransmission timer
// is pushed back only when the completer runs out of ACKs to process, and under
// emulation the completer stays busy longer than 67 ms (rxe_comp.c says itself "we
// still might get spurious timeouts"). The counters say so and the run is tainted: the
// test accepts that, but only with retransmission counters as the cause.
//
// What a clean run needs on a slow bed: a QP timeout longer than the completer can stay
// busy. How long that is depends on how slow the bed is (4.3 s, -u 20, was enough where
// this bed ran 3-4 times faster), and it is at most the whole time the QP carries
// traffic. So the clean run's timeout comes from the first run's measured wall time,
// twice over: then no timer can fire while the run lasts, and a run that is still
// tainted has real loss. The bound a NIC would meet, twice the time the queue takes to
// drain at the run's rate (2 x 268 ms: -u 17), is not enough for rxe even on the
// virtual clock, where time is kept: 7 retransmissions and 89 duplicate requests in
// 2000 WRs. rxe's timer, not the bed's noise, needs the longer bound.
func TestCountersAroundARun(t *testing.T) {
	needPair(t)
	p := startServer(t)
	retrans := map[string]bool{"completer_retry_err": true, "rcvd_seq_err": true, "duplicate_request": true, "out_of_seq_request": true}
	check := func(r result.Result) {
		t.Helper()
		sent, rcvd := delta(t, r.Counters.Local, "sent_pkts"), delta(t, r.Counters.Remote, "rcvd_pkts")
		t.Logf("qp-timeout %d: client %s sent_pkts +%d, server %s rcvd_pkts +%d; notes %q; tainted %v: %+v", r.Config.QPTimeout,
			r.Counters.Local.Device, sent, r.Counters.Remote.Device, rcvd, r.Counters.Notes, r.Tainted, r.CountersFlags)
		if sent < 2000*64 || float64(max(sent, rcvd)-min(sent, rcvd)) > 0.01*float64(sent) {
			t.Errorf("want sent_pkts >= %d and rcvd_pkts within 1%% of it", 2000*64)
		}
		for _, f := range r.CountersFlags {
			if f.Taints && !retrans[f.Counter] {
				t.Errorf("without loss, only retransmissions may taint the run: %v", f)
			}
		}
		if r.Tainted != slices.ContainsFunc(r.CountersFlags, func(f counters.Flag) bool { return f.Taints }) || r.Paused {
			t.Errorf("tainted %v, paused %v: tainted must be whether a flag taints, and Soft-RoCE has no pause frames", r.Tainted, r.Paused)
		}
		if !slices.Contains(r.Counters.Notes, "counters are port-wide: other traffic on either port moves them too") {
			t.Errorf("the notes must say the counters are port-wide: %q", r.Counters.Notes)
		}
	}
	t0 := time.Now()
	check(measure(t, client("write", "bw", cliDev, p, "-s", "64K", "-n", "2000")...))
	wall := time.Since(t0)
	u := qpTimeoutBeyond(2 * wall)
	t.Logf("the default run took %v: --qp-timeout %d (%v) for the clean one", wall.Round(time.Millisecond), u, qpTimeout(u).Round(time.Millisecond))
	r := measure(t, client("write", "bw", cliDev, p, "-s", "64K", "-n", "2000", "--qp-timeout", fmt.Sprint(u))...)
	check(r)
	if r.Tainted || len(r.CountersFlags) > 0 {
		t.Errorf("--qp-timeout %d, longer than the run: tainted, so the link lost packets", u)
	}
}

// qpTimeout is what the verbs' QP timeout exponent u means: 4.096 us x 2^u.
func qpTimeout(u int) time.Duration { return time.Duration(4096 << u) }

// qpTimeoutBeyond is the smallest QP timeout exponent (at most 31) whose timeout is d or
// longer.
func qpTimeoutBeyond(d time.Duration) int {
	u := 1
	for u < 31 && qpTimeout(u) < d {
		u++
	}
	return u
}

// 5% loss on the wire: the retransmissions show in the counters, the result is
// tainted, and report check --no-taint fails it.
func TestLossTaintsTheResult(t *testing.T) {
	needPair(t)
	p := startServer(t)
	t.Cleanup(func() { exec.Command("tc", "qdisc", "del", "dev", "vethB", "root").Run() })
	if out, err := exec.Command("tc", "qdisc", "add", "dev", "vethB", "root", "netem", "loss", "5%").CombinedOutput(); err != nil {
		t.Fatalf("tc: %v %s", err, out)
	}
	file := filepath.Join(t.TempDir(), "lossy.json")
	out, code := run(t, append(client("write", "bw", cliDev, p, "-s", "4K", "-n", "2000", "--timeout", "10s"), "--json", file)...)
	exec.Command("tc", "qdisc", "del", "dev", "vethB", "root").Run()
	if code != 0 {
		t.Fatalf("exit %d under 5%% loss:\n%s", code, out)
	}
	doc, _ := os.ReadFile(file)
	var r result.Result
	if err := json.Unmarshal(doc, &r); err != nil {
		t.Fatal(err)
	}
	t.Logf("under 5%% loss: tainted %v, flags %+v\n%s", r.Tainted, r.CountersFlags, out)
	if !r.Tainted || len(r.CountersFlags) == 0 || !strings.Contains(out, "TAINTED") {
		t.Fatalf("5%% loss must taint the result and the table must say so")
	}
	if out, code := run(t, "report", "check", "--no-taint", file); code != 1 || !strings.Contains(out, "tainted") {
		t.Fatalf("report check --no-taint: exit %d\n%s", code, out)
	}
	if _, code := run(t, "report", "check", file); code != 0 {
		t.Fatalf("report check without --no-taint: exit %d", code)
	}
}

func TestCountersCommand(t *testing.T) {
	needDevice(t)
	out, code := run(t, "counters", "-d", srvDev)
	if code != 0 || !strings.Contains(out, "sent_pkts") {
		t.Fatalf("counters: exit %d\n%s", code, out)
	}
	out, code = run(t, "counters", "-d", srvDev, "--watch", "200ms", "--count", "2", "--json")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 3 { // the snapshot, then one line per interval
		t.Fatalf("counters --watch --count 2 --json: exit %d, %d lines\n%s", code, len(lines), out)
	}
}

// doctor on a healthy pair exits 0; each fault makes it exit 1 naming the check.
func TestDoctor(t *testing.T) {
	needPair(t)
	p := startServer(t)
	doctor := func(pre ...string) (string, int) {
		args := append(pre, bin, "doctor", "-d", cliDev, "-p", fmt.Sprint(p), srvIP)
		cmd := exec.Command(args[0], args[1:]...)
		b, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(b), code
	}
	if out, code := doctor(); code != 0 {
		t.Fatalf("doctor on a healthy pair: exit %d\n%s", code, out)
	} else {
		t.Logf("healthy:\n%s", out)
	}
	for _, fault := range []struct {
		name, check string
		apply, undo []string
		pre         []string
	}{
		// A netdev that goes down loses its routes: the undo puts back the bed's route
		// from rxe1 to 10.0.0.1 over the veth wire (test/rxevm/guest-lib.sh), without
		// which a later client's control connection to 10.0.0.1 leaves from 10.0.0.1.
		{name: "netdev down", check: "netdev", apply: []string{"ip", "link", "set", "vethB", "down"},
			undo: []string{"sh", "-c", "ip link set vethB up && ip route replace 10.0.0.1/32 dev vethB src 10.0.0.2 table 101"}},
		// As root, CAP_IPC_LOCK lifts the limit: drop it from the bounding set, so that
		// the doctor runs as an unprivileged user would.
		{name: "memlock 64 KiB", check: "memlock", pre: []string{"setpriv", "--bounding-set", "-ipc_lock", "prlimit", "--memlock=65536:65536"}},
		// rxe follows its netdev's MTU, so only an MTU too small for the smallest RDMA
		// MTU (256 bytes and RoCE's headers) is a fault it cannot adapt to.
		{name: "netdev MTU 300", check: "mtu", apply: []string{"ip", "link", "set", "vethB", "mtu", "300"}, undo: []string{"ip", "link", "set", "vethB", "mtu", "1500"}},
	} {
		if fault.apply != nil {
			if out, err := exec.Command(fault.apply[0], fault.apply[1:]...).CombinedOutput(); err != nil {
				t.Fatalf("%s: %v %s", fault.name, err, out)
			}
		}
		out, code := doctor(fault.pre...)
		if fault.undo != nil {
			if out, err := exec.Command(fault.undo[0], fault.undo[1:]...).CombinedOutput(); err != nil {
				t.Errorf("%s: undo: %v %s", fault.name, err, out)
			}
			waitGID(t, cliDev)
		}
		failed := false
		for _, l := range strings.Split(out, "\n") {
			if f := strings.Fields(l); len(f) >= 2 && f[0] == "FAIL" && f[1] == fault.check {
				failed = true
			}
		}
		if code != 1 || !failed {
			t.Errorf("%s: want exit 1 and the %s check failed, got exit %d\n%s", fault.name, fault.check, code, out)
		}
	}
}

// waitGID waits (bounded) until dev's GID, as rdmabench picks it, is an IPv4 address
// again: rxe re-adds its GIDs asynchronously when the netdev comes back.
func waitGID(t *testing.T, dev string) {
	for i := 0; i < 100; i++ {
		out, code := run(t, "devices", "--gid", "-d", dev)
		if f := strings.Fields(out); code == 0 && len(f) >= 4 && !strings.Contains(f[3], ":") {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s has no IPv4 GID 10 s after its netdev came back", dev)
}

// --interval: one line per interval while the run goes on, the extremes in the result.
func TestIntervals(t *testing.T) {
	needDevice(t)
	p := startServer(t)
	lines := filepath.Join(t.TempDir(), "intervals.ndjson")
	// 3 s: on a slow bed the first completion returns only after most of the first
	// queue's bytes crossed (8 MiB at 64 KiB x 128: 0.7 s at 12 MB/s), and the intervals
	// before it are ramp lines; the rest of the run gives measured ones.
	r := measure(t, client("write", "bw", srvDev, p, "-D", "3", "--interval", "0.5", "--interval-file", lines)...)
	doc, err := os.ReadFile(lines)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("result %+v\n%s", r.Intervals, doc)
	var ramp, measured int
	for i, l := range strings.Split(strings.TrimSpace(string(doc)), "\n") {
		var iv result.Interval
		if err := json.Unmarshal([]byte(l), &iv); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		switch {
		case iv.Ramp && (measured > 0 || iv.Messages != 0):
			t.Errorf("line %d: a ramp line is one before the first completion: %+v", i+1, iv)
		case iv.Ramp:
			ramp++
		case iv.Messages == 0 || iv.BWGbps <= 0:
			t.Errorf("line %d: a stall on a clean link: %+v", i+1, iv)
		default:
			measured++
		}
	}
	if measured < 2 || r.Intervals == nil || r.Intervals.Count != measured || r.Intervals.Ramp != ramp ||
		r.Intervals.MinBWGbps <= 0 || r.Intervals.MaxBWGbps < r.Intervals.MinBWGbps {
		t.Fatalf("%d ramp and %d measured lines: want 2 or more measured ones, and the result to count them and keep their extremes", ramp, measured)
	}
}

// -b: both directions at once on Soft-RoCE, each side's numbers and the sum (a server
// streams on its own only with a token).
func TestBidirectional(t *testing.T) {
	needDevice(t)
	p := startServer(t, "--token", "s3cret")
	for _, op := range []string{"write", "read"} {
		r := measure(t, client(op, "bw", srvDev, p, "-b", "-s", "64K", "-n", "500", "--token", "s3cret")...)
		if r.Reverse == nil || r.Reverse.Messages != 500 || r.Reverse.BWGbps <= 0 || r.BWSumGbps != r.BWGbps+r.Reverse.BWGbps {
			t.Fatalf("%s -b: reverse %+v, sum %v", op, r.Reverse, r.BWSumGbps)
		}
		t.Logf("%s -b: client->server %.3f Gb/s, server->client %.3f Gb/s, sum %.3f Gb/s", op, r.BWGbps, r.Reverse.BWGbps, r.BWSumGbps)
	}
}

// Incast: three clients against `server --concurrent 3`, their runs overlapping in time.
func TestIncast(t *testing.T) {
	needPair(t)
	p := startServer(t, "--concurrent", "3")
	dir := t.TempDir()
	type done struct {
		i    int
		out  string
		code int
	}
	ch := make(chan done, 3)
	for i := range 3 {
		go func() {
			args := append(client("write", "bw", cliDev, p, "-D", "2", "-s", "16K"), "--json", filepath.Join(dir, fmt.Sprint(i, ".json")))
			cmd := exec.Command(bin, args...)
			b, err := cmd.CombinedOutput()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			}
			ch <- done{i, string(b), code}
		}()
	}
	var rs []result.Result
	for range 3 {
		d := <-ch
		if d.code != 0 {
			t.Fatalf("client %d: exit %d\n%s", d.i, d.code, d.out)
		}
		doc, _ := os.ReadFile(filepath.Join(dir, fmt.Sprint(d.i, ".json")))
		var r result.Result
		if err := json.Unmarshal(doc, &r); err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
		t.Logf("client %d: %.3f Gb/s from %s for %.2f s", d.i, r.BWGbps, r.Time.Format("15:04:05.000"), float64(r.DurationNS)/1e9)
	}
	for i, a := range rs {
		for j, b := range rs {
			aEnd, bEnd := a.Time.Add(time.Duration(a.DurationNS)+time.Second), b.Time.Add(time.Duration(b.DurationNS)+time.Second) // 1 s for setup
			if i < j && (aEnd.Before(b.Time) || bEnd.Before(a.Time)) {
				t.Errorf("clients %d and %d did not overlap", i, j)
			}
		}
	}
}
