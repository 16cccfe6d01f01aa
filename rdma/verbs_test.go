//go:build linux && cgo

package rdma

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/rdma/rdmaserver"
)

// TestVerbs runs the API on a real device against rdmabench's server on the same
// device (RDMA loopback): RDMABENCH_TEST_DEVICE names it ("" or "auto": the first
// with an ACTIVE port 1). Skipped when the variable is unset.
func TestVerbs(t *testing.T) {
	name, ok := os.LookupEnv("RDMABENCH_TEST_DEVICE")
	if !ok {
		t.Skip("set RDMABENCH_TEST_DEVICE to a device name (or auto) to run against a NIC")
	}
	if name == "auto" {
		name = ""
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(bg)
	served := make(chan error, 1)
	go func() {
		served <- rdmaserver.Serve(ctx, ln, rdmaserver.Config{Device: name, GIDIndex: -1, Timeout: 5 * time.Second})
	}()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("server: %v", err)
		}
	}()

	dev, err := Open(name, 1, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	t.Logf("device %+v", dev.Identity())
	const size, chunk = 1 << 20, 16 << 10
	pool, err := dev.NewPool(size, 4)
	if err != nil {
		t.Fatal(err)
	}
	c, err := dev.Dial(bg, ln.Addr().String(), Config{Size: size, QPs: 2, SQDepth: 64, SignalEvery: 8})
	if err != nil {
		t.Fatal(err)
	}
	src, _ := pool.Get()
	for i := range src.Bytes() {
		src.Bytes()[i] = byte(i*131 + i>>8)
	}
	// 64 chunks in one batch: one post list.
	b := c.NewBatch()
	var ops []*Op
	for off := 0; off < size; off += chunk {
		ops = append(ops, b.Write(src.Slice(off, chunk), uint64(off)))
	}
	if err := b.Post(bg); err != nil {
		t.Fatal(err)
	}
	if err := WaitAll(bg, ops...); err != nil {
		t.Fatal(err)
	}
	// Read back in 256 READs of 4 KiB: more than the send queue holds.
	dst, _ := pool.Get()
	ops = ops[:0]
	for off := 0; off < size; off += 4096 {
		ops = append(ops, b.Read(dst.Slice(off, 4096), uint64(off)))
	}
	if err := b.Post(bg); err != nil {
		t.Fatal(err)
	}
	if err := WaitAll(bg, ops...); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(dst.Bytes(), src.Bytes()) {
		t.Fatal("read back differs from what was written")
	}
	// Concurrent posters, single ops.
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				off := (g*200 + i) % (size / 64) * 64
				if err := c.Write(bg, src.Slice(off, 64), uint64(off)).Wait(bg); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	// Per-op cost at batch 16 and 1, on the NIC (64-byte WRITEs).
	for _, n := range []int{16, 1} {
		const total = 20000
		start := time.Now()
		var last *Op
		for i := 0; i < total; i += n {
			for k := range n {
				last = b.Write(src.Slice(k*64, 64), uint64(k*64))
			}
			if err := b.Post(bg); err != nil {
				t.Fatal(err)
			}
			if i%(4*n) == 0 {
				last.Wait(bg)
			}
		}
		if err := last.Wait(bg); err != nil {
			t.Fatal(err)
		}
		t.Logf("batch %d: %v per 64-byte WRITE", n, time.Since(start)/total)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(src.Bytes())
	if c.Digest() != hex.EncodeToString(sum[:]) {
		t.Fatalf("server digest %s, want %x", c.Digest(), sum)
	}
}
