//go:build !linux

package mrbench

// Limits: memory registration is a Linux matter; elsewhere nothing limits it here.
func Limits() (memlock int64, ipcLock bool, err error) { return -1, false, nil }
