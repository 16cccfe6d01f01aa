package rdma

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rdmabench/rdmabench/bench"
	"github.com/rdmabench/rdmabench/oob"
	"github.com/rdmabench/rdmabench/rdma/internal/provider"
	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/verbs"
)

// Config says what region to ask a server for, and how to reach it.
type Config struct {
	// Size is the region's length in bytes (1 B to 2 GiB): the server registers that
	// many zero bytes for remote WRITE and READ.
	Size int
	// Token is the server's shared secret ("" for a server without one); it never
	// crosses the wire (see 'rdmabench server --token-file').
	Token string
	// Timeout bounds each step of the control protocol (default 30 s); a server that
	// stops answering is detected within about as long. It also bounds Close (plus a
	// second per 64 MiB of region, for the server's hashing).
	//
	// A server holds a region for at most its --max-test-time (ServeConfig.MaxTestTime,
	// 10 minutes by default), counted from Dial: a connection held longer is ended by
	// the server, and its ops in flight and all later ones then fail with the server's
	// words ("the test ran past this server's --max-test-time"). Dial again for more.
	Timeout time.Duration
	// QPs is the number of RC QPs (default 1). Each batch goes to one QP; ops on one QP
	// execute in order, ops on different QPs in no set order.
	QPs int
	// SQDepth is each QP's send queue depth (default 128).
	SQDepth int
	// SignalEvery signals at least every SignalEvery-th WR of a post list (default
	// min(16, SQDepth)); the last WR of a post list is always signalled.
	SignalEvery int
	// Dial, when set, makes the control connection (default: TCP).
	Dial func(ctx context.Context, addr string) (net.Conn, error)
}

func (cfg *Config) defaults() error {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	if cfg.QPs == 0 {
		cfg.QPs = 1
	}
	if cfg.SQDepth == 0 {
		cfg.SQDepth = 128
	}
	if cfg.SignalEvery == 0 {
		cfg.SignalEvery = min(16, cfg.SQDepth)
	}
	switch {
	case cfg.Size < 1 || cfg.Size > 1<<31:
		return fmt.Errorf("rdma: region of %d bytes: want 1 B to 2 GiB", cfg.Size)
	case cfg.QPs < 1 || cfg.QPs > 1024:
		return fmt.Errorf("rdma: %d QPs: want 1 to 1024", cfg.QPs)
	case cfg.SQDepth < 1 || cfg.SQDepth > 1<<15:
		return fmt.Errorf("rdma: send queue depth %d: want 1 to 32768", cfg.SQDepth)
	case cfg.SignalEvery < 1 || cfg.SignalEvery > cfg.SQDepth:
		return fmt.Errorf("rdma: SignalEvery %d: want 1 to the send queue depth (%d)", cfg.SignalEvery, cfg.SQDepth)
	}
	return nil
}

// Conn is a region held on a server, and the QPs connected to it. Its methods are safe
// for concurrent use.
type Conn struct {
	d      *Device
	addr   string
	cfg    Config
	ctrl   *oob.Conn
	server result.Device
	sess   provider.Session
	region oob.Endpoint // the server's: Addr, RKey, Len
	wrs    []verbs.WR   // the post list, over the session's memory
	wcs    []verbs.WC
	// retired is complete's scratch list of ops to resolve.
	retired []outcome

	shut   atomic.Bool // Close began
	mu     sync.Mutex  // the QPs' state, the post list, closed, failed, room
	qps    []qpState
	closed bool
	failed error         // the connection broke: every later post fails with it
	qpErr  error         // the first error of a QP
	room   chan struct{} // closed when send queue slots free up
	rr     int

	inflight   atomic.Int64  // WRs posted and not known complete, all QPs
	kick       chan struct{} // a post after an idle spell wakes the poller
	quit       chan struct{} // closed by Close: the poller returns
	pollerDone chan struct{}

	beatQuit chan struct{}
	beatDone chan error
	report   chan ctrlMsg // the control reader's one message: a report, or why it stopped

	closeOnce sync.Once
	closeErr  error
	digest    string
}

type outcome struct {
	op  *Op
	err error
}

type ctrlMsg struct {
	m   oob.Msg
	err error
}

