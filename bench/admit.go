package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/rdmabench/rdmabench/oob"
	"github.com/rdmabench/rdmabench/result"
)

// admission keeps unauthenticated and idle connections from crowding out real clients.
//
// Handshakes: at most maxPreAuthPerSource stalled ones (silent, no hello, for
// stallAfter) from one address (an IPv6 /64 counts as one), and maxPreAuth in all. A
// newcomer over its address's share cuts that address's oldest stalled handshake; a
// newcomer at the total limit cuts a handshake of the address holding the most: its
// oldest silent one, or its oldest. So a flood of silent connections from one address
// only ever cuts its own, a real client (whose hello comes at once) is not cut for its
// address's share however many it runs at once, and a flood from many addresses cuts
// the biggest first. A cut connection is told why and closed, and counts as nothing
// (no failed guess) against its address.
//
// Sessions (after the handshake): at most maxSessions, and maxSessionsPerSource from
// one address, so that a server without a token cannot be filled with idle sessions.
type admission struct {
	mu       sync.Mutex
	pending  []*pendingConn // oldest first; at most maxPreAuth, so scanning it is cheap
	sessions int
	bySource map[string]int
}

// pendingConn is a handshake in progress.
type pendingConn struct {
	a      *admission
	nc     net.Conn
	source string
	since  time.Time
	spoke  bool // its hello came
}

// stallAfter is how long a handshake may be silent before it counts as stalled: a real
// client sends its hello as soon as it connects.
const stallAfter = time.Second

const (
	maxPreAuthPerSource  = 8
	maxSessions          = 64
	maxSessionsPerSource = 16
)

// errCut is what a cut handshake is told.
var errCut = errors.New("too many handshakes from your address at once: this one was cut; retry")

// handshake registers nc, from source, as handshaking; it cuts a handshake first when
// there are too many (see admission).
func (a *admission) handshake(nc net.Conn, source string) *pendingConn {
	p := &pendingConn{a: a, nc: nc, source: source, since: time.Now()}
	a.mu.Lock()
	var victim *pendingConn
	if a.count(source, stalled) >= maxPreAuthPerSource {
		victim = a.oldest(source, stalled)
	}
	if victim == nil && len(a.pending) >= maxPreAuth {
		src := a.busiest()
		if victim = a.oldest(src, silent); victim == nil {
			victim = a.oldest(src, anyConn)
		}
	}
	if victim != nil {
		a.remove(victim)
	}
	a.pending = append(a.pending, p)
	a.mu.Unlock()
	if victim != nil {
		go func() { // told why, briefly, then closed; never under the lock
			c := oob.NewConn(victim.nc, 100*time.Millisecond)
			c.SendError(errCut)
			victim.nc.Close()
		}()
	}
	return p
}

// spokeNow marks p's hello as come: p no longer counts against its address's share.
// Nil-safe.
func (p *pendingConn) spokeNow() {
	if p == nil {
		return
	}
	p.a.mu.Lock()
	p.spoke = true
	p.a.mu.Unlock()
}

// done ends p's handshake (authenticated, refused or failed). Nil-safe.
func (p *pendingConn) done() {
	if p == nil {
		return
	}
	p.a.mu.Lock()
	defer p.a.mu.Unlock()
	p.a.remove(p)
}

// What a pending handshake may be: silent (no hello yet), stalled (silent for
// stallAfter), or any.
func silent(p *pendingConn) bool  { return !p.spoke }
func stalled(p *pendingConn) bool { return !p.spoke && time.Since(p.since) >= stallAfter }
func anyConn(*pendingConn) bool   { return true }

// count is how many of source's pending handshakes match; a.mu is held.
func (a *admission) count(source string, match func(*pendingConn) bool) int {
	n := 0
	for _, p := range a.pending {
		if p.source == source && match(p) {
			n++
		}
	}
	return n
}

// oldest is source's oldest pending handshake that matches; a.mu is held.
func (a *admission) oldest(source string, match func(*pendingConn) bool) *pendingConn {
	for _, p := range a.pending {
		if p.source == source && match(p) {
			return p
		}
	}
	return nil
}

// busiest is the source holding the most pending handshakes, the first to reach that
// count in arrival order on a tie ("" when none); a.mu is held.
func (a *admission) busiest() string {
	counts := map[string]int{}
	best := ""
	for _, p := range a.pending {
		if counts[p.source]++; counts[p.source] > counts[best] {
			best = p.source
		}
	}
	return best
}

// remove forgets p (once); a.mu is held.
func (a *admission) remove(p *pendingConn) {
	for i, q := range a.pending {
		if q == p {
			a.pending = append(a.pending[:i], a.pending[i+1:]...)
			return
		}
	}
}

