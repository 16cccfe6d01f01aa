package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/rdmabench/rdmabench/counters"
	"github.com/rdmabench/rdmabench/oob"
	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/verbs"
)

// Version is rdmabench's version, set by cmd/rdmabench.
var Version = "dev"

// Local says which device, port and GID a side uses.
type Local struct {
	Device   string
	Port     int
	GIDIndex int // -1: pick like perftest
}

// Client is one connection to a server; it runs any number of tests over it.
type Client struct {
	Addr   string
	conn   *oob.Conn
	dev    Device
	me     result.Device
	server result.Device
	broken bool               // the connection can carry no more plans
	probe  *counters.Snapshot // this test's first look at the NIC counters

	// OnInterval, when set, gets the --interval lines of a bandwidth test as it runs
	// (from another goroutine, one call at a time).
	OnInterval func(result.Interval)
}

// Dial opens the local device on the verbs engine, connects to the server and
// exchanges hellos.
func Dial(ctx context.Context, addr string, local Local, token string, timeout time.Duration) (*Client, error) {
	dev, err := Verbs.Open(local)
	if err != nil {
		return nil, err
	}
	nc, err := dialTCP(ctx, addr, timeout)
	if err != nil {
		dev.Close()
		return nil, fmt.Errorf("cannot reach the rdmabench server at %s: %w (is 'rdmabench server' running there?)", addr, err)
	}
	return NewClient(nc, dev, addr, token, timeout)
}

// dialTCP opens a control connection, tuned to notice a dead peer within timeout.
func dialTCP(ctx context.Context, addr string, timeout time.Duration) (net.Conn, error) {
	d := net.Dialer{Timeout: timeout}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	oob.Tune(nc, timeout)
	return nc, nil
}

// NewClient runs the handshake on a connection to the server at addr and returns a
// client that measures with dev. It owns nc and dev from then on, also on error.
func NewClient(nc net.Conn, dev Device, addr, token string, timeout time.Duration) (*Client, error) {
	c := &Client{Addr: addr, conn: oob.NewConn(nc, timeout), dev: dev, me: dev.Identity()}
	h, err := Handshake(c.conn, c.me, token)
	if err != nil {
		nc.Close()
		dev.Close()
		return nil, fmt.Errorf("handshake with %s: %w", addr, err)
	}
	c.server = h.Device
	return c, nil
}

// Handshake introduces a client and, when the server asks, proves the token and
// checks the server's proof: the token itself never crosses the wire. A client with a
// token refuses a server that does not prove it knows it.
func Handshake(c *oob.Conn, me result.Device, token string) (*oob.Hello, error) {
	if err := c.Send(oob.Msg{Type: oob.THello, Hello: &oob.Hello{Proto: oob.Version, Tool: Version, Host: me.Host, Device: me}}); err != nil {
		return nil, err
	}
	m, err := c.Recv(c.Timeout)
	if err != nil {
		return nil, err
	}
	switch {
	case m.Type == oob.TChallenge && m.Challenge != nil && len(m.Challenge.Nonce) == oob.NonceBytes:
	case m.Type == oob.THello && m.Hello != nil:
		if token != "" {
			return nil, errors.New("the server requires no token, so it cannot prove it is the server you meant: refusing to run with a token against it (drop --token, or give the server one)")
		}
		return m.Hello, nil
	default:
		return nil, &oob.ProtocolError{Msg: fmt.Sprintf("expected a hello or a challenge, got %s", oob.Quote(m.Type))}
	}
	if token == "" {
		c.SendError(errors.New("this client has no token"))
		return nil, errors.New("authentication failed: this server requires a token; pass the server's --token-file, --token or RDMABENCH_TOKEN to the client")
	}
	sn, cn := m.Challenge.Nonce, oob.NewNonce()
	if err := c.Send(oob.Msg{Type: oob.TAuth, Auth: &oob.Auth{Nonce: cn, Proof: oob.Proof(token, "client", sn, cn)}}); err != nil {
		return nil, err
	}
	m, err = c.Expect(oob.THello)
	if err != nil {
		return nil, err
	}
	if !oob.Verify(m.Hello.Proof, token, "server", sn, cn) {
		return nil, errors.New("the server did not prove that it knows the token: wrong server, or a different token there")
	}
	return m.Hello, nil
}

