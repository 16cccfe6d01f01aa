package rdma

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/rdmabench/rdmabench/rdma/internal/provider"
	"github.com/rdmabench/rdmabench/verbs"
)

// Buffer is registered memory that ops move bytes to and from: a pool's buffer, or
// part of one (Slice). It is a small value; copies name the same memory.
type Buffer struct {
	m   *block
	off int
	n   int
}

// block is one registration.
type block struct {
	dev    *Device
	mem    provider.Memory
	bytes  []byte
	addr   uint64
	lkey   uint32
	pool   *Pool
	inUse  []bool // pool buffers of the block handed out by Get
	closed atomic.Bool
}

// Bytes is the buffer's memory (off the Go heap for a real device). It is valid until
// the pool closes; do not touch it while an op on the buffer is in flight.
func (b Buffer) Bytes() []byte {
	if b.m == nil {
		return nil
	}
	return b.m.bytes[b.off : b.off+b.n : b.off+b.n]
}

// Len is the buffer's length in bytes.
func (b Buffer) Len() int { return b.n }

// Slice is the n bytes of b from off, for an op on part of a buffer. It panics when
// they are not within b.
func (b Buffer) Slice(off, n int) Buffer {
	if off < 0 || n < 0 || off > b.n || n > b.n-off {
		panic(fmt.Sprintf("rdma: Slice(%d, %d) of a %d-byte buffer", off, n, b.n))
	}
	return Buffer{m: b.m, off: b.off + off, n: n}
}

// Pool hands out fixed-size registered buffers and takes them back for reuse, so that
// the cost of registering memory (pinning its pages, a system call) is paid once per
// block of buffers, not per op. A pool registers count buffers as one block when it
// is made and another block of count whenever Get finds none free, up to SetMax
// buffers in all when set (else for as long as the device registers memory); it never
// deregisters a block before Close. A Pool is safe for concurrent use.
type Pool struct {
	d         *Device
	size, per int
	access    int // what its blocks are registered with
	mu        sync.Mutex
	free      []Buffer
	blocks    []*block
	total     int // buffers registered
	max       int // SetMax's bound; 0: none
	out       int // buffers handed out by Get and not Put back
	closed    bool
}

var (
	// ErrPoolExhausted is what Get wraps when no buffer is free and the pool may
	// register no more (SetMax).
	ErrPoolExhausted = errors.New("rdma: the pool is exhausted")
	// ErrPoolBusy is what Pool.Close wraps while buffers are out.
	ErrPoolBusy = errors.New("rdma: the pool has buffers out")
)

// NewPool registers count buffers of size bytes each, for local access (the source of
// a WRITE, the destination of a READ), with PCIe relaxed ordering unless the device's
// DisablePCIeRelaxed came first.
func (d *Device) NewPool(size, count int) (*Pool, error) {
	if size < 1 || count < 1 || size > 1<<31 || size*count/count != size || size*count > 1<<40 {
		return nil, fmt.Errorf("rdma: a pool of %d buffers of %d bytes: want 1 to 2 GiB per buffer, at most 1 TiB in all", count, size)
	}
	p := &Pool{d: d, size: size, per: count, access: verbs.Spec{RelaxedOrdering: d.relaxed()}.Access()}
	d.life.RLock()
	defer d.life.RUnlock()
	if d.closed {
		return nil, fmt.Errorf("rdma: a pool: %w", ErrDeviceClosed)
	}
	if err := p.grow(count); err != nil {
		return nil, err
	}
	d.mu.Lock()
	d.pools[p] = struct{}{}
	d.mu.Unlock()
	return p, nil
}

// grow registers another block of n buffers (p.mu held, or p not yet shared).
func (p *Pool) grow(n int) error {
	mem, err := p.d.p.Register(p.size*n, p.access)
	if err != nil {
		return fmt.Errorf("rdma: registering %d buffers of %d bytes: %w", n, p.size, err)
	}
	bl := &block{dev: p.d, mem: mem, bytes: mem.Bytes(), addr: mem.Addr(), lkey: mem.LKey(), pool: p, inUse: make([]bool, n)}
	p.blocks = append(p.blocks, bl)
	p.total += n
	for i := n - 1; i >= 0; i-- {
		p.free = append(p.free, Buffer{m: bl, off: i * p.size, n: p.size})
	}
	return nil
}

// Size is the length of the pool's buffers.
func (p *Pool) Size() int { return p.size }

// Registrations is how many blocks the pool has registered.
func (p *Pool) Registrations() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.blocks)
}

// SetMax bounds the buffers the pool registers in all, those registered already
// included: a Get that finds none free registers a block of at most the buffers left
// under the bound, and, with none left, fails with an error that wraps
// ErrPoolExhausted. 0 (the default) is no bound.
func (p *Pool) SetMax(buffers int) {
	p.mu.Lock()
	p.max = max(buffers, 0)
	p.mu.Unlock()
}

// Get returns a free buffer; it registers another block when none is free (see
// SetMax). The buffer's bytes are what its last user left.
func (p *Pool) Get() (Buffer, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return Buffer{}, errors.New("rdma: the pool is closed")
	}
	if len(p.free) == 0 {
		n := p.per
		if p.max > 0 {
			n = min(n, p.max-p.total)
		}
		if n <= 0 {
			return Buffer{}, fmt.Errorf("%w: all %d buffers are out (SetMax %d)", ErrPoolExhausted, p.total, p.max)
		}
		if err := p.grow(n); err != nil {
			return Buffer{}, err
		}
	}
	b := p.free[len(p.free)-1]
	p.free = p.free[:len(p.free)-1]
	b.m.inUse[b.off/p.size] = true
	p.out++
	return b, nil
}

// Put gives a buffer back for reuse: it must be one that Get returned (whole, not a
// Slice), and no op on it may be in flight. Put panics on a buffer that is not out of
// this pool; after Close it does nothing.
func (p *Pool) Put(b Buffer) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	if b.m == nil || b.m.pool != p || b.n != p.size || b.off%p.size != 0 || !b.m.inUse[b.off/p.size] {
		panic("rdma: Put of a buffer that is not out of this pool")
	}
	b.m.inUse[b.off/p.size] = false
	p.out--
	p.free = append(p.free, b)
}

// Close deregisters every block, once every buffer is back: while a buffer is out (Get
// without Put; an op on it may be in flight), Close deregisters nothing and returns an
// error that wraps ErrPoolBusy, and the pool stays open. Device.Close closes its
// pools regardless. After Close the pool's buffers are invalid: ops on them fail with
// ErrRange, and their Bytes must not be touched.
func (p *Pool) Close() error { return p.close(false) }

func (p *Pool) close(force bool) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	if p.out > 0 && !force {
		n := p.out
		p.mu.Unlock()
		return fmt.Errorf("%w: %d of its buffers are out (Put them back once their ops resolved, then Close)", ErrPoolBusy, n)
	}
	p.closed = true
	blocks := p.blocks
	p.blocks, p.free = nil, nil
	p.mu.Unlock()
	p.d.forget(nil, p)
	var errs []error
	for _, bl := range blocks {
		bl.closed.Store(true)
		errs = append(errs, bl.mem.Close())
	}
	return errors.Join(errs...)
}
