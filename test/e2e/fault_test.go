//go:build e2e

package e2e

// Faults and hostile peers: a server or client that dies mid-test, packet loss, silent,
// slow and garbage connections, a stopped server; and afterwards, no resource left
// behind in the kernel or in the server.

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// server is an rdmabench server process that a test may kill.
type server struct {
	cmd  *exec.Cmd
	out  *logBuffer
	port int
}

// logBuffer is a process's output, read while it is written.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// waitLog waits up to d for the server's log to say what; false if it did not.
func (s *server) waitLog(what string, d time.Duration) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if strings.Contains(s.out.String(), what) {
			return true
		}
	}
	return false
}

func spawnServer(t *testing.T, extra ...string) *server {
	t.Helper()
	p := int(port.Add(1))
	args := append([]string{"server", "-d", srvDev, "--bind", srvIP, "-p", fmt.Sprint(p)}, extra...)
	s := &server{cmd: exec.Command(bin, args...), out: &logBuffer{}, port: p}
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if s.cmd.ProcessState == nil {
			s.cmd.Process.Kill()
			s.cmd.Wait()
		}
		if t.Failed() {
			t.Logf("server log:\n%s", s.out.String())
		}
	})
	if !listening(p) {
		t.Fatalf("server did not listen on %d:\n%s", p, s.out.String())
	}
	return s
}

// long is a client command line that runs far longer than any test waits.
func long(op, test, dev string, p int) []string {
	if test == "bw" {
		return client(op, test, dev, p, "-s", "4K", "-D", "60", "--timeout", "3s")
	}
	return client(op, test, dev, p, "-n", "100000000", "--warmup", "100", "--timeout", "3s")
}

var tests4 = [][2]string{{"write", "bw"}, {"read", "bw"}, {"write", "lat"}, {"read", "lat"}}

// A server killed mid-test: the client stops, exits 1 within --timeout + 5 s, and its
// JSON keeps what was measured, with the error. The kill comes 2 s after the server
// logged the client's connection: on a slow bed the QPs' setup alone can take that
// long, and a kill before the measured phase would have nothing to keep.
func TestServerKilledMidTest(t *testing.T) {
	needDevice(t)
	for _, ot := range tests4 {
		s := spawnServer(t, "--timeout", "3s")
		kill := func() {
			if !s.waitLog("connected", 30*time.Second) {
				t.Errorf("%s %s: the server never logged the client", ot[0], ot[1])
			}
			time.Sleep(2 * time.Second)
			s.cmd.Process.Signal(syscall.SIGKILL)
			s.cmd.Wait()
		}
		r := runFailing(t, 30*time.Second+2*time.Second+3*time.Second+5*time.Second, kill, long(ot[0], ot[1], srvDev, s.port)...)
		if r.Iterations == 0 {
			t.Errorf("%s %s: the partial measurement is lost", ot[0], ot[1])
		}
	}
}

// A client killed mid-test: the server releases the test and serves the next client
// within --timeout + 5 s.
func TestClientKilledMidTest(t *testing.T) {
	needDevice(t)
	s := spawnServer(t, "--timeout", "3s")
	for _, ot := range tests4 {
		c := exec.Command(bin, long(ot[0], ot[1], srvDev, s.port)...)
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Second)
		c.Process.Signal(syscall.SIGKILL)
		c.Wait()
		start := time.Now()
		measure(t, client("write", "bw", srvDev, s.port, "-s", "4K", "-n", "100", "--timeout", "10s")...)
		if d := time.Since(start); d > 3*time.Second+5*time.Second {
			t.Errorf("after a %s %s client was killed, the next client took %v", ot[0], ot[1], d)
		}
	}
}

// Packet loss on the wire: every run completes, or fails with an error, in bounded time.
func TestPacketLoss(t *testing.T) {
	needDevice(t)
	if cliDev == "" || cliDev == srvDev {
		t.Skip("needs the two-device shape")
	}
	s := spawnServer(t)
	t.Cleanup(func() { exec.Command("tc", "qdisc", "del", "dev", "vethB", "root").Run() })
	for _, loss := range []string{"1%", "30%"} {
		if out, err := exec.Command("tc", "qdisc", "add", "dev", "vethB", "root", "netem", "loss", loss).CombinedOutput(); err != nil {
			t.Fatalf("tc: %v %s", err, out)
		}
		for _, ot := range tests4 {
			args := client(ot[0], ot[1], cliDev, s.port, "-n", "300", "-s", "1K", "--timeout", "5s", "--json", os.DevNull)
			start := time.Now()
			out, code := run(t, args...)
			d := time.Since(start)
			t.Logf("%s loss, %s %s: exit %d after %v", loss, ot[0], ot[1], code, d.Round(time.Millisecond))
			if code != 0 && (code != 1 || !strings.Contains(out, "rdmabench: ")) {
				t.Errorf("%s loss, %s %s: exit %d without a clear error:\n%s", loss, ot[0], ot[1], code, out)
			}
			if loss == "1%" && code != 0 { // RC retransmits: 1% loss must not fail a run
				t.Errorf("1%% loss, %s %s: exit %d:\n%s", ot[0], ot[1], code, out)
			}
			if d > 90*time.Second {
				t.Errorf("%s loss, %s %s: took %v", loss, ot[0], ot[1], d)
			}
		}
		exec.Command("tc", "qdisc", "del", "dev", "vethB", "root").Run()
	}
}

