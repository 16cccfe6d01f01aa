package rdma

import (
	"fmt"
	"runtime"
	"time"
)

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