// qpState is one QP's send queue as the connection sees it: WRs head..next-1 are in
// flight, their ops in ring[seq % depth] (nil for a cover: a signalled zero-length
// WRITE that retires the unsignalled WRs before it).
type qpState struct {
	num        uint32
	ring       []*Op
	head, next uint64
	unsig      int   // WRs posted since the last signalled one
	err        error // the QP takes no more posts: its first error completion, or why not
	errState   bool  // the QP is in the error state: its outstanding WRs flush
}

// flushError is the outcome of an op whose WR did not run because its QP had failed:
// the flush completion, and the error that failed the QP.
type flushError struct {
	wc    error // the IBV_WC_WR_FLUSH_ERR completion
	cause error // the QP's first error
}

func (e *flushError) Error() string {
	return e.wc.Error() + ", after the QP failed: " + e.cause.Error()
}

func (e *flushError) Unwrap() []error { return []error{e.wc, e.cause} }

// wr_id is the QP index above qpShift, the WR's sequence number below.
const (
	qpShift = verbs.QShift
	seqMask = 1<<qpShift - 1
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
	c := &Conn{d: d, addr: addr, cfg: cfg, ctrl: oob.NewConn(nc, cfg.Timeout)}
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
	h, err := bench.Handshake(c.ctrl, d.Identity(), cfg.Token)
	if err != nil {
		return abort(fmt.Errorf("rdma: handshake with %s: %w", addr, err))
	}
	c.server = h.Device
	plan := result.Config{Op: "write", Test: "region", MsgSizeBytes: cfg.Size, NumQPs: cfg.QPs, SQDepth: cfg.SQDepth}
	if err := c.ctrl.Send(oob.Msg{Type: oob.TPlan, Plan: &plan}); err != nil {
		return abort(fmt.Errorf("rdma: %s: %w", addr, err))
	}
	m, err := c.ctrl.Expect(oob.TEndpoint)
	if err != nil {
		return abort(fmt.Errorf("rdma: the server at %s refused a region of %d bytes: %w", addr, cfg.Size, err))
	}
	c.region = *m.Endpoint
	if len(c.region.QPNs) != cfg.QPs || c.region.Len < uint64(cfg.Size) {
		err := fmt.Errorf("the server offers %d QPs and %d bytes, not the %d QPs and %d bytes asked for", len(c.region.QPNs), c.region.Len, cfg.QPs, cfg.Size)
		c.ctrl.SendError(err)
		return abort(fmt.Errorf("rdma: %s: %w", addr, err))
	}
	d.life.RLock()
	held = true
	if d.closed {
		c.ctrl.SendError(errors.New("the client's device closed"))
		return abort(fmt.Errorf("rdma: dialing %s: %w", addr, ErrDeviceClosed))
	}
	// The client's own buffer is unused: ops move pool buffers.
	c.sess, err = d.p.NewSession(verbs.Spec{NumQP: cfg.QPs, SQDepth: cfg.SQDepth, BufSize: 1})
	if err != nil {
		c.sess = nil
		c.ctrl.SendError(err)
		return abort(fmt.Errorf("rdma: %w", err))
	}
	if err := c.sess.Connect(c.region); err != nil {
		c.ctrl.SendError(err)
		return abort(fmt.Errorf("rdma: connecting to %s: %w", addr, err))
	}
	local := c.sess.Local()
	if err := c.ctrl.Send(oob.Msg{Type: oob.TEndpoint, Endpoint: &local}); err != nil {
		return abort(fmt.Errorf("rdma: %s: %w", addr, err))
	}
	if _, err := c.ctrl.Expect(oob.TReady); err != nil {
		return abort(fmt.Errorf("rdma: %s: %w", addr, err))
	}
	if !stop() {
		// ctx ended as the region became ready: its AfterFunc closes the control
		// connection, so the connection cannot be used.
		return abort(fmt.Errorf("rdma: %s: the region was ready, the dial cancelled", addr))
	}
	// From here on Dial succeeds: nothing is torn down.
	c.wrs, c.wcs = c.sess.WRs(), c.sess.WCs()
	c.qps = make([]qpState, cfg.QPs)
	for i := range c.qps {
		c.qps[i] = qpState{num: local.QPNs[i], ring: make([]*Op, cfg.SQDepth)}
	}
	c.kick, c.quit, c.pollerDone = make(chan struct{}, 1), make(chan struct{}), make(chan struct{})
	c.beatQuit, c.beatDone, c.report = make(chan struct{}), make(chan error, 1), make(chan ctrlMsg, 1)
	go c.poller()
	go c.beat()
	go c.listen()
	d.mu.Lock()
	d.conns[c] = struct{}{}
	d.mu.Unlock()
	d.life.RUnlock()
	return c, nil
}

