//go:build e2e

package e2e

import (
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestFabricSettings: --sl 3 --tclass 96 runs complete in each of the four tests on
// rxe, in both shapes; relaxed ordering is on by default except in write lat, and
// --disable-pcie-relaxed (perftest's spelling too) turns it off; the result records
// what both sides used. In the two-device shape the traffic class is checked on the
// wire: the veth pair carries the RoCE v2 packets of both directions (requests, ACKs,
// READ responses) with DSCP 24 (tclass 96 >> 2).
func TestFabricSettings(t *testing.T) {
	needDevice(t)
	for shape, cdev := range shapes() {
		t.Run(shape, func(t *testing.T) {
			var wire *dscpCounter
			if shape == "pair" {
				wire = countDSCP(t, 96)
			}
			p := startServer(t)
			for _, tc := range []struct {
				op, test string
				extra    []string
				relaxed  bool
			}{
				{"write", "bw", []string{"--verify"}, true},
				{"read", "bw", []string{"--verify"}, true},
				{"write", "lat", nil, false},
				{"read", "lat", nil, true},
				{"write", "bw", []string{"--disable-pcie-relaxed", "--verify"}, false},
				{"read", "bw", []string{"--disable_pcie_relaxed", "-q", "2"}, false},
			} {
				args := client(tc.op, tc.test, cdev, p, append([]string{"--sl", "3", "--tclass", "96", "-n", "300"}, tc.extra...)...)
				r := measure(t, args...)
				c := r.Config
				if c.SL != 3 || c.TrafficClass != 96 || c.PCIeRelaxedOrdering != tc.relaxed || r.Error != "" || r.Iterations == 0 {
					t.Errorf("%s: sl %d, traffic_class %d, pcie_relaxed_ordering %v (want 3, 96, %v); %d messages, error %q",
						strings.Join(args, " "), c.SL, c.TrafficClass, c.PCIeRelaxedOrdering, tc.relaxed, r.Iterations, r.Error)
				}
				if r.Verify != nil && !r.Verify.OK {
					t.Errorf("%s: verification failed: %+v", strings.Join(args, " "), r.Verify)
				}
			}
			if wire != nil {
				wire.check(t)
			}
		})
	}
	// Out of range: a usage error naming the flag, before anything opens.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--sl", "16"}, "--sl 16: want a service level from 0 to 15"},
		{[]string{"-S", "-1"}, "--sl -1: want a service level from 0 to 15"},
		{[]string{"--tclass", "256"}, "--tclass 256: want a traffic class from 0 to 255"},
		{[]string{"-T", "96"}, "give the traffic class with --tclass"},
	} {
		out, code := run(t, append([]string{"write", "bw", "-d", srvDev, srvIP}, tc.args...)...)
		if code != 2 || !strings.Contains(out, tc.want) {
			t.Errorf("%v: exit %d, want 2 and %q:\n%s", tc.args, code, tc.want, out)
		}
	}
}

// dscpCounter counts, on both ends of the veth pair, the IPv4 packets leaving with one
// TOS byte's DSCP (tc's u32 classifier on the clsact egress hook).
type dscpCounter struct {
	tos  int
	devs []string
}

var pktsRE = regexp.MustCompile(`Sent \d+ bytes (\d+) pkt`)

func countDSCP(t *testing.T, tos int) *dscpCounter {
	t.Helper()
	c := &dscpCounter{tos: tos, devs: []string{"vethA", "vethB"}}
	for _, dev := range c.devs {
		t.Cleanup(func() { exec.Command("tc", "qdisc", "del", "dev", dev, "clsact").Run() })
		for _, cmd := range [][]string{
			{"qdisc", "add", "dev", dev, "clsact"},
			{"filter", "add", "dev", dev, "egress", "protocol", "ip", "u32", "match", "ip", "tos", fmt.Sprint(tos), "0xfc", "action", "pass"},
		} {
			if out, err := exec.Command("tc", cmd...).CombinedOutput(); err != nil {
				t.Fatalf("tc %s: %v\n%s", strings.Join(cmd, " "), err, out)
			}
		}
	}
	return c
}

// check wants packets of the TOS on both ends: each side's QPs sent with it.
func (c *dscpCounter) check(t *testing.T) {
	t.Helper()
	for _, dev := range c.devs {
		out, err := exec.Command("tc", "-s", "filter", "show", "dev", dev, "egress").CombinedOutput()
		m := pktsRE.FindSubmatch(out)
		if err != nil || m == nil {
			t.Errorf("tc -s filter show dev %s egress: %v\n%s", dev, err, out)
			continue
		}
		n, _ := strconv.Atoi(string(m[1]))
		t.Logf("%s: %d packets left with DSCP %d (tclass %d)", dev, n, c.tos>>2, c.tos)
		if n == 0 {
			t.Errorf("%s: no packet left with DSCP %d: the traffic class did not reach the wire\n%s", dev, c.tos>>2, out)
		}
	}
}

