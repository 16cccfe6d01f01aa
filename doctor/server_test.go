package doctor

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/bench"
	"github.com/rdmabench/rdmabench/bench/benchtest"
	"github.com/rdmabench/rdmabench/bench/ops"
	"github.com/rdmabench/rdmabench/oob"
	"github.com/rdmabench/rdmabench/result"
)

// rigServer checks against a server on the fake engine, over net.Pipe.
func rigServer(r *benchtest.Rig, token string) *Server {
	return &Server{
		Addr: "fake-server:18600", Token: token, Timeout: 2 * time.Second,
		Conn:   func(context.Context) (net.Conn, error) { return r.DialConn(), nil },
		Client: func(context.Context) (*bench.Client, error) { return r.Dial(token) },
	}
}

func serverRun(t *testing.T, s *Server) []Check {
	t.Helper()
	o := options(tree(t, "rxe", ""), devices(rxe0()))
	o.Server = s
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	checks := Run(ctx, o)
	if len(checks) < len(localChecks) {
		t.Fatalf("checks: %+v", checks)
	}
	return checks[len(localChecks):]
}

var serverNames = []string{"server-reachable", "server-token", "server-version", "write-bw", "read-bw"}

func expect(t *testing.T, checks []Check, want map[string]want) {
	t.Helper()
	for name, w := range want {
		c := find(t, checks, name)
		if c.Verdict != w.verdict || !strings.Contains(c.Found, w.found) || !strings.Contains(c.Fix, w.fix) || (w.fix == "" && c.Fix != "") {
			t.Errorf("%s: want %s, found %q, fix %q; got\n%+v", name, w.verdict, w.found, w.fix, c)
		}
	}
}

func TestServerOK(t *testing.T) {
	for _, token := range []string{"", "s3cret"} {
		r := benchtest.NewRig(t, ops.All, func(s *bench.Server) { s.Token = token })
		checks := serverRun(t, rigServer(r, token))
		if len(checks) != len(serverNames) {
			t.Fatalf("token %q: want %v, got\n%s", token, serverNames, dump(checks))
		}
		for i, c := range checks {
			if c.Name != serverNames[i] || c.Verdict != OK {
				t.Errorf("token %q: %s: got %+v", token, serverNames[i], c)
			}
		}
		tokenWords := map[string]string{"": "requires no token, and none was given", "s3cret": "the token matches"}[token]
		expect(t, checks, map[string]want{
			"server-reachable": {OK, "TCP connection to fake-server:18600", ""},
			"server-token":     {OK, tokenWords, ""},
			"server-version":   {OK, fmt.Sprintf("rdmabench %s, protocol %d, on ", result.Version, oob.Version), ""},
			"write-bw":         {OK, "100 WRITEs of 4 KiB: ", ""},
			"read-bw":          {OK, "100 READs of 4 KiB: ", ""},
		})
		if c := find(t, checks, "write-bw"); !strings.Contains(c.Found, " Gb/s, ") || !strings.Contains(c.Found, "path MTU 1024") {
			t.Errorf("the run shows its rate: %+v", c)
		}
		if c := find(t, checks, "server-version"); !strings.Contains(c.Found, "fake1 (fake engine) port") {
			t.Errorf("the server's device: %+v", c)
		}
		if logs := r.Logs(); !strings.Contains(logs, `"doctor"`) || !strings.Contains(logs, "bye") {
			t.Errorf("the probe says hello as the doctor and bye: %s", logs)
		}
	}
}

func TestServerTokens(t *testing.T) {
	for _, tc := range []struct {
		server, client string
		found, fix     string
	}{
		{"s3cret", "wrong", "authentication failed", "the same --token-file or RDMABENCH_TOKEN on both hosts"},
		{"s3cret", "", "authentication failed: this server requires a token", "give the server's token: --token-file FILE"},
		{"", "s3cret", "the server requires no token", "drop --token-file/--token and RDMABENCH_TOKEN here"},
	} {
		r := benchtest.NewRig(t, ops.All, func(s *bench.Server) { s.Token = tc.server })
		s := rigServer(r, tc.client)
		s.Client = func(context.Context) (*bench.Client, error) {
			t.Error("no measuring client after the token failed")
			return nil, errors.New("unreachable")
		}
		checks := serverRun(t, s)
		expect(t, checks, map[string]want{
			"server-reachable": {OK, "", ""},
			"server-token":     {Fail, tc.found, tc.fix},
			"server-version":   {Skip, "see server-token", ""},
			"write-bw":         {Skip, "see server-token", ""},
			"read-bw":          {Skip, "see server-token", ""},
		})
	}
}