// Addr is the server's address.
func (c *Conn) Addr() string { return c.addr }

// Server is the server's device, from its hello.
func (c *Conn) Server() result.Device { return c.server }

// Len is the length of the remote region.
func (c *Conn) Len() int { return c.cfg.Size }

// Write posts a WRITE of src to offset off of the remote region.
func (c *Conn) Write(ctx context.Context, src Buffer, off uint64) *Op {
	o := &Op{}
	c.prepare(o, false, src, off)
	c.post(ctx, []*Op{o})
	return o
}

// Read posts a READ of len(dst) bytes from offset off of the remote region into dst.
func (c *Conn) Read(ctx context.Context, dst Buffer, off uint64) *Op {
	o := &Op{}
	c.prepare(o, true, dst, off)
	c.post(ctx, []*Op{o})
	return o
}

// prepare fills in the op's WR, or why it cannot be posted.
func (c *Conn) prepare(o *Op, read bool, b Buffer, off uint64) {
	o.read = read
	switch {
	case b.m == nil:
		o.bad = fmt.Errorf("%w: the zero Buffer (get buffers from a Pool)", ErrRange)
	case b.m.dev != c.d:
		o.bad = fmt.Errorf("%w: the buffer is registered on another device", ErrRange)
	case b.m.closed.Load():
		o.bad = fmt.Errorf("%w: the buffer's pool is closed", ErrRange)
	case b.n < 1:
		o.bad = fmt.Errorf("%w: an empty buffer", ErrRange)
	case off > uint64(c.cfg.Size) || uint64(b.n) > uint64(c.cfg.Size)-off:
		o.bad = fmt.Errorf("%w: %d bytes at offset %d of a %d-byte region", ErrRange, b.n, off, c.cfg.Size)
	default:
		o.laddr, o.lkey, o.n = b.m.addr+uint64(b.off), b.m.lkey, uint32(b.n)
		o.raddr = c.region.Addr + off
	}
}

// post posts ops, in order, to one QP: as one post list when the send queue has room
// for them all, else in parts as room frees up. The last WR of each post list is
// signalled, and every cfg.SignalEvery-th.
func (c *Conn) post(ctx context.Context, ops []*Op) error {
	if c.shut.Load() {
		for _, o := range ops {
			o.resolve(ErrClosed)
		}
		return ErrClosed
	}
	// Ops that cannot be posted resolve now; the rest keep their order.
	var bad error
	valid := ops[:0:len(ops)]
	for _, o := range ops {
		if o.bad != nil {
			o.resolve(o.bad)
			bad = cmp.Or(bad, o.bad)
			continue
		}
		valid = append(valid, o)
	}
	if len(valid) == 0 {
		return bad
	}
	return cmp.Or(c.postValid(ctx, valid), bad)
}

func (c *Conn) postValid(ctx context.Context, ops []*Op) (err error) {
	i := 0
	defer func() {
		for _, o := range ops[i:] {
			o.resolve(err)
		}
	}()
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	depth := c.cfg.SQDepth
	c.mu.Lock()
	qi := -1
	for i < len(ops) {
		switch {
		case c.closed:
			c.mu.Unlock()
			return ErrClosed
		case c.failed != nil:
			c.mu.Unlock()
			return c.failed
		case qi >= 0 && c.qps[qi].err != nil:
			// The QP failed under a post that went to it in part: the rest cannot go
			// to another QP ahead of it.
			err := fmt.Errorf("rdma: QP 0x%x failed: %w", c.qps[qi].num, c.qps[qi].err)
			c.mu.Unlock()
			return err
		case qi < 0:
			if qi = c.pick(); qi < 0 {
				c.failLocked(c.noQPLeft())
				err := c.failed
				c.mu.Unlock()
				return err
			}
		}
		q := &c.qps[qi]
		room := depth - int(q.next-q.head)
		if room == 0 {
			if c.room == nil {
				c.room = make(chan struct{})
			}
			ch := c.room
			c.mu.Unlock()
			select {
			case <-ch:
			case <-ctx.Done():
				return ctx.Err()
			}
			c.mu.Lock()
			if i == 0 {
				qi = -1 // nothing went to this QP yet: any QP may take the ops
			}
			continue
		}
		k := min(room, len(ops)-i)
		unsig := q.unsig
		for j := range k {
			o := ops[i+j]
			seq := q.next + uint64(j)
			sig := j == k-1 || q.unsig+1 >= c.cfg.SignalEvery
			if sig {
				q.unsig = 0
			} else {
				q.unsig++
			}
			c.wrs[j] = o.wr(uint64(qi)<<qpShift|seq&seqMask, sig, c.region.RKey)
			q.ring[seq%uint64(depth)] = o
		}
		posted, perr := c.sess.Post(qi, k)
		if perr != nil {
			posted = min(max(posted, 0), k)
		}
		q.next += uint64(posted)
		if posted > 0 && c.inflight.Add(int64(posted)) == int64(posted) {
			// The poller may be asleep for want of work.
			select {
			case c.kick <- struct{}{}:
			default:
			}
		}
		if perr != nil {
			// The posted prefix stays in flight; the ops not posted, and the rest,
			// resolve with the error.
			for s := q.next; s < q.next+uint64(k-posted); s++ {
				q.ring[s%uint64(depth)] = nil
			}
			err := c.postFailed(qi, posted, k, unsig, perr)
			i += posted
			c.mu.Unlock()
			return err
		}
		i += k
	}
	c.mu.Unlock()
	return nil
}