// TestFabricPerftestInterop: perftest's --disable_pcie_relaxed, -S and --tclass on both
// sides of a run between rdmabench and perftest, each way: rdmabench's client against
// ib_write_bw and ib_read_lat servers started with them, and ib_read_bw and
// ib_write_lat clients started with them against 'rdmabench server --perftest-port'
// with --perftest-disable-pcie-relaxed, --perftest-sl and --perftest-tclass. Every run
// completes on both sides.
func TestFabricPerftestInterop(t *testing.T) {
	needDevice(t)
	if _, err := exec.LookPath("ib_write_bw"); err != nil {
		t.Fatal("perftest is not installed: run 'make setup'")
	}
	cdev := srvDev
	if cliDev != "" {
		cdev = cliDev
	}
	sg, cg := gidIndex(t, srvDev), gidIndex(t, cdev)
	fabric := []string{"--disable_pcie_relaxed", "-S", "3", "--tclass", "96"}
	for _, tc := range []struct{ name, op, test, iters string }{
		{"ib_write_bw", "write", "bw", "1000"},
		{"ib_read_lat", "read", "lat", "300"},
	} {
		t.Run(tc.name+"/rdmabench-client", func(t *testing.T) {
			p := int(port.Add(1))
			srv := startPerftest(t, tc.name, append([]string{"-d", srvDev, "-x", sg, "-p", fmt.Sprint(p), "-n", tc.iters}, fabric...)...)
			if !socketListens(p) {
				t.Fatalf("%s did not listen:\n%s", tc.name, srv.out)
			}
			r := measure(t, append([]string{tc.op, tc.test, "-d", cdev, "-x", cg, "-n", tc.iters, "--timeout", "20s",
				"--perftest", fmt.Sprintf("%s:%d", srvIP, p)}, fabric...)...)
			if code := srv.wait(60 * time.Second); code != 0 {
				t.Fatalf("%s server: exit %d\n%s", tc.name, code, srv.out)
			}
			if c := r.Config; fmt.Sprint(r.Iterations) != tc.iters || r.Error != "" || c.SL != 3 || c.TrafficClass != 96 || c.PCIeRelaxedOrdering || !c.DisablePCIeRelaxed {
				t.Fatalf("rdmabench: %d messages (want %s), error %q, config %+v", r.Iterations, tc.iters, r.Error, c)
			}
			if !strings.Contains(srv.out.String(), "PCIe relax order: OFF") {
				t.Errorf("%s server does not say relaxed ordering is off:\n%s", tc.name, srv.out)
			}
			t.Logf("%s server printed:\n%s", tc.name, tail(srv.out.String(), 4))
		})
	}
	for _, tc := range []struct{ name, iters, want string }{
		{"ib_read_bw", "1000", "read_bw, 1 QP: the client reported 65536 B x 1000"},
		{"ib_write_lat", "300", "write_lat, 2 B: 300 rounds"},
	} {
		t.Run(tc.name+"/perftest-client", func(t *testing.T) {
			pp := int(port.Add(1))
			s := spawnServer(t, "--perftest-port", fmt.Sprint(pp), "--timeout", "20s",
				"--perftest-disable-pcie-relaxed", "--perftest-sl", "3", "--perftest-tclass", "96")
			if !socketListens(pp) {
				t.Fatalf("no perftest port:\n%s", s.out)
			}
			if !s.waitLog("PCIe relaxed ordering off, SL 3, traffic class 96", 5*time.Second) {
				t.Errorf("the server does not say what it serves perftest clients with:\n%s", s.out)
			}
			cli := startPerftest(t, tc.name, append([]string{"-d", cdev, "-x", cg, "-p", fmt.Sprint(pp), "-n", tc.iters}, append(fabric, srvIP)...)...)
			if code := cli.wait(120 * time.Second); code != 0 {
				t.Fatalf("%s client: exit %d\n%s", tc.name, code, cli.out)
			}
			if !s.waitLog(tc.want, 20*time.Second) {
				t.Fatalf("server log does not say %q:\n%s", tc.want, s.out)
			}
			if strings.Contains(s.out.String(), "served with PCIe relaxed ordering on") {
				t.Errorf("the server says it served with relaxed ordering on:\n%s", s.out)
			}
			t.Logf("%s client printed:\n%s", tc.name, tail(cli.out.String(), 4))
		})
	}
}
