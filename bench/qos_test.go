package bench_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/bench"
	"github.com/rdmabench/rdmabench/bench/benchtest"
	"github.com/rdmabench/rdmabench/bench/ops"
	"github.com/rdmabench/rdmabench/oob"
	"github.com/rdmabench/rdmabench/plan"
	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/verbs"
)

// last is the newest session an engine made.
func last(t *testing.T, e *benchtest.Engine) *benchtest.Session {
	t.Helper()
	ss := e.Sessions()
	if len(ss) == 0 {
		t.Fatal("no session")
	}
	return ss[len(ss)-1]
}

// checkSide says what is wrong with one side's session of a test: the access flags its
// buffer was registered with (and, with --mr per-io or cache, its loop's
// registrations), and the SL and traffic class every QP got at RTR.
func checkSide(t *testing.T, name, side string, s *benchtest.Session, relaxed bool, sl, tclass int) {
	t.Helper()
	ro := s.Spec.Access()&verbs.AccessRelaxedOrdering != 0
	if ro != relaxed || (s.Spec.LoopAccess()&verbs.AccessRelaxedOrdering != 0) != relaxed {
		t.Errorf("%s: the %s's buffer is registered with %s (loop: %s), want relaxed ordering %v", name, side,
			verbs.AccessString(s.Spec.Access()), verbs.AccessString(s.Spec.LoopAccess()), relaxed)
	}
	rtr := s.RTR()
	if len(rtr) != s.Spec.NumQP {
		t.Fatalf("%s: the %s took %d of its %d QPs to RTR", name, side, len(rtr), s.Spec.NumQP)
	}
	for i, a := range rtr {
		if int(a.SL) != sl || int(a.TrafficClass) != tclass || !a.Global {
			t.Errorf("%s: the %s's QP %d went to RTR with %+v, want SL %d and a GRH with traffic class %d", name, side, i, a, sl, tclass)
		}
	}
}

// Relaxed ordering, the service level and the traffic class reach both sides: the
// plan carries them, each side registers its buffer and connects its QPs with them,
// and the result records them. Relaxed ordering is on by default except for the WRITE
// latency test (its ping-pong polls the last byte), as perftest; --disable-pcie-relaxed
// turns it off everywhere.
func TestRelaxedOrderingSLAndTrafficClassOnBothSides(t *testing.T) {
	r := benchtest.NewRig(t, ops.All, nil)
	c := dial(t, r, "")
	for _, tc := range []struct {
		op      string
		test    result.Test
		mr      string
		disable bool
		sl, tc  int
		relaxed bool
	}{
		{"write", result.BW, "", false, 0, 0, true},
		{"read", result.BW, "", false, 0, 0, true},
		{"write", result.Lat, "", false, 0, 0, false},
		{"read", result.Lat, "", false, 0, 0, true},
		{"write", result.BW, "", true, 0, 0, false},
		{"read", result.BW, "", true, 3, 96, false},
		{"read", result.Lat, "", true, 15, 255, false},
		{"write", result.BW, "", false, 3, 96, true},
		{"write", result.Lat, "", false, 7, 104, false},
		{"read", result.BW, "per-io", false, 1, 0, true},
		{"write", result.BW, "cache", true, 0, 2, false},
	} {
		name := fmt.Sprintf("%s %s mr=%q disable=%v sl=%d tclass=%d", tc.op, tc.test, tc.mr, tc.disable, tc.sl, tc.tc)
		cfg := result.Config{Op: tc.op, Test: tc.test, Iterations: 50, MR: tc.mr, DisablePCIeRelaxed: tc.disable, SL: tc.sl, TrafficClass: tc.tc}
		if tc.mr != "" {
			cfg.SQDepth = 16
		}
		res, err := run(t, c, cfg)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if g := res.Config; g.PCIeRelaxedOrdering != tc.relaxed || g.DisablePCIeRelaxed != tc.disable || g.SL != tc.sl || g.TrafficClass != tc.tc {
			t.Errorf("%s: the result records relaxed %v (disabled %v), SL %d, traffic class %d", name, g.PCIeRelaxedOrdering, g.DisablePCIeRelaxed, g.SL, g.TrafficClass)
		}
		checkSide(t, name, "client", last(t, r.Client), tc.relaxed, tc.sl, tc.tc)
		checkSide(t, name, "server", last(t, r.Server), tc.relaxed, tc.sl, tc.tc)
	}
}

