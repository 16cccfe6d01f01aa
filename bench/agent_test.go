package bench_test

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/bench"
	"github.com/rdmabench/rdmabench/bench/benchtest"
	"github.com/rdmabench/rdmabench/bench/ops"
	"github.com/rdmabench/rdmabench/oob"
	"github.com/rdmabench/rdmabench/result"
)

// agents starts n fake agents with token tok; agent i is "agent<i>:18515".
func agents(t *testing.T, n int, tok string, configure func(*bench.Server)) ([]*benchtest.Rig, func(context.Context, string) (net.Conn, error)) {
	t.Helper()
	byAddr := map[string]*benchtest.Rig{}
	var mu sync.Mutex
	dial := func(ctx context.Context, addr string) (net.Conn, error) {
		mu.Lock()
		r := byAddr[addr]
		mu.Unlock()
		if r == nil {
			return nil, &net.OpError{Op: "dial", Net: "tcp", Err: errNoRoute}
		}
		return r.DialConn(), nil
	}
	rs := benchtest.NewRigs(t, n, ops.All, func(s *bench.Server) {
		s.Agent, s.Token, s.Dial, s.Concurrent = true, tok, dial, n
		if configure != nil {
			configure(s)
		}
	})
	mu.Lock()
	for i, r := range rs {
		byAddr[agentAddr(i)] = r
	}
	mu.Unlock()
	return rs, dial
}

type noRoute struct{}

func (noRoute) Error() string { return "no route to host" }

var errNoRoute = noRoute{}

func agentAddr(i int) string { return "agent" + string(rune('0'+i)) + ":18515" }

// A coordinator asks agent 0 to measure against agent 1: the result is agent 0's
// client run, verified at agent 1; the same session takes more requests.
func TestAgentRunsOnRequest(t *testing.T) {
	_, dial := agents(t, 3, "s3cret", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	a, err := bench.DialAgent(ctx, agentAddr(0), result.Device{Host: "coordinator"}, "s3cret", 2*time.Second, dial)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	for _, cfg := range []result.Config{
		{Op: "write", Test: result.BW, Iterations: 100, MsgSizeBytes: 4096, Verify: true},
		{Op: "read", Test: result.Lat, Iterations: 50},
	} {
		r, err := a.Run(ctx, agentAddr(2), cfg, time.Minute)
		if err != nil || r.Iterations == 0 || r.Client.Name != "fake1" || r.ServerDevice.Name != "fake3" || r.Server != agentAddr(2) {
			t.Fatalf("%s %s: %v: %d iterations, client %q, server %q at %s", cfg.Op, cfg.Test, err, r.Iterations, r.Client.Name, r.ServerDevice.Name, r.Server)
		}
		if cfg.Verify && (r.Verify == nil || !r.Verify.OK) {
			t.Errorf("verify %+v", r.Verify)
		}
	}
	// A target nobody answers: a result with the error, and the session goes on.
	r, err := a.Run(ctx, "agent9:18515", result.Config{Op: "write", Test: result.BW, Iterations: 10}, time.Minute)
	if err == nil || !strings.Contains(r.Error, "cannot reach the agent at agent9:18515") {
		t.Fatalf("unreachable target: %v (%q)", err, r.Error)
	}
	if _, err := a.Run(ctx, agentAddr(1), result.Config{Op: "write", Test: result.BW, Iterations: 10}, time.Minute); err != nil {
		t.Fatalf("after a failed run: %v", err)
	}
}

// Refusals: an agent without a token, a plan that does not validate, a target that is
// not host:port, a coordinator without the token.
func TestAgentRefuses(t *testing.T) {
	_, dial := agents(t, 2, "s3cret", func(s *bench.Server) { s.MaxBuffer = 64 << 20 })
	ctx := context.Background()
	if _, err := bench.DialAgent(ctx, agentAddr(0), result.Device{}, "wrong", 2*time.Second, dial); err == nil {
		t.Fatal("a coordinator with the wrong token got in")
	}
	a, err := bench.DialAgent(ctx, agentAddr(0), result.Device{}, "s3cret", 2*time.Second, dial)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	for _, c := range []struct {
		target string
		cfg    result.Config
		want   string
	}{
		{agentAddr(1), result.Config{Op: "send", Test: result.BW}, "does not run"},
		{agentAddr(1), result.Config{Op: "write", Test: result.BW, PostList: 9, SQDepth: 4}, "invalid plan"},
		{"agent1", result.Config{Op: "write", Test: result.BW}, "want host:port"},
		{"agent1\nforged:18600", result.Config{Op: "write", Test: result.BW}, "want host:port"},
		{"agent1:0", result.Config{Op: "write", Test: result.BW}, "want host:port"},
		// The agent is the client here: 64 QPs x 4096 WRs are 84 MB of its queues (the
		// server's side of the same plan is under 1 MB), above its 64 MiB.
		{agentAddr(1), result.Config{Op: "write", Test: result.BW, NumQPs: 64, SQDepth: 4096}, "(its client side), above its --max-buffer of 67108864"},
	} {
		if _, err := a.Run(ctx, c.target, c.cfg, time.Minute); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %+v: %v, want %q", c.target, c.cfg, err, c.want)
		}
		// A refusal is an error message, after which the session goes on.
	}
	open, _ := agents(t, 2, "", func(s *bench.Server) { s.Token = "" })
	_ = open
	b, err := bench.DialAgent(ctx, agentAddr(0), result.Device{}, "", 2*time.Second, func(ctx context.Context, addr string) (net.Conn, error) { return open[0].DialConn(), nil })
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := b.Run(ctx, agentAddr(1), result.Config{Op: "write", Test: result.BW}, time.Minute); err == nil || !strings.Contains(err.Error(), "with a token") {
		t.Errorf("an agent without a token ran a test on request: %v", err)
	}
}

