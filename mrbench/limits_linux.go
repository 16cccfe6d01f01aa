//go:build linux

package mrbench

import "github.com/rdmabench/rdmabench/internal/memlock"

// Limits returns RLIMIT_MEMLOCK's soft limit in bytes (-1: unlimited) and whether the
// process has CAP_IPC_LOCK, with which the kernel does not apply it to registrations.
func Limits() (limit int64, ipcLock bool, err error) {
	soft, _, err := memlock.Limit("/")
	if err != nil {
		return 0, false, err
	}
	limit = -1
	if soft != memlock.Unlimited && soft < 1<<62 {
		limit = int64(soft)
	}
	return limit, memlock.CapIPCLock("/"), nil
}
