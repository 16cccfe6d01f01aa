package result

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// FormatSize writes a byte count in the largest binary unit that holds it exactly:
// 2, 1000, 4K, 64K, 1M, 2G. ParseSize reads it back.
func FormatSize(v int) string {
	for _, u := range sizeUnits {
		if v >= u.mult && v%u.mult == 0 {
			return strconv.Itoa(v/u.mult) + u.suffix
		}
	}
	return strconv.Itoa(v)
}

var sizeUnits = []struct {
	suffix string
	mult   int
}{{"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}}

// ParseSize reads a byte count with an optional binary unit, in either case, with or
// without "B" or "iB": 4096, 64K, 64k, 4KiB, 8KB, 1M, 2G. It refuses negative counts
// and counts an int cannot hold.
func ParseSize(s string) (int, error) {
	t := strings.TrimSuffix(strings.TrimSuffix(strings.ToUpper(strings.TrimSpace(s)), "B"), "I")
	mult := 1
	for _, u := range sizeUnits {
		if strings.HasSuffix(t, u.suffix) {
			mult, t = u.mult, strings.TrimSuffix(t, u.suffix)
			break
		}
	}
	v, err := strconv.Atoi(t)
	if err != nil || v < 0 || v > math.MaxInt/mult {
		return 0, fmt.Errorf("invalid size %q: want a byte count such as 4096, 64K, 1M or 2G", s)
	}
	return v * mult, nil
}