// Device is the client's device identity.
func (c *Client) Device() result.Device { return c.me }

// ServerDevice is the server's device identity, from its hello.
func (c *Client) ServerDevice() result.Device { return c.server }

// Close ends the session politely and releases the device.
func (c *Client) Close() error {
	if c == nil {
		return nil
	}
	if c.broken { // already closed
		return c.dev.Close()
	}
	_ = c.conn.Send(oob.Msg{Type: oob.TBye})
	return errors.Join(c.conn.Close(), c.dev.Close())
}

// Run runs one test. Cancelling ctx stops the measurement early; the result then has
// Interrupted set and holds what was measured. Whatever goes wrong, the result comes
// back with what was measured so far and its Error set; a run that measured nothing is
// an error.
func (c *Client) Run(ctx context.Context, op Op, cfg result.Config) (r result.Result, err error) {
	cfg.Op = string(op.Name)
	Defaults(&cfg)
	ResolveInline(&cfg, c.me)
	r = result.Result{
		SchemaVersion: result.SchemaVersion, ToolVersion: Version, Time: time.Now().UTC(),
		Server: c.Addr, Client: c.me, ServerDevice: c.server, Config: cfg,
	}
	defer func() {
		if err != nil {
			r.Error = err.Error()
		}
		if oob.Lost(err) && !c.broken { // e.g. a timeout before ready: a late answer would desynchronise the next plan
			c.drop()
		}
	}()
	if cfg.Test == "region" {
		return r, errors.New("region plans are the Go API's (package rdma), not a test")
	}
	if err := Validate(cfg); err != nil {
		return r, err
	}
	if c.broken {
		return r, sessionLost{errors.New("the connection to the server was lost in an earlier test")}
	}
	if err := c.conn.Send(oob.Msg{Type: oob.TPlan, Plan: &cfg}); err != nil {
		return r, err
	}
	m, err := c.conn.Expect(oob.TEndpoint)
	var refused *oob.PeerError
	switch {
	case errors.As(err, &refused):
		return r, fmt.Errorf("server refused the plan: %w", err)
	case err != nil:
		return r, fmt.Errorf("no answer from the server to the plan: %w", err)
	}
	c.probe = nil
	if CountersOn(cfg) {
		if s, err := c.dev.Counters(); err == nil {
			c.probe = &s // for the counters' cache lifespan
		}
	}
	spec := sessionSpec(op, cfg, false)
	spec.Events, spec.ModCount, spec.ModPeriodUS = cfg.CompletionEvents, cfg.CQModerationCount, cfg.CQModerationUS
	s, err := c.dev.NewSession(spec)
	if err != nil {
		c.conn.SendError(err)
		return r, err
	}
	defer s.Close()
	if err := s.ConnectPeers([]oob.Endpoint{*m.Endpoint}, cfg.MTUBytes); err != nil {
		c.conn.SendError(err)
		return r, err
	}
	r.PathMTU, r.MaxRdAtom = s.PathMTU(), s.RdAtom()
	r.InlineUsed = Inline(cfg) && s.MaxInline() >= cfg.MsgSizeBytes
	local := s.Local()
	if err := c.conn.Send(oob.Msg{Type: oob.TEndpoint, Endpoint: &local}); err != nil {
		return r, err
	}
	if _, err := c.conn.Expect(oob.TReady); err != nil {
		return r, err
	}
	r.Clock, r.ClockNote = c.dev.Clock()
	sl := bwSlots(cfg)
	var mine sideCounters
	var ended time.Time
	// Ctrl-C stops the loop; the stop must be over before the session is closed.
	stopping := make(chan struct{})
	stop := context.AfterFunc(ctx, func() { s.Stop(); close(stopping) })
	endBeats := c.beat(s)
	reply, started, listening := c.listen(s)
	defer func() { <-listening }() // before s.Close: the reader may still Stop the session
	start := func() error { return c.start(cfg, &mine, started, reply) }
	perQP, merr := c.measure(ctx, op, s, cfg, sl, &r, start)
	ended = time.Now()
	lost := endBeats()
	if !stop() {
		<-stopping
	}
	if ctx.Err() != nil {
		r.Interrupted = true
	}
	select {
	case m := <-reply: // the server spoke during the test: it can only be to end it
		if m.err == nil {
			m.err = &oob.ProtocolError{Msg: fmt.Sprintf("expected nothing during a test, got %s", oob.Quote(m.Type))}
		}
		c.drop()
		if oob.Lost(m.err) {
			return r, errors.Join(merr, sessionLost{fmt.Errorf("lost the server during the test: %w", m.err)})
		}
		return r, errors.Join(merr, sessionLost{fmt.Errorf("the server ended the test: %w", m.err)})
	default:
	}
	if lost != nil {
		c.drop()
		return r, errors.Join(merr, sessionLost{fmt.Errorf("lost the server during the test: %w", lost)})
	}
	// The server's side: stop its responder, verify, report.
	done := oob.Msg{Type: oob.TDone}
	if cfg.Test == "bw" {
		done.Done = &oob.Done{Completed: perQP, Interrupted: r.Interrupted || merr != nil}
	}
	if err := c.conn.Send(done); err != nil {
		c.drop()
		return r, errors.Join(merr, sessionLost{err})
	}
	check := time.Duration(DestBytes(cfg)/(16<<20)) * time.Second // checking runs at >= 16 MiB/s
	rep, err := c.awaitReport(reply, c.conn.Timeout+check)
	if err != nil {
		return r, errors.Join(merr, err)
	}
	if cfg.Verify {
		switch {
		case merr != nil:
			r.Verify = &result.Verify{FirstBadOffset: -1, Detail: "not verified: the run failed"}
		case perQP == nil: // interrupted before the measured run; measured() says so
			r.Verify = &result.Verify{FirstBadOffset: -1, Detail: "not verified: nothing was measured"}
		case op.ToServer:
			r.Verify = rep.Report.Verify
			if v := r.Verify; v != nil { // the server's words, shown to this side's user
				v.Side, v.Detail = oob.Clean(v.Side, 16), oob.Clean(v.Detail, 300)
			}
		default:
			r.Verify = checkDest(s, cfg, sl, perQP, "client")
		}
		if r.Verify == nil {
			merr = errors.New("verification: the server sent no verification")
		} else if !r.Verify.OK && merr == nil && perQP != nil {
			merr = fmt.Errorf("verification failed at the %s: %s", r.Verify.Side, r.Verify.Detail)
		}
	}
	setReverse(&r, rep.Report.Reverse)
	if cfg.Bidirectional && merr == nil {
		switch rv := r.Reverse; {
		case rv == nil:
			merr = errors.New("bidirectional: the server reported no direction of its own")
		case rv.Error != "":
			merr = fmt.Errorf("bidirectional: the server's direction failed: %s", rv.Error)
		case rv.Messages == 0 || rv.DurationNS <= 0:
			merr = errors.New("bidirectional: the server's direction measured nothing")
		}
	}
	if mine.began {
		var notes []string
		l, note := mine.close(c.dev, ended)
		if note != "" {
			notes = append(notes, "client: "+note)
		}
		if rep.Report.CountersNote != "" {
			notes = append(notes, "server: "+oob.Clean(rep.Report.CountersNote, 300))
		}
		remote, why := cleanDeltas(rep.Report.Counters)
		if why != "" {
			notes = append(notes, "server: "+why)
		}
		judge(&r, l, remote, notes)
	}
	if merr == nil {
		merr = measured(r)
	}
	return r, merr
}

