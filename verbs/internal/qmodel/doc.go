// Package qmodel tests the timed post/poll loops of verbs (rb_bw.c, ...) without an
// RDMA device: it compiles them (with -DRB_MODEL) against a model of the verbs queues
// — an in-order RC send queue per QP, a CQ, a completion channel, a simulated clock and
// a scriptable peer — and runs them from Go. See model.h for what is modelled.
//
// The package needs cgo on Linux and libibverbs' headers, not the library: the model
// provides the few functions the loops call.
package qmodel
