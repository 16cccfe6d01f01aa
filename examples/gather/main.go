// Gather first writes distinct data to a region on each of several rdmabench servers,
// then gathers the regions back with RDMA READ, in chunks posted as one batch (one post
// list) per peer, and compares what came back with what each peer was given, and each
// server's own SHA-256 of its region. It exits with status 1 when any byte differs.
//
//	go run ./examples/gather [--device mlx5_0] [--token-file F] [--size N] host1 host2:18600 ...
//	go run ./examples/gather --loopback 3   # in-memory servers, no RDMA device
package main

import (
	"context"
	"fmt"
	"io"

	"github.com/rdmabench/rdmabench/examples/internal/cli"
	"github.com/rdmabench/rdmabench/rdma"
)

func main() { cli.Main("gather", run) }

// chunk is the size of one READ of the gather.
const chunk = 64 << 10

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f, err := cli.Parse("gather", "server...", args, stderr, nil)
	if err != nil {
		return err
	}
	dev, servers, token, closeAll, err := f.Open()
	if err != nil {
		return err
	}
	defer closeAll()
	pool, err := dev.NewPool(f.Size, 2*len(servers))
	if err != nil {
		return err
	}
	conns, err := f.DialAll(ctx, dev, servers, token)
	if err != nil {
		return err
	}
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()

	// Scatter: peer i gets its own bytes.
	srcs := make([]rdma.Buffer, len(conns))
	var writes []*rdma.Op
	for i, c := range conns {
		srcs[i], _ = pool.Get()
		cli.Fill(srcs[i].Bytes(), uint64(i)+100)
		writes = append(writes, c.Write(ctx, srcs[i], 0))
	}
	if err := rdma.WaitAll(ctx, writes...); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	// Gather: a batch of chunk-sized READs per peer, every peer in flight at once.
	dsts := make([]rdma.Buffer, len(conns))
	var reads []*rdma.Op
	for i, c := range conns {
		dsts[i], _ = pool.Get()
		clear(dsts[i].Bytes())
		b := c.NewBatch()
		for off := 0; off < f.Size; off += chunk {
			reads = append(reads, b.Read(dsts[i].Slice(off, min(chunk, f.Size-off)), uint64(off)))
		}
		if err := b.Post(ctx); err != nil {
			return fmt.Errorf("gather from %s: %w", c.Addr(), err)
		}
	}
	if err := rdma.WaitAll(ctx, reads...); err != nil {
		return fmt.Errorf("gather: %w", err)
	}
	for i, c := range conns {
		if err := cli.Compare(c.Addr(), dsts[i].Bytes(), srcs[i].Bytes()); err != nil {
			return err
		}
	}
	for i, c := range conns {
		if err := c.Close(); err != nil {
			return err
		}
		if err := cli.CheckDigest(c, srcs[i].Bytes()); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "gathered %d bytes from each of %d peers in %d READs: all match what each was given, and the server digests agree\n", f.Size, len(conns), len(reads))
	return nil
}
