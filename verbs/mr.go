//go:build linux && cgo

package verbs

/*
#include <stdlib.h>
#include "rb_mr.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"syscall"
	"unsafe"
)

// ErrNoHugepages: a hugepage mapping failed for want of hugepages (mode "huge").
var ErrNoHugepages = errors.New("no hugepages reserved (sysctl vm.nr_hugepages)")

// ErrNoODP: the device does not support on-demand paging (mode "odp").
var ErrNoODP = errors.New("no ODP")

var mrModes = map[string]C.int{"warm": C.RB_MR_WARM, "cold": C.RB_MR_COLD, "huge": C.RB_MR_HUGE, "odp": C.RB_MR_ODP}

// TimeMR registers and deregisters size bytes n times on d's PD with access
// (Spec.Access), and returns each ibv_reg_mr's and each ibv_dereg_mr's latency in ns,
// timed apart, in one cgo call. mode is one of:
//
//	warm  the same pages (mapped once and touched) every time
//	cold  a fresh anonymous mapping every time (not populated: the registration
//	      faults and pins the pages), unmapped after the deregistration
//	huge  like warm, on 2 MiB hugepages; ErrNoHugepages when none are reserved
//	odp   like warm, with IBV_ACCESS_ON_DEMAND; ErrNoODP when the device has no ODP
//
// On a failure the samples of the pairs that completed are returned with the error.
func (d *Device) TimeMR(size int, mode string, n, access int) (reg, dereg []int64, err error) {
	m, ok := mrModes[mode]
	switch {
	case d == nil || d.pd == nil:
		return nil, nil, errors.New("TimeMR: device not open")
	case !ok:
		return nil, nil, fmt.Errorf("TimeMR: unknown mode %q (want warm, cold, huge or odp)", mode)
	case size < 1 || n < 1:
		return nil, nil, fmt.Errorf("TimeMR: invalid size %d or count %d", size, n)
	case access&AccessRelaxedOrdering != 0 && !RelaxedOrderingBuilt:
		return nil, nil, errNoRelaxedOrdering
	}
	if m == C.RB_MR_ODP && C.rb_mr_odp(d.ctx) == 0 {
		// A query that failed (< 0) says nothing: the registration itself will tell.
		return nil, nil, ErrNoODP
	}
	bytes := C.size_t(n) * C.size_t(unsafe.Sizeof(C.int64_t(0)))
	creg := (*C.int64_t)(C.malloc(bytes))
	cdereg := (*C.int64_t)(C.malloc(bytes))
	if creg == nil || cdereg == nil {
		C.free(unsafe.Pointer(creg))
		C.free(unsafe.Pointer(cdereg))
		return nil, nil, fmt.Errorf("TimeMR: cannot allocate %d samples", n)
	}
	defer C.free(unsafe.Pointer(creg))
	defer C.free(unsafe.Pointer(cdereg))
	var done, ferr C.int
	var fverb *C.char
	rc := C.rb_mr_time(d.pd, C.size_t(size), m, C.int(n), C.int(access), creg, cdereg, &done, &fverb, &ferr)
	k := int(done)
	reg = append([]int64(nil), unsafe.Slice((*int64)(unsafe.Pointer(creg)), n)[:k]...)
	dereg = append([]int64(nil), unsafe.Slice((*int64)(unsafe.Pointer(cdereg)), n)[:k]...)
	switch rc {
	case C.RB_MR_OK:
		return reg, dereg, nil
	case C.RB_MR_NOHUGE:
		return nil, nil, ErrNoHugepages
	case C.RB_MR_NOODP:
		return nil, nil, ErrNoODP
	}
	verb := "rb_mr_time"
	if fverb != nil {
		verb = C.GoString(fverb)
	}
	return reg, dereg, &VerbError{Verb: verb, Phase: fmt.Sprintf("%s, %d bytes, pair %d of %d", mode, size, k+1, n), Err: syscall.Errno(ferr)}
}
