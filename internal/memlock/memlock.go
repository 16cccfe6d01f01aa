// Package memlock reads what limits memory registration: RLIMIT_MEMLOCK as
// /proc/self/limits shows it, and CAP_IPC_LOCK, with which the kernel does not apply
// it. Both read from a root directory, so that fixture trees stand in for /proc.
package memlock

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Unlimited is RLIM_INFINITY.
const Unlimited = math.MaxUint64

// Limit reads the soft and hard RLIMIT_MEMLOCK from root/proc/self/limits.
func Limit(root string) (soft, hard uint64, err error) {
	b, err := os.ReadFile(filepath.Join(root, "proc/self/limits"))
	if err != nil {
		return 0, 0, err
	}
	for line := range strings.Lines(string(b)) {
		rest, ok := strings.CutPrefix(line, "Max locked memory")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) < 2 {
			break
		}
		if soft, err = value(f[0]); err == nil {
			hard, err = value(f[1])
		}
		return soft, hard, err
	}
	return 0, 0, fmt.Errorf("no \"Max locked memory\" line in /proc/self/limits")
}

func value(s string) (uint64, error) {
	if s == "unlimited" {
		return Unlimited, nil
	}
	return strconv.ParseUint(s, 10, 64)
}

// CapIPCLock says whether root/proc/self/status grants CAP_IPC_LOCK (bit 14 of CapEff).
func CapIPCLock(root string) bool {
	b, err := os.ReadFile(filepath.Join(root, "proc/self/status"))
	if err != nil {
		return false
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && caps&(1<<14) != 0
		}
	}
	return false
}
