//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// gidIndex is the GID index perftest needs for dev: the one rdmabench picks (the test
// bed's scripts use the same, rb_gid).
func gidIndex(t *testing.T, dev string) string {
	t.Helper()
	out, err := exec.Command("bash", "-c", `. test/rxevm/guest-lib.sh && rb_gid "$1" && echo "$RB_GID_INDEX"`, "-", dev).Output()
	if err != nil {
		t.Fatalf("GID index of %s: %v", dev, err)
	}
	return strings.TrimSpace(string(out))
}

// perftestProc is a perftest process with its output.
type perftestProc struct {
	cmd *exec.Cmd
	out *logBuffer
}

func startPerftest(t *testing.T, name string, args ...string) *perftestProc {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	p := &perftestProc{cmd: exec.CommandContext(ctx, name, args...), out: &logBuffer{}}
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		if p.cmd.ProcessState == nil {
			p.cmd.Wait()
		}
	})
	return p
}

// wait waits up to d for the process and returns its exit code (-1: it was killed).
func (p *perftestProc) wait(d time.Duration) int {
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case <-done:
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(d):
		p.cmd.Process.Kill()
		<-done
		return -1
	}
}

var perftestTests = []struct{ name, op, test, iters string }{
	{"ib_write_bw", "write", "bw", "1000"},
	{"ib_read_bw", "read", "bw", "1000"},
	{"ib_write_lat", "write", "lat", "300"},
	{"ib_read_lat", "read", "lat", "300"},
}

// TestPerftestInterop: each of perftest's four tests, with rdmabench as the client of
// a plain perftest 6.06 server (--perftest), and with perftest as the client of
// 'rdmabench server --perftest-port'. Both sides end with exit 0; rdmabench's result
// validates and counts every message; perftest prints its table with the same count.
func TestPerftestInterop(t *testing.T) {
	needDevice(t)
	if _, err := exec.LookPath("ib_write_bw"); err != nil {
		t.Fatal("perftest is not installed: run 'make setup'")
	}
	cdev := srvDev
	if cliDev != "" {
		cdev = cliDev
	}
	sg, cg := gidIndex(t, srvDev), gidIndex(t, cdev)
	for _, tc := range perftestTests {
		t.Run(tc.name+"/rdmabench-client", func(t *testing.T) {
			p := int(port.Add(1))
			srv := startPerftest(t, tc.name, "-d", srvDev, "-x", sg, "-p", fmt.Sprint(p), "-n", tc.iters)
			if !socketListens(p) {
				t.Fatalf("%s did not listen:\n%s", tc.name, srv.out)
			}
			r := measure(t, tc.op, tc.test, "-d", cdev, "-x", cg, "-n", tc.iters, "--timeout", "20s",
				"--perftest", fmt.Sprintf("%s:%d", srvIP, p))
			if code := srv.wait(60 * time.Second); code != 0 {
				t.Fatalf("%s server: exit %d\n%s", tc.name, code, srv.out)
			}
			if fmt.Sprint(r.Iterations) != tc.iters || r.Error != "" {
				t.Fatalf("rdmabench measured %d (want %s), error %q", r.Iterations, tc.iters, r.Error)
			}
			if r.ServerDevice.Model == "" || !strings.Contains(r.ServerDevice.Model, "perftest") {
				t.Errorf("server_device does not say the peer was perftest: %+v", r.ServerDevice)
			}
			if tc.test == "bw" && !regexp.MustCompile(`(?m)^\s*65536\s+`+tc.iters+`\s`).MatchString(srv.out.String()) {
				t.Fatalf("%s server's table does not show 65536 B x %s:\n%s", tc.name, tc.iters, srv.out)
			}
			if tc.name == "ib_write_lat" {
				// Both sides timed the same rounds and halve them: perftest's median
				// (t_typical) and rdmabench's p50 agree within 10% (the real-clock
				// bed: its noise, 0.5-1.6); a round trip not halved would be twice
				// perftest's.
				m := regexp.MustCompile(`(?m)^\s*2\s+` + tc.iters + `\s+\S+\s+\S+\s+(\S+)`).FindStringSubmatch(srv.out.String())
				if m == nil || r.Lat.P50 == nil {
					t.Fatalf("no t_typical in ib_write_lat's table, or no p50 (%v):\n%s", r.Lat.P50, srv.out)
				}
				var typical float64
				fmt.Sscan(m[1], &typical)
				ratio := float64(*r.Lat.P50) / 1e3 / typical
				t.Logf("one-way latency of the same rounds: rdmabench p50 %.2f us, perftest t_typical %.2f us (ratio %.2f)", float64(*r.Lat.P50)/1e3, typical, ratio)
				if lo, hi := bound(0.9, 0.5), bound(1.1, 1.6); ratio < lo || ratio > hi {
					t.Errorf("rdmabench's one-way p50 is %.2f times perftest's t_typical for the same rounds", ratio)
				}
			}
			t.Logf("%s server printed:\n%s", tc.name, tail(srv.out.String(), 4))
		})
		t.Run(tc.name+"/perftest-client", func(t *testing.T) {
			pp := int(port.Add(1))
			s := spawnServer(t, "--perftest-port", fmt.Sprint(pp), "--timeout", "20s")
			if !socketListens(pp) {
				t.Fatalf("no perftest port:\n%s", s.out)
			}
			cli := startPerftest(t, tc.name, "-d", cdev, "-x", cg, "-p", fmt.Sprint(pp), "-n", tc.iters, srvIP)
			if code := cli.wait(120 * time.Second); code != 0 {
				t.Fatalf("%s client: exit %d\n%s", tc.name, code, cli.out)
			}
			if !regexp.MustCompile(`(?m)^\s*(65536|2)\s+` + tc.iters + `\s`).MatchString(cli.out.String()) {
				t.Fatalf("%s client's table does not show %s iterations:\n%s", tc.name, tc.iters, cli.out)
			}
			want := map[string]string{
				"ib_write_bw":  "write_bw, 1 QP: the client reported 65536 B x " + tc.iters,
				"ib_read_bw":   "read_bw, 1 QP: the client reported 65536 B x " + tc.iters,
				"ib_write_lat": "write_lat, 2 B: " + tc.iters + " rounds",
				"ib_read_lat":  "read_lat",
			}[tc.name]
			if !s.waitLog(want, 20*time.Second) {
				t.Fatalf("server log does not say %q:\n%s", want, s.out)
			}
			t.Logf("%s client printed:\n%s", tc.name, tail(cli.out.String(), 4))
		})
	}
	t.Run("different -q refused", func(t *testing.T) {
		p := int(port.Add(1))
		srv := startPerftest(t, "ib_write_bw", "-d", srvDev, "-x", sg, "-p", fmt.Sprint(p), "-q", "2", "-n", "100")
		if !socketListens(p) {
			t.Fatalf("ib_write_bw did not listen:\n%s", srv.out)
		}
		out, code := run(t, "write", "bw", "-d", cdev, "-x", cg, "-n", "100", "--timeout", "10s",
			"--perftest", fmt.Sprintf("%s:%d", srvIP, p))
		if code != 1 || !strings.Contains(out, "more QPs") {
			t.Fatalf("exit %d, want 1 naming the QPs:\n%s", code, out)
		}
		// rdmabench closed the connection: perftest stops too, with its own words.
		if code := srv.wait(20 * time.Second); code == 0 || code == -1 {
			t.Fatalf("ib_write_bw server: exit %d, want its own failure:\n%s", code, srv.out)
		}
		t.Logf("ib_write_bw server said:\n%s", tail(srv.out.String(), 3))
	})
	t.Run("more QPs than --max-buffer refused by the server", func(t *testing.T) {
		pp := int(port.Add(1))
		s := spawnServer(t, "--perftest-port", fmt.Sprint(pp), "--timeout", "10s", "--max-buffer", "8M")
		if !socketListens(pp) {
			t.Fatalf("no perftest port:\n%s", s.out)
		}
		cli := startPerftest(t, "ib_write_bw", "-d", cdev, "-x", cg, "-p", fmt.Sprint(pp), "-q", "2", "-n", "100", srvIP)
		if code := cli.wait(30 * time.Second); code == 0 || code == -1 {
			t.Fatalf("ib_write_bw -q 2: exit %d, want its own failure:\n%s", code, cli.out)
		}
		if !s.waitLog("exceed --max-buffer", 10*time.Second) {
			t.Fatalf("the server's log does not say why:\n%s\nib_write_bw -q 2 printed:\n%s", s.out, cli.out)
		}
		t.Logf("ib_write_bw -q 2 said:\n%s", tail(cli.out.String(), 3))
	})
}