// start begins the measured phase: once the warm-up's traffic has left the counters'
// cache, this side reads its counters and tells the server to read its own, and waits
// until it has.
func (c *Client) start(cfg result.Config, local *sideCounters, started <-chan struct{}, reply <-chan received) error {
	switch {
	case CountersOn(cfg):
		local.open(c.dev, settle(c.probe))
	case !cfg.Bidirectional:
		return nil // nothing for the server to do at the start
	}
	if err := c.conn.Send(oob.Msg{Type: oob.TStart}); err != nil {
		c.drop()
		return sessionLost{fmt.Errorf("lost the server at the start of the measured phase: %w", err)}
	}
	t := time.NewTimer(c.conn.Timeout)
	defer t.Stop()
	select {
	case <-started:
		return nil
	case m := <-reply: // the server spoke otherwise, or went away: the session is over
		c.drop()
		switch {
		case m.err != nil && oob.Lost(m.err):
			return sessionLost{fmt.Errorf("lost the server at the start of the measured phase: %w", m.err)}
		case m.err != nil:
			return sessionLost{fmt.Errorf("the server ended the test: %w", m.err)}
		}
		return sessionLost{&oob.ProtocolError{Msg: fmt.Sprintf("expected started, got %s", oob.Quote(m.Type))}}
	case <-t.C:
		c.drop()
		return sessionLost{fmt.Errorf("the server did not read its counters within %v", c.conn.Timeout)}
	}
}

