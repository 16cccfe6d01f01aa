package oob

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/rdmabench/rdmabench/internal/text"
	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/verbs/qp"
)

// A session is one control connection between a client and a server. The client's
// half of it, in the order the steps happen:
//
//	Open      hello (and the token's proof)       -> the server's hello
//	Offer     plan
//	Answer                                        <- the server's endpoint, or its refusal
//	Tell      the client's endpoint
//	Ready                                         <- ready (the server's QPs are in RTS)
//	Beat      a beat every BeatInterval while the client measures
//	Start     start (after the warm-up)           -> started (the server took its counters)
//	Finish    done (the WRs each QP completed)
//	Report    the server's report                 (Listen delivers it)
//
// Any number of plans may follow one another on a session; Close says bye. The
// server's half is bench.Server. Each step has its own deadline (the Conn's timeout),
// and an error after which the connection can carry no more plans is a *LostError, or
// one that Lost recognises.

// LostError marks an error after which the session carries no more plans: the
// connection broke, timed out, or the peer ended the test or broke the protocol.
type LostError struct{ Err error }

func (e *LostError) Error() string     { return e.Err.Error() }
func (e *LostError) Unwrap() error     { return e.Err }
func (e *LostError) SessionLost() bool { return true }

// AsLost is err marked as a *LostError when Lost recognises it as a loss, so that
// those who judge errors without the protocol (a sweep) can tell; else err as it is.
func AsLost(err error) error {
	var l *LostError
	if !Lost(err) || errors.As(err, &l) {
		return err
	}
	return &LostError{Err: err}
}

// lost wraps err as a LostError.
func lost(format string, args ...any) error { return &LostError{fmt.Errorf(format, args...)} }

// Peer is the client's side of a session with one server.
type Peer struct {
	Addr   string
	Conn   *Conn
	Server *Hello // the server's hello
	broken bool
}

// Open introduces the client on nc (the connection to the server at addr) and, when
// the server asks, proves the token and checks the server's proof: the token itself
// never crosses the wire. A client with a token refuses a server that does not prove
// it knows it. Open owns nc from then on; on error it is closed.
func Open(nc net.Conn, addr string, me result.Device, token string, timeout time.Duration) (*Peer, error) {
	p := &Peer{Addr: addr, Conn: NewConn(nc, timeout)}
	h, err := Handshake(p.Conn, me, token)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("handshake with %s: %w", addr, err)
	}
	p.Server = h
	return p, nil
}

// Handshake is Open's exchange on a connection of its own: the server's hello, or why
// the session cannot start.
func Handshake(c *Conn, me result.Device, token string) (*Hello, error) {
	if err := c.Send(Msg{Type: THello, Hello: &Hello{Proto: Version, Tool: result.Version, Host: me.Host, Device: me}}); err != nil {
		return nil, err
	}
	m, err := c.Recv(c.Timeout)
	if err != nil {
		return nil, err
	}
	switch {
	case m.Type == TChallenge && m.Challenge != nil && len(m.Challenge.Nonce) == NonceBytes:
	case m.Type == THello && m.Hello != nil:
		if token != "" {
			return nil, errors.New("the server requires no token, so it cannot prove it is the server you meant: refusing to run with a token against it (drop --token, or give the server one)")
		}
		return m.Hello, nil
	default:
		return nil, &ProtocolError{Msg: fmt.Sprintf("expected a hello or a challenge, got %s", text.Quote(m.Type))}
	}
	if token == "" {
		c.SendError(errors.New("this client has no token"))
		return nil, errors.New("authentication failed: this server requires a token; pass the server's --token-file, --token or RDMABENCH_TOKEN to the client")
	}
	sn, cn := m.Challenge.Nonce, NewNonce()
	if err := c.Send(Msg{Type: TAuth, Auth: &Auth{Nonce: cn, Proof: Proof(token, "client", sn, cn)}}); err != nil {
		return nil, err
	}
	m, err = c.Expect(THello)
	if err != nil {
		return nil, err
	}
	if !Verify(m.Hello.Proof, token, "server", sn, cn) {
		return nil, errors.New("the server did not prove that it knows the token: wrong server, or a different token there")
	}
	return m.Hello, nil
}