// A region plan (the Go API's Dial) carries relaxed ordering, the service level and the
// traffic class as a test's plan does: the server registers the region and connects its
// QPs with them.
func TestRegionPlanCarriesRelaxedOrderingSLAndTrafficClass(t *testing.T) {
	r := benchtest.NewRig(t, ops.All, nil)
	for _, tc := range []struct {
		relaxed bool
		sl, tc  int
	}{{true, 0, 0}, {false, 0, 0}, {true, 3, 96}, {false, 15, 255}} {
		conn := oob.NewConn(r.DialConn(), 2*time.Second)
		if _, err := oob.Handshake(conn, result.Device{Name: "api"}, ""); err != nil {
			t.Fatal(err)
		}
		regionByHand(t, r, conn, result.Config{Op: "write", Test: result.Region, MsgSizeBytes: 4096, NumQPs: 2,
			PCIeRelaxedOrdering: tc.relaxed, SL: tc.sl, TrafficClass: tc.tc})
		conn.Close()
		checkSide(t, fmt.Sprintf("region %+v", tc), "server", last(t, r.Server), tc.relaxed, tc.sl, tc.tc)
	}
}

// A service level or traffic class out of range is refused before anything is
// opened, naming the flag and the range.
func TestSLAndTrafficClassRanges(t *testing.T) {
	for _, tc := range []struct {
		cfg  result.Config
		want string
	}{
		{result.Config{Op: "write", SL: 16}, "--sl 16: want a service level from 0 to 15"},
		{result.Config{Op: "write", SL: -1}, "--sl -1: want a service level from 0 to 15"},
		{result.Config{Op: "read", TrafficClass: 256}, "--tclass 256: want a traffic class from 0 to 255"},
		{result.Config{Op: "read", Test: result.Lat, TrafficClass: -3}, "--tclass -3: want a traffic class from 0 to 255"},
	} {
		ops.Defaults(&tc.cfg)
		if err := ops.Validate(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want %q", tc.cfg, err, tc.want)
		}
	}
	for _, cfg := range []result.Config{{Op: "write", SL: 15, TrafficClass: 255}, {Op: "read", Test: result.Lat, SL: 0, TrafficClass: 0}} {
		ops.Defaults(&cfg)
		if err := ops.Validate(cfg); err != nil {
			t.Errorf("%+v: %v", cfg, err)
		}
	}
}

// Against a perftest peer each side keeps its own settings, as two perftests do: the
// client's from its plan, the perftest server's from its command line.
func TestPerftestPeersKeepTheirOwnRelaxedOrderingSLAndTrafficClass(t *testing.T) {
	fab := benchtest.NewFabric()
	srv := &benchtest.Engine{Fabric: fab, Name: "srv"}
	for _, tc := range []struct {
		op                         string
		test                       result.Test
		cliDisable, srvDisable     bool
		cliSL, cliTC, srvSL, srvTC int
		cliRelaxed                 bool
	}{
		{"write", result.BW, false, false, 0, 0, 0, 0, true},
		{"read", result.BW, true, false, 3, 96, 5, 32, false},
		{"write", result.BW, false, true, 2, 0, 2, 0, true},
		{"read", result.Lat, false, true, 0, 104, 0, 104, true},
	} {
		name := fmt.Sprintf("%+v", tc)
		addr, _ := servePerftestWith(t, srv, func(ps *bench.PerftestServer) {
			ps.DisablePCIeRelaxed, ps.SL, ps.TrafficClass = tc.srvDisable, tc.srvSL, tc.srvTC
		})
		cli := &benchtest.Engine{Fabric: fab, Name: "cli"}
		c := bench.PerftestClient{Engine: cli, Addr: addr, Local: bench.Local{Device: "cli"}, Timeout: 2 * time.Second}
		cfg := result.Config{Op: tc.op, Test: tc.test, Iterations: 50, InlineBytes: plan.InlineAuto, Counters: "off",
			DisablePCIeRelaxed: tc.cliDisable, SL: tc.cliSL, TrafficClass: tc.cliTC}
		rs, err := c.Run(context.Background(), ops.All[tc.op], cfg, nil)
		if err != nil || len(rs) != 1 {
			t.Fatalf("%s: %v", name, err)
		}
		if g := rs[0].Config; g.PCIeRelaxedOrdering != tc.cliRelaxed || g.SL != tc.cliSL || g.TrafficClass != tc.cliTC {
			t.Errorf("%s: the result records relaxed %v, SL %d, traffic class %d", name, g.PCIeRelaxedOrdering, g.SL, g.TrafficClass)
		}
		checkSide(t, name, "client", last(t, cli), tc.cliRelaxed, tc.cliSL, tc.cliTC)
		checkSide(t, name, "perftest server", last(t, srv), !tc.srvDisable, tc.srvSL, tc.srvTC)
	}
}
