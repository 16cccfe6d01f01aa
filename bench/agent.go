package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/rdmabench/rdmabench/internal/text"
	"github.com/rdmabench/rdmabench/oob"
	"github.com/rdmabench/rdmabench/plan"
	"github.com/rdmabench/rdmabench/result"
)

// Fleet agents (rdmabench agent, rdmabench fleet). An agent is a server that, when an
// authenticated coordinator asks (oob.TRun), also runs a test as the client of another
// agent and answers with the result; on the coordinator, members register
// (oob.TRegister). Run requests need the server's token: without one, anyone who
// reaches the agent could aim its traffic at any address.

// errNotAgent is the answer of a server that does not run tests on request.
var errNotAgent = errors.New("this server does not run tests on request: start it as 'rdmabench agent' (with a token)")

// agentDial reaches a run request's target.
func (sv *Server) agentDial(ctx context.Context, addr string) (net.Conn, error) {
	if sv.Dial != nil {
		return sv.Dial(ctx, addr)
	}
	return dialTCP(ctx, addr, sv.Timeout)
}

// runFor serves a run request: the plan, as a client of the agent at req.Target, with
// this agent's device and token, under this server's caps. The result (with its error)
// goes back whatever happened; a request that cannot run is refused with an error
// message, and the session goes on.
func (sv *Server) runFor(ctx context.Context, c *oob.Conn, req oob.Run) error {
	refuse := func(err error) error { c.SendError(err); return nil }
	cfg := req.Plan
	op, ok := sv.Ops[cfg.Op]
	switch {
	case !sv.Agent || sv.Token == "":
		return refuse(errNotAgent)
	case !ok:
		return refuse(fmt.Errorf("this agent does not run %s tests", text.Quote(cfg.Op)))
	}
	if host, port, err := net.SplitHostPort(req.Target); err != nil || !validHost(host) || !validPort(port) {
		return refuse(fmt.Errorf("run: target %s: want host:port, the host an IP address or a host name", text.Quote(req.Target)))
	}
	op.Defaults(&cfg)
	if cfg.WarmupIterations == 0 {
		cfg.WarmupIterations = plan.DefaultWarmup(cfg)
	}
	if err := op.Validate(cfg); err != nil {
		return refuse(fmt.Errorf("run: invalid plan: %w", err))
	}
	if err := sv.fits(cfg, "agent"); err != nil {
		return refuse(fmt.Errorf("run: %w", err))
	}
	// As the client it holds the client's buffer and queues (qps x depth), not the
	// server's: those are what --max-buffer must bound here.
	need := ClientBytes(op, cfg)
	if need > sv.MaxBuffer {
		return refuse(fmt.Errorf("run: the plan needs %d bytes of buffer and queues on this agent (its client side), above its --max-buffer of %d bytes", need, sv.MaxBuffer))
	}
	release, err := sv.hold(ctx, need, "the run")
	if err != nil {
		return refuse(err)
	}
	defer release()
	r, err := sv.runAsClient(ctx, op, req.Target, cfg)
	if err != nil && r.Error == "" {
		r.Error = err.Error()
	}
	sv.logf(&sv.said, "session lines", "run for %s: %s %s %d B against %s: %s", c.RemoteAddr(), cfg.Op, cfg.Test, cfg.MsgSizeBytes, text.Quote(req.Target), map[bool]string{true: "done", false: "failed"}[r.Error == ""]) // text: validated (the plan passed Validate)
	return c.Send(oob.Msg{Type: oob.TRunResult, RunResult: &r})
}

// runAsClient runs one test against target with this agent's engine and token.
func (sv *Server) runAsClient(ctx context.Context, op Op, target string, cfg result.Config) (result.Result, error) {
	r := result.Result{SchemaVersion: result.SchemaVersion, ToolVersion: result.Version, Time: time.Now().UTC(), Server: target, Config: cfg}
	eng := sv.Engine
	if eng == nil {
		eng = Verbs
	}
	dev, err := eng.Open(sv.Local)
	if err != nil {
		return r, err
	}
	nc, err := sv.agentDial(ctx, target)
	if err != nil {
		dev.Close()
		return r, fmt.Errorf("cannot reach the agent at %s: %w", target, err)
	}
	cl, err := NewClient(nc, dev, target, sv.Token, sv.Timeout)
	if err != nil {
		return r, err
	}
	defer cl.Close()
	return cl.Run(ctx, op, cfg)
}

