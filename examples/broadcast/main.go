// Broadcast writes one buffer to a region on each of several rdmabench servers with
// RDMA WRITE, all posted at once, then reads each region back with RDMA READ and
// compares it, and finally compares each server's own SHA-256 of its region. It exits
// with status 1 when any byte differs.
//
//	go run ./examples/broadcast [--device mlx5_0] [--token-file F] [--size N] host1 host2:18600 ...
//	go run ./examples/broadcast --loopback 3   # in-memory servers, no RDMA device
package main

import (
	"context"
	"fmt"
	"io"

	"github.com/rdmabench/rdmabench/examples/internal/cli"
	"github.com/rdmabench/rdmabench/rdma"
)

func main() { cli.Main("broadcast", run) }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f, err := cli.Parse("broadcast", "server...", args, stderr, nil)
	if err != nil {
		return err
	}
	dev, servers, token, closeAll, err := f.Open()
	if err != nil {
		return err
	}
	defer closeAll()
	pool, err := dev.NewPool(f.Size, len(servers)+1)
	if err != nil {
		return err
	}
	src, _ := pool.Get()
	cli.Fill(src.Bytes(), 1)
	conns, err := f.DialAll(ctx, dev, servers, token)
	if err != nil {
		return err
	}
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()

	// One source buffer, a WRITE to every peer, all in flight at once.
	var writes []*rdma.Op
	for _, c := range conns {
		writes = append(writes, c.Write(ctx, src, 0))
	}
	if err := rdma.WaitAll(ctx, writes...); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	// Read every region back, again all at once.
	dsts := make([]rdma.Buffer, len(conns))
	var reads []*rdma.Op
	for i, c := range conns {
		dsts[i], _ = pool.Get()
		clear(dsts[i].Bytes())
		reads = append(reads, c.Read(ctx, dsts[i], 0))
	}
	if err := rdma.WaitAll(ctx, reads...); err != nil {
		return fmt.Errorf("read back: %w", err)
	}
	for i, c := range conns {
		if err := cli.Compare(c.Addr(), dsts[i].Bytes(), src.Bytes()); err != nil {
			return err
		}
	}
	// Release the regions; each server reports the SHA-256 of what it holds.
	for _, c := range conns {
		if err := c.Close(); err != nil {
			return err
		}
		if err := cli.CheckDigest(c, src.Bytes()); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "broadcast %d bytes to %d peers: read back and server digests match\n", f.Size, len(conns))
	return nil
}
