package rdma

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/rdmabench/rdmabench/oob"
	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/verbs"
	"github.com/rdmabench/rdmabench/verbs/qp"
)

// Dial connects to the rdmabench server at addr (host:port; the port defaults to
// 18600), asks it for a region of cfg.Size bytes, and connects QPs to it. It returns
// a connection or an error, never both; on a closed device the error wraps
// ErrDeviceClosed. The connection beats to the server until Close, which is required:
// a connection dropped without Close holds the server's region until the server's
// --max-test-time ends it, and its own QPs and poller goroutine for good.
func (d *Device) Dial(ctx context.Context, addr string, cfg Config) (*Conn, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	if d.isClosed() {
		return nil, fmt.Errorf("rdma: dialing %s: %w", addr, ErrDeviceClosed)
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		addr = net.JoinHostPort(addr, strconv.Itoa(oob.DefaultPort))
	}
	nc, err := dialControl(ctx, addr, &cfg)
	if err != nil {
		return nil, err
	}
	c := &Conn{d: d, addr: addr, cfg: cfg}
	me, spec := d.side(nc.LocalAddr(), cfg)
	// Cancelling ctx cuts the handshake short.
	stop := context.AfterFunc(ctx, func() { nc.Close() })
	// From the session on, the device is held: Device.Close waits until the connection
	// is tracked or torn down, so that it never meets one half made.
	held := false
	abort := func(err error) (*Conn, error) {
		stop()
		if c.sess != nil {
			c.sess.Close()
		}
		if held {
			d.life.RUnlock()
		}
		nc.Close()
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%v)", ctx.Err(), err)
		}
		return nil, err
	}
	// The client's side of the region: from the server's endpoint, under the device
	// held, a session whose QPs connect to it.
	var local qp.Endpoint
	connect := func(region qp.Endpoint) (qp.Endpoint, error, error) {
		d.life.RLock()
		held = true
		if d.closed {
			return qp.Endpoint{}, errors.New("the client's device closed"), fmt.Errorf("rdma: dialing %s: %w", addr, ErrDeviceClosed)
		}
		var err error
		c.sess, err = d.p.NewSession(spec)
		if err != nil {
			c.sess = nil
			return qp.Endpoint{}, err, fmt.Errorf("rdma: %w", err)
		}
		if err := c.sess.Connect(region, 0); err != nil {
			return qp.Endpoint{}, err, fmt.Errorf("rdma: connecting to %s: %w", addr, err)
		}
		local = c.sess.Local()
		return local, nil, nil
	}
	if err := c.handshake(nc, me, spec, connect); err != nil {
		return abort(err)
	}
	if !stop() {
		// ctx ended as the region became ready: its AfterFunc closes the control
		// connection, so the connection cannot be used.
		return abort(fmt.Errorf("rdma: %s: the region was ready, the dial cancelled", addr))
	}
	// From here on Dial succeeds: nothing is torn down.
	c.start(local)
	d.mu.Lock()
	d.conns[c] = struct{}{}
	d.mu.Unlock()
	d.life.RUnlock()
	return c, nil
}

// side is the client's side of a connection whose control connection has local as
// its address: the identity its hello gives and its session's spec, on the GID of that
// address (verbs.ConnGID: the rule of every rdmabench client; a provider that picks no
// GID per connection keeps its one), with the device's relaxed ordering and cfg's
// service level and traffic class. Its own buffer is unused: ops move pool buffers.
func (d *Device) side(local net.Addr, cfg Config) (DeviceInfo, verbs.Spec) {
	me := d.Identity()
	spec := verbs.Spec{NumQP: cfg.QPs, SQDepth: cfg.SQDepth, BufSize: 1,
		RelaxedOrdering: d.relaxed(), SL: cfg.SL, TrafficClass: cfg.TrafficClass}
	if g, note, ok := verbs.ConnGID(d.p, local); ok {
		me, spec.GIDs = verbs.MarkGID(me, g, note), []verbs.GIDEntry{g}
	}
	return me, spec
}

// dialControl makes the control connection to the server at addr.
func dialControl(ctx context.Context, addr string, cfg *Config) (net.Conn, error) {
	var nc net.Conn
	var err error
	if cfg.Dial != nil {
		nc, err = cfg.Dial(ctx, addr)
	} else {
		dl := net.Dialer{Timeout: cfg.Timeout}
		nc, err = dl.DialContext(ctx, "tcp", addr)
	}
	if err != nil {
		return nil, fmt.Errorf("rdma: cannot reach the rdmabench server at %s: %w (is 'rdmabench server' running there?)", addr, err)
	}
	oob.Tune(nc, cfg.Timeout)
	return nc, nil
}