// postFailed settles a post list that QP qi took only the first posted WRs of (c.mu
// held): the prefix is in flight, and its last WR must be signalled, or nothing would
// ever retire it. A post that failed for want of room (ENOMEM) leaves the QP in use.
func (c *Conn) postFailed(qi, posted, k, unsig int, perr error) error {
	q := &c.qps[qi]
	err := fmt.Errorf("rdma: QP 0x%x took %d of a post list of %d WRs: %w", q.num, posted, k, perr)
	// The unsignalled WRs at the end of what was posted.
	t := 0
	for t < posted && c.wrs[posted-1-t].Flags&verbs.WRSignaled == 0 {
		t++
	}
	if t == posted {
		t += unsig
	}
	q.unsig = t
	if q.unsig > 0 && q.err == nil {
		// Cover the prefix with a signalled zero-length WRITE: it touches no memory,
		// and its completion retires the WRs before it.
		seq := q.next
		c.wrs[0] = verbs.WR{WRID: uint64(qi)<<qpShift | seq&seqMask, RAddr: c.region.Addr, RKey: c.region.RKey,
			Opcode: verbs.WRWrite, Flags: verbs.WRSignaled}
		if n, cerr := c.sess.Post(qi, 1); cerr == nil && n == 1 {
			q.ring[seq%uint64(c.cfg.SQDepth)] = nil
			q.next++
			c.inflight.Add(1)
			q.unsig = 0
		}
	}
	if q.unsig > 0 || !errors.Is(perr, syscall.ENOMEM) {
		if q.unsig > 0 && !q.errState {
			// No cover: the error state flushes the prefix, each WR with a completion.
			if c.sess.Fail(qi) == nil {
				q.errState = true
			}
		}
		c.qpFailed(qi, err)
	}
	return err
}

// qpFailed records the first error of QP qi; when no QP is left, the connection fails
// (c.mu held).
func (c *Conn) qpFailed(qi int, err error) {
	q := &c.qps[qi]
	if q.err != nil {
		return
	}
	q.err = err
	if c.qpErr == nil {
		c.qpErr = err
	}
	for i := range c.qps {
		if c.qps[i].err == nil {
			return
		}
	}
	c.failLocked(c.noQPLeft())
}

// noQPLeft is the connection's error when every QP failed (c.mu held).
func (c *Conn) noQPLeft() error {
	if len(c.qps) == 1 {
		return fmt.Errorf("rdma: the connection's QP 0x%x failed: %w", c.qps[0].num, c.qpErr)
	}
	return fmt.Errorf("rdma: all %d QPs of the connection failed; the first: %w", len(c.qps), c.qpErr)
}

// pick chooses a QP that has not failed, the one with the most room, round robin
// among equals; -1 when every QP failed (c.mu held).
func (c *Conn) pick() int {
	if len(c.qps) == 1 {
		if c.qps[0].err != nil {
			return -1
		}
		return 0
	}
	best, most := -1, -1
	for k := range c.qps {
		i := (c.rr + k) % len(c.qps)
		q := &c.qps[i]
		if q.err != nil {
			continue
		}
		if room := c.cfg.SQDepth - int(q.next-q.head); room > most {
			best, most = i, room
		}
	}
	if best >= 0 {
		c.rr = best + 1
	}
	return best
}