// Silent, slow and garbage connections never hold up a real client, not even more
// silent ones than the server has handshake slots.
func TestHostileConnectionsAlongsideAClient(t *testing.T) {
	needDevice(t)
	s := spawnServer(t, "--timeout", "20s")
	addr := net.JoinHostPort(srvIP, fmt.Sprint(s.port))
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := 0; i < 80; i++ { // silent: more than the 64 handshakes the server holds at once
		if c, err := net.Dial("tcp", addr); err == nil {
			conns = append(conns, c)
		}
	}
	for i := 0; i < 5; i++ { // slow: the start of a frame, then nothing
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Write([]byte("RD"))
			conns = append(conns, c)
		}
	}
	for i := 0; i < 5; i++ { // garbage
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Write(bytes.Repeat([]byte("\x00\xffjunk\n"), 100))
			conns = append(conns, c)
		}
	}
	if len(conns) != 90 {
		t.Fatalf("only %d of 90 hostile connections were made", len(conns))
	}
	start := time.Now()
	measure(t, client("write", "bw", srvDev, s.port, "-s", "4K", "-n", "100", "--warmup", "0")...)
	if d := time.Since(start); d > 2*time.Second+time.Second {
		t.Fatalf("a real client among %d hostile connections took %v", len(conns), d)
	}
}

// SIGINT stops a busy server within a second and its client is told; a second signal
// exits at once.
func TestInterruptBusyServer(t *testing.T) {
	needDevice(t)
	for _, twice := range []bool{false, true} {
		s := spawnServer(t, "--timeout", "3s")
		stopServer := func() {
			time.Sleep(2 * time.Second)
			start := time.Now()
			s.cmd.Process.Signal(os.Interrupt)
			if twice {
				time.Sleep(100 * time.Millisecond)
				s.cmd.Process.Signal(os.Interrupt)
			}
			s.cmd.Wait()
			if d := time.Since(start); d > 1500*time.Millisecond {
				t.Errorf("a busy server took %v to stop (twice: %v)", d, twice)
			}
		}
		r := runFailing(t, 2*time.Second+3*time.Second+5*time.Second, stopServer, long("write", "lat", srvDev, s.port)...)
		if r.Iterations == 0 {
			t.Errorf("the partial measurement is lost")
		}
	}
}

var resLine = regexp.MustCompile(`(\w+) (\d+)`)

// resources sums `rdma resource show` per kind, over every device.
func resources(t *testing.T) map[string]int {
	out, err := exec.Command("rdma", "resource", "show").CombinedOutput()
	if err != nil {
		t.Fatalf("rdma resource show: %v %s", err, out)
	}
	sum := map[string]int{}
	for _, line := range strings.Split(string(out), "\n") {
		if i := strings.Index(line, ": "); i >= 0 {
			line = line[i+2:]
			if j := strings.Index(line, ": "); j >= 0 {
				line = line[j+2:]
			}
		}
		for _, m := range resLine.FindAllStringSubmatch(line, -1) {
			n, _ := strconv.Atoi(m[2])
			sum[m[1]] += n
		}
	}
	return sum
}

func fds(pid int) int {
	ents, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	return len(ents)
}

// After clients that die, time out, send garbage or finish, the server holds what it
// held before, and so does the kernel once the processes are gone.
func TestNothingLeaks(t *testing.T) {
	needDevice(t)
	before := resources(t)
	s := spawnServer(t, "--timeout", "3s")
	time.Sleep(200 * time.Millisecond)
	base, baseFDs := resources(t), fds(s.cmd.Process.Pid)
	for _, ot := range tests4 {
		c := exec.Command(bin, long(ot[0], ot[1], srvDev, s.port)...)
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1500 * time.Millisecond)
		c.Process.Signal(syscall.SIGKILL)
		c.Wait()
		measure(t, client(ot[0], ot[1], srvDev, s.port, "-n", "50", "-s", "1K")...)
	}
	if c, err := net.Dial("tcp", net.JoinHostPort(srvIP, fmt.Sprint(s.port))); err == nil {
		c.Write([]byte("garbage"))
		c.Close()
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && (fds(s.cmd.Process.Pid) != baseFDs || fmt.Sprint(resources(t)) != fmt.Sprint(base)) {
		time.Sleep(200 * time.Millisecond)
	}
	if n := fds(s.cmd.Process.Pid); n != baseFDs {
		t.Errorf("the server holds %d fds, %d at the start", n, baseFDs)
	}
	if now := resources(t); fmt.Sprint(now) != fmt.Sprint(base) {
		t.Errorf("RDMA resources with the server idle: %v, at its start %v", now, base)
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	s.cmd.Wait()
	time.Sleep(200 * time.Millisecond)
	if after := resources(t); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("RDMA resources after every rdmabench process ended: %v, before %v", after, before)
	}
}

// A server killed mid-test, with the client at its default --timeout (30 s): the client
// ends within seconds, not when its loop's watchdog or the transport's retries run out
// (7 x the QP timeout; the bed runs at -u 20, 4.3 s each). Its loop is aborted when the
// control connection says the server is gone: the QPs go to the error state and what is
// in flight is flushed. Its JSON keeps what was measured, with the server's loss first.
func TestServerKilledClientEndsPromptly(t *testing.T) {
	needDevice(t)
	for _, op := range []string{"write", "read"} {
		s := spawnServer(t)
		kill := func() {
			time.Sleep(2 * time.Second)
			s.cmd.Process.Signal(syscall.SIGKILL)
			s.cmd.Wait()
		}
		r := runFailing(t, 2*time.Second+10*time.Second, kill, client(op, "bw", srvDev, s.port, "-s", "64K", "-D", "60")...)
		if !strings.Contains(r.Error, "lost the server") {
			t.Errorf("%s bw: the error does not say the server was lost: %s", op, r.Error)
		}
	}
}
