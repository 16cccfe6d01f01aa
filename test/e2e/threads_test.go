//go:build e2e

package e2e

import (
	"slices"
	"testing"
)

// TestThreads: --threads splits the QPs over loop threads, each with its own CQ and
// C loop, on Soft-RoCE: WRITE and READ bandwidth with --verify (every byte that
// arrived checked), the result giving each thread's QPs and share, the shares adding up
// to the run; --cpu pins the loops and the result says where each ran. What the
// threads gain is measured by hand (the bed has two vCPUs, which the guest's kernel
// and rxe's work share with the loops): the note of the change says. The runs take
// -u 20: two loops at once make Soft-RoCE 6.1's spurious retransmissions at the default
// QP timeout more frequent, and it answers some of those with IBV_WC_REM_INV_REQ_ERR.
func TestThreads(t *testing.T) {
	needDevice(t)
	p := startServer(t)
	dev := srvDev
	if cliDev != "" {
		dev = cliDev
	}
	// Each thread posts from its own block's regions, to its block's remote regions, on
	// its own CQ: --verify finds a byte that went to another QP's slot; READ also
	// posts through the extended QP API (each thread its block's ibv_qp_ex).
	for op, api := range map[string]string{"write": "legacy", "read": "wr"} {
		r := measure(t, client(op, "bw", dev, p, "-s", "4K", "-n", "1000", "-q", "4", "--threads", "2", "--verify", "-u", "20", "--post-api", api)...)
		th := r.Threads
		if r.Verify == nil || !r.Verify.OK || r.Iterations != 4000 {
			t.Fatalf("%s: %d messages, verify %+v", op, r.Iterations, r.Verify)
		}
		if th == nil || len(th.Threads) != 2 || r.Config.Threads != 2 {
			t.Fatalf("%s: config threads %d, result threads %+v", op, r.Config.Threads, th)
		}
		var msgs uint64
		for i, x := range th.Threads {
			msgs += x.Messages
			if want := []int{2 * i, 2*i + 1}; !slices.Equal(x.QPs, want) || x.Messages != 2000 || x.DurationNS <= 0 || x.StartNS+x.DurationNS > r.DurationNS {
				t.Errorf("%s thread %d: QPs %v (want %v), %d messages, window %d+%d of the run's %d", op, i, x.QPs, want, x.Messages, x.StartNS, x.DurationNS, r.DurationNS)
			}
			t.Logf("%s thread %d: QPs %v, %.3f Gb/s, share %.3f, ran on CPUs %v, started %d ns after the first", op, i, x.QPs, x.BWGbps, x.Share, x.RanOn, x.StartNS)
		}
		if msgs != r.Iterations {
			t.Errorf("%s: the threads moved %d, the run %d", op, msgs, r.Iterations)
		}
	}
	r := measure(t, client("write", "bw", dev, p, "-s", "4K", "-n", "500", "--cpu", "1")...)
	if r.Config.CPUList != "1" || r.Threads == nil || r.Threads.Pinning != "cpu-list" || len(r.Threads.Threads) != 1 {
		t.Fatalf("--cpu 1: config cpu_list %q, threads %+v", r.Config.CPUList, r.Threads)
	}
	if x := r.Threads.Threads[0]; x.CPUs != "1" || !slices.Equal(x.RanOn, []int{1}) {
		t.Errorf("--cpu 1: pinned to %q, ran on %v", x.CPUs, x.RanOn)
	}
	r = measure(t, client("read", "lat", dev, p, "-n", "200", "--cpu", "0")...)
	if r.Threads == nil || r.Threads.Threads[0].CPUs != "0" {
		t.Errorf("read lat --cpu 0: threads %+v", r.Threads)
	}
	out, code := run(t, client("write", "bw", dev, p, "-q", "2", "--threads", "3")...)
	if code == 0 {
		t.Errorf("--threads 3 with 2 QPs: exit 0\n%s", out)
	}
	out, code = run(t, client("write", "bw", dev, p, "--cpu", "999")...)
	if code == 0 {
		t.Errorf("--cpu 999: exit 0\n%s", out)
	}
}