// complete resolves the ops that completions retire. It is the poller's (or, once the
// poller is gone, Close's): the ops leave the rings under c.mu and resolve after, so
// that posts wait for the lock as little as possible.
//
// An RC QP executes its WRs in order and stops at the first that fails, which
// completes with its error whether it was signalled or not. So a successful
// completion retires its WR and every earlier one of its QP (the unsignalled ones it
// covers) with success; an error completion (the first of its QP) fails its own WR
// and retires the earlier ones with success; after it, or once the QP is moved to the
// error state, every outstanding WR completes flushed, and an op that no completion
// covered before a flush is not known to have run: both resolve with the flush.
func (c *Conn) complete(wcs []verbs.WC) {
	var freed int64
	depth := uint64(c.cfg.SQDepth)
	retired := c.retired[:0]
	c.mu.Lock()
	for i := range wcs {
		wc := &wcs[i]
		qi := int(wc.WRID >> qpShift)
		if qi >= len(c.qps) {
			continue
		}
		q := &c.qps[qi]
		seq := q.head + (wc.WRID-q.head)&seqMask
		if seq >= q.next {
			continue // not in flight
		}
		var before, err error // the outcome of head..seq-1, and of seq
		if wc.Status != verbs.WCSuccess {
			ce := wc.Err(opcodeOf(q.ring[seq%depth]))
			q.errState = true
			if wc.Status == verbs.WCWRFlushErr {
				if q.err == nil {
					c.qpFailed(qi, ce)
					err = ce
				} else {
					err = &flushError{wc: ce, cause: q.err}
				}
				before = err
			} else {
				err = ce
				c.qpFailed(qi, ce)
			}
		}
		for ; q.head <= seq; q.head++ {
			slot := &q.ring[q.head%depth]
			if *slot != nil {
				out := before
				if q.head == seq {
					out = err
				}
				retired = append(retired, outcome{*slot, out})
				*slot = nil
			}
			freed++
		}
	}
	if freed > 0 && c.room != nil {
		close(c.room)
		c.room = nil
	}
	c.inflight.Add(-freed)
	c.mu.Unlock()
	for i := range retired {
		retired[i].op.resolve(retired[i].err)
		retired[i] = outcome{}
	}
	c.retired = retired
}

func opcodeOf(o *Op) string {
	if o == nil {
		return "IBV_WC_RDMA_WRITE" // a cover
	}
	return o.opcode()
}

// flush resolves every op in flight with err (c.mu held): only once the QPs are
// destroyed, when no WR can move memory any more.
func (c *Conn) flush(err error) {
	depth := uint64(c.cfg.SQDepth)
	var freed int64
	for i := range c.qps {
		q := &c.qps[i]
		for ; q.head < q.next; q.head++ {
			slot := &q.ring[q.head%depth]
			if *slot != nil {
				(*slot).resolve(err)
				*slot = nil
			}
			freed++
		}
	}
	c.inflight.Add(-freed)
	if c.room != nil {
		close(c.room)
		c.room = nil
	}
}

// fail breaks the connection: later posts fail with err, and the QPs go to the error
// state, so that the NIC stops their WRs and the ops in flight resolve as their flush
// completions arrive (each wraps err), or, failing that, at Close.
func (c *Conn) fail(err error) {
	c.mu.Lock()
	c.failLocked(err)
	c.mu.Unlock()
}

// failLocked is fail with c.mu held.
func (c *Conn) failLocked(err error) {
	if c.failed != nil || c.closed {
		return
	}
	c.failed = err
	for i := range c.qps {
		q := &c.qps[i]
		if q.err == nil {
			q.err = err
		}
		if !q.errState && c.sess.Fail(i) == nil {
			q.errState = true
		}
	}
	if c.room != nil {
		close(c.room)
		c.room = nil
	}
}