// handshake reads the client's hello and, when the server has a token, has the client
// prove it knows it. Nothing the peer sent is echoed back before it is authenticated.
// p (nil outside Serve) is told when the hello came.
func (sv *Server) handshake(ctx context.Context, c *oob.Conn, from net.Addr, p *pendingConn) (*oob.Hello, error) {
	m, err := c.Expect(oob.THello)
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, io.EOF
		}
		c.SendError(preAuthError(err))
		return nil, err
	}
	p.spokeNow()
	dev := identityOn(bindGID(sv.dev, c.LocalAddr()), sv.me) // this connection's GID
	me := &oob.Hello{Proto: oob.Version, Tool: result.Version, Host: sv.me.Host, Device: dev}
	if sv.Token != "" {
		if me.Proof, err = sv.authenticate(ctx, c, sourceOf(from)); err != nil {
			return nil, err
		}
	}
	if err := c.Send(oob.Msg{Type: oob.THello, Hello: me}); err != nil {
		return nil, err
	}
	return m.Hello, nil
}

// errNoToken is what a client that proved nothing is told.
var errNoToken = errors.New("authentication failed: this server requires a token; give the client the server's --token-file, --token or RDMABENCH_TOKEN")

// authenticate challenges the client from host to prove the token, in host's turn
// (failures), and returns the server's own proof. A wrong proof is answered after the
// host's back-off; anything else that ends the challenge (a cut, a timeout, a client
// without a token) is no guess and costs the host nothing.
func (sv *Server) authenticate(ctx context.Context, c *oob.Conn, host string) ([]byte, error) {
	if wait := sv.auth.wait(host); wait > 0 {
		wait = wait.Truncate(100*time.Millisecond) + 100*time.Millisecond
		c.SendError(fmt.Errorf("authentication failed just before from your address: retry in %v", wait))
		return nil, fmt.Errorf("refused: %s is held back %v after a failed attempt", host, wait)
	}
	release, err := sv.auth.take(ctx, host, c.Timeout)
	if err != nil {
		if errors.Is(err, errTurn) {
			c.SendError(err)
		}
		return nil, err
	}
	defer release()
	sn := oob.NewNonce()
	if err := c.Send(oob.Msg{Type: oob.TChallenge, Challenge: &oob.Challenge{Nonce: sn}}); err != nil {
		return nil, err
	}
	a, err := c.Expect(oob.TAuth)
	var peer *oob.PeerError
	switch {
	case ctx.Err() != nil:
		return nil, errShutdown // not the client's failure
	case errors.Is(err, io.EOF) || errors.As(err, &peer):
		// A client without a token says so (or leaves): no guess was made.
		c.SendError(errNoToken)
		return nil, fmt.Errorf("authentication failed: the client has no token (%v)", err)
	case err != nil:
		return nil, fmt.Errorf("no proof of the token came: %w", err)
	}
	// A proof is checked no sooner than the host's back-off allows.
	if !sleepCtx(ctx, sv.auth.wait(host)) {
		return nil, errShutdown
	}
	if oob.Verify(a.Auth.Proof, sv.Token, "client", sn, a.Auth.Nonce) {
		sv.auth.succeeded(host)
		return oob.Proof(sv.Token, "server", sn, a.Auth.Nonce), nil
	}
	delay := sv.auth.failed(host)
	if !sleepCtx(ctx, delay) { // slows down guessing, per source address
		return nil, errShutdown
	}
	c.SendError(errNoToken)
	return nil, fmt.Errorf("authentication failed (wrong token; answered after %v, and %s held back as long)", delay, host)
}

// sleepCtx waits d, or until ctx is done (false).
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// preAuthError is what an unauthenticated peer is told: what this server expects,
// never what the peer sent.
func preAuthError(err error) error {
	var perr *oob.ProtocolError
	if errors.As(err, &perr) && errors.Is(err, oob.ErrVersion) {
		return fmt.Errorf("this server speaks rdmabench protocol version %d: run the same rdmabench version on both hosts", oob.Version)
	}
	return errors.New("expected an rdmabench hello")
}

// session admits an authenticated connection from source, or says no.
func (a *admission) session(source string) (release func(), ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.bySource == nil {
		a.bySource = map[string]int{}
	}
	if a.sessions >= maxSessions || a.bySource[source] >= maxSessionsPerSource {
		return nil, false
	}
	a.sessions++
	a.bySource[source]++
	return func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		a.sessions--
		if a.bySource[source]--; a.bySource[source] <= 0 {
			delete(a.bySource, source)
		}
	}, true
}

