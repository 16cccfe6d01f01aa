//go:build e2e

package e2e

// The public API (package rdma) on a real device: its example programs against
// rdmabench servers, and WRITE bandwidth through the API next to the C loop's.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/rdma"
	"github.com/rdmabench/rdmabench/rdma/rdmaserver"
)

// example runs bin/examples/NAME (make e2e builds them) with args; it must succeed.
func example(t *testing.T, name string, args ...string) string {
	t.Helper()
	exe := filepath.Join(filepath.Dir(bin), "examples", name)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, exe, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
	t.Logf("%s: %s", name, out)
	return string(out)
}

// The examples check their own bytes (each exits 1 when what it reads back, or the
// server's digest of its region, differs from what it wrote).
func TestAPIExamples(t *testing.T) {
	needDevice(t)
	for shape, dev := range shapes() {
		t.Run(shape, func(t *testing.T) {
			a, b := startServer(t), startServer(t)
			peers := []string{net.JoinHostPort(srvIP, fmt.Sprint(a)), net.JoinHostPort(srvIP, fmt.Sprint(b))}
			example(t, "broadcast", append([]string{"--device", dev, "--size", "262144"}, peers...)...)
			example(t, "gather", append([]string{"--device", dev, "--size", "262144"}, peers...)...)
			example(t, "pool", "--device", dev, "--size", "65536", peers[0])
		})
	}
}

// WRITE bandwidth through the API (batches of 16, pipelined) and through the C loop
// (rdmabench write bw), same size, depth and message count, on the same server. The
// ratio is reported, not asserted: it is a comparison, and the test bed is emulated.
func TestAPIWriteBandwidth(t *testing.T) {
	needDevice(t)
	dev := srvDev
	if cliDev != "" {
		dev = cliDev
	}
	const size, n, depth = 65536, 4000, 128
	p := startServer(t)
	d, err := rdma.Open(dev, 1, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	pool, err := d.NewPool(size, 1)
	if err != nil {
		t.Fatal(err)
	}
	src, _ := pool.Get()
	for i := range src.Bytes() {
		src.Bytes()[i] = byte(i*7 + 3)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := d.Dial(ctx, net.JoinHostPort(srvIP, fmt.Sprint(p)), rdma.Config{Size: size, SQDepth: depth, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ops := make([]*rdma.Op, 0, n)
	start := time.Now()
	for len(ops) < n {
		b := c.NewBatch()
		for range 16 {
			ops = append(ops, b.Write(src, 0))
		}
		if err := b.Post(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := rdma.WaitAll(ctx, ops...); err != nil {
		t.Fatal(err)
	}
	api := float64(n*size*8) / time.Since(start).Seconds() / 1e9
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	want := sha256.Sum256(src.Bytes())
	if c.Digest() != hex.EncodeToString(want[:]) {
		t.Fatalf("the server's region has digest %s, want %x", c.Digest(), want)
	}
	r := measure(t, client("write", "bw", dev, p, "-s", fmt.Sprint(size), "-n", fmt.Sprint(n), "-t", fmt.Sprint(depth), "-Q", "16", "--warmup", "0")...)
	t.Logf("WRITE %d x %d B, depth %d, signalled every 16: API %.3f Gb/s (wall time, post to last completion), C loop %.3f Gb/s: ratio %.3f",
		n, size, depth, api, r.BWGbps, api/r.BWGbps)
}

// rdmaserver.Serve is the listening side of the API: the CLI and the examples use it as they
// use 'rdmabench server'.
func TestAPIServe(t *testing.T) {
	needDevice(t)
	p := int(port.Add(1))
	l, err := net.Listen("tcp", net.JoinHostPort(srvIP, fmt.Sprint(p)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- rdmaserver.Serve(ctx, l, rdmaserver.Config{Device: srvDev, GIDIndex: -1}) }()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()
	measure(t, client("read", "bw", srvDev, p, "-n", "200", "--verify")...)
	example(t, "broadcast", "--device", srvDev, "--size", "65536", net.JoinHostPort(srvIP, fmt.Sprint(p)))
}
