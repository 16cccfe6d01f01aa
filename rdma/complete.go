package rdma

import (
	"fmt"

	"github.com/rdmabench/rdmabench/verbs"
)

// CompletionError is a work completion with an error status: the status the NIC gave
// an op's WR, or IBV_WC_WR_FLUSH_ERR for a WR that did not run because its QP had
// failed. An op whose own WR failed resolves with it; a flushed op, or one posted
// after its QP failed, with an error that wraps it (and the QP's first error). Get it
// with errors.As.
type CompletionError struct {
	Status string // the completion's status: IBV_WC_REM_ACCESS_ERR, IBV_WC_WR_FLUSH_ERR, ...
	Detail string // libibverbs' text for the status
	Opcode string // the op as posted: IBV_WC_RDMA_WRITE or IBV_WC_RDMA_READ
	// WRID is the wr_id the WR was posted with: the QP's index in the connection in the
	// high bits, the WR's sequence number on its QP in the low 48.
	WRID uint64
	// VendorErr is the NIC's vendor syndrome for the failure; QPNum the local QP's number.
	VendorErr uint32
	QPNum     uint32

	v *verbs.CompletionError // the same completion, as the verbs layer reports it
}

// Error says what failed, libibverbs' way: the status and its text, the QP, the wr_id,
// the opcode and the vendor error.
func (e *CompletionError) Error() string {
	v := verbs.CompletionError{Status: e.Status, Detail: e.Detail, Opcode: e.Opcode, WRID: e.WRID, VendorErr: e.VendorErr, QPNum: e.QPNum}
	return v.Error()
}

// Unwrap is the verbs layer's *verbs.CompletionError for the same completion, which
// errors.As found before rdma had a type of its own.
func (e *CompletionError) Unwrap() error {
	if e.v == nil {
		return nil
	}
	return e.v
}

// wcError is the error of the failed completion wc, for a WR posted as opcode.
func wcError(wc *verbs.WC, opcode string) *CompletionError {
	v := wc.Err(opcode).(*verbs.CompletionError)
	return &CompletionError{Status: v.Status, Detail: v.Detail, Opcode: v.Opcode, WRID: v.WRID, VendorErr: v.VendorErr, QPNum: v.QPNum, v: v}
}

// outcome is an op that complete retires, and what it resolves with.
type outcome struct {
	op  *Op
	err error
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
			ce := wcError(wc, opcodeOf(q.ring[seq%depth]))
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
