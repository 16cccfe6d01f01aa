//go:build linux && cgo

// See rb_mr.h. No function here calls back into Go.
#include "rb_mr.h"
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static inline int64_t mr_now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int rb_mr_odp(struct ibv_context *ctx) {
	struct ibv_device_attr_ex attr;
	memset(&attr, 0, sizeof attr);
	int rc = ibv_query_device_ex(ctx, NULL, &attr);
	if (rc != 0)
		return rc > 0 ? -rc : -EOPNOTSUPP;
	return (attr.odp_caps.general_caps & IBV_ODP_SUPPORT) != 0;
}

// map_len is what a mode maps for size bytes: hugepage mappings are whole hugepages.
static size_t map_len(size_t size, int mode) {
	if (mode == RB_MR_HUGE)
		return (size + RB_HUGE_PAGE - 1) / RB_HUGE_PAGE * RB_HUGE_PAGE;
	return size;
}

static void *map(size_t len, int mode) {
	int flags = MAP_PRIVATE | MAP_ANONYMOUS;
	if (mode == RB_MR_HUGE)
		flags |= MAP_HUGETLB;
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, flags, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

static int fail(const char *verb, int err, const char **fail_verb, int *fail_errno) {
	*fail_verb = verb;
	*fail_errno = err ? err : EIO;
	return RB_MR_FAIL;
}

int rb_mr_time(struct ibv_pd *pd, size_t size, int mode, int n, int access, int64_t *reg,
               int64_t *dereg, int *done, const char **fail_verb, int *fail_errno) {
	*done = 0;
	*fail_verb = NULL;
	*fail_errno = 0;
	if (mode == RB_MR_ODP)
		access |= IBV_ACCESS_ON_DEMAND;
	size_t len = map_len(size, mode);
	void *buf = NULL;
	if (mode != RB_MR_COLD) {
		buf = map(len, mode);
		if (buf == NULL) {
			int err = errno;
			if (mode == RB_MR_HUGE && (err == ENOMEM || err == EINVAL))
				return RB_MR_NOHUGE;
			return fail("mmap", err, fail_verb, fail_errno);
		}
		memset(buf, 0x5a, len); // touched: the pages exist before the first registration
	}
	int rc = RB_MR_OK;
	for (int i = 0; i < n; i++) {
		void *p = buf;
		if (mode == RB_MR_COLD) {
			// Not populated: the registration faults the pages in and pins them.
			p = map(len, mode);
			if (p == NULL) {
				rc = fail("mmap", errno, fail_verb, fail_errno);
				break;
			}
		}
		int64_t t0 = mr_now();
		struct ibv_mr *mr = ibv_reg_mr(pd, p, size, access);
		int64_t t1 = mr_now();
		if (mr == NULL) {
			int err = errno;
			if (mode == RB_MR_COLD)
				munmap(p, len);
			if (mode == RB_MR_ODP && i == 0 && (err == EINVAL || err == EOPNOTSUPP)) {
				rc = RB_MR_NOODP;
				break;
			}
			rc = fail("ibv_reg_mr", err, fail_verb, fail_errno);
			break;
		}
		int64_t t2 = mr_now();
		int drc = ibv_dereg_mr(mr);
		int64_t t3 = mr_now();
		if (mode == RB_MR_COLD)
			munmap(p, len);
		if (drc != 0) {
			rc = fail("ibv_dereg_mr", drc, fail_verb, fail_errno);
			break;
		}
		reg[i] = t1 - t0;
		dereg[i] = t3 - t2;
		*done = i + 1;
	}
	if (buf != NULL)
		munmap(buf, len);
	return rc;
}
