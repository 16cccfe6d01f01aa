//go:build linux

package mrbench

import (
	"bufio"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// capIPCLock is CAP_IPC_LOCK's bit in /proc/self/status's CapEff.
const capIPCLock = 14

// Limits returns RLIMIT_MEMLOCK's soft limit in bytes (-1: unlimited) and whether the
// process has CAP_IPC_LOCK, with which the kernel does not apply it to registrations.
func Limits() (memlock int64, ipcLock bool, err error) {
	var r unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &r); err != nil {
		return 0, false, err
	}
	memlock = -1
	if r.Cur != unix.RLIM_INFINITY && r.Cur < 1<<62 {
		memlock = int64(r.Cur)
	}
	return memlock, hasCap("/proc/self/status", capIPCLock), nil
}

// hasCap reads the effective capability set from a /proc/PID/status file.
func hasCap(status string, bit uint) bool {
	f, err := os.Open(status)
	if err != nil {
		return false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && caps&(1<<bit) != 0
		}
	}
	return false
}
