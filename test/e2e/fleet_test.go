//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/result"
)

// TestFleet: three members on the test bed's addresses (ranks 0 and 2 on the server's
// device, rank 1 on the other), started in reverse order: they register with rank 0,
// which runs every pair once, writes the stream, prints the matrix and ends the fleet;
// every member exits 0; report matrix reads the stream back.
func TestFleet(t *testing.T) {
	needPair(t)
	dir := t.TempDir()
	tok := filepath.Join(dir, "token")
	os.WriteFile(tok, []byte("fleet-e2e-secret\n"), 0o600)
	stream := filepath.Join(dir, "fleet.ndjson")
	var ports []int
	for range 3 {
		ports = append(ports, int(port.Add(1)))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	type member struct {
		cmd *exec.Cmd
		out bytes.Buffer
	}
	ms := make([]*member, 3)
	for rank := 2; rank >= 0; rank-- {
		dev := srvDev
		if rank == 1 {
			dev = cliDev
		}
		args := []string{"fleet", "-d", dev, "--bind", srvIP, "-p", fmt.Sprint(ports[rank]), "--token-file", tok, "--timeout", "10s",
			"--rank", fmt.Sprint(rank), "--world", "3", "--coordinator", fmt.Sprintf("%s:%d", srvIP, ports[0]),
			"--pattern", "pairwise", "--test", "write-bw", "-s", "64K", "-n", "300", "--retest", "1", "--min-bw-fraction", "0.5",
			"--join-timeout", "60s", "--results", stream}
		m := &member{cmd: exec.CommandContext(ctx, bin, args...)}
		m.cmd.Stdout, m.cmd.Stderr = &m.out, &m.out
		if err := m.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		ms[rank] = m
	}
	for rank, m := range ms {
		if err := m.cmd.Wait(); err != nil {
			t.Errorf("rank %d: %v\n%s", rank, err, m.out.String())
		}
	}
	if t.Failed() {
		return
	}
	t.Logf("rank 0:\n%s", ms[0].out.String())
	f, err := os.Open(stream)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := result.ReadAll(f)
	f.Close()
	if err != nil || len(rs) != 3 {
		t.Fatalf("stream: %d results, %v", len(rs), err)
	}
	pairs := map[string]bool{}
	for _, r := range rs {
		fl := r.Fleet
		if fl == nil || r.Error != "" || r.Iterations != 300 || fl.Retest != 0 {
			t.Fatalf("result %+v: %s", fl, r.Error)
		}
		a, b := min(fl.A, fl.B), max(fl.A, fl.B)
		pairs[fmt.Sprint(a, b)] = true
		want := map[int]string{0: srvDev, 1: cliDev, 2: srvDev}
		if r.Client.Name != want[fl.A] || r.ServerDevice.Name != want[fl.B] {
			t.Errorf("%d -> %d measured %s -> %s", fl.A, fl.B, r.Client.Name, r.ServerDevice.Name)
		}
		t.Logf("round %d: %d -> %d: %.3f Gb/s", fl.Round, fl.A, fl.B, r.BWGbps)
	}
	if len(pairs) != 3 {
		t.Errorf("pairs %v: want every pair of 3 once", pairs)
	}
	out, code := run(t, "report", "matrix", stream)
	if code != 0 || !strings.Contains(out, fmt.Sprintf("%s:%d", srvIP, ports[2])) {
		t.Errorf("report matrix: exit %d\n%s", code, out)
	}
	t.Logf("report matrix:\n%s", out)
}