// handshake is all that Dial says to the server, and hears from it, before the region
// is ready: the session's steps (oob.Peer) on nc. It opens the session as the device id
// (proving c.cfg.Token), proposes a region (c.cfg; registered with relaxed ordering, and
// its QPs given the service level and traffic class, as the client's spec), takes the
// server's hello (c.server)
// and endpoint (c.region), and connects with the endpoint that connect makes from the
// server's; it returns once the server is ready, or with the first error. When
// connect fails, the server is told tell and handshake returns err.
func (c *Conn) handshake(nc net.Conn, id DeviceInfo, spec verbs.Spec, connect func(region qp.Endpoint) (local qp.Endpoint, tell, err error)) error {
	addr, cfg := c.addr, &c.cfg
	p, err := oob.Open(nc, addr, id, cfg.Token, cfg.Timeout)
	if err != nil {
		return fmt.Errorf("rdma: %w", err)
	}
	c.peer, c.server = p, p.Server.Device
	plan := result.Config{Op: "write", Test: result.Region, MsgSizeBytes: cfg.Size, NumQPs: cfg.QPs, SQDepth: cfg.SQDepth,
		PCIeRelaxedOrdering: spec.RelaxedOrdering, SL: spec.SL, TrafficClass: spec.TrafficClass}
	if err := p.Offer(&plan); err != nil {
		return fmt.Errorf("rdma: %s: %w", addr, err)
	}
	if c.region, err = p.Answer(); err != nil {
		return fmt.Errorf("rdma: the server at %s refused a region of %d bytes: %w", addr, cfg.Size, err)
	}
	if len(c.region.QPNs) != cfg.QPs || c.region.Len < uint64(cfg.Size) {
		err := fmt.Errorf("the server offers %d QPs and %d bytes, not the %d QPs and %d bytes asked for", len(c.region.QPNs), c.region.Len, cfg.QPs, cfg.Size)
		p.Abort(err)
		return fmt.Errorf("rdma: %s: %w", addr, err)
	}
	local, tell, err := connect(c.region)
	if err != nil {
		p.Abort(tell)
		return err
	}
	if err := p.Connect(local); err != nil {
		return fmt.Errorf("rdma: %s: %w", addr, err)
	}
	return nil
}

// start sets a dialled connection going: its QPs' rings (local is its endpoint), the
// poller, the beats and the control reader.
func (c *Conn) start(local qp.Endpoint) {
	c.wrs, c.wcs = c.sess.WRs(), c.sess.WCs()
	c.qps = make([]qpState, c.cfg.QPs)
	for i := range c.qps {
		c.qps[i] = qpState{num: local.QPNs[i], ring: make([]*Op, c.cfg.SQDepth)}
	}
	c.kick, c.quit, c.pollerDone = make(chan struct{}, 1), make(chan struct{}), make(chan struct{})
	go c.poller()
	c.endBeats = c.peer.Beat(func(err error) { c.fail(fmt.Errorf("rdma: lost the server at %s: %w", c.addr, err)) })
	c.reply, _, _ = c.peer.Listen(func(err error) { c.fail(fmt.Errorf("rdma: the server at %s: %w", c.addr, err)) })
}

// Close releases the region. It destroys the QPs first (no WR moves memory after
// that), then resolves the ops still in flight with ErrClosed (they are not known to
// have completed), and tells the server that the client is done; its answer carries
// the region's SHA-256 (Digest). Close takes at most about Config.Timeout (plus a
// second per 64 MiB of region for the server's hashing), and is idempotent. It is
// required: a connection dropped without it holds the server's region and its own
// QPs and goroutines (see Dial).
func (c *Conn) Close() error {
	c.closeOnce.Do(func() { c.closeErr = c.close() })
	return c.closeErr
}

func (c *Conn) close() error {
	// Hashing runs at hundreds of MB/s: allow for a large region. When the budget is
	// spent, the control connection is cut: every send and receive on it ends.
	budget := c.cfg.Timeout + time.Duration(c.cfg.Size/(64<<20))*time.Second
	end := time.Now().Add(budget)
	cut := time.AfterFunc(budget, func() { c.peer.Conn.Close() })
	defer cut.Stop()
	c.shut.Store(true)
	c.mu.Lock()
	c.closed = true // no post reaches the QPs after this
	if c.room != nil {
		close(c.room)
		c.room = nil
	}
	c.mu.Unlock()
	close(c.quit)
	<-c.pollerDone
	// What completed already resolves as it completed.
	for {
		n, err := c.sess.Poll()
		if err != nil || n == 0 {
			break
		}
		c.complete(c.wcs[:n])
	}
	// The rest resolves once the QPs are gone.
	errs := []error{c.sess.Close()}
	c.mu.Lock()
	failed := c.failed
	left := ErrClosed
	if failed != nil {
		left = fmt.Errorf("%w; the connection had failed: %w", ErrClosed, failed)
	}
	c.flush(left)
	c.mu.Unlock()
	c.endBeats()
	c.d.forget(c, nil)
	// The server's side: done, its report, bye.
	err := c.peer.Finish(nil)
	var rep *oob.Report
	if err == nil {
		rep, err = c.peer.Report(c.reply, time.Until(end))
		if errors.Is(err, oob.ErrNoReport) {
			err = fmt.Errorf("no report from the server within %v", budget)
		}
	}
	if err == nil {
		c.mu.Lock()
		c.digest = rep.Digest
		c.mu.Unlock()
	} else if failed == nil {
		errs = append(errs, fmt.Errorf("rdma: releasing the region at %s: %w", c.addr, err))
	}
	if cut.Stop() {
		if err == nil {
			errs = append(errs, c.peer.Close()) // bye
		} else {
			errs = append(errs, c.peer.Conn.Close())
		}
	}
	if failed != nil {
		errs = append(errs, failed)
	}
	return errors.Join(errs...)
}
