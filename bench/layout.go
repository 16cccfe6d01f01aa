package bench

import (
	"fmt"

	"github.com/rdmabench/rdmabench/result"
	"github.com/rdmabench/rdmabench/verbs"
)

// slots is how a bandwidth plan lays messages out in the two buffers. Each QP has its
// own region on each side; WR number i of a QP moves source slot i % src to destination
// slot i % dst, slots stride bytes apart (the size rounded up to a cache line).
//
// Without --verify this is perftest's cycle buffer: messages of up to 2 KiB cycle
// through a 4 KiB region, larger ones reuse one slot. With --verify the destination has
// up to --tx-depth slots and the source one more: the slot a destination slot last
// received from then depends on the WR's number, so a run whose last transfers did not
// land leaves older bytes behind, and the check sees it.
type slots struct{ src, dst, stride int }

// verifyBudget bounds the destination region of a verified run (all QPs).
const verifyBudget = 64 << 20

func bwSlots(c result.Config) slots {
	stride := (c.MsgSizeBytes + 63) / 64 * 64
	if c.Verify {
		dst := max(1, min(c.SQDepth, verifyBudget/(c.NumQPs*stride)-1))
		if dst%255 == 0 {
			dst-- // see slotSeed
		}
		return slots{src: dst + 1, dst: dst, stride: stride}
	}
	// perftest's cycle buffer, as against a perftest peer; one slot is spaced a whole
	// number of cache lines here too.
	l := perftestSlots(c.MsgSizeBytes, PerftestCycleBuffer, 64)
	return slots{src: l.LSlots, dst: l.RSlots, stride: max(l.Stride, stride)}
}

// bytes is the buffer that n slots per QP take.
func (s slots) bytes(c result.Config, n int) int { return c.NumQPs * n * s.stride }

// layout is the client's view: local and remote slots for op.
func (s slots) layout(op Op) verbs.Layout {
	if op.ToServer {
		return verbs.Layout{LSlots: s.src, RSlots: s.dst, Stride: s.stride}
	}
	return verbs.Layout{LSlots: s.dst, RSlots: s.src, Stride: s.stride}
}

// Verification patterns. Both sides derive them from the plan: the warm-up's pattern
// is seedOf(plan); source slot j (counting over all QPs' regions) of the measured run
// gets its own, different from the warm-up's and from every other slot's. A pattern's
// first byte is its seed's low byte: 0 for the warm-up, j mod 255 + 1 for slot j. The
// slot a destination slot held before the last WR into it is the next source slot
// (mod src), so even 1-byte messages tell the two apart, as long as the destination's
// slot count is not a multiple of 255 (bwSlots sees to that).
func seedOf(c result.Config) uint32 {
	return (uint32(c.MsgSizeBytes)*2654435761 ^ uint32(c.BufOffsetBytes) ^ uint32(c.NumQPs)<<20) &^ 0xff
}

func slotSeed(c result.Config, j int) uint32 {
	return (uint32(j+1)*0x9E3779B1^seedOf(c))&^0xff | uint32(j%255+1)
}

// patterned is a buffer that verification patterns are written to and checked in
// (a *verbs.Session; tests use a model).
type patterned interface {
	Fill(seed uint32, off, n int)
	Check(seed uint32, off, n int) int64
}

// fillSource writes the measured run's patterns into every source slot.
func fillSource(s patterned, c result.Config, sl slots) {
	for j := 0; j < c.NumQPs*sl.src; j++ {
		s.Fill(slotSeed(c, j), j*sl.stride, c.MsgSizeBytes)
	}
}

// fillWarm writes the warm-up's pattern into n slots per QP.
func fillWarm(s patterned, c result.Config, sl slots, n int) {
	for j := 0; j < c.NumQPs*n; j++ {
		s.Fill(seedOf(c), j*sl.stride, c.MsgSizeBytes)
	}
}

// checkDest checks every destination slot that the measured run wrote: it must hold
// the pattern of the source slot of the last WR that went there. completed holds the
// WRs each QP completed in the measured run.
func checkDest(s patterned, c result.Config, sl slots, completed []uint64, side string) *result.Verify {
	v := &result.Verify{Side: side, FirstBadOffset: -1}
	if len(completed) != c.NumQPs {
		v.Detail = fmt.Sprintf("not verified: completions reported for %d QPs, the plan has %d", len(completed), c.NumQPs)
		return v
	}
	for q, n := range completed {
		for d := 0; d < sl.dst && uint64(d) < n; d++ {
			last := uint64(d) + uint64(sl.dst)*((n-1-uint64(d))/uint64(sl.dst)) // the last WR into slot d
			src := int(last % uint64(sl.src))
			off := (q*sl.dst + d) * sl.stride
			if bad := s.Check(slotSeed(c, q*sl.src+src), off, c.MsgSizeBytes); bad >= 0 {
				v.FirstBadOffset = bad
				v.Detail = fmt.Sprintf("QP %d, slot %d: byte %d differs from what WR %d (of %d completed) carried: a transfer the run counted did not land as counted", q, d, bad-int64(off), last, n)
				return v
			}
			v.Slots++
			v.CheckedBytes += c.MsgSizeBytes
		}
	}
	if v.Slots == 0 {
		v.Detail = "nothing to verify: the measured run completed no transfer"
		return v
	}
	v.OK = true
	return v
}

// SourceBytes and DestBytes are the buffers a bandwidth plan needs on the side that
// sends the data and on the side that receives it.
func SourceBytes(c result.Config) int { sl := bwSlots(c); return sl.bytes(c, sl.src) }
func DestBytes(c result.Config) int   { sl := bwSlots(c); return sl.bytes(c, sl.dst) }