// Polling: after a completion or a post the poller keeps polling for spinFor (a
// caller that posts again soon finds it awake: no thread to wake), then sleeps, on the
// CQ's completion channel for at most waitSlice at a time (so that Close is seen), or,
// while nothing is in flight, until the next post. With many Ps the poller spins on an
// OS thread of its own (locked). With few (GOMAXPROCS at most yieldBelow) it yields
// after each empty poll instead: the goroutines that post, and those that wait for the
// ops, run in between rather than wait for the spin to end or for preemption.
const (
	spinFor    = 100 * time.Microsecond
	waitSlice  = 20 * time.Millisecond
	yieldBelow = 2
)

// poller is the one goroutine that polls the connection's CQ.
func (c *Conn) poller() {
	defer close(c.pollerDone)
	// With many Ps the poller keeps a thread to itself; with few it yields, which a
	// goroutine locked to its thread cannot do cheaply.
	yield, locked := false, false
	mode := func() {
		yield = runtime.GOMAXPROCS(0) <= yieldBelow
		if locked == yield {
			if yield {
				runtime.UnlockOSThread()
			} else {
				runtime.LockOSThread()
			}
			locked = !yield
		}
	}
	mode()
	defer func() {
		if locked {
			runtime.UnlockOSThread()
		}
	}()
	spins, last := 0, time.Now()
	for {
		n, err := c.sess.Poll()
		if err == nil && n == 0 {
			select {
			case <-c.quit:
				return
			default:
			}
			if yield {
				runtime.Gosched()
			}
			if spins++; spins%128 != 0 || time.Since(last) < spinFor {
				continue
			}
			if c.inflight.Load() == 0 {
				select {
				case <-c.kick:
				case <-c.quit:
					return
				}
				mode()
				spins, last = 0, time.Now()
				continue
			}
			n, err = c.sess.Wait(waitSlice)
		}
		if err != nil {
			c.fail(fmt.Errorf("rdma: polling the completion queue: %w", err))
			return
		}
		if n > 0 {
			c.complete(c.wcs[:n])
			spins, last = 0, time.Now()
		}
	}
}

// beat tells the server every oob.BeatInterval that the client still holds the region.
func (c *Conn) beat() {
	t := time.NewTicker(oob.BeatInterval)
	defer t.Stop()
	for {
		select {
		case <-c.beatQuit:
			c.beatDone <- nil
			return
		case <-t.C:
			if err := c.ctrl.Send(oob.Msg{Type: oob.TBeat}); err != nil {
				c.fail(fmt.Errorf("rdma: lost the server at %s: %w", c.addr, err))
				c.beatDone <- err
				return
			}
		}
	}
}

// listen reads the control connection while the region is held: the one message due
// is the report that answers Close's done; anything else (the server's error, a lost
// connection) breaks the connection.
func (c *Conn) listen() {
	m, err := c.ctrl.Recv(0)
	if err == nil && m.Type != oob.TReport {
		err = &oob.ProtocolError{Msg: fmt.Sprintf("expected a report, got %s", oob.Quote(m.Type))}
	}
	if err == nil && m.Report == nil {
		err = &oob.ProtocolError{Msg: "a report without its body"}
	}
	if err != nil {
		c.fail(fmt.Errorf("rdma: the server at %s: %w", c.addr, err))
	}
	c.report <- ctrlMsg{m, err}
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
	cut := time.AfterFunc(budget, func() { c.ctrl.Close() })
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
	close(c.beatQuit)
	<-c.beatDone
	c.d.forget(c, nil)
	// The server's side: done, its report, bye.
	var rep ctrlMsg
	if err := c.ctrl.Send(oob.Msg{Type: oob.TDone}); err != nil {
		rep.err = err
	} else {
		t := time.NewTimer(time.Until(end))
		select {
		case rep = <-c.report:
		case <-t.C:
			rep.err = fmt.Errorf("no report from the server within %v", budget)
		}
		t.Stop()
	}
	if rep.err == nil {
		c.mu.Lock()
		c.digest = rep.m.Report.Digest
		c.mu.Unlock()
		_ = c.ctrl.Send(oob.Msg{Type: oob.TBye})
	} else if failed == nil {
		errs = append(errs, fmt.Errorf("rdma: releasing the region at %s: %w", c.addr, rep.err))
	}
	if cut.Stop() {
		errs = append(errs, c.ctrl.Close())
	}
	if failed != nil {
		errs = append(errs, failed)
	}
	return errors.Join(errs...)
}

// Digest is the SHA-256 (lowercase hex) of the region's bytes when Close released it,
// as the server computed it; "" before Close or when the server sent none.
func (c *Conn) Digest() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.digest
}
