package doctor

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/rdmabench/rdmabench/bench"
	"github.com/rdmabench/rdmabench/bench/ops"
	"github.com/rdmabench/rdmabench/internal/text"
	"github.com/rdmabench/rdmabench/oob"
	"github.com/rdmabench/rdmabench/plan"
	"github.com/rdmabench/rdmabench/report"
	"github.com/rdmabench/rdmabench/result"
)

// Server is a running rdmabench server to check against.
type Server struct {
	// Addr is host:port, as the checks name it.
	Addr string
	// Token is the shared secret ("" for none).
	Token   string
	Timeout time.Duration
	// Conn opens a control connection to the server (the command: a TCP dial bounded
	// by Timeout; tests: fake.Rig.DialConn). The doctor says hello on it with Token,
	// which checks the protocol, the token and the server's version without touching
	// an RDMA device.
	Conn func(ctx context.Context) (net.Conn, error)
	// Client connects a client that measures with the local device and Token (the
	// command: bench.Dial on the verbs engine; tests: fake.Rig.Dial).
	Client func(ctx context.Context) (*bench.Client, error)
}

// The runs are short: they show that the RDMA path works both ways, not how fast.
const (
	runMessages = 100
	runSize     = 4096
)

func serverChecks(ctx context.Context, s *Server, h *host) []Check {
	reach := Check{Name: "server-reachable"}
	token := Check{Name: "server-token"}
	version := Check{Name: "server-version"}
	runs := []Check{{Name: "write-bw"}, {Name: "read-bw"}}
	all := func() []Check { return append([]Check{reach, token, version}, runs...) }
	skipRest := func(why string, cs ...*Check) {
		for _, c := range cs {
			if c.Verdict == "" {
				c.Verdict, c.Found = Skip, why
			}
		}
	}
	skipAll := func(why string) []Check {
		skipRest(why, &reach, &token, &version, &runs[0], &runs[1])
		return all()
	}
	if s.Conn == nil || s.Client == nil {
		return skipAll("no way to reach the server was given")
	}

	nc, err := s.Conn(ctx)
	if err != nil {
		reach.Verdict = Fail
		reach.Found = fmt.Sprintf("cannot connect to %s: %v", s.Addr, err)
		reach.Fix = "start 'rdmabench server' on that host (its --port must match -p here), and let TCP to that port through its firewall"
		return skipAll("the server is not reachable")
	}
	reach.Verdict, reach.Found = OK, fmt.Sprintf("TCP connection to %s", s.Addr)
	hello, err := probe(ctx, nc, s)
	switch {
	case err == nil:
		token.Verdict = OK
		token.Found = "the server requires no token, and none was given"
		if s.Token != "" {
			token.Found = "the token matches: client and server each proved they know it"
		}
		version.Verdict = OK
		version.Found = fmt.Sprintf("rdmabench %s, protocol %d, on %s: %s", text.Clean(hello.Tool, 64), hello.Proto, text.Clean(hello.Host, 64), deviceText(hello.Device))
		if hello.Tool != result.Version {
			version.Verdict = Warn
			version.Found += fmt.Sprintf("; this rdmabench is %s", result.Version)
			version.Fix = "run the same rdmabench version on both hosts: the protocol agrees, but defaults and results may differ between versions"
		}
	case tokenProblem(err):
		token.Verdict, token.Found = Fail, err.Error()
		switch {
		case s.Token == "":
			token.Fix = "give the server's token: --token-file FILE (the file the server was started with) or RDMABENCH_TOKEN"
		case strings.Contains(err.Error(), "requires no token"):
			token.Fix = "drop --token-file/--token and RDMABENCH_TOKEN here, or restart the server with the token"
		default:
			token.Fix = "use the server's token: the same --token-file or RDMABENCH_TOKEN on both hosts"
		}
		return skipAll("the server did not accept this client (see server-token)")
	default:
		version.Verdict, version.Found = Fail, err.Error()
		version.Fix = "make sure an rdmabench server of the same version listens on that port ('rdmabench version' on both hosts)"
		if !errors.Is(err, oob.ErrVersion) {
			version.Fix = "make sure it is an rdmabench server that listens on that port (not perftest or another service), of the same version as this one"
		}
		return skipAll("no hello from the server (see server-version)")
	}

	c, err := s.Client(ctx)
	if err != nil {
		for i := range runs {
			runs[i].Verdict = Fail
			runs[i].Found = "cannot start a client on the local device: " + err.Error()
			runs[i].Fix = "fix the local device first (see the device check), then run the doctor again"
		}
		return all()
	}
	defer c.Close()
	for i, name := range ops.Names {
		op := ops.All[name]
		runs[i] = runCheck(ctx, c, op)
	}
	return all()
}