// Members register with the coordinator, which learns their agents' addresses; a
// fleet-done message reaches the agent's hook.
func TestAgentRegistersAndEnds(t *testing.T) {
	var got []string
	var mu sync.Mutex
	done := make(chan struct{}, 1)
	_, dial := agents(t, 1, "s3cret", func(s *bench.Server) {
		s.OnRegister = func(addr string, r oob.Register) error {
			mu.Lock()
			defer mu.Unlock()
			if r.Rank < 1 || r.Rank >= r.World {
				return &oob.ProtocolError{Msg: "bad rank"}
			}
			got = append(got, addr)
			return nil
		}
		s.OnFleetDone = func() { done <- struct{}{} }
	})
	ctx := context.Background()
	a, err := bench.DialAgent(ctx, agentAddr(0), result.Device{}, "s3cret", 2*time.Second, dial)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Register(oob.Register{Rank: 1, World: 3, Port: 18600}); err != nil {
		t.Fatal(err)
	}
	if err := a.Register(oob.Register{Rank: 5, World: 3, Port: 18600}); err == nil || !strings.Contains(err.Error(), "bad rank") {
		t.Fatalf("bad rank: %v", err)
	}
	a.Close()
	// A host that is not an address or a name (here one that would forge a line in the
	// coordinator's log) is refused, and never reaches the fleet's list.
	b, err := bench.DialAgent(ctx, agentAddr(0), result.Device{}, "s3cret", 2*time.Second, dial)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Register(oob.Register{Rank: 2, World: 3, Port: 18600, Host: "h1\nrdmabench server: forged"}); err == nil || !strings.Contains(err.Error(), "want an IP address or a host name") {
		t.Fatalf("a forged host: %v", err)
	}
	if len(got) != 1 || !strings.HasSuffix(got[0], ":18600") {
		t.Fatalf("registered %v", got)
	}
	a, _ = bench.DialAgent(ctx, agentAddr(0), result.Device{}, "s3cret", 2*time.Second, dial)
	a.EndFleet()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("fleet done did not reach the agent")
	}
	a.Close()
}