// A plan the server's limits refuse fails both runs with the server's reason.
func TestServerRefusedPlan(t *testing.T) {
	r := benchtest.NewRig(t, ops.All, func(s *bench.Server) { s.MaxBuffer = 1024 })
	checks := serverRun(t, rigServer(r, ""))
	for _, name := range []string{"write-bw", "read-bw"} {
		expect(t, checks, map[string]want{name: {Fail, "server refused the plan", "restart it with a larger --max-buffer"}})
		if c := find(t, checks, name); !strings.Contains(c.Found, "--max-buffer") {
			t.Errorf("%s: the server's reason must show: %+v", name, c)
		}
	}
	expect(t, checks, map[string]want{"server-version": {OK, "", ""}})
}

func TestServerRunFails(t *testing.T) {
	r := benchtest.NewRig(t, ops.All, nil)
	r.Client.FailLoop = errors.New("work completion failed: IBV_WC_RETRY_EXC_ERR")
	checks := serverRun(t, rigServer(r, ""))
	expect(t, checks, map[string]want{
		"write-bw": {Fail, "IBV_WC_RETRY_EXC_ERR", "UDP port 4791"},
		"read-bw":  {Fail, "IBV_WC_RETRY_EXC_ERR", "rdmabench read bw SERVER -n 100 -s 4096"},
	})
	r.Client.FailLoop = nil
	r.Client.FailOpen = errors.New("ibv_open_device: no such device")
	checks = serverRun(t, rigServer(r, ""))
	expect(t, checks, map[string]want{"write-bw": {Fail, "cannot start a client on the local device: ibv_open_device", "see the device check"}})
}

func TestServerUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skip(err)
	}
	addr := l.Addr().String()
	l.Close()
	s := &Server{Addr: addr, Timeout: time.Second,
		Conn: func(ctx context.Context) (net.Conn, error) {
			return (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "tcp", addr)
		},
		Client: func(context.Context) (*bench.Client, error) { return nil, errors.New("unreachable") },
	}
	checks := serverRun(t, s)
	c := find(t, checks, "server-reachable")
	if c.Verdict != Fail || !strings.Contains(c.Found, "cannot connect to "+addr+": ") || !strings.Contains(c.Found, "connection refused") || !strings.Contains(c.Fix, "start 'rdmabench server'") {
		t.Errorf("refused: %+v", c)
	}
	for _, name := range serverNames[1:] {
		if c := find(t, checks, name); c.Verdict != Skip {
			t.Errorf("%s after an unreachable server: %+v", name, c)
		}
	}
}

// Something that is not an rdmabench server answers on the port.
func TestServerNotRdmabench(t *testing.T) {
	s := &Server{Addr: "host:80", Timeout: time.Second,
		Conn: func(context.Context) (net.Conn, error) {
			c, srv := net.Pipe()
			go func() {
				buf := make([]byte, 4096)
				srv.Read(buf)
				srv.Write([]byte("HTTP/1.1 400 Bad Request\r\n\r\n"))
				srv.Close()
			}()
			return c, nil
		},
		Client: func(context.Context) (*bench.Client, error) { return nil, errors.New("unreachable") },
	}
	checks := serverRun(t, s)
	expect(t, checks, map[string]want{
		"server-reachable": {OK, "", ""},
		"server-token":     {Skip, "", ""},
		"server-version":   {Fail, "not an rdmabench peer", "not perftest or another service"},
		"write-bw":         {Skip, "see server-version", ""},
	})
}

// The runs read the NIC counters: a tainted run is a warning naming the counter.
func TestServerTaintedRun(t *testing.T) {
	r := benchtest.NewRig(t, ops.All, nil)
	r.Client.Retries.Store(1)
	c := find(t, serverRun(t, rigServer(r, "")), "write-bw")
	if c.Verdict != Warn || !strings.Contains(c.Found, "retry_exceeded_err") || c.Fix == "" {
		t.Fatalf("want a warning naming the counter, got %+v", c)
	}
}