// beat tells the server every oob.BeatInterval that the client is still measuring,
// while the loop runs in C. A beat that cannot be sent means the server, its host or
// the network is gone (the connection is tuned to notice within --timeout): the loop
// is stopped, and the returned function, which ends the beats, says why.
func (c *Client) beat(s Session) func() error {
	quit, done := make(chan struct{}), make(chan error, 1)
	go func() {
		t := time.NewTicker(oob.BeatInterval)
		defer t.Stop()
		for {
			select {
			case <-quit:
				done <- nil
				return
			case <-t.C:
				if err := c.conn.Send(oob.Msg{Type: oob.TBeat}); err != nil {
					s.Stop()
					done <- err
					return
				}
			}
		}
	}()
	return func() error {
		close(quit)
		return <-done
	}
}

// drop gives up a connection that can carry no more plans; closing it also ends the
// read that listen left waiting.
func (c *Client) drop() {
	c.broken = true
	c.conn.Close()
}

type received struct {
	oob.Msg
	err error
}

// listen reads the one message the server sends after ready: its report once the
// client is done, or, during the test, an error that ends it (a shutdown, its
// --max-test-time). Such an error stops the loop at once, so that the client reports
// the server's reason rather than finding a broken connection later. The message is
// in reply before the loop is stopped; listening is closed when the reader is done
// with s (every path of Run either takes the reply or drops the connection, which ends
// the read).
func (c *Client) listen(s Session) (reply <-chan received, started, listening <-chan struct{}) {
	rc, st, done := make(chan received, 1), make(chan struct{}, 1), make(chan struct{})
	go func() {
		defer close(done)
		for {
			m, err := c.conn.Recv(0) // bounded by awaitReport, which drops the connection
			if err == nil && m.Type == oob.TStarted {
				select {
				case st <- struct{}{}:
					continue
				default: // a second one is a protocol error
				}
			}
			rc <- received{m, err}
			if err != nil || m.Type != oob.TReport {
				s.Stop()
			}
			return
		}
	}()
	return rc, st, done
}

// sessionLost marks an error after which the connection to the server carries no
// more plans (oob.Lost says so).
type sessionLost struct{ err error }

func (e sessionLost) Error() string     { return e.err.Error() }
func (e sessionLost) Unwrap() error     { return e.err }
func (e sessionLost) SessionLost() bool { return true }

// awaitReport waits for the server's report; a server that sends none within timeout
// is gone, and the connection is closed.
func (c *Client) awaitReport(reply <-chan received, timeout time.Duration) (oob.Msg, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case m := <-reply:
		switch {
		case m.err != nil:
			if oob.Lost(m.err) {
				c.drop()
			}
			return m.Msg, m.err
		case m.Type != oob.TReport || m.Report == nil:
			c.drop()
			return m.Msg, &oob.ProtocolError{Msg: fmt.Sprintf("expected a report, got %s", oob.Quote(m.Type))}
		}
		return m.Msg, nil
	case <-t.C:
		c.drop()
		return oob.Msg{}, sessionLost{fmt.Errorf("lost the server: no report within %v of the end of the test", timeout)}
	}
}

