// Package rdma does RDMA WRITE and READ from Go without verbs details: open a device,
// dial an rdmabench server for a remote region, and Write and Read registered buffers
// to and from it. Each Write or Read is posted at once and returns an *Op, a future
// with Wait, Done and Err; a Batch goes out as one post list.
//
//	dev, err := rdma.Open("", 1, -1)          // the first device with an ACTIVE port 1
//	pool, err := dev.NewPool(4096, 64)        // registered once, reused by Get/Put
//	c, err := dev.Dial(ctx, "server:18600", rdma.Config{Size: 1 << 20})
//	buf, _ := pool.Get()
//	copy(buf.Bytes(), data)
//	err = c.Write(ctx, buf, 0).Wait(ctx)      // RDMA WRITE to offset 0 of the region
//
// Servers are `rdmabench server`, or package rdmaserver's Serve in a Go program: a
// client's "region" plan makes the server register Config.Size bytes of zeros for
// remote WRITE and READ and hold them while the client beats; Close releases the
// region and Digest then has the SHA-256 the server saw. This package is the client
// and links no server: a Loopback's servers need rdmaserver linked (see Loopback).
//
// # Completions
//
// One poller goroutine per connection polls the connection's CQ and resolves the ops;
// there is no goroutine per op. It spins briefly after a completion (yielding to the
// other goroutines when GOMAXPROCS is 2 or less) and then sleeps on the CQ's completion
// channel, and while nothing is in flight it sleeps until the next post.
//
// Moderation is the package's business: within a post list only every
// Config.SignalEvery-th WR and the last one are signalled. An RC QP executes its WRs
// in order and stops at the first that fails, and that WR completes with its error,
// signalled or not. So an unsignalled op resolves with nil when a later signalled WR
// of its QP completes, or when a later WR fails (it ran before the failure); the op
// whose WR failed gets the completion's error; and the ops after it, whose WRs the QP
// flushed, get an error that wraps both the flush completion (IBV_WC_WR_FLUSH_ERR) and
// the QP's first error. The last WR of every post list is signalled, so the send
// queue never fills with unsignalled WRs only and every op resolves.
//
// A failed QP takes no more ops; a connection with several sends them to the others,
// and fails, with the first QP's error, once none is left. When the connection fails
// (the server's error or silence, a lost control connection), later posts fail with
// that error and the QPs are moved to the error state: the ops in flight resolve as
// their WRs are flushed, never while the NIC may still move their bytes.
//
// A post waits for room in the send queue (WRs not yet known complete), honouring its
// context; the ops it could not post resolve with the context's error. A post list
// the QP takes only in part keeps the part it took in flight (covered by a signalled
// zero-length WRITE if its last WR was unsignalled), and the ops not posted resolve
// with the post's error. Close destroys the QPs, then resolves every op still in
// flight with ErrClosed: no WR moves memory after that.
//
// # Time limits
//
// A server holds a region for at most its --max-test-time (rdmaserver.Config.MaxTestTime,
// 10 minutes by default), counted from Dial: a connection held longer is ended by the
// server, and its ops then fail with the server's words. Close is required, and takes
// at most about Config.Timeout; a connection dropped without it keeps beating, and
// holds the server's region, until the server ends it, and keeps its QPs and poller.
//
// # Errors
//
// An op whose work completion failed, or was flushed, resolves with a *CompletionError
// (status, vendor error, QP number, opcode, wr_id) or an error that wraps one: get it
// with errors.As. The Err variables (ErrClosed, ErrRange, ...) are for errors.Is.
// Without cgo or off Linux, Open returns an error that wraps ErrUnsupported;
// NewLoopback, an in-memory fabric, works in every build (its servers with package
// rdmaserver linked). Device.Identity and
// Conn.Server describe the two ends of a connection (DeviceInfo).
package rdma
