package fleet_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/bench"
	"github.com/rdmabench/rdmabench/bench/benchtest"
	"github.com/rdmabench/rdmabench/bench/ops"
	"github.com/rdmabench/rdmabench/fleet"
	"github.com/rdmabench/rdmabench/fleet/pairs"
	"github.com/rdmabench/rdmabench/oob"
	"github.com/rdmabench/rdmabench/result"
)

// agents starts n fake agents sharing token tok, at "host<i>:18600".
func agents(t *testing.T, n int, tok string) ([]*benchtest.Rig, []string, func(context.Context, string) (net.Conn, error)) {
	var mu sync.Mutex
	byAddr := map[string]*benchtest.Rig{}
	dial := func(ctx context.Context, addr string) (net.Conn, error) {
		mu.Lock()
		defer mu.Unlock()
		if r := byAddr[addr]; r != nil {
			return r.DialConn(), nil
		}
		return nil, fmt.Errorf("no route to %s", addr)
	}
	rs := benchtest.NewRigs(t, n, ops.All, func(s *bench.Server) {
		s.Agent, s.Token, s.Dial, s.Concurrent = true, tok, dial, n
		s.OnFleetDone = func() {}
	})
	var hosts []string
	mu.Lock()
	for i, r := range rs {
		h := fmt.Sprintf("host%d:18600", i)
		byAddr[h] = r
		hosts = append(hosts, h)
	}
	mu.Unlock()
	return rs, hosts, dial
}

// A pairwise fleet of 5 with one slow host: every pair measured once, the slow host's
// pairs judged bad against the fleet and confirmed by their retests, the stream holds
// the first pass and the retests, and the matrix rebuilt from it says the same.
func TestCoordinatorFindsTheSlowHost(t *testing.T) {
	rs, hosts, dial := agents(t, 5, "s3cret")
	for _, r := range rs { // synthetic time per WR, well above the sleeps' granularity
		r.Server.Cost = 20 * time.Microsecond
	}
	rs[3].Server.Cost = 100 * time.Microsecond
	var stream []result.Result
	var log bytes.Buffer
	p, _ := pairs.ParsePattern("pairwise", 5)
	c := &fleet.Coordinator{Pattern: p, Plan: result.Config{Op: "write", Test: result.BW, Iterations: 1000, MsgSizeBytes: 4096},
		Retest: 2, Token: "s3cret", Timeout: 2 * time.Second, MaxTest: time.Minute, Dial: dial,
		Record: func(r result.Result) error { stream = append(stream, r); return nil },
		Log:    func(f string, a ...any) { fmt.Fprintf(&log, f+"\n", a...) }}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := c.Run(ctx, hosts)
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	// The slow host's 4 pairs are bad in 2 retests each; a fast pair that a loaded
	// machine happened to slow may be retested too (and come out flaky, not bad).
	if len(out.Results) != 10 || out.Bad() != 4 || out.Retests < 8 || len(stream) != 10+out.Retests {
		t.Fatalf("%d results, %d bad, %d retests, %d streamed\n%s", len(out.Results), out.Bad(), out.Retests, len(stream), log.String())
	}
	for _, v := range out.Verdicts {
		if v.Bad != (v.A == 3 || v.B == 3) {
			t.Errorf("%d -> %d: bad %v (%s)", v.A, v.B, v.Bad, v.Why)
		}
	}
	for _, r := range stream {
		if r.Fleet == nil || r.Error != "" || r.Iterations != 1000 || r.Fleet.HostA != hosts[r.Fleet.A] {
			t.Fatalf("streamed %+v (%s)", r.Fleet, r.Error)
		}
	}
	again, err := pairs.FromResults(stream, pairs.OutlierOpts{})
	if err != nil || again.Bad() != 4 || strings.Join(again.Hosts, ",") != strings.Join(hosts, ",") {
		t.Fatalf("rebuilt: %v, %d bad, hosts %v", err, again.Bad(), again.Hosts)
	}
	if err := c.End(ctx, hosts); err != nil {
		t.Errorf("end: %v", err)
	}
}

// A member that is gone: its pairs fail (and are bad), the others are judged as usual.
func TestCoordinatorWithAMissingMember(t *testing.T) {
	_, hosts, dial := agents(t, 3, "s3cret")
	hosts = append(hosts, "host9:18600") // never started
	p, _ := pairs.ParsePattern("ring", 4)
	c := &fleet.Coordinator{Pattern: p, Plan: result.Config{Op: "read", Test: result.BW, Iterations: 50, MsgSizeBytes: 4096},
		Token: "s3cret", Timeout: time.Second, MaxTest: time.Minute, Dial: dial}
	out, err := c.Run(context.Background(), hosts)
	if err != nil {
		t.Fatal(err)
	}
	failed := 0
	for i, r := range out.Results {
		if r.Err != "" {
			failed++
			if r.A != 3 && r.B != 3 {
				t.Errorf("%d -> %d failed: %s", r.A, r.B, r.Err)
			}
			if !out.Verdicts[i].Bad {
				t.Errorf("a failed pair is not bad: %+v", out.Verdicts[i])
			}
		}
	}
	if failed != 2 {
		t.Errorf("%d failed pairs, want the 2 with host 3", failed)
	}
}

func TestMembers(t *testing.T) {
	m := fleet.NewMembers(3, "a:1")
	if err := m.Register("b:1", oob.Register{Rank: 1, World: 4, Port: 1}); err == nil || !strings.Contains(err.Error(), "same world size") {
		t.Errorf("world mismatch: %v", err)
	}
	if err := m.Register("b:1", oob.Register{Rank: 0, World: 3, Port: 1}); err == nil {
		t.Error("rank 0 registered")
	}
	if err := m.Register("b:1", oob.Register{Rank: 1, World: 3, Port: 1}); err != nil {
		t.Fatal(err)
	}
	if err := m.Register("c:1", oob.Register{Rank: 1, World: 3, Port: 1}); err == nil || !strings.Contains(err.Error(), "already b:1") {
		t.Errorf("duplicate rank: %v", err)
	}
	if _, err := m.Wait(context.Background(), 50*time.Millisecond); err == nil || !strings.Contains(err.Error(), "ranks 2 have not registered") {
		t.Errorf("missing: %v", err)
	}
	m.Register("c:1", oob.Register{Rank: 2, World: 3, Port: 1})
	if hs, err := m.Wait(context.Background(), time.Second); err != nil || strings.Join(hs, " ") != "a:1 b:1 c:1" {
		t.Errorf("%v %v", hs, err)
	}
}
