package rdma

import (
	"testing"
)

// The API's own cost per operation, on the in-memory fabric (whose WRITE is a 64-byte
// copy): posting, moderation, the poller's resolution, the future. Ops are kept in
// flight up to a window, as an asynchronous caller would; b.N counts operations.
func benchWrite(b *testing.B, batch int) {
	lo := NewLoopback()
	defer lo.Close()
	addr, err := lo.Listen("")
	if err != nil {
		b.Fatal(err)
	}
	dev := lo.Device()
	defer dev.Close()
	pool, _ := dev.NewPool(64, 1)
	src, _ := pool.Get()
	const depth = 256
	c, err := dev.Dial(bg, addr, Config{Size: 64, SQDepth: depth, SignalEvery: 16})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	// The last op of each of the last window/batch posts: wait for the oldest before
	// posting more (ops of a QP resolve in order).
	window := make([]*Op, max(1, depth/2/batch))
	bt := c.NewBatch()
	b.ReportAllocs()
	b.ResetTimer()
	for n, i := 0, 0; n < b.N; i++ {
		k := min(batch, b.N-n)
		var last *Op
		if batch == 1 {
			last = c.Write(bg, src, 0)
		} else {
			for range k {
				last = bt.Write(src, 0)
			}
			if err := bt.Post(bg); err != nil {
				b.Fatal(err)
			}
		}
		n += k
		slot := &window[i%len(window)]
		if *slot != nil {
			if err := (*slot).Wait(bg); err != nil {
				b.Fatal(err)
			}
		}
		*slot = last
	}
	for _, o := range window {
		if o != nil {
			if err := o.Wait(bg); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func BenchmarkWriteBatch1(b *testing.B)  { benchWrite(b, 1) }
func BenchmarkWriteBatch16(b *testing.B) { benchWrite(b, 16) }