// register serves a member's registration on the coordinator.
func (sv *Server) register(c *oob.Conn, reg oob.Register) error {
	if sv.OnRegister == nil {
		err := errors.New("this agent is not the fleet's coordinator (rank 0)")
		c.SendError(err)
		return err
	}
	host := reg.Host
	if host != "" && !validHost(host) {
		err := fmt.Errorf("register: host %s: want an IP address or a host name", text.Quote(host))
		c.SendError(err)
		return err
	}
	if host == "" {
		var err error
		if host, _, err = net.SplitHostPort(c.RemoteAddr().String()); err != nil {
			host = c.RemoteAddr().String()
		}
	}
	if err := sv.OnRegister(net.JoinHostPort(host, strconv.Itoa(reg.Port)), reg); err != nil {
		c.SendError(err)
		return err
	}
	return c.Send(oob.Msg{Type: oob.TReady})
}

// Agent is a coordinator's (or a member's) session with one agent.
type Agent struct {
	Addr string
	conn *oob.Conn
}

// DialAgent connects to the agent at addr and authenticates with token (dial: nil for
// TCP).
func DialAgent(ctx context.Context, addr string, me result.Device, token string, timeout time.Duration, dial func(context.Context, string) (net.Conn, error)) (*Agent, error) {
	if dial == nil {
		dial = func(ctx context.Context, addr string) (net.Conn, error) { return dialTCP(ctx, addr, timeout) }
	}
	nc, err := dial(ctx, addr)
	if err != nil {
		return nil, fmt.Errorf("cannot reach the agent at %s: %w", addr, err)
	}
	c := oob.NewConn(nc, timeout)
	stop := context.AfterFunc(ctx, c.Interrupt)
	defer stop()
	if _, err := oob.Handshake(c, me, token); err != nil {
		nc.Close()
		return nil, fmt.Errorf("handshake with the agent at %s: %w", addr, err)
	}
	return &Agent{Addr: addr, conn: c}, nil
}

// Run asks the agent to run cfg against the agent at target and returns the result it
// measured. The wait is bounded by the test's length (--duration, or the server's
// --max-test-time for a test of iterations) and the connection's timeout.
func (a *Agent) Run(ctx context.Context, target string, cfg result.Config, maxTest time.Duration) (result.Result, error) {
	stop := context.AfterFunc(ctx, a.conn.Interrupt)
	defer stop()
	if err := a.conn.Send(oob.Msg{Type: oob.TRun, Run: &oob.Run{Target: target, Plan: cfg}}); err != nil {
		return result.Result{Config: cfg, Server: target}, err
	}
	wait := maxTest
	if cfg.DurationS > 0 {
		wait = time.Duration(cfg.DurationS * float64(time.Second))
	}
	m, err := a.conn.ExpectWithin(oob.TRunResult, wait+4*a.conn.Timeout)
	if err != nil {
		return result.Result{Config: cfg, Server: target, Error: err.Error()}, fmt.Errorf("agent %s: %w", a.Addr, err)
	}
	r := *m.RunResult
	if r.Error != "" {
		return r, errors.New(text.Clean(r.Error, 500))
	}
	return r, nil
}

// Register tells the coordinator this member's rank and agent port.
func (a *Agent) Register(reg oob.Register) error {
	if err := a.conn.Send(oob.Msg{Type: oob.TRegister, Register: &reg}); err != nil {
		return err
	}
	_, err := a.conn.Expect(oob.TReady)
	return err
}

// EndFleet tells the agent that the fleet is over.
func (a *Agent) EndFleet() error { return a.conn.Send(oob.Msg{Type: oob.TFleetDone}) }

// Close ends the session.
func (a *Agent) Close() error {
	_ = a.conn.Send(oob.Msg{Type: oob.TBye})
	return a.conn.Close()
}

// validHost says whether s is an IP address or a DNS host name (RFC 1123 labels, '_'
// allowed as resolvers do): what a peer names as a host is dialed and logged, so
// nothing else gets through.
func validHost(s string) bool {
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Zone() == "" || validHost(a.Zone()) // an interface name, as a label
	}
	if s == "" || len(s) > 253 {
		return false
	}
	for label := range strings.SplitSeq(strings.TrimSuffix(s, "."), ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
				return false
			}
		}
	}
	return true
}

// validPort says whether s is a TCP port number, 1 to 65535.
func validPort(s string) bool {
	n, err := strconv.Atoi(s)
	return err == nil && n >= 1 && n <= 65535 && strconv.Itoa(n) == s
}
