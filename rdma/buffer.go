package rdma

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/rdmabench/rdmabench/rdma/internal/provider"
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
// is made and another block of count whenever Get finds none free; it never
// deregisters a block before Close. A Pool is safe for concurrent use.
type Pool struct {
	d         *Device
	size, per int
	mu        sync.Mutex
	free      []Buffer
	blocks    []*block
	closed    bool
}

// NewPool registers count buffers of size bytes each, for local access (the source of
// a WRITE, the destination of a READ).
func (d *Device) NewPool(size, count int) (*Pool, error) {
	if size < 1 || count < 1 || size > 1<<31 || size*count/count != size || size*count > 1<<40 {
		return nil, fmt.Errorf("rdma: a pool of %d buffers of %d bytes: want 1 to 2 GiB per buffer, at most 1 TiB in all", count, size)
	}
	p := &Pool{d: d, size: size, per: count}
	if err := d.track(nil, p); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.grow(); err != nil {
		d.forget(nil, p)
		return nil, err
	}
	return p, nil
}

// grow registers another block (p.mu held).
func (p *Pool) grow() error {
	mem, err := p.d.p.Register(p.size*p.per, false, false)
	if err != nil {
		return fmt.Errorf("rdma: registering %d buffers of %d bytes: %w", p.per, p.size, err)
	}
	bl := &block{dev: p.d, mem: mem, bytes: mem.Bytes(), addr: mem.Addr(), lkey: mem.LKey(), pool: p, inUse: make([]bool, p.per)}
	p.blocks = append(p.blocks, bl)
	for i := p.per - 1; i >= 0; i-- {
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

// Get returns a free buffer; it registers another block when none is free. The
// buffer's bytes are what its last user left.
func (p *Pool) Get() (Buffer, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return Buffer{}, errors.New("rdma: the pool is closed")
	}
	if len(p.free) == 0 {
		if err := p.grow(); err != nil {
			return Buffer{}, err
		}
	}
	b := p.free[len(p.free)-1]
	p.free = p.free[:len(p.free)-1]
	b.m.inUse[b.off/p.size] = true
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
	p.free = append(p.free, b)
}

// Close deregisters every block: the pool's buffers, out or not, become invalid.
func (p *Pool) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
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
