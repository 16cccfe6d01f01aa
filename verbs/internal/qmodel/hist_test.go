//go:build linux && cgo

package qmodel

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"testing"
)

// The buckets tile [0, 2^64) without gaps or overlaps, each at most 1/1024 of its
// values wide (three significant digits), and the largest int64 has a bucket.
func TestHistBucketsTile(t *testing.T) {
	if HistLow(0) != 0 {
		t.Fatalf("bucket 0 starts at %d", HistLow(0))
	}
	for i := 0; i < HistLen; i++ {
		low, w := HistLow(i), HistWidth(i)
		if w == 0 || w&(w-1) != 0 {
			t.Fatalf("bucket %d: width %d", i, w)
		}
		if w > 1 && w > low/1024 {
			t.Fatalf("bucket %d: [%d, +%d) is wider than 1/1024 of its values", i, low, w)
		}
		end, carry := bits.Add64(low, w, 0)
		if i+1 < HistLen {
			if carry != 0 || end != HistLow(i+1) {
				t.Fatalf("bucket %d ends at %d, bucket %d starts at %d", i, end, i+1, HistLow(i+1))
			}
		} else if carry != 1 || end != 0 {
			t.Fatalf("the last bucket ends at %d (carry %d), want 2^64", end, carry)
		}
	}
	if i := HistIndex(math.MaxInt64); i >= HistLen {
		t.Fatalf("2^63-1 lands in bucket %d of %d", i, HistLen)
	}
}

func histValues() []uint64 {
	var vs []uint64
	for e := 0; e < 63; e++ {
		p := uint64(1) << e
		vs = append(vs, p-1, p, p+1, p+p/2)
	}
	vs = append(vs, math.MaxInt64, 1<<62, 2047, 2048, 2049, 4095, 4096, 4097)
	for i := 0; i < HistLen; i += 7 {
		low, w := HistLow(i), HistWidth(i)
		if low <= math.MaxInt64 {
			vs = append(vs, low, low+w-1)
		}
	}
	rng := rand.New(rand.NewPCG(11, 12))
	for range 100000 {
		switch rng.IntN(3) {
		case 0:
			vs = append(vs, rng.Uint64N(1<<62+1))
		case 1:
			vs = append(vs, rng.Uint64N(1<<uint(rng.IntN(63)+1))) // spread over the magnitudes
		default:
			vs = append(vs, rng.Uint64N(1<<20))
		}
	}
	return vs
}

func TestHistIndex(t *testing.T) {
	vs := histValues()
	for _, v := range vs {
		i := HistIndex(v)
		if i < 0 || i >= HistLen {
			t.Fatalf("%d lands in bucket %d", v, i)
		}
		if low, w := HistLow(i), HistWidth(i); v < low || v-low >= w {
			t.Fatalf("%d lands in bucket %d: [%d, %d+%d)", v, i, low, low, w)
		}
	}
	t.Logf("%d values", len(vs))
}

// rb_hist_add counts every sample: the non-negative ones in their bucket, the negative
// ones in backwards only.
func TestHistAdd(t *testing.T) {
	var vs []int64
	want := map[int]uint64{}
	var pos, neg uint64
	for k, v := range histValues() {
		if k%50 != 0 {
			continue
		}
		vs = append(vs, int64(v))
		want[HistIndex(v)]++
		pos++
	}
	for _, v := range []int64{-1, -2, -1 << 40, math.MinInt64} {
		vs = append(vs, v)
		neg++
	}
	counts, h := HistAdd(vs)
	n := h.N
	if n != pos || h.Backwards != neg {
		t.Fatalf("n %d backwards %d, want %d and %d", n, h.Backwards, pos, neg)
	}
	var sum uint64
	for i, c := range counts {
		sum += c
		if c != want[i] {
			t.Fatalf("bucket %d: %d samples, want %d", i, c, want[i])
		}
	}
	if sum != n {
		t.Fatalf("buckets hold %d samples, n %d", sum, n)
	}
}

// Min, max, the sum and the 128-bit sum of squares.
func TestHistMoments(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	vs := []int64{-5, 0, 1 << 40, math.MaxInt32, -1}
	for range 1000 {
		vs = append(vs, int64(rng.Uint64N(1<<44)))
	}
	// Enough of the largest values to carry the sum past 64 bits.
	for range 3 {
		vs = append(vs, math.MaxInt64)
	}
	var want Hist
	want.Min, want.Max = math.MaxInt64, math.MinInt64
	for _, v := range vs {
		if v < 0 {
			want.Backwards++
			continue
		}
		want.N++
		want.Min, want.Max = min(want.Min, v), max(want.Max, v)
		var c uint64
		want.SumLo, c = bits.Add64(want.SumLo, uint64(v), 0)
		want.SumHi += c
		hi, lo := bits.Mul64(uint64(v), uint64(v))
		want.SumSqLo, c = bits.Add64(want.SumSqLo, lo, 0)
		want.SumSqHi += hi + c
	}
	if _, h := HistAdd(vs); h != want {
		t.Fatalf("histogram %+v, want %+v", h, want)
	}
}
