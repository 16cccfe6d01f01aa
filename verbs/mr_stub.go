//go:build !linux || !cgo

package verbs

import "errors"

// ErrNoHugepages: a hugepage mapping failed for want of hugepages (mode "huge").
var ErrNoHugepages = errors.New("no hugepages reserved (sysctl vm.nr_hugepages)")

// ErrNoODP: the device does not support on-demand paging (mode "odp").
var ErrNoODP = errors.New("no ODP")

// TimeMR needs cgo: see mr.go.
func (d *Device) TimeMR(size int, mode string, n, access int) (reg, dereg []int64, err error) {
	return nil, nil, ErrUnsupported
}
