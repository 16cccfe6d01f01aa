//go:build linux && cgo

// The loops under test, compiled against the model (-DRB_MODEL: rb_now() and
// rb_wait_fd() are the model's, see model.c).
//
// rb_c.h, rb_bw_c.h, rb_bw_mr_c.h, rb_rounds_c.h, rb_pingpong_c.h, rb_read_lat_c.h,
// rb_loop.h and rb.h are symbolic links to verbs/rb.c, its loops (rb_bw.c, ...),
// rb_loop.h and rb.h: the go command rebuilds a package when a file in its directory
// changes, and only then (an #include "../../rb.c" would leave the tests running a
// stale build of the loops). Here they are one translation unit, so that the tests
// reach the loops' static functions (the histogram's buckets, the registration cache).
#include "rb_c.h"
#include "rb_bw_c.h"
#include "rb_bw_mr_c.h"
#include "rb_rounds_c.h"
#include "rb_pingpong_c.h"
#include "rb_read_lat_c.h"

// qm_hist_index exposes the histogram's bucket function to the tests.
uint32_t qm_hist_index(uint64_t v) { return hist_index(v); }

// qm_cache_fuzz drives the table of rb_bw_mr's registration cache (cache_find,
// cache_insert, cache_remove) with ops random look-ups, inserts and removals of keys
// among 3*cap (address, length) pairs, checked against a plain array. It returns the
// number of the first operation that went wrong, or -1.
int64_t qm_cache_fuzz(uint32_t cap, uint64_t ops, uint64_t seed) {
	mr_cache c;
	memset(&c, 0, sizeof(c));
	uint32_t nkeys = 3 * cap;
	int32_t *where = malloc(nkeys * sizeof(int32_t)); // key -> entry, -1: absent
	int32_t *freel = malloc(cap * sizeof(int32_t));   // free entries
	int64_t bad = -1;
	if (cache_init(&c, cap) || !where || !freel)
		abort();
	for (uint32_t k = 0; k < nkeys; k++)
		where[k] = -1;
	uint32_t nfree = cap;
	for (uint32_t i = 0; i < cap; i++)
		freel[i] = (int32_t)(cap - 1 - i);
	uint64_t x = seed * 0x9E3779B97F4A7C15ULL + 1;
	for (uint64_t op = 0; op < ops && bad < 0; op++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		uint32_t k = (uint32_t)(x % nkeys);
		uint64_t addr = 0x7f0000000000ULL + (uint64_t)(k / 2) * 4096; // two lengths per address
		uint32_t len = k % 2 ? 64 : 4096;
		int32_t got = cache_find(&c, addr, len);
		if (got != where[k]) {
			bad = (int64_t)op;
			break;
		}
		if (got >= 0 && (x >> 40) % 2) {
			cache_remove(&c, got);
			freel[nfree++] = got;
			where[k] = -1;
		} else if (got < 0 && nfree > 0) {
			int32_t e = freel[--nfree];
			c.e[e].addr = addr;
			c.e[e].len = len;
			cache_insert(&c, e);
			where[k] = e;
		}
	}
	free(where);
	free(freel);
	free(c.e);
	free(c.tab);
	return bad;
}
