//go:build linux && cgo

// rb_sys.c: what the loops need from the system (the clock, waiting on a file
// descriptor) and the buffers. Kept apart from the loops (rb_*.c) so that they can be
// built against a model of the verbs queues with a simulated clock (see rb.h).
#define _GNU_SOURCE
#include "rb.h"
#include <errno.h>
#include <sched.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int64_t rb_now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int rb_wait_fd(int fd, int timeout_ms) {
	struct pollfd p = {.fd = fd, .events = POLLIN};
	int rc = poll(&p, 1, timeout_ms);
	if (rc < 0 && errno == EINTR)
		return 0;
	return rc < 0 ? -1 : rc > 0;
}

void *rb_mmap(size_t len, int huge, int node, int *bound) {
	int flags = MAP_PRIVATE | MAP_ANONYMOUS;
	if (huge)
		flags |= MAP_HUGETLB;
	*bound = 0;
	if (node < 0 || node >= 8 * (int)sizeof(unsigned long) * 16) {
		void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, flags | MAP_POPULATE, -1, 0);
		return p == MAP_FAILED ? NULL : p;
	}
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, flags, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	// No libnuma: the system call itself. MPOL_PREFERRED (1): the node when it has
	// pages, another when not, so a full node slows the run rather than failing it.
	unsigned long mask[16] = {0};
	mask[node / (8 * sizeof(unsigned long))] = 1UL << (node % (8 * sizeof(unsigned long)));
	// maxnode: the kernel reads maxnode-1 bits of the mask.
	*bound = syscall(SYS_mbind, p, len, 1UL, mask, (unsigned long)(8 * sizeof(mask) + 1), 0UL) == 0;
	// Fault every page in now, as MAP_POPULATE would have, under the policy.
	long page = huge ? 2L << 20 : sysconf(_SC_PAGESIZE);
	for (size_t off = 0; off < len; off += (size_t)page)
		((volatile char *)p)[off] = 0;
	return p;
}

int rb_munmap(void *p, size_t len) { return munmap(p, len); }

// pattern: byte 0 is the seed's low byte (so that seeds chosen to differ there tell even
// 1-byte messages apart), the rest a hash of the offset and the seed.
static inline uint8_t pattern(size_t i, uint32_t seed) {
	if (i == 0)
		return (uint8_t)seed;
	uint32_t x = (uint32_t)i * 2654435761u + seed * 0x9E3779B9u;
	x ^= x >> 15;
	x *= 0x85EBCA6Bu;
	return (uint8_t)(x ^ (x >> 13) ^ (x >> 24));
}

void rb_fill(uint8_t *p, size_t len, uint32_t seed) {
	for (size_t i = 0; i < len; i++)
		p[i] = pattern(i, seed);
}

int64_t rb_check(const uint8_t *p, size_t len, uint32_t seed) {
	for (size_t i = 0; i < len; i++)
		if (p[i] != pattern(i, seed))
			return (int64_t)i;
	return -1;
}

int rb_query_port(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr) {
	return ibv_query_port(ctx, port, attr);
}

int rb_pin(const int *cpus, int n) {
	cpu_set_t set;
	CPU_ZERO(&set);
	for (int i = 0; i < n; i++) {
		if (cpus[i] < 0 || cpus[i] >= CPU_SETSIZE) {
			errno = EINVAL;
			return -1;
		}
		CPU_SET(cpus[i], &set);
	}
	return sched_setaffinity(0, sizeof(set), &set);
}

int rb_allowed_cpus(int *cpus, int max) {
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof(set), &set))
		return -1;
	int n = 0;
	for (int c = 0; c < CPU_SETSIZE && n < max; c++)
		if (CPU_ISSET(c, &set))
			cpus[n++] = c;
	return n;
}

int rb_getcpu(void) { return sched_getcpu(); }
