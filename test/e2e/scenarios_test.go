//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/sweep"
)

// TestTCPBaseline: the same transfer over TCP between the same hosts, both directions,
// after a verified RDMA run; the ratio is the RDMA run's Gb/s over TCP's.
func TestTCPBaseline(t *testing.T) {
	needPair(t)
	p := startServer(t)
	for _, op := range []string{"write", "read"} {
		for _, size := range []string{"4K", "256K"} {
			r := measure(t, client(op, "bw", cliDev, p, "-s", size, "-n", "300", "--verify", "--baseline", "tcp")...)
			b := r.Baseline
			if b == nil || b.Error != "" || b.Transport != "tcp" {
				t.Fatalf("%s %s: baseline %+v", op, size, b)
			}
			if b.Messages != r.Iterations || b.Bytes != r.Bytes || b.BWGbps <= 0 || b.RDMAOverTCP <= 0 {
				t.Errorf("%s %s: tcp %d msgs %d B %.3f Gb/s (ratio %.2f), rdma %d msgs %d B", op, size, b.Messages, b.Bytes, b.BWGbps, b.RDMAOverTCP, r.Iterations, r.Bytes)
			}
			t.Logf("%s bw %s: RDMA %.3f Gb/s, TCP %.3f Gb/s: RDMA/TCP %.2f", op, size, r.BWGbps, b.BWGbps, b.RDMAOverTCP)
		}
	}
}

// TestMRModes: a registration per IO and a registration cache in the timed loop,
// verified, next to the pool: every per-io WR registered and deregistered once.
func TestMRModes(t *testing.T) {
	needPair(t)
	p := startServer(t)
	for _, op := range []string{"write", "read"} {
		pool := measure(t, client(op, "bw", cliDev, p, "-s", "4K", "-n", "500", "--verify", "--mr", "pool")...)
		if pool.MR != nil || pool.Config.MR != "" {
			t.Errorf("%s pool: mr %+v %q", op, pool.MR, pool.Config.MR)
		}
		per := measure(t, client(op, "bw", cliDev, p, "-s", "4K", "-n", "500", "--verify", "--mr", "per-io")...)
		m := per.MR
		if m == nil || m.Mode != "per-io" || m.Regs != per.Iterations || m.Deregs != m.Regs || per.Config.CQMod != 1 ||
			m.WindowShare <= 0 || m.WindowShare >= 1 || per.Verify == nil || !per.Verify.OK {
			t.Errorf("%s per-io: mr %+v, %d messages, cq-mod %d, verify %+v", op, m, per.Iterations, per.Config.CQMod, per.Verify)
		}
		cache := measure(t, client(op, "bw", cliDev, p, "-s", "4K", "-n", "500", "-t", "16", "--mr", "cache")...)
		c := cache.MR
		if c == nil || c.Mode != "cache" || c.Hits+c.Misses != cache.Iterations || c.Regs != c.Misses || c.Deregs != c.Regs {
			t.Errorf("%s cache: mr %+v, %d messages", op, c, cache.Iterations)
		}
		if m != nil && c != nil {
			t.Logf("%s 4K: pool %.3f Gb/s, per-io %.3f Gb/s (%.0f%% of the window registering), cache %.3f Gb/s (%d hits, %d misses)",
				op, pool.BWGbps, per.BWGbps, 100*m.WindowShare, cache.BWGbps, c.Hits, c.Misses)
		}
	}
}

// TestSweepMRModes: sweep --mr pool,per-io measures both modes at every size in
// interleaved rounds, with TCP in the same rounds, and says where per-io breaks even.
func TestSweepMRModes(t *testing.T) {
	needPair(t)
	p := startServer(t)
	dir := t.TempDir()
	stream, rep := filepath.Join(dir, "s.ndjson"), filepath.Join(dir, "c.json")
	out, code := run(t, "sweep", "-d", cliDev, "-p", fmt.Sprint(p), srvIP, "--ops", "write", "--mr", "pool,per-io", "--sizes", "4K,64K,1M",
		"--repeat", "3", "--point-duration", "0.3", "--baseline", "tcp", "--results", stream, "--json", rep) // --results: --records' first name, kept working
	if code != 0 {
		t.Fatalf("sweep --mr: exit %d\n%s", code, out)
	}
	t.Log(out)
	doc, _ := os.ReadFile(rep)
	var c struct {
		Kind        string              `json:"kind"`
		Comparisons []sweep.ModeOutcome `json:"comparisons"`
	}
	if err := json.Unmarshal(doc, &c); err != nil || c.Kind != "mr_comparison" || len(c.Comparisons) != 1 {
		t.Fatalf("%v: %s", err, doc)
	}
	o := c.Comparisons[0]
	if len(o.Rows) != 3 || o.BreakEvenNote == "" || o.TCPBreakEvenNote == "" {
		t.Fatalf("%+v", o)
	}
	for _, r := range o.Rows {
		if r.Pairs != 3 || r.A <= 0 || r.B <= 0 || r.TCP == nil || r.Verdict == "" {
			t.Errorf("%d B: %+v", r.Size, r)
		}
	}
	f, _ := os.Open(stream)
	rs, err := result.ReadAll(f)
	f.Close()
	if err != nil || len(rs) != 18 {
		t.Errorf("stream: %d results, %v", len(rs), err)
	}
}