// sourceOf is the address a peer's limits are kept under: its IPv4 address, or the /64
// of its IPv6 address (one host can have a whole /64).
func sourceOf(a net.Addr) string {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return a.String()
	}
	if ip4 := ta.IP.To4(); ip4 != nil {
		return ip4.String()
	}
	return ta.IP.Mask(net.CIDRMask(64, 128)).String() + "/64"
}

// logLimit lets through at most burst log lines per second (logBurst when 0), and
// says how many it dropped: a flood of garbage connections, or of refused plans from an
// admitted client, must not flood the log.
type logLimit struct {
	burst   int
	mu      sync.Mutex
	window  time.Time
	n       int
	dropped int
}

const logBurst = 20

// allow says whether a line may be logged now; when a second has passed since the last
// window it also returns the count dropped in it.
func (l *logLimit) allow() (ok bool, dropped int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now := time.Now(); now.Sub(l.window) >= time.Second {
		dropped, l.window, l.n, l.dropped = l.dropped, now, 0, 0
	}
	if l.n >= cmp.Or(l.burst, logBurst) {
		l.dropped++
		return false, dropped
	}
	l.n++
	return true, dropped
}

// logf logs a line through l, first saying how many lines of what kind l dropped.
func (sv *Server) logf(l *logLimit, what, format string, args ...any) {
	ok, dropped := l.allow()
	if dropped > 0 {
		sv.Log.Printf("(%d more %s not logged)", dropped, what)
	}
	if ok {
		sv.Log.Printf(format, args...)
	}
}

// failures paces authentication per source address. One challenge is in flight per
// address at a time (turn): a second connection from it waits for the first to be
// settled, so proofs from one address are checked one after another, never in a batch.
// A wrong proof delays its answer, and the address's next check, by 100 ms after the
// first failure, doubling to 10 s; a right proof forgives. Only a wrong proof is a
// failure: a connection that is cut, times out or leaves before proving anything made
// no guess.
type failures struct {
	mu    sync.Mutex
	hosts map[string]*failure
	turns map[string]*turn
}

type failure struct {
	n     int
	until time.Time
}

// turn is one address's right to have a challenge in flight.
type turn struct {
	ch    chan struct{}
	users int
}

// maxFailureHosts bounds the addresses whose failures are remembered.
const maxFailureHosts = 4096

func failDelay(n int) time.Duration { return min(100*time.Millisecond<<min(n-1, 10), 10*time.Second) }

// errTurn: the address's earlier handshake was still at its challenge when this one's
// wait ran out.
var errTurn = errors.New("another handshake from your address is still proving its token: retry when it is done")

// take waits, at most wait, for host's turn to be challenged, and returns the function
// that gives it back.
func (f *failures) take(ctx context.Context, host string, wait time.Duration) (release func(), err error) {
	f.mu.Lock()
	if f.turns == nil {
		f.turns = map[string]*turn{}
	}
	t := f.turns[host]
	if t == nil {
		t = &turn{ch: make(chan struct{}, 1)}
		f.turns[host] = t
	}
	t.users++
	f.mu.Unlock()
	leave := func() {
		f.mu.Lock()
		if t.users--; t.users == 0 {
			delete(f.turns, host)
		}
		f.mu.Unlock()
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case t.ch <- struct{}{}:
		return func() { <-t.ch; leave() }, nil
	case <-timer.C:
		leave()
		return nil, errTurn
	case <-ctx.Done():
		leave()
		return nil, errShutdown
	}
}

// wait says how long host must still wait before its next proof is checked.
func (f *failures) wait(host string) time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	if h := f.hosts[host]; h != nil {
		return max(time.Until(h.until), 0)
	}
	return 0
}

// failed records a wrong proof and returns the delay before it is answered.
func (f *failures) failed(host string) time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.hosts == nil {
		f.hosts = map[string]*failure{}
	}
	h := f.hosts[host]
	if h == nil {
		if len(f.hosts) >= maxFailureHosts { // forget old offenders rather than grow without bound
			for k, v := range f.hosts {
				if time.Since(v.until) > time.Minute {
					delete(f.hosts, k)
				}
			}
			for k := range f.hosts { // still full (many addresses failing now): any, at random
				if len(f.hosts) < maxFailureHosts {
					break
				}
				delete(f.hosts, k)
			}
		}
		h = &failure{}
		f.hosts[host] = h
	}
	h.n++
	d := failDelay(h.n)
	h.until = time.Now().Add(d)
	return d
}

func (f *failures) succeeded(host string) {
	f.mu.Lock()
	delete(f.hosts, host)
	f.mu.Unlock()
}
