package bench

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"sync"
	"time"

	"github.com/rdmabench/rdmabench/counters"
	"github.com/rdmabench/rdmabench/internal/text"
	"github.com/rdmabench/rdmabench/oob"
	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/verbs/qp"
)

// Server follows the plans of its clients. Handshakes run concurrently (so that silent
// or slow connections never hold up a real client), tests one at a time.
type Server struct {
	Local       Local
	Token       string
	MaxBuffer   int64         // most bytes (buffer and queues) one plan may make the server allocate
	MaxTestTime time.Duration // longest test the server follows
	Timeout     time.Duration // bound on each handshake step and on a client's silence in a test
	Idle        time.Duration // a client silent for longer between tests is dropped
	Ops         map[string]Op
	Log         *log.Logger
	Engine      Engine // nil: Verbs
	// Concurrent is how many tests run at once (default 1; incast: N clients at a time).
	// MaxBuffer bounds each plan and the sum of the plans running at once.
	Concurrent int
	// Agent (rdmabench agent, fleet members): with a token, run tests on request as the
	// client of another agent (agent.go). Dial reaches their targets (nil: TCP).
	Agent bool
	Dial  func(ctx context.Context, addr string) (net.Conn, error)
	// OnRegister (the fleet's coordinator) takes a member's registration: addr is its
	// agent's host:port (the host the connection came from).
	OnRegister func(addr string, r oob.Register) error
	// OnFleetDone is called when a coordinator says the fleet is over.
	OnFleetDone func()
	// PeerGIDCheck refuses a RoCE endpoint whose GID is not the control connection's
	// address (peer.go).
	PeerGIDCheck bool

	dev  Device
	me   result.Device
	slot chan struct{} // held by each test in progress

	mu      sync.Mutex
	inUse   int64  // bytes the running tests registered (ServerBytes)
	running int    // tests running
	started uint64 // tests started, ever
	auth    failures
	admit   admission
	logs    logLimit // lines about unauthenticated peers
	said    logLimit // lines about sessions: what an admitted client makes the server log
}

// Limits on connections that have not authenticated yet.
const (
	maxPreAuth     = 64              // handshakes in progress at once (admission says which is cut for a newcomer)
	preAuthTimeout = 5 * time.Second // each handshake step must finish in this (or --timeout, if shorter)
	preAuthLimit   = 16 << 10        // the largest frame before authentication
)

// Open opens the server's device; call it before Serve so that a wrong device fails
// at start-up, not at the first client.
func (sv *Server) Open() error {
	eng := sv.Engine
	if eng == nil {
		eng = Verbs
	}
	dev, err := eng.Open(sv.Local)
	if err != nil {
		return err
	}
	sv.dev, sv.me = dev, dev.Identity()
	return nil
}

// Device is the identity of the opened device.
func (sv *Server) Device() result.Device { return sv.me }

// Close releases the device.
func (sv *Server) Close() error { return sv.dev.Close() }

// Serve accepts clients on l until ctx is done, then waits for the connections it
// serves to end (a test in progress is stopped and its client told).
func (sv *Server) Serve(ctx context.Context, l net.Listener) error {
	sv.slot = make(chan struct{}, max(1, sv.Concurrent))
	sv.said.burst = 2 * maxSessions // every session's connect and done in one second
	if sv.MaxTestTime <= 0 {
		sv.MaxTestTime = 10 * time.Minute
	}
	if sv.Timeout <= 0 {
		sv.Timeout = 30 * time.Second
	}
	if sv.Idle <= 0 {
		sv.Idle = 10 * time.Minute
	}
	stop := context.AfterFunc(ctx, func() { l.Close() })
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	var backoff time.Duration
	for {
		nc, err := l.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, net.ErrClosed) {
				return err
			}
			// EMFILE, ENFILE, ECONNABORTED...: back off and keep serving.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			sv.Log.Printf("accept: %v (retrying in %v)", err, backoff)
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
				return nil
			}
			continue
		}
		backoff = 0
		p := sv.admit.handshake(nc, sourceOf(nc.RemoteAddr()))
		wg.Add(1)
		go func() {
			defer wg.Done()
			sv.serveConn(ctx, nc, p)
		}()
	}
}

