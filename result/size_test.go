package result

import (
	"math"
	"testing"
)

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int{"2": 2, "64K": 65536, "64k": 65536, "1M": 1 << 20, "2G": 2 << 30, "4KiB": 4096, "8KB": 8192, " 3m ": 3 << 20, "0": 0} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "K", "-1", "-1K", "1.5M", "3X", "KK", "1KK", "9223372036854775807K", "99999999999999999999"} {
		if _, err := ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q) must fail", bad)
		}
	}
}

func TestFormatSize(t *testing.T) {
	for in, want := range map[int]string{0: "0", 2: "2", 1000: "1000", 1023: "1023", 1024: "1K", 4096: "4K", 65536: "64K", 1536: "1536",
		1 << 20: "1M", 3 << 19: "1536K", 2 << 30: "2G", 1<<30 + 1<<20: "1025M", -4096: "-4096"} {
		if got := FormatSize(in); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", in, got, want)
		}
	}
}

// What FormatSize writes, ParseSize reads back: every size a flag may hold.
func TestSizeRoundTrip(t *testing.T) {
	vals := []int{math.MaxInt, math.MaxInt &^ (1<<30 - 1), 1 << 40}
	for e := 0; e < 40; e++ {
		for _, d := range []int{-1, 0, 1, 3 << e} {
			if v := 1<<e + d; v >= 0 {
				vals = append(vals, v)
			}
		}
	}
	for _, v := range vals {
		s := FormatSize(v)
		if back, err := ParseSize(s); err != nil || back != v {
			t.Errorf("%d -> %q -> %d, %v", v, s, back, err)
		}
	}
}
