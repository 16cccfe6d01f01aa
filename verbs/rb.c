// See rb.h. No function here calls back into Go.
#include "rb.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

int64_t rb_now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

#if defined(__x86_64__)
#include <x86intrin.h>
static int use_tsc = 1;
static inline int64_t ticks(void) { return use_tsc ? (int64_t)__rdtsc() : rb_now(); }
#else
static int use_tsc = 0;
static inline int64_t ticks(void) { return rb_now(); }
#endif

void rb_set_clock(int tsc) {
#if defined(__x86_64__)
	use_tsc = tsc;
#else
	(void)tsc;
#endif
}

int rb_clock_is_tsc(void) { return use_tsc; }

// The thread is not pinned: pinning a spinning loop to one CPU can put it on the CPU
// its peer (or the kernel's RDMA work) needs, which costs a scheduler tick per round
// trip. The TSC is taken to be synchronized across cores, as on x86 servers with an
// invariant TSC (in the qemu test bed the skew between vCPUs measured below 1 us);
// --clock monotonic is the way out where it is not.
typedef struct {
	int64_t t0, ns0;
} rb_clock;

static void clk_begin(rb_clock *c) {
	c->ns0 = rb_now();
	c->t0 = ticks();
}

// clk_end returns nanoseconds per tick over the loop.
static double clk_end(rb_clock *c) {
	if (!use_tsc)
		return 1.0;
	int64_t ns1, t1;
	do {
		t1 = ticks();
		ns1 = rb_now();
	} while (ns1 - c->ns0 < 20000000);
	return t1 > c->t0 ? (double)(ns1 - c->ns0) / (double)(t1 - c->t0) : 1.0;
}

static void to_ns(int64_t *v, uint64_t n, double r) {
	for (uint64_t i = 0; i < n; i++)
		v[i] = (int64_t)((double)v[i] * r + 0.5);
}