// Broken says the connection can carry no more plans.
func (p *Peer) Broken() bool { return p.broken }

// Drop gives up a connection that can carry no more plans; closing it also ends a
// read that Listen left waiting.
func (p *Peer) Drop() {
	p.broken = true
	p.Conn.Close()
}

// Close ends the session politely.
func (p *Peer) Close() error {
	if p.broken { // already closed
		return nil
	}
	_ = p.Conn.Send(Msg{Type: TBye})
	return p.Conn.Close()
}

// Abort tells the server that the plan it accepted ends here, and why.
func (p *Peer) Abort(err error) {
	if !p.broken {
		p.Conn.SendError(err)
	}
}

// ErrLostBefore is a plan offered on a session lost in an earlier test.
var ErrLostBefore = errors.New("the connection to the server was lost in an earlier test")

// Offer sends a plan; Answer reads the server's endpoint for it. A client of several
// servers offers to each before it reads any answer, so that a refusal leaves every
// connection in step.
func (p *Peer) Offer(plan *result.Config) error {
	if p.broken {
		return &LostError{ErrLostBefore}
	}
	// What only the client's own loops keep stays here: --outs caps this side's READs in
	// flight (the server's responder takes what its device allows), --post-api is how
	// this side posts (the server posts as its device's default), --cpu where this
	// side's loops run (the server's run by its own NIC). Protocol 4's plan has none
	// of these fields.
	wire := *plan
	wire.OutsNum, wire.PostAPI, wire.CPUList = 0, "", ""
	if err := p.Conn.Send(Msg{Type: TPlan, Plan: &wire}); err != nil {
		p.Drop()
		return &LostError{err}
	}
	return nil
}

// Answer is the server's endpoint for the plan offered. A refusal (the server's
// *PeerError) leaves the session usable; any other error loses it (a *LostError).
func (p *Peer) Answer() (qp.Endpoint, error) {
	m, err := p.Conn.Expect(TEndpoint)
	var refused *PeerError
	switch {
	case errors.As(err, &refused):
		return qp.Endpoint{}, err
	case err != nil:
		p.Drop()
		return qp.Endpoint{}, &LostError{err}
	}
	return *m.Endpoint, nil
}

// Tell sends the client's endpoint; Ready waits until the server is ready: its QPs
// connected to the client's, its responder running. Connect does both; a client of
// several servers tells each before it waits for any.
func (p *Peer) Tell(local qp.Endpoint) error {
	if err := p.Conn.Send(Msg{Type: TEndpoint, Endpoint: &local}); err != nil {
		p.Drop()
		return lost("lost the server while connecting the QPs: %w", err)
	}
	return nil
}

// Ready waits for the server's ready.
func (p *Peer) Ready() error {
	if _, err := p.Conn.Expect(TReady); err != nil {
		if Lost(err) {
			p.Drop()
			return lost("lost the server while connecting the QPs: %w", err)
		}
		return err
	}
	return nil
}

// Connect tells the server the client's endpoint and waits until it is ready.
func (p *Peer) Connect(local qp.Endpoint) error {
	if err := p.Tell(local); err != nil {
		return err
	}
	return p.Ready()
}

