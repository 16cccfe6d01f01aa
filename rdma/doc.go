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
// Servers are `rdmabench server`: a client's "region" plan makes the server register
// Config.Size bytes of zeros for remote WRITE and READ and hold them while the client
// beats; Close releases the region and Digest then has the SHA-256 the server saw.
//
// # Completions
//
// One poller goroutine per connection, on a locked OS thread, polls the connection's
// CQ and resolves the ops; there is no goroutine per op. It spins briefly after a
// completion and then sleeps on the CQ's completion channel, and while nothing is in
// flight it sleeps until the next post.
//
// Moderation is the package's business: within a post list only every
// Config.SignalEvery-th WR and the last one are signalled. An unsignalled op resolves
// when a later signalled WR of its QP completes: with nil when that WR succeeded, with
// the failed completion's error when it did not (an RC QP executes in order, but a
// failure in between cannot be told apart from the ops before it: they all get it).
// The last WR of every post list is signalled, so the send queue never fills with
// unsignalled WRs only and every op resolves.
//
// A post waits for room in the send queue (WRs not yet known complete), honouring its
// context; the ops it could not post resolve with the context's error. Close resolves
// every op still in flight with ErrClosed.
//
// Errors of completions are *verbs.CompletionError (status, vendor error, QP number,
// opcode, wr_id). Without cgo or off Linux, Open returns an error that wraps
// ErrUnsupported; NewLoopback, an in-memory fabric, works in every build.
package rdma