// probe says hello on nc, proving the token when the server asks, and says bye.
func probe(ctx context.Context, nc net.Conn, s *Server) (*oob.Hello, error) {
	defer nc.Close()
	stop := context.AfterFunc(ctx, func() { nc.Close() })
	defer stop()
	c := oob.NewConn(nc, s.Timeout)
	host, _ := os.Hostname()
	hello, err := oob.Handshake(c, result.Device{Name: "doctor", Host: host}, s.Token)
	if err != nil {
		return nil, err
	}
	_ = c.Send(oob.Msg{Type: oob.TBye})
	return hello, nil
}

// tokenProblem says whether a failed handshake failed on the token rather than on
// the connection or the protocol.
func tokenProblem(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "authentication failed") || strings.Contains(msg, "requires no token") ||
		strings.Contains(msg, "prove that it knows the token")
}

func deviceText(d result.Device) string {
	s := fmt.Sprintf("%s (%s) port %d", text.Clean(d.Name, 64), text.Clean(d.Model, 64), d.Port)
	if d.GIDType != "" {
		s += fmt.Sprintf(", GID %d (%s)", d.GIDIndex, text.Clean(d.GIDType, 16))
	}
	if d.ActiveMTU > 0 {
		s += fmt.Sprintf(", MTU %d", d.ActiveMTU)
	}
	if d.RateGbps > 0 {
		s += fmt.Sprintf(", %g Gb/s", d.RateGbps)
	}
	return s
}

// runCheck runs a short bandwidth test of op: it must measure, without error.
func runCheck(ctx context.Context, c *bench.Client, op bench.Op) Check {
	name := string(op.Name)
	chk := Check{Name: name + "-bw"}
	cfg := result.Config{Op: name, Test: result.BW, Iterations: runMessages, MsgSizeBytes: runSize}
	op.Defaults(&cfg)
	cfg.WarmupIterations = plan.DefaultWarmup(cfg)
	r, err := c.Run(ctx, op, cfg)
	what := fmt.Sprintf("%d %s of %s", runMessages, strings.ToUpper(name)+"s", bytesText(runSize))
	if err == nil && r.Error == "" && r.Iterations > 0 {
		chk.Verdict = OK
		chk.Found = fmt.Sprintf("%s: %.3g Gb/s, %.3g Mpps, path MTU %d", what, r.BWGbps, r.MsgRateMpps, r.PathMTU)
		if r.Counters == nil {
			chk.Found += "; NIC counters not read"
		}
		// The run read both sides' NIC counters: an error, a failed sanity check or
		// pause frames to the data's sender taint it; pauses elsewhere and congestion
		// are said, not warned of.
		var taint, other []string
		for _, f := range report.TaintFlags(r) {
			taint = append(taint, f.String())
		}
		for _, f := range report.ReportedFlags(r) {
			other = append(other, f.String())
		}
		if len(other) > 0 {
			chk.Found += "; congestion: " + strings.Join(other, ", ")
		}
		if r.Tainted {
			chk.Verdict = Warn
			chk.Found += "; tainted: " + strings.Join(taint, ", ")
			chk.Fix = "the NIC retransmitted, dropped or miscounted, or the fabric paused the sender, during the run: watch 'rdmabench counters --watch 1s' on both hosts while it runs; check cables, switch ports, and PFC/ECN on the Ethernet fabric (docs/usage.md, On a real fabric)"
		}
		return chk
	}
	if err == nil {
		err = errors.New(r.Error)
	}
	chk.Verdict = Fail
	chk.Found = fmt.Sprintf("%s failed: %v", what, err)
	var peer *oob.PeerError
	switch {
	case strings.Contains(err.Error(), "server refused the plan"):
		chk.Fix = "the server's limits refuse even this small test: restart it with a larger --max-buffer or --max-test-time"
	case errors.As(err, &peer):
		chk.Fix = "the server failed on its side: its log says why (run it in a terminal, or see its journal)"
	default:
		chk.Fix = fmt.Sprintf("run 'rdmabench %s bw SERVER -n %d -s %d' for the whole result; check that each host's GID reaches the other ('rdmabench devices --gid' on both), that UDP port 4791 (RoCE v2) is open between them, and that the device checks above pass on both hosts", name, runMessages, runSize)
	}
	return chk
}