func (sv *Server) serveConn(ctx context.Context, nc net.Conn, p *pendingConn) {
	defer nc.Close()
	oob.Tune(nc, sv.Timeout)
	c := oob.NewConn(nc, min(sv.Timeout, preAuthTimeout))
	c.Limit = preAuthLimit
	// A shutdown interrupts whatever the connection waits for.
	stop := context.AfterFunc(ctx, c.Interrupt)
	defer stop()
	hello, err := sv.handshake(ctx, c, nc.RemoteAddr(), p)
	p.done()
	if err != nil {
		if !errors.Is(err, io.EOF) && ctx.Err() == nil { // EOF: connected and left without a word, a port probe
			sv.logf(&sv.logs, "failed handshakes", "client %s: handshake: %v", nc.RemoteAddr(), err)
		}
		return
	}
	release, ok := sv.admit.session(sourceOf(nc.RemoteAddr()))
	if !ok {
		c.SendError(errors.New("the server has too many sessions open: retry later"))
		return
	}
	defer release()
	c.SetTimeout(sv.Timeout)
	c.Limit = 0
	sv.logf(&sv.said, "session lines", "client %s (%s, rdmabench %s, %s) connected", nc.RemoteAddr(), text.Quote(hello.Host), text.Quote(hello.Tool), text.Quote(hello.Device.Name))
	if err := sv.session(ctx, c); err != nil {
		sv.logf(&sv.said, "session lines", "client %s: %v", nc.RemoteAddr(), err)
	}
}

func (sv *Server) session(ctx context.Context, c *oob.Conn) error {
	for ctx.Err() == nil {
		m, err := c.Recv(sv.Idle)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			if errors.Is(err, io.EOF) {
				return nil
			}
			c.SendError(err)
			return err
		}
		switch m.Type {
		case oob.TBye:
			sv.logf(&sv.said, "session lines", "client %s: bye", c.RemoteAddr())
			return nil
		case oob.TPlan:
			if m.Plan == nil {
				err := &oob.ProtocolError{Msg: "plan message without a plan"}
				c.SendError(err)
				return err
			}
			if err := sv.test(ctx, c, *m.Plan); err != nil {
				if oob.Lost(err) || errors.Is(err, errAborted) || ctx.Err() != nil {
					return err
				}
				// The client was told; it may send another plan.
				sv.logf(&sv.said, "session lines", "client %s: test failed: %v", c.RemoteAddr(), err)
			}
		case oob.TTCPBaseline: // --baseline tcp, after a test (baseline.go)
			if err := sv.baseline(ctx, c, m); err != nil {
				return err
			}
		case oob.TRun: // a fleet coordinator's request (agent.go)
			if m.Run == nil || m.Run.Target == "" {
				err := &oob.ProtocolError{Msg: "run message without a target"}
				c.SendError(err)
				return err
			}
			if err := sv.runFor(ctx, c, *m.Run); err != nil {
				return err
			}
		case oob.TRegister:
			if m.Register == nil || m.Register.Port <= 0 || m.Register.Port >= 1<<16 {
				err := &oob.ProtocolError{Msg: "register message without a port"}
				c.SendError(err)
				return err
			}
			if err := sv.register(c, *m.Register); err != nil {
				return err
			}
		case oob.TFleetDone:
			if !sv.Agent || sv.OnFleetDone == nil {
				c.SendError(errNotAgent)
				return errNotAgent
			}
			sv.Log.Printf("client %s: the fleet is over", c.RemoteAddr())
			sv.OnFleetDone()
			return nil
		default:
			err := &oob.ProtocolError{Msg: fmt.Sprintf("expected a plan or bye, got %s", text.Quote(m.Type))}
			c.SendError(err)
			return err
		}
	}
	c.SendError(errShutdown)
	return errShutdown
}

// errPastMax: the test (or a region's hold) outlived the server's --max-test-time.
func errPastMax(limit time.Duration) error {
	return fmt.Errorf("the test ran past this server's --max-test-time %v", limit)
}

var (
	errShutdown = errors.New("the server is shutting down")
	errLost     = errors.New("lost the client")
	errAborted  = errors.New("test aborted") // the session ends with it
)