// socketListens waits up to 30 s for a listening socket on port p, without
// connecting to it: a perftest server takes the first connection as its client.
func socketListens(p int) bool {
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		out, _ := exec.Command("ss", "-ltnH", fmt.Sprintf("sport = :%d", p)).Output()
		if len(strings.TrimSpace(string(out))) > 0 {
			return true
		}
	}
	return false
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// TestOutsCapsOutstandingReads: -o (perftest's --outs_num) caps the READs each of the
// client's QPs keeps outstanding, against an rdmabench server and a perftest one; the
// result says what was used.
func TestOutsCapsOutstandingReads(t *testing.T) {
	needDevice(t)
	cdev := srvDev
	if cliDev != "" {
		cdev = cliDev
	}
	p := startServer(t)
	r := measure(t, client("read", "bw", cdev, p, "-o", "2", "-n", "500")...)
	if r.MaxRdAtom != 2 || r.Config.OutsNum != 2 {
		t.Fatalf("read bw -o 2: max_rd_atom %d, outs_num %d; want 2 and 2", r.MaxRdAtom, r.Config.OutsNum)
	}
	sg, cg := gidIndex(t, srvDev), gidIndex(t, cdev)
	pp := int(port.Add(1))
	srv := startPerftest(t, "ib_read_bw", "-d", srvDev, "-x", sg, "-p", fmt.Sprint(pp), "-n", "500")
	if !socketListens(pp) {
		t.Fatalf("ib_read_bw did not listen:\n%s", srv.out)
	}
	r = measure(t, "read", "bw", "-d", cdev, "-x", cg, "-o", "2", "-n", "500", "--perftest", fmt.Sprintf("%s:%d", srvIP, pp))
	if code := srv.wait(60 * time.Second); code != 0 || r.MaxRdAtom != 2 {
		t.Fatalf("against ib_read_bw: server exit %d, max_rd_atom %d (want 0 and 2)\n%s", code, r.MaxRdAtom, srv.out)
	}
}
