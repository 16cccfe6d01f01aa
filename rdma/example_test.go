package rdma_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log"

	"github.com/rdmabench/rdmabench/rdma"
	_ "github.com/rdmabench/rdmabench/rdma/rdmaserver" // a Loopback serves with rdmabench's server
)

// Write a buffer to a server's region, read it back, and compare with the server's
// digest. A Loopback stands in for the NIC and the server; with hardware, open the
// device with rdma.Open and dial an 'rdmabench server'.
func Example() {
	lo := rdma.NewLoopback()
	defer lo.Close()
	addr, err := lo.Listen("")
	if err != nil {
		log.Fatal(err)
	}
	dev := lo.Device() // with a NIC: dev, err := rdma.Open("", 1, -1)
	defer dev.Close()

	ctx := context.Background()
	pool, err := dev.NewPool(4096, 8)
	if err != nil {
		log.Fatal(err)
	}
	c, err := dev.Dial(ctx, addr, rdma.Config{Size: 4096})
	if err != nil {
		log.Fatal(err)
	}
	src, _ := pool.Get()
	copy(src.Bytes(), "hello, remote memory")
	if err := c.Write(ctx, src, 0).Wait(ctx); err != nil {
		log.Fatal(err)
	}
	dst, _ := pool.Get()
	if err := c.Read(ctx, dst, 0).Wait(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println(bytes.Equal(src.Bytes(), dst.Bytes()), string(dst.Bytes()[:20]))
	if err := c.Close(); err != nil {
		log.Fatal(err)
	}
	sum := sha256.Sum256(src.Bytes())
	fmt.Println(c.Digest() == hex.EncodeToString(sum[:]))
	// Output:
	// true hello, remote memory
	// true
}

// A batch goes out as one post list; most of its WRs are unsignalled, and each op
// resolves when the signalled WR after it completes.
func ExampleBatch() {
	lo := rdma.NewLoopback()
	defer lo.Close()
	addr, _ := lo.Listen("")
	dev := lo.Device()
	defer dev.Close()

	ctx := context.Background()
	pool, _ := dev.NewPool(512, 16)
	c, err := dev.Dial(ctx, addr, rdma.Config{Size: 16 * 512})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	b := c.NewBatch()
	var ops []*rdma.Op
	for i := range 16 {
		buf, _ := pool.Get()
		clear(buf.Bytes())
		buf.Bytes()[0] = byte(i)
		ops = append(ops, b.Write(buf, uint64(i*512)))
	}
	if err := b.Post(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println(rdma.WaitAll(ctx, ops...))
	// Output: <nil>
}

// Buffers come from a pool registered once; Put makes them available again without
// registering anything.
func ExamplePool() {
	lo := rdma.NewLoopback()
	dev := lo.Device()
	defer dev.Close()
	pool, err := dev.NewPool(1<<20, 4)
	if err != nil {
		log.Fatal(err)
	}
	for range 100 {
		buf, _ := pool.Get()
		// ... post ops on buf, wait for them ...
		pool.Put(buf)
	}
	fmt.Println(pool.Registrations())
	// Output: 1
}

// An op is a future: Wait with a context that ends gives up waiting, not the op.
func ExampleOp_Wait() {
	lo := rdma.NewLoopback()
	defer lo.Close()
	addr, _ := lo.Listen("")
	dev := lo.Device()
	defer dev.Close()
	pool, _ := dev.NewPool(64, 1)
	c, err := dev.Dial(context.Background(), addr, rdma.Config{Size: 64})
	if err != nil {
		log.Fatal(err)
	}
	buf, _ := pool.Get()
	op := c.Write(context.Background(), buf, 0)
	<-op.Done()
	fmt.Println(op.Err())
	c.Close()
	fmt.Println(c.Write(context.Background(), buf, 0).Err())
	// Output:
	// <nil>
	// rdma: the connection is closed: the operation was not known to complete
}

// Each end of a connection is described by a DeviceInfo: the client's device
// (Identity) and the server's, as the server told Dial (Server).
func ExampleConn_Server() {
	lo := rdma.NewLoopback()
	defer lo.Close()
	addr, _ := lo.Listen("")
	dev := lo.Device()
	defer dev.Close()
	c, err := dev.Dial(context.Background(), addr, rdma.Config{Size: 64})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	var me, server rdma.DeviceInfo = dev.Identity(), c.Server()
	fmt.Printf("%s to %s (%s, %s)\n", me.Name, server.Name, server.Model, server.LinkLayer)
	// Output: loop1 to loop0 (in-memory fabric, Ethernet)
}

// An op that the NIC failed resolves with a CompletionError, or an error that wraps
// one: errors.As finds what the NIC reported. (With a NIC and a server: not run here.)
func ExampleCompletionError() {
	dev, err := rdma.Open("", 1, -1)
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Close()
	ctx := context.Background()
	pool, err := dev.NewPool(4096, 1)
	if err != nil {
		log.Fatal(err)
	}
	c, err := dev.Dial(ctx, "server:18600", rdma.Config{Size: 4096})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	buf, _ := pool.Get()
	if err := c.Write(ctx, buf, 0).Wait(ctx); err != nil {
		var ce *rdma.CompletionError
		if errors.As(err, &ce) {
			log.Fatalf("the NIC failed the WRITE: %s, vendor error 0x%x on QP 0x%x", ce.Status, ce.VendorErr, ce.QPNum)
		}
		log.Fatal(err)
	}
}