// Beat tells the server every BeatInterval that the client is still measuring, while
// the loop runs. A beat that cannot be sent means the server, its host or the network
// is gone (the connection is tuned to notice within its timeout): stop is called with
// why (it stops the loop), and the returned function, which ends the beats, says why.
func (p *Peer) Beat(stop func(error)) func() error {
	quit, done := make(chan struct{}), make(chan error, 1)
	go func() {
		t := time.NewTicker(BeatInterval)
		defer t.Stop()
		for {
			select {
			case <-quit:
				done <- nil
				return
			case <-t.C:
				if err := p.Conn.Send(Msg{Type: TBeat}); err != nil {
					stop(err)
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

// Received is a message the server sent after ready, or why none could be read.
type Received struct {
	Msg
	Err error
}

// Listen reads what the server sends after ready: started, then its report once the
// client is done, or, during the test, an error that ends it (a shutdown, its
// --max-test-time). Such an error calls stop with it at once, so that the client
// reports the server's reason rather than finding a broken connection later. The
// message is in reply before stop is called; listening is closed when the reader is
// done (every path either takes the reply or drops the connection, which ends the
// read).
func (p *Peer) Listen(stop func(error)) (reply <-chan Received, started, listening <-chan struct{}) {
	rc, st, done := make(chan Received, 1), make(chan struct{}, 1), make(chan struct{})
	go func() {
		defer close(done)
		for {
			m, err := p.Conn.Recv(0) // bounded by Report, which drops the connection
			if err == nil && m.Type == TStarted {
				select {
				case st <- struct{}{}:
					continue
				default: // a second one is a protocol error
				}
			}
			rc <- Received{m, err}
			switch {
			case err != nil:
				stop(err)
			case m.Type != TReport || m.Report == nil:
				stop(&ProtocolError{Msg: fmt.Sprintf("expected a report, got %s", text.Quote(m.Type))})
			}
			return
		}
	}()
	return rc, st, done
}

// Interrupted says whether the server spoke during the test (it can only be to end
// it) and, if so, drops the session and returns what the server said, or why nothing
// could be read.
func (p *Peer) Interrupted(reply <-chan Received) error {
	select {
	case m := <-reply:
		if m.Err == nil {
			m.Err = &ProtocolError{Msg: fmt.Sprintf("expected nothing during a test, got %s", text.Quote(m.Type))}
		}
		p.Drop()
		return m.Err
	default:
		return nil
	}
}

// Start begins the measured phase on the server (it reads its counters, starts its
// direction) and waits until it has, within the Conn's timeout.
func (p *Peer) Start(started <-chan struct{}, reply <-chan Received) error {
	if err := p.Conn.Send(Msg{Type: TStart}); err != nil {
		p.Drop()
		return lost("lost the server at the start of the measured phase: %w", err)
	}
	t := time.NewTimer(p.Conn.Timeout)
	defer t.Stop()
	select {
	case <-started:
		return nil
	case m := <-reply: // the server spoke otherwise, or went away: the session is over
		p.Drop()
		switch {
		case m.Err != nil && Lost(m.Err):
			return lost("lost the server at the start of the measured phase: %w", m.Err) // text: cleaned (a PeerError cleans what the peer said)
		case m.Err != nil:
			return lost("the server ended the test: %w", m.Err) // text: cleaned (a PeerError cleans what the peer said)
		}
		return &LostError{&ProtocolError{Msg: fmt.Sprintf("expected started, got %s", text.Quote(m.Type))}}
	case <-t.C:
		p.Drop()
		return lost("the server did not read its counters within %v", p.Conn.Timeout)
	}
}

// Finish tells the server the measurement is over: it stops its responder, verifies
// and reports. done is nil for a latency test.
func (p *Peer) Finish(done *Done) error {
	if err := p.Conn.Send(Msg{Type: TDone, Done: done}); err != nil {
		p.Drop()
		return &LostError{err}
	}
	return nil
}

// ErrNoReport is a server that sent no report in time.
var ErrNoReport = errors.New("no report")

// Report waits for the server's report on reply (from Listen); a server that sends
// none within timeout is gone (ErrNoReport), and the connection is closed.
func (p *Peer) Report(reply <-chan Received, timeout time.Duration) (*Report, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case m := <-reply:
		switch {
		case m.Err != nil:
			if Lost(m.Err) {
				p.Drop()
			}
			return nil, m.Err
		case m.Type != TReport || m.Report == nil:
			p.Drop()
			return nil, &ProtocolError{Msg: fmt.Sprintf("expected a report, got %s", text.Quote(m.Type))}
		}
		return m.Report, nil
	case <-t.C:
		p.Drop()
		return nil, lost("lost the server: %w within %v of the end of the test", ErrNoReport, timeout)
	}
}
