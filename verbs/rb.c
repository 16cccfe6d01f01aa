//go:build linux && cgo

// rb.c: what the timed loops share (see rb_loop.h): the tick counter's choice and each
// loop's calibration, the extended-API batch, the histogram. The loops are in rb_bw.c,
// rb_bw_mr.c, rb_rounds.c, rb_pingpong.c and rb_read_lat.c; the contract is rb.h. No
// function here calls back into Go.
#include "rb_loop.h"
#include <string.h>

#if defined(__x86_64__) && !defined(RB_MODEL)
int rb_use_tsc = 0;
#endif

void rb_set_clock(int tsc) {
#if defined(__x86_64__) && !defined(RB_MODEL)
	rb_use_tsc = tsc;
#else
	(void)tsc;
#endif
}

int rb_clock_is_tsc(void) { return tsc_on(); }

// rb_clk_end sets x->ns_per_tick for the loop; a TSC that did not advance, or advanced at
// a rate no CPU has (outside 10 MHz .. 100 GHz), fails the loop rather than guess.
int rb_clk_end(rb_clock *c, rb_xfer *x, int rc) {
	if (!tsc_on()) {
		x->ns_per_tick = 1.0;
		return rc;
	}
	int64_t ns1, t1;
	do {
		t1 = ticks();
		ns1 = rb_now();
	} while (ns1 - c->ns0 < 20000000);
	double r = t1 > c->t0 ? (double)(ns1 - c->ns0) / (double)(t1 - c->t0) : 0;
	x->ns_per_tick = r;
	if (r < 0.01 || r > 100) {
		x->ns_per_tick = 0;
		if (rc == 0) {
			x->fail.kind = RB_FAIL_CLOCK;
			x->fail.verb = "rdtsc";
			rc = -1;
		}
	}
	return rc;
}

// ---- posting ----

// rb_post_wr_api: see rb_loop.h.
int rb_post_wr_api(struct ibv_qp_ex *e, struct ibv_send_wr *wr) {
	ibv_wr_start(e);
	for (; wr; wr = wr->next) {
		const struct ibv_sge *sg = wr->sg_list;
		e->wr_id = wr->wr_id;
		e->wr_flags = wr->send_flags;
		if (wr->opcode == IBV_WR_RDMA_READ)
			ibv_wr_rdma_read(e, wr->wr.rdma.rkey, wr->wr.rdma.remote_addr);
		else
			ibv_wr_rdma_write(e, wr->wr.rdma.rkey, wr->wr.rdma.remote_addr);
		if (wr->send_flags & IBV_SEND_INLINE)
			ibv_wr_set_inline_data(e, (void *)(uintptr_t)sg->addr, sg->length);
		else
			ibv_wr_set_sge(e, sg->lkey, sg->addr, sg->length);
	}
	return ibv_wr_complete(e);
}

// ---- histogram ----

static inline uint32_t hist_index(uint64_t v) {
	if (v < RB_HIST_SUB)
		return (uint32_t)v;
	int e = 63 - __builtin_clzll(v) - 10; // v >> e is in [1024, 2047]
	return RB_HIST_SUB + (uint32_t)(e - 1) * RB_HIST_HALF + (uint32_t)((v >> e) - RB_HIST_HALF);
}

uint64_t rb_hist_low(uint32_t i) {
	if (i < RB_HIST_SUB)
		return i;
	uint32_t e = (i - RB_HIST_SUB) / RB_HIST_HALF + 1;
	return ((uint64_t)((i - RB_HIST_SUB) % RB_HIST_HALF) + RB_HIST_HALF) << e;
}

uint64_t rb_hist_width(uint32_t i) {
	if (i < RB_HIST_SUB)
		return 1;
	return 1ULL << ((i - RB_HIST_SUB) / RB_HIST_HALF + 1);
}

void rb_hist_reset(rb_hist *h) {
	memset(h, 0, sizeof(*h));
	h->min = INT64_MAX;
	h->max = INT64_MIN;
}

void rb_hist_add(rb_hist *h, int64_t t) {
	if (t < 0) {
		h->backwards++;
		return;
	}
	h->counts[hist_index((uint64_t)t)]++;
	h->n++;
	if (t < h->min)
		h->min = t;
	if (t > h->max)
		h->max = t;
	unsigned __int128 sum = ((unsigned __int128)h->sum_hi << 64 | h->sum_lo) + (uint64_t)t;
	h->sum_lo = (uint64_t)sum;
	h->sum_hi = (uint64_t)(sum >> 64);
	unsigned __int128 sq = ((unsigned __int128)h->sumsq_hi << 64 | h->sumsq_lo) + (unsigned __int128)t * (uint64_t)t;
	h->sumsq_lo = (uint64_t)sq;
	h->sumsq_hi = (uint64_t)(sq >> 64);
}
