package bench

import (
	"net"
	"sync"
	"time"
)

// admission keeps unauthenticated and idle connections from crowding out real clients.
//
// Handshakes: at most maxPreAuth at once; when a new connection arrives at the limit,
// the oldest handshake is cut (a real client finishes its handshake in milliseconds, a
// silent connection waits for its deadline), so a flood of silent connections cannot
// lock clients out. Sessions (after the handshake): at most maxSessions, and
// maxSessionsPerSource from one address (an IPv6 /64 counts as one), so that a
// server without a token cannot be filled with idle sessions.
type admission struct {
	mu       sync.Mutex
	pending  []*pendingConn // oldest first
	sessions int
	bySource map[string]int
}

type pendingConn struct {
	nc    net.Conn
	since time.Time
}

const (
	maxSessions          = 64
	maxSessionsPerSource = 16
)

// handshake registers nc as handshaking and returns the function that ends that
// state; it cuts the oldest handshake when there are too many.
func (a *admission) handshake(nc net.Conn) func() {
	p := &pendingConn{nc: nc, since: time.Now()}
	a.mu.Lock()
	if len(a.pending) >= maxPreAuth {
		oldest := a.pending[0]
		a.pending = a.pending[1:]
		oldest.nc.Close()
	}
	a.pending = append(a.pending, p)
	a.mu.Unlock()
	return func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		for i, q := range a.pending {
			if q == p {
				a.pending = append(a.pending[:i], a.pending[i+1:]...)
				return
			}
		}
	}
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

// logLimit lets through at most burst log lines from unauthenticated peers per second,
// and says how many it dropped: a flood of garbage connections must not flood the log.
type logLimit struct {
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
	if l.n >= logBurst {
		l.dropped++
		return false, dropped
	}
	l.n++
	return true, dropped
}
