package bench

import (
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/result"
)

// model is a buffer pair that remembers which pattern each slot holds: enough to test
// the verification logic without a device.
type model struct{ seeds map[int]uint32 }

func (m *model) Fill(seed uint32, off, n int) { m.seeds[off] = seed }
func (m *model) Check(seed uint32, off, n int) int64 {
	if s, ok := m.seeds[off]; ok && s == seed {
		return -1
	}
	return int64(off)
}

// transfer plays WRs 0..n-1 of QP q: each copies its source slot into its destination slot.
func transfer(src, dst *model, sl slots, q int, n uint64) {
	for i := uint64(0); i < n; i++ {
		from := (q*sl.src + int(i%uint64(sl.src))) * sl.stride
		to := (q*sl.dst + int(i%uint64(sl.dst))) * sl.stride
		dst.seeds[to] = src.seeds[from]
	}
}

func TestVerificationSeesWhatLanded(t *testing.T) {
	c := result.Config{Op: "write", Test: result.BW, MsgSizeBytes: 4096, SQDepth: 8, NumQPs: 3, Verify: true}
	sl := bwSlots(c)
	if sl.dst != 8 || sl.src != 9 {
		t.Fatalf("verified layout: %+v, want 8 destination slots and 9 source slots", sl)
	}
	run := func(done, landed []uint64, warm uint64) *result.Verify {
		src, dst := &model{map[int]uint32{}}, &model{map[int]uint32{}}
		fillWarm(src, c, sl, sl.src)
		for q := range done {
			transfer(src, dst, sl, q, warm)
		}
		fillSource(src, c, sl)
		for q := range done {
			transfer(src, dst, sl, q, landed[q])
		}
		return checkDest(dst, c, sl, done, "server")
	}
	for _, tc := range []struct {
		name         string
		done, landed []uint64
		warm         uint64
		ok           bool
		slots        int
		detail       string
	}{
		{"all landed", []uint64{1000, 999, 7}, []uint64{1000, 999, 7}, 16, true, 8 + 8 + 7, ""},
		{"fewer WRs than slots", []uint64{1, 2, 3}, []uint64{1, 2, 3}, 16, true, 6, ""},
		{"nothing moved", []uint64{0, 0, 0}, []uint64{0, 0, 0}, 16, false, 0, "nothing to verify"},
		{"nothing moved after the warm-up, yet reported", []uint64{5, 5, 5}, []uint64{0, 0, 0}, 16, false, 0, "QP 0, slot 0"},
		{"the last WR lost", []uint64{1000, 1000, 1000}, []uint64{1000, 999, 1000}, 16, false, 8 + 7, "QP 1, slot 7: byte 0 differs from what WR 999 (of 1000 completed)"},
		{"the last 3 lost", []uint64{100, 100, 100}, []uint64{97, 100, 100}, 0, false, 1, "QP 0, slot 1: byte 0 differs from what WR 97"},
		{"one more landed than reported", []uint64{50, 50, 50}, []uint64{50, 50, 51}, 0, false, 8 + 8 + 2, "QP 2, slot 2: byte 0 differs from what WR 42"},
		{"completions for the wrong QP count", []uint64{10, 10}, []uint64{10, 10}, 0, false, 0, "2 QPs"},
	} {
		v := run(tc.done, tc.landed, tc.warm)
		if v.OK != tc.ok || v.Slots != tc.slots || !strings.Contains(v.Detail, tc.detail) {
			t.Errorf("%s: %+v, want ok=%v after %d slots, detail containing %q", tc.name, v, tc.ok, tc.slots, tc.detail)
		}
		if v.OK && v.CheckedBytes != tc.slots*c.MsgSizeBytes {
			t.Errorf("%s: %d bytes checked, want %d", tc.name, v.CheckedBytes, tc.slots*c.MsgSizeBytes)
		}
	}
}

func TestLayoutMirrorsPerftestCycleBuffer(t *testing.T) {
	for _, tc := range []struct {
		size, qps      int
		src, dst, strd int
	}{
		{2, 1, 64, 64, 64},    // 2 B messages cycle through 4 KiB in cache lines
		{100, 2, 32, 32, 128}, // rounded up to a cache line
		{2048, 1, 2, 2, 2048}, // half the cycle buffer still cycles
		{4096, 4, 1, 1, 4096}, // larger ones reuse one slot
		{65536, 1, 1, 1, 65536},
	} {
		c := result.Config{MsgSizeBytes: tc.size, NumQPs: tc.qps, SQDepth: 128}
		sl := bwSlots(c)
		if sl.src != tc.src || sl.dst != tc.dst || sl.stride != tc.strd {
			t.Errorf("size %d: %+v, want %d/%d slots of %d", tc.size, sl, tc.src, tc.dst, tc.strd)
		}
		if SourceBytes(c) != tc.qps*tc.src*tc.strd {
			t.Errorf("size %d: source buffer %d", tc.size, SourceBytes(c))
		}
	}
	// A verified run keeps its destination within the budget however large the messages.
	c := result.Config{MsgSizeBytes: 16 << 20, NumQPs: 8, SQDepth: 512, Verify: true}
	if sl := bwSlots(c); sl.dst != 1 || sl.src != 2 {
		t.Errorf("huge verified run: %+v", sl)
	}
	c = result.Config{MsgSizeBytes: 1 << 20, NumQPs: 1, SQDepth: 512, Verify: true}
	if DestBytes(c) > verifyBudget {
		t.Errorf("verified destination %d above the %d budget", DestBytes(c), verifyBudget)
	}
}

func TestNothingMeasuredIsAnError(t *testing.T) {
	ok := result.Result{Config: result.Config{Test: result.BW}, Iterations: 10, DurationNS: 5, Bytes: 10}
	if err := measured(ok); err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]result.Result{
		"no messages":   {Config: result.Config{Test: result.BW}},
		"interrupted":   {Config: result.Config{Test: result.Lat}, Interrupted: true},
		"no time":       {Config: result.Config{Test: result.BW}, Iterations: 10, Bytes: 10},
		"no lat sample": {Config: result.Config{Test: result.Lat}, Iterations: 10, DurationNS: 5, ClockBackwards: 10},
	} {
		if err := measured(r); err == nil {
			t.Errorf("%s: a run that measured nothing must be an error", name)
		}
	}
}
