//go:build linux && cgo

// rb_sys.c: what the loops need from the system (the clock, waiting on a file
// descriptor) and the buffers. Kept apart from rb.c so that the loops can be built
// against a model of the verbs queues with a simulated clock (see rb.h).
#include "rb.h"
#include <errno.h>
#include <poll.h>
#include <sys/mman.h>
#include <time.h>

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

void *rb_mmap(size_t len, int huge) {
	int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE;
	if (huge)
		flags |= MAP_HUGETLB;
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, flags, -1, 0);
	return p == MAP_FAILED ? NULL : p;
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