// measured says whether r is a measurement: a run that completed nothing, or took no
// time, is an error and never a row of zeros.
func measured(r result.Result) error {
	what := map[string]string{"bw": "message", "lat": "round"}[r.Config.Test]
	switch {
	case r.Iterations == 0 && r.Interrupted:
		return fmt.Errorf("interrupted before a %s was measured", what)
	case r.Iterations == 0:
		return fmt.Errorf("the run completed no %s: nothing was measured", what)
	case r.DurationNS <= 0:
		return fmt.Errorf("the run completed %d %ss in no measurable time: the clock (%s) did not advance", r.Iterations, what, r.Clock)
	case r.Config.Test == "lat" && r.Lat.Samples == 0:
		return fmt.Errorf("no valid latency sample: all %d went backwards on the %s clock (try --clock monotonic)", r.ClockBackwards, r.Clock)
	}
	return nil
}

// measure runs the warm-up and the measured run, and returns the WRs each QP completed
// in the measured run (bandwidth tests).
func (c *Client) measure(ctx context.Context, op Op, s Session, cfg result.Config, sl slots, r *result.Result, start func() error) ([]uint64, error) {
	warm, timeout := cfg.WarmupIterations, c.conn.Timeout
	if cfg.Test == "lat" {
		if warm > 0 {
			res, err := op.ClientLatency(s, cfg, 0, warm, timeout)
			r.WarmupDone = res.Done
			if err != nil {
				return nil, fmt.Errorf("warm-up: %w", err)
			}
		}
		if ctx.Err() != nil {
			return nil, nil
		}
		if err := start(); err != nil {
			return nil, err
		}
		res, err := op.ClientLatency(s, cfg, warm, cfg.Iterations, timeout)
		r.DurationNS = res.DurationNS
		r.Iterations = res.Done
		r.LatKind = op.LatKind
		return nil, errors.Join(err, setLatency(r, res.Lat))
	}
	p := bwParams(op, cfg, r.InlineUsed, timeout)
	// --verify: the warm-up moves a pattern of its own; the measured run's patterns
	// differ per source slot (see slots).
	if cfg.Verify && op.ToServer {
		fillWarm(s, cfg, sl, sl.src)
	}
	if warm > 0 {
		p.Iters = warm
		res, err := s.Bandwidth(p)
		for _, n := range res.PerQP {
			r.WarmupDone += n
		}
		r.WarmupDone /= uint64(cfg.NumQPs) // reported per QP, as the plan gives it
		if err != nil {
			return nil, fmt.Errorf("warm-up: %w", err)
		}
	}
	if cfg.Verify {
		if op.ToServer {
			fillSource(s, cfg, sl)
		} else {
			fillWarm(s, cfg, sl, sl.dst) // what the warm-up read is not evidence
		}
	}
	if ctx.Err() != nil {
		return nil, nil
	}
	if err := start(); err != nil {
		return nil, err
	}
	p.Iters = cfg.Iterations
	if cfg.DurationS > 0 {
		p.Duration = time.Duration(cfg.DurationS * float64(time.Second))
	}
	iv := c.intervals(cfg)
	if iv != nil {
		p.Interval, p.Progress = iv.every, iv.tick
		iv.begin()
	}
	res, err := s.Bandwidth(p)
	if iv != nil {
		r.Intervals = iv.summary()
	}
	r.SetThroughput(res.Completed, cfg.MsgSizeBytes, res.DurationNS)
	r.SetRampShare(cfg, r.MaxRdAtom)
	r.LatKind = "completion_under_load"
	r.CQEvents = res.Events
	r.MR = mrRun(cfg, res)
	return res.PerQP, errors.Join(err, setLatency(r, res.Lat))
}

func setLatency(r *result.Result, s verbs.Samples) error {
	l, h, err := result.NewLatency(s.Hist, s.Moments)
	r.Lat, r.Histogram, r.ClockBackwards = l, h, s.Backwards
	return err
}