func isNetErr(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// test serves one plan in three steps: admit it (the plan's rules, this server's
// limits), serve it (QPs connected, the client followed until it is done), and report
// this side's outcome. The buffer and QPs exist only for its duration.
func (sv *Server) test(ctx context.Context, c *oob.Conn, cfg result.Config) error {
	op, cfg, release, err := sv.admitPlan(ctx, cfg)
	if err != nil {
		c.SendError(err)
		return err
	}
	defer release()
	// The server's loops (-b) run where its own NIC is: the plan's --cpu is the client's.
	spec := sessionSpec(op, cfg, true)
	if pl, err := Place("", sv.me, allowedCPUs()); err == nil {
		pl.apply(&spec)
	}
	s, err := bindGID(sv.dev, c.LocalAddr()).NewSession(spec) // on the GID of the address the client reached
	if err != nil {
		c.SendError(err)
		return err
	}
	defer s.Close() // deregisters the buffer: nothing stays exposed between tests
	t, err := sv.serve(ctx, c, op, cfg, s)
	if err != nil {
		return err
	}
	return sv.report(c, op, cfg, s, t)
}

// admitPlan finds the plan's operation, fills its defaults, checks it against the
// operation's rules and this server's limits, and holds a test slot and the memory it
// needs until release.
func (sv *Server) admitPlan(ctx context.Context, cfg result.Config) (op Op, _ result.Config, release func(), err error) {
	op, cfg, err = PlanRules(sv.Ops, cfg)
	if err != nil {
		return op, cfg, nil, err
	}
	if cfg.Bidirectional && sv.Token == "" {
		return op, cfg, nil, errors.New("-b/--bidirectional makes the server send RDMA traffic of its own to the address the client names, which a server without a token does not do: give the server --token-file (and the client the same token)")
	}
	need := ServerBytes(op, cfg)
	if need > sv.MaxBuffer {
		return op, cfg, nil, fmt.Errorf("the plan needs %d bytes of buffer and queues on the server, above its --max-buffer of %d bytes: use a smaller --size/--offset/--qps/--tx-depth or restart the server with a larger --max-buffer", need, sv.MaxBuffer)
	}
	if err := sv.fits(cfg, "server"); err != nil {
		return op, cfg, nil, err
	}
	release, err = sv.hold(ctx, need, "the plan")
	return op, cfg, release, err
}

// fits says whether a plan's --duration fits in --max-test-time, which bounds the whole
// test: the measured phase and, around it, the warm-up and the drain, for which it
// keeps --timeout (at most a quarter of it). A plan that could not finish is refused
// before it starts rather than stopped at its end.
func (sv *Server) fits(cfg result.Config, who string) error {
	room := min(sv.Timeout, sv.MaxTestTime/4)
	limit := sv.MaxTestTime - room
	if d := time.Duration(cfg.DurationS * float64(time.Second)); d > limit {
		return fmt.Errorf("--duration %v does not fit in this %s's --max-test-time %v, which bounds the whole test: with %v kept for the warm-up and the drain, at most --duration %v", d, who, sv.MaxTestTime, room, limit)
	}
	return nil
}

// served is what serving a plan leaves for its report.
type served struct {
	done   oob.Msg        // the client's done
	rev    *oob.Direction // bidirectional: the server's own direction
	counts sideCounters
	alone  bool   // no other test ran from start to done: the counters are this test's
	start  uint64 // the tests started when this one's measured phase did
	ended  time.Time
}

// serve connects s to the client's QPs, runs this side's part (a latency responder,
// a bidirectional test's own direction, the counters) and follows the client until it
// is done. Whatever goes wrong, the client has been told, or cannot be.
func (sv *Server) serve(ctx context.Context, c *oob.Conn, op Op, cfg result.Config, s Session) (t served, _ error) {
	refuse := func(err error) error { c.SendError(err); return err }
	if cfg.Verify && !op.ToServer {
		fillSource(s, cfg, bwSlots(cfg))
	}
	local := s.Local()
	if err := c.Send(oob.Msg{Type: oob.TEndpoint, Endpoint: &local}); err != nil {
		return t, err
	}
	m, err := c.Expect(oob.TEndpoint)
	if err != nil {
		return t, err
	}
	if sv.PeerGIDCheck {
		if err := checkPeerGID(c.RemoteAddr(), local.LinkLayer, *m.Endpoint); err != nil {
			return t, refuse(err)
		}
	}
	if err := s.ConnectPeers([]qp.Endpoint{*m.Endpoint}, cfg.MTUBytes); err != nil {
		return t, refuse(err)
	}
	respErr := make(chan error, 1)
	if cfg.Test == result.Lat && op.ServerLatency != nil {
		go func() { respErr <- op.ServerLatency(s, cfg, sv.Timeout) }()
	} else {
		respErr <- nil
	}
	if err := c.Send(oob.Msg{Type: oob.TReady}); err != nil {
		s.Stop()
		<-respErr
		return t, err
	}
	rv := startReverse(op, cfg, s, sv.Timeout) // bidirectional: the server's warm-up
	var probe *counters.Snapshot
	if CountersOn(cfg) {
		if p, err := sv.dev.Counters(); err == nil {
			probe = &p
		}
	}
	t.done, err = sv.await(ctx, c, func(end time.Time) error {
		sv.mu.Lock()
		t.alone, t.start = sv.running == 1, sv.started
		sv.mu.Unlock()
		if CountersOn(cfg) && !t.counts.began {
			// The client waited for its counters' cache to expire (the default
			// lifespan at least); a longer lifespan here needs the rest.
			t.counts.open(sv.dev, max(0, settle(probe)-settle(nil)))
		}
		if rv != nil && !rv.active {
			return rv.measure(ctx, end, op, cfg, sv.Timeout, sv.MaxTestTime)
		}
		return nil
	})
	if err != nil {
		// The client is gone, or is told the test ends: flush what this side has in
		// flight instead of waiting for the transport's retries (Abort).
		s.Abort()
	}
	if rv != nil {
		t.rev = rv.finish(err != nil || t.done.Done == nil || t.done.Done.Interrupted, sv.Timeout)
	}
	s.Stop()
	rerr := <-respErr
	t.ended = time.Now()
	if err != nil {
		// The client is still measuring and beating: the session cannot go on.
		c.SendError(err)
		return t, fmt.Errorf("%w: %w", errAborted, err)
	}
	if rerr != nil {
		return t, refuse(rerr)
	}
	return t, nil
}

// report sends this side's outcome of a plan served: the server's direction, its
// counters, a region's digest, what --verify found in its buffer.
func (sv *Server) report(c *oob.Conn, op Op, cfg result.Config, s Session, t served) error {
	rep := oob.Report{Reverse: t.rev}
	serverCounters(&t.counts, sv.dev, cfg, t.ended, &rep)
	sv.mu.Lock()
	alone := t.alone && sv.running == 1 && sv.started == t.start
	sv.mu.Unlock()
	if rep.Counters != nil && !alone {
		rep.Counters, rep.CountersNote = nil, "other clients' tests ran at the same time (--concurrent): the server's counters include their traffic, so none are reported"
	}
	if cfg.Test == result.Region {
		d := s.Digest(0, cfg.MsgSizeBytes)
		rep.Digest = hex.EncodeToString(d[:])
	}
	if cfg.Verify && op.ToServer {
		var completed []uint64
		if t.done.Done != nil {
			completed = t.done.Done.Completed
		}
		rep.Verify = checkDest(s, cfg, bwSlots(cfg), completed, "server")
	}
	length := fmt.Sprintf("x %d", cfg.Iterations)
	if cfg.DurationS > 0 {
		length = fmt.Sprintf("for %g s", cfg.DurationS)
	}
	sv.logf(&sv.said, "session lines", "client %s: %s %s %d B %s done (path MTU %d)", c.RemoteAddr(), cfg.Op, cfg.Test, cfg.MsgSizeBytes, length, s.PathMTU()) // text: validated (the plan passed PlanRules)
	return c.Send(oob.Msg{Type: oob.TReport, Report: &rep})
}

// hold takes one of the --concurrent test slots (another client's plan waits a while,
// then is told to retry) and need bytes of --max-buffer for what (a plan, a baseline),
// until release is called.
func (sv *Server) hold(ctx context.Context, need int64, what string) (release func(), err error) {
	select {
	case sv.slot <- struct{}{}:
	case <-time.After(sv.Timeout / 2):
		return nil, errors.New("the server is busy with other clients' tests: retry later")
	case <-ctx.Done():
		return nil, errShutdown
	}
	sv.mu.Lock()
	defer sv.mu.Unlock()
	if sv.inUse+need > sv.MaxBuffer {
		<-sv.slot
		return nil, fmt.Errorf("%s needs %d bytes on the server and the tests running there hold %d of its --max-buffer %d: retry later, or use a smaller plan", what, need, sv.inUse, sv.MaxBuffer)
	}
	sv.inUse += need
	sv.running++
	sv.started++
	return func() {
		sv.mu.Lock()
		sv.inUse -= need
		sv.running--
		sv.mu.Unlock()
		<-sv.slot
	}, nil
}

// await follows a measuring client until it says done: it sends a beat every
// oob.BeatInterval, and silence for longer than max(--timeout, 3 beats) means the client
// (or its host, or the network) is gone. The whole test, from the QPs' connection to the
// client's done (warm-ups and drain included), is bounded by --max-test-time.
//
// A start message (the measured phase begins) calls onStart with the test's deadline
// and is answered; onStart must return by then, or when ctx is done.
func (sv *Server) await(ctx context.Context, c *oob.Conn, onStart func(end time.Time) error) (oob.Msg, error) {
	silence := max(sv.Timeout, 3*oob.BeatInterval)
	end := time.Now().Add(sv.MaxTestTime)
	for {
		left := time.Until(end)
		if left <= 0 {
			return oob.Msg{}, errPastMax(sv.MaxTestTime)
		}
		m, err := c.Recv(min(silence, left))
		switch {
		case ctx.Err() != nil:
			return m, errShutdown
		case err != nil && time.Until(end) <= 0:
			continue // reported above
		case err != nil && isNetErr(err):
			return m, fmt.Errorf("%w: no word from it for %v during the test (%v)", errLost, silence, err)
		case err != nil:
			return m, err
		case m.Type == oob.TBeat:
			continue
		case m.Type == oob.TStart:
			if err := onStart(end); err != nil {
				return m, err
			}
			if err := c.Send(oob.Msg{Type: oob.TStarted}); err != nil {
				return m, err
			}
			continue
		case m.Type == oob.TDone:
			return m, nil
		}
		return m, &oob.ProtocolError{Msg: fmt.Sprintf("expected done, start or a beat during a test, got %s", text.Quote(m.Type))}
	}
}
