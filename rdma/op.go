package rdma

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/rdmabench/rdmabench/verbs"
)

// Op is one posted WRITE or READ: a future that resolves once, with nil when the NIC
// reported it complete, or with the error that ended it.
type Op struct {
	mu   sync.Mutex
	done atomic.Bool
	err  error
	ch   chan struct{} // made on demand by Done or Wait

	// the work request
	read  bool
	laddr uint64
	lkey  uint32
	n     uint32
	raddr uint64
	bad   error // the op cannot be posted
}

// closedChan is the Done channel of an op that resolved before anyone asked for one.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// Done is closed when the op resolves.
func (o *Op) Done() <-chan struct{} {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ch == nil {
		if o.done.Load() {
			return closedChan
		}
		o.ch = make(chan struct{})
	}
	return o.ch
}

// Err is the op's outcome once Done is closed: nil for success. While the op is in
// flight it is nil too (as context.Context's Err): read it after Done, or use Wait.
func (o *Op) Err() error {
	if !o.done.Load() {
		return nil
	}
	return o.err
}

// Wait waits for the op to resolve and returns its outcome, or returns ctx's error
// when ctx ends first; the op is not cancelled (a posted WR cannot be) and resolves
// later all the same.
func (o *Op) Wait(ctx context.Context) error {
	if o.done.Load() {
		return o.err
	}
	select {
	case <-o.Done():
		return o.err
	case <-ctx.Done():
		if o.done.Load() {
			return o.err
		}
		return ctx.Err()
	}
}

// resolve settles the op, once; later calls do nothing.
func (o *Op) resolve(err error) {
	o.mu.Lock()
	if !o.done.Load() {
		o.err = err
		o.done.Store(true)
		if o.ch != nil {
			close(o.ch)
		}
	}
	o.mu.Unlock()
}

func (o *Op) opcode() string {
	if o.read {
		return "IBV_WC_RDMA_READ"
	}
	return "IBV_WC_RDMA_WRITE"
}

func (o *Op) wr(wrid uint64, signalled bool, rkey uint32) verbs.WR {
	w := verbs.WR{WRID: wrid, LAddr: o.laddr, LKey: o.lkey, Len: o.n, RAddr: o.raddr, RKey: rkey, Opcode: verbs.WRWrite}
	if o.read {
		w.Opcode = verbs.WRRead
	}
	if signalled {
		w.Flags = verbs.WRSignaled
	}
	return w
}

// WaitAll waits for every op and returns the first error among them in order (nil
// when all succeeded), or ctx's error when ctx ends first.
func WaitAll(ctx context.Context, ops ...*Op) error {
	var first error
	for _, o := range ops {
		if err := o.Wait(ctx); err != nil {
			if ctx.Err() != nil && err == ctx.Err() {
				return err
			}
			if first == nil {
				first = err
			}
		}
	}
	return first
}

// Batch collects WRITEs and READs of one connection and posts them as one post list
// (more than one only when the send queue has less room than the batch). A Batch is
// reusable after Post, and is not safe for concurrent use.
type Batch struct {
	c    *Conn
	ops  []*Op
	slab []Op // ops are carved from here: one allocation per slabSize ops
}

const slabSize = 16

// NewBatch returns an empty batch for c.
func (c *Conn) NewBatch() *Batch { return &Batch{c: c} }

// Write queues a WRITE of src to offset off of the remote region; the op resolves after
// Post.
func (b *Batch) Write(src Buffer, off uint64) *Op { return b.add(false, src, off) }

// Read queues a READ of len(dst) bytes from offset off of the remote region into dst.
func (b *Batch) Read(dst Buffer, off uint64) *Op { return b.add(true, dst, off) }

// Len is the number of ops queued.
func (b *Batch) Len() int { return len(b.ops) }

func (b *Batch) add(read bool, buf Buffer, off uint64) *Op {
	if len(b.slab) == 0 {
		b.slab = make([]Op, slabSize)
	}
	o := &b.slab[0]
	b.slab = b.slab[1:]
	b.c.prepare(o, read, buf, off)
	b.ops = append(b.ops, o)
	return o
}

// Post posts the queued ops in order to one QP, waiting for room in its send queue as
// long as ctx allows, and empties the batch. It returns nil when every op was posted;
// else the first error that kept an op from the wire (those ops are resolved with it).
func (b *Batch) Post(ctx context.Context) error {
	err := b.c.post(ctx, b.ops)
	clear(b.ops)
	b.ops = b.ops[:0]
	return err
}
