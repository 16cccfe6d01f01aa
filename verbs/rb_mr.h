// rb_mr.h: timing memory registration (rdmabench mr). One call runs a whole series:
// n registrations and deregistrations of one size in one mode, each timed on its own
// with CLOCK_MONOTONIC_RAW, so that cgo's cost is in no sample.
#ifndef RB_MR_H
#define RB_MR_H
#include <stddef.h>
#include <stdint.h>
#include <infiniband/verbs.h>

// Modes (mrbench's names: warm, cold, huge, odp).
enum {
	RB_MR_WARM = 0, // one mapping, touched once, registered n times
	RB_MR_COLD = 1, // a fresh mapping (not populated) per registration, unmapped after
	RB_MR_HUGE = 2, // one mapping of 2 MiB hugepages, touched once, registered n times
	RB_MR_ODP = 3,  // one touched mapping, registered with IBV_ACCESS_ON_DEMAND
};

// Outcomes of rb_mr_time.
enum {
	RB_MR_OK = 0,
	RB_MR_FAIL = -1,    // a call failed: fail_verb and fail_errno say which and why
	RB_MR_NOHUGE = -2,  // mmap(MAP_HUGETLB) failed with ENOMEM or EINVAL: no hugepages
	RB_MR_NOODP = -3,   // the device does not support ODP
};

#define RB_HUGE_PAGE (2u << 20)

// rb_mr_odp says whether the device reports general ODP support (ibv_query_device_ex):
// 1 yes, 0 no, -errno when the query failed.
int rb_mr_odp(struct ibv_context *ctx);

// rb_mr_time registers and deregisters size bytes n times in mode with access, and
// stores each registration's and deregistration's latency (ns) in reg[i] and dereg[i].
// *done is the number of complete pairs. Nothing is left registered or mapped.
int rb_mr_time(struct ibv_pd *pd, size_t size, int mode, int n, int access, int64_t *reg,
               int64_t *dereg, int *done, const char **fail_verb, int *fail_errno);
#endif
