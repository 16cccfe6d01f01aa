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

// Hist is the part of rb_hist the tests look at.
type Hist struct {
	N, Backwards     uint64
	Min, Max         int64
	SumHi, SumLo     uint64
	SumSqHi, SumSqLo uint64
}

func goHist(h *C.rb_hist) Hist {
	return Hist{N: uint64(h.n), Backwards: uint64(h.backwards), Min: int64(h.min), Max: int64(h.max),
		SumHi: uint64(h.sum_hi), SumLo: uint64(h.sum_lo), SumSqHi: uint64(h.sumsq_hi), SumSqLo: uint64(h.sumsq_lo)}
}

func newHist() *C.rb_hist {
	h := (*C.rb_hist)(C.malloc(C.size_t(unsafe.Sizeof(C.rb_hist{}))))
	if h == nil {
		panic("qmodel: out of memory")
	}
	C.rb_hist_reset(h)
	return h
}

// HistLen is RB_HIST_LEN.
const HistLen = int(C.RB_HIST_LEN)

// HistLow and HistWidth are rb_hist_low and rb_hist_width.
func HistLow(i int) uint64   { return uint64(C.rb_hist_low(C.uint32_t(i))) }
func HistWidth(i int) uint64 { return uint64(C.rb_hist_width(C.uint32_t(i))) }

// HistIndex is the bucket the loops (rb.c's rb_hist_add) put a sample of v ticks into.
func HistIndex(v uint64) int { return int(C.qm_hist_index(C.uint64_t(v))) }

// HistAdd adds every value of vs to one histogram and returns its counts and the rest.
func HistAdd(vs []int64) (counts []uint64, hist Hist) {
	h := newHist()
	defer C.free(unsafe.Pointer(h))
	for _, v := range vs {
		C.rb_hist_add(h, C.int64_t(v))
	}
	counts = append([]uint64(nil), unsafe.Slice((*uint64)(unsafe.Pointer(&h.counts[0])), HistLen)...)
	return counts, goHist(h)
}
