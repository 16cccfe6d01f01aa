//go:build linux && cgo

// The loops under test, compiled against the model (-DRB_MODEL: rb_now() and
// rb_wait_fd() are the model's, see model.c).
//
// rb_c.h and rb.h are symbolic links to verbs/rb.c and verbs/rb.h: the go command
// rebuilds a package when a file in its directory changes, and only then (an
// #include "../../rb.c" would leave the tests running a stale build of the loops).
#include "rb_c.h"

// qm_hist_index exposes the histogram's bucket function to the tests.
uint32_t qm_hist_index(uint64_t v) { return hist_index(v); }
