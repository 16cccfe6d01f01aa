//go:build linux && cgo

package qmodel

/*
#include <stdlib.h>
#include "model.h"
*/
import "C"

import (
	"unsafe"
)

// RLCase is one run of rb_read_lat against the model.
type RLCase struct {
	Net
	Size      uint32 // 0: 64
	Iters     uint64
	TimeoutNS int64
}

// RLOutcome is what rb_read_lat returned and the model recorded.
type RLOutcome struct {
	RC     int
	Fail   Fail
	Done   uint64
	Hist   Hist
	Stop   int
	Local  []byte
	Remote []byte
	Record
}

// RunReadLat runs rb_read_lat once.
func RunReadLat(c RLCase) RLOutcome {
	if c.Size == 0 {
		c.Size = 64
	}
	var cfg C.qm_config
	md := newModel(&cfg, c.Net, 1, 1, int(c.Size), int(c.Size))
	defer md.free()
	r := md.remote()
	for i := range r {
		r[i] = byte(i*11 + 5)
	}
	hist := newHist()
	defer C.free(unsafe.Pointer(hist))
	a := (*C.rb_rl_args)(C.calloc(1, C.size_t(unsafe.Sizeof(C.rb_rl_args{}))))
	defer C.free(unsafe.Pointer(a))
	md.xfer(&a.x, uintptr(md.lbuf), c.Size, c.TimeoutNS, hist)
	a.qp = *md.m.qpp
	a.iters = C.uint64_t(c.Iters)
	runs.Add(1)
	rc := C.qm_read_lat(md.m, a)
	return RLOutcome{
		RC: int(rc), Fail: goFail(&a.x.fail), Done: uint64(a.done), Hist: goHist(hist), Stop: int(md.m.stop),
		Local: append([]byte(nil), md.local()...), Remote: append([]byte(nil), r...), Record: md.record(),
	}
}
