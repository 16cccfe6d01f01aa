package rdma

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"syscall"

	"github.com/rdmabench/rdmabench/verbs"
)

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
