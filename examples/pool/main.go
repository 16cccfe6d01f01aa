// Pool streams messages to a region on an rdmabench server from a registered-buffer
// pool: each message takes a buffer (Get), is written with RDMA WRITE to its slot of
// the region, and gives the buffer back (Put) when the WRITE completes. The pool
// registers its memory once, however many messages go out; the program compares that
// with registering a buffer per message, then reads the region back, compares it, and
// checks the server's digest. It exits with status 1 when any byte differs.
//
//	go run ./examples/pool [--device mlx5_0] [--token-file F] [--size N] [--msg N] [--count N] host
//	go run ./examples/pool --loopback 1   # an in-memory server, no RDMA device
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/rdmabench/rdmabench/examples/internal/cli"
	"github.com/rdmabench/rdmabench/rdma"
)

func main() { cli.Main("pool", run) }

// inFlight is how many messages are outstanding at once: the pool's buffers.
const inFlight = 32

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var msg, count int
	f, err := cli.Parse("pool", "server", args, stderr, func(fs *flag.FlagSet) {
		fs.IntVar(&msg, "msg", 4096, "message size")
		fs.IntVar(&count, "count", 10000, "messages to send")
	})
	if err != nil {
		return err
	}
	if msg < 1 || msg > f.Size || count < 1 {
		return fmt.Errorf("--msg %d, --count %d: want 1 <= msg <= --size (%d) and a count of at least 1", msg, count, f.Size)
	}
	dev, servers, token, closeAll, err := f.Open()
	if err != nil {
		return err
	}
	defer closeAll()
	if len(servers) != 1 {
		return errors.New("give one server")
	}
	conns, err := f.DialAll(ctx, dev, servers, token)
	if err != nil {
		return err
	}
	c := conns[0]
	defer c.Close()

	// What the region should hold at the end: message i lands in slot i % slots.
	want := make([]byte, f.Size)
	pool, err := dev.NewPool(msg, inFlight)
	if err != nil {
		return err
	}
	start := time.Now()
	if err := sendPooled(ctx, c, pool, want, count); err != nil {
		return err
	}
	pooled := time.Since(start)

	// The same with a registration per message, for a tenth as many.
	n := max(1, count/10)
	start = time.Now()
	if err := sendRegistering(ctx, dev, c, want, msg, n); err != nil {
		return err
	}
	perMsg := time.Since(start)

	if err := verify(ctx, dev, c, want); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%d messages of %d bytes from a pool of %d buffers: %d registration(s), %v per message\n",
		count, msg, inFlight, pool.Registrations(), (pooled / time.Duration(count)).Round(time.Nanosecond))
	fmt.Fprintf(stdout, "%d messages with a registration each: %v per message\n", n, (perMsg / time.Duration(n)).Round(time.Nanosecond))
	fmt.Fprintln(stdout, "region read back and server digest match")
	if f.Loopback > 0 {
		fmt.Fprintln(stdout, "(--loopback: the times are the in-memory fabric's, not a NIC's)")
	}
	return nil
}

// sendPooled writes count messages of the pool's buffer size to c's region, message i
// to slot i % slots, at most inFlight at once: each takes a buffer from the pool and
// gives it back when its WRITE completes. It records in want what each slot was sent.
func sendPooled(ctx context.Context, c *rdma.Conn, pool *rdma.Pool, want []byte, count int) error {
	msg := pool.Size()
	slots := len(want) / msg
	ring := make([]struct {
		op  *rdma.Op
		buf rdma.Buffer
	}, inFlight)
	for i := range count {
		r := &ring[i%inFlight]
		if r.op != nil { // the oldest message: wait for it, give its buffer back
			if err := r.op.Wait(ctx); err != nil {
				return fmt.Errorf("message %d: %w", i-inFlight, err)
			}
			pool.Put(r.buf)
		}
		buf, err := pool.Get()
		if err != nil {
			return err
		}
		cli.Fill(buf.Bytes(), uint64(i))
		off := (i % slots) * msg
		copy(want[off:], buf.Bytes())
		r.op, r.buf = c.Write(ctx, buf, uint64(off)), buf
	}
	for _, r := range ring {
		if r.op != nil {
			if err := r.op.Wait(ctx); err != nil {
				return err
			}
			pool.Put(r.buf)
		}
	}
	return nil
}

// sendRegistering writes n messages of msg bytes to c's region, message i to slot
// i % slots, as want holds them, one at a time, each from a pool of its own: a
// registration per message.
func sendRegistering(ctx context.Context, dev *rdma.Device, c *rdma.Conn, want []byte, msg, n int) error {
	slots := len(want) / msg
	for i := range n {
		p, err := dev.NewPool(msg, 1)
		if err != nil {
			return err
		}
		buf, _ := p.Get()
		copy(buf.Bytes(), want[(i%slots)*msg:])
		if err := c.Write(ctx, buf, uint64((i%slots)*msg)).Wait(ctx); err != nil {
			return err
		}
		p.Put(buf) // a pool closes once its buffers are back
		if err := p.Close(); err != nil {
			return err
		}
	}
	return nil
}

// verify reads c's region back and compares it with want, then closes c and checks
// the server's digest of the region against want.
func verify(ctx context.Context, dev *rdma.Device, c *rdma.Conn, want []byte) error {
	back, err := dev.NewPool(len(want), 1)
	if err != nil {
		return err
	}
	dst, _ := back.Get()
	if err := c.Read(ctx, dst, 0).Wait(ctx); err != nil {
		return err
	}
	if err := cli.Compare(c.Addr(), dst.Bytes(), want); err != nil {
		return err
	}
	if err := c.Close(); err != nil {
		return err
	}
	return cli.CheckDigest(c, want)
}