void *rb_mmap(size_t len, int huge) {
	int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE;
	if (huge)
		flags |= MAP_HUGETLB;
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, flags, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

int rb_munmap(void *p, size_t len) { return munmap(p, len); }

static inline uint8_t pattern(size_t i, uint32_t seed) {
	uint32_t x = (uint32_t)i * 2654435761u + seed;
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

static int verb_failed(rb_fail *f, const char *verb, int err) {
	f->status = -1;
	f->verb = verb;
	f->err = err;
	return -1;
}

static int wc_failed(rb_fail *f, const struct ibv_wc *wc) {
	f->status = wc->status;
	f->opcode = wc->opcode;
	f->wr_id = wc->wr_id;
	f->verb = "ibv_poll_cq";
	return -1;
}

#define QSHIFT 48
#define SEQMASK ((1ULL << QSHIFT) - 1)
#define POLL_BATCH 16

int rb_bw(rb_bw_args *a) {
	const int nqp = a->nqp;
	const uint32_t depth = a->tx_depth, pl = a->post_list, mod = a->cq_mod;
	uint64_t *posted = calloc(nqp, sizeof(uint64_t));
	uint64_t *done = calloc(nqp, sizeof(uint64_t));
	uint64_t *target = calloc(nqp, sizeof(uint64_t));
	int64_t *pts = calloc((size_t)nqp * depth, sizeof(int64_t));
	struct ibv_send_wr *wr = calloc(pl, sizeof(*wr));
	struct ibv_sge *sge = calloc(pl, sizeof(*sge));
	int rc = 0;
	rb_clock clk;
	clk_begin(&clk);
	int64_t t_start = 0, t_end = 0;
	if (!posted || !done || !target || !pts || !wr || !sge) {
		rc = verb_failed(&a->fail, "calloc", ENOMEM);
		goto out;
	}
	for (uint32_t i = 0; i < pl; i++) {
		sge[i].addr = a->laddr;
		sge[i].length = a->size;
		sge[i].lkey = a->lkey;
		wr[i].sg_list = &sge[i];
		wr[i].num_sge = 1;
		wr[i].opcode = a->opcode;
		wr[i].wr.rdma.remote_addr = a->raddr;
		wr[i].wr.rdma.rkey = a->rkey;
		wr[i].next = i + 1 < pl ? &wr[i + 1] : NULL;
	}
	for (int q = 0; q < nqp; q++)
		target[q] = a->iters;
	uint64_t left = (uint64_t)nqp * a->iters; // WRs still to complete
	int stopping = 0;
	struct ibv_wc wc[POLL_BATCH];
	a->events = 0;
	if (a->channel && ibv_req_notify_cq(a->cq, 0)) {
		rc = verb_failed(&a->fail, "ibv_req_notify_cq", errno);
		goto out;
	}
	t_start = t_end = ticks();
	for (uint64_t spin = 0; left > 0; spin++) {
		for (int q = 0; q < nqp; q++) {
			while (posted[q] < target[q]) {
				uint64_t n = target[q] - posted[q];
				if (n > pl)
					n = pl;
				if (posted[q] - done[q] + n > depth)
					break;
				int signalled = 0;
				for (uint64_t i = 0; i < n; i++) {
					uint64_t seq = posted[q] + i;
					wr[i].wr_id = ((uint64_t)q << QSHIFT) | seq;
					wr[i].send_flags = a->send_flags;
					if ((seq + 1) % mod == 0 || seq + 1 == target[q]) {
						wr[i].send_flags |= IBV_SEND_SIGNALED;
						signalled = 1;
					}
				}
				wr[n - 1].next = NULL;
				int64_t t = ticks();
				if (signalled)
					for (uint64_t i = 0; i < n; i++)
						pts[(size_t)q * depth + (posted[q] + i) % depth] = t;
				struct ibv_send_wr *bad;
				int err = ibv_post_send(a->qps[q], wr, &bad);
				if (n < pl)
					wr[n - 1].next = &wr[n];
				if (err) {
					rc = verb_failed(&a->fail, "ibv_post_send", err);
					goto out;
				}
				posted[q] += n;
			}
		}
		int ne = ibv_poll_cq(a->cq, POLL_BATCH, wc);
		if (ne < 0) {
			rc = verb_failed(&a->fail, "ibv_poll_cq", errno);
			goto out;
		}
		if (ne > 0) {
			int64_t t = ticks();
			for (int i = 0; i < ne; i++) {
				if (wc[i].status != IBV_WC_SUCCESS) {
					rc = wc_failed(&a->fail, &wc[i]);
					goto out;
				}
				int q = (int)(wc[i].wr_id >> QSHIFT);
				uint64_t seq = wc[i].wr_id & SEQMASK;
				left -= seq + 1 - done[q];
				done[q] = seq + 1;
				if (a->lat_n < a->lat_cap)
					a->lat[a->lat_n++] = t - pts[(size_t)q * depth + seq % depth];
			}
			t_end = t;
		} else if (a->channel) {
			// Nothing to reap: sleep until the CQ signals, re-arm, and poll again
			// before the next sleep (a completion after the re-arm raises an event).
			struct ibv_cq *ev_cq;
			void *ev_ctx;
			if (ibv_get_cq_event(a->channel, &ev_cq, &ev_ctx)) {
				rc = verb_failed(&a->fail, "ibv_get_cq_event", errno);
				goto out;
			}
			ibv_ack_cq_events(ev_cq, 1);
			a->events++;
			if (ibv_req_notify_cq(a->cq, 0)) {
				rc = verb_failed(&a->fail, "ibv_req_notify_cq", errno);
				goto out;
			}
		}
		// Stop early on a deadline or a stop request: post only up to the next
		// signalled WR, so that everything posted is seen to complete.
		if (!stopping && (spin & 63) == 0 &&
		    (*a->stop || (a->deadline_ns && rb_now() >= a->deadline_ns))) {
			stopping = 1;
			left = 0;
			for (int q = 0; q < nqp; q++) {
				uint64_t t = (posted[q] + mod - 1) / mod * mod;
				if (t < target[q])
					target[q] = t;
				left += target[q] - done[q];
			}
		}
	}
out:;
	double ratio = clk_end(&clk);
	to_ns(a->lat, a->lat_n, ratio);
	a->duration_ns = (int64_t)((double)(t_end - t_start) * ratio);
	a->completed = 0;
	if (done)
		for (int q = 0; q < nqp; q++)
			a->completed += done[q];
	free(posted);
	free(done);
	free(target);
	free(pts);
	free(wr);
	free(sge);
	return rc;
}

static int pingpong(rb_pp_args *a, struct ibv_send_wr *wrp, volatile uint8_t *tx_last, struct ibv_wc *wc);

// reap polls the ping-pong's send completions once; *completed becomes the count of
// WRs known complete (RC completes in order). Non-zero on failure, in a->fail.
static int reap(rb_pp_args *a, struct ibv_wc *wc, uint64_t *completed) {
	int ne = ibv_poll_cq(a->cq, POLL_BATCH, wc);
	if (ne < 0)
		return verb_failed(&a->fail, "ibv_poll_cq", errno);
	for (int k = 0; k < ne; k++) {
		if (wc[k].status != IBV_WC_SUCCESS)
			return wc_failed(&a->fail, &wc[k]);
		*completed = wc[k].wr_id + 1;
	}
	return 0;
}

int rb_pingpong(rb_pp_args *a) {
	struct ibv_sge sge = {.addr = a->laddr, .length = a->size, .lkey = a->lkey};
	struct ibv_send_wr wr = {
	    .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
	    .wr.rdma.remote_addr = a->raddr, .wr.rdma.rkey = a->rkey};
	volatile uint8_t *tx_last = (volatile uint8_t *)(uintptr_t)(a->laddr + a->size - 1);
	struct ibv_wc wc[POLL_BATCH];
	rb_clock clk;
	clk_begin(&clk);
	int rc = pingpong(a, &wr, tx_last, wc);
	to_ns(a->rtt, a->initiator ? a->done : 0, clk_end(&clk));
	return rc;
}

static int pingpong(rb_pp_args *a, struct ibv_send_wr *wrp, volatile uint8_t *tx_last, struct ibv_wc *wc) {
	struct ibv_send_wr wr = *wrp;
	uint64_t posted = 0, completed = 0;
	a->done = 0;
	for (uint64_t i = 0; i < a->iters; i++) {
		uint64_t round = a->first + i;
		uint8_t v = (uint8_t)(round % 255 + 1); // never 0, differs from the round before
		int64_t t0 = 0;
		if (!a->initiator) {
			while (*a->rx_last != v)
				if (*a->stop)
					return 0;
		}
		// Reap send completions outside the timed part; block only when the SQ is full.
		for (;;) {
			if (reap(a, wc, &completed))
				return -1;
			if (posted - completed < a->sq_depth)
				break;
			if (*a->stop)
				return 0;
		}
		*tx_last = v;
		wr.wr_id = posted;
		wr.send_flags = a->send_flags;
		if ((posted + 1) % a->cq_mod == 0 || i + 1 == a->iters)
			wr.send_flags |= IBV_SEND_SIGNALED;
		struct ibv_send_wr *bad;
		if (a->initiator)
			t0 = ticks();
		int err = ibv_post_send(a->qp, &wr, &bad);
		if (err)
			return verb_failed(&a->fail, "ibv_post_send", err);
		posted++;
		if (a->initiator) {
			while (*a->rx_last != v)
				if (*a->stop)
					return 0;
			a->rtt[i] = ticks() - t0;
		}
		a->done = i + 1;
	}
	// Wait for the last (signalled) write so the QP is idle when we return.
	while (completed < posted) {
		if (reap(a, wc, &completed))
			return -1;
		if (*a->stop)
			return 0;
	}
	return 0;
}

static int read_lat(rb_rl_args *a, struct ibv_send_wr *wrp);

int rb_read_lat(rb_rl_args *a) {
	struct ibv_sge sge = {.addr = a->laddr, .length = a->size, .lkey = a->lkey};
	struct ibv_send_wr wr = {
	    .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_READ,
	    .send_flags = IBV_SEND_SIGNALED,
	    .wr.rdma.remote_addr = a->raddr, .wr.rdma.rkey = a->rkey};
	rb_clock clk;
	clk_begin(&clk);
	int rc = read_lat(a, &wr);
	to_ns(a->lat, a->done, clk_end(&clk));
	return rc;
}

static int read_lat(rb_rl_args *a, struct ibv_send_wr *wrp) {
	struct ibv_send_wr wr = *wrp;
	struct ibv_wc wc;
	a->done = 0;
	for (uint64_t i = 0; i < a->iters; i++) {
		struct ibv_send_wr *bad;
		wr.wr_id = i;
		int64_t t0 = ticks();
		int err = ibv_post_send(a->qp, &wr, &bad);
		if (err)
			return verb_failed(&a->fail, "ibv_post_send", err);
		int ne;
		while ((ne = ibv_poll_cq(a->cq, 1, &wc)) == 0)
			if (*a->stop)
				return 0;
		int64_t t1 = ticks();
		if (ne < 0)
			return verb_failed(&a->fail, "ibv_poll_cq", errno);
		if (wc.status != IBV_WC_SUCCESS)
			return wc_failed(&a->fail, &wc);
		a->lat[i] = t1 - t0;
		a->done = i + 1;
	}
	return 0;
}
