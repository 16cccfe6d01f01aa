//go:build linux && cgo

// See rb.h. No function here calls back into Go.
#include "rb.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && !defined(RB_MODEL)
#include <x86intrin.h>
static int use_tsc = 0;
static inline int tsc_on(void) { return use_tsc; }
static inline int64_t ticks(void) { return use_tsc ? (int64_t)__rdtsc() : rb_now(); }
#elif defined(RB_MODEL)
// The model of the queues may give the loop it drives a TSC of its own, at a known rate,
// so that the calibration and the conversion are tested as they run on a real CPU.
int rb_model_tsc_on(void);
int64_t rb_model_tsc(void);
static inline int tsc_on(void) { return rb_model_tsc_on(); }
static inline int64_t ticks(void) { return rb_model_tsc_on() ? rb_model_tsc() : rb_now(); }
#else
static inline int tsc_on(void) { return 0; }
static inline int64_t ticks(void) { return rb_now(); }
#endif

void rb_set_clock(int tsc) {
#if defined(__x86_64__) && !defined(RB_MODEL)
	use_tsc = tsc;
#else
	(void)tsc;
#endif
}

int rb_clock_is_tsc(void) { return tsc_on(); }

// Go places the loop's thread (verbs.Session.runThreads): on the NIC's NUMA node's CPUs
// by default, the kernel choosing one of them, since a spinning loop pinned to one CPU
// can sit on the CPU its peer (or the kernel's RDMA work) needs, which costs a scheduler
// tick per round trip; on one CPU each only where --cpu asks. The TSC is used only where
// Go found it invariant and trusted by the kernel.
typedef struct {
	int64_t t0, ns0;
} rb_clock;

static void clk_begin(rb_clock *c) {
	c->ns0 = rb_now();
	c->t0 = ticks();
}

// clk_end sets x->ns_per_tick for the loop; a TSC that did not advance, or advanced at
// a rate no CPU has (outside 10 MHz .. 100 GHz), fails the loop rather than guess.
static int clk_end(rb_clock *c, rb_xfer *x, int rc) {
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

// post_wr_api is post's extended-API batch, out of line: post itself is inlined into
// every loop, so that the legacy path costs the loops no call of their own
// (ibv_post_send is one).
static int post_wr_api(struct ibv_qp_ex *e, struct ibv_send_wr *wr) {
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

// post_qpx is post with x->qpx given (a loop that read it once, into a register).
static inline __attribute__((always_inline)) int post_qpx(struct ibv_qp_ex *const *qpx, int q, struct ibv_qp *qp,
                                                          struct ibv_send_wr *wr) {
	if (!qpx) {
		struct ibv_send_wr *bad;
		return ibv_post_send(qp, wr, &bad);
	}
	return post_wr_api(qpx[q], wr);
}

// post hands a chain of WRs (RDMA WRITE or READ, one SGE each) to QP q of the loop:
// with ibv_post_send, or, where the session's QPs were created for the extended QP API
// (x->qpx set: --post-api wr), as one batch between ibv_wr_start and ibv_wr_complete,
// which rings the doorbell once for the whole chain, as perftest posts on mlx5, EFA and
// HNS. The WRs' fields are read as they are, so every loop builds the same chain for
// either path. On an error ibv_post_send may have posted the WRs before the one that
// failed, ibv_wr_complete none of the batch; every loop fails on it either way.
static inline __attribute__((always_inline)) int post(const rb_xfer *x, int q, struct ibv_qp *qp,
                                                      struct ibv_send_wr *wr) {
	return post_qpx(x->qpx, q, qp, wr);
}

// post_verb names the verb whose error post returned.
static inline const char *post_verb(const rb_xfer *x) { return x->qpx ? "ibv_wr_complete" : "ibv_post_send"; }

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

static inline void sample(rb_xfer *x, int64_t t) {
	if (x->hist)
		rb_hist_add(x->hist, t);
}

// ---- failures ----

static int verb_failed(rb_xfer *x, const char *verb, int err) {
	x->fail.kind = RB_FAIL_VERB;
	x->fail.verb = verb;
	x->fail.err = err;
	return -1;
}

// poll_failed: ibv_poll_cq returned < 0, which not every provider backs with errno.
static int poll_failed(rb_xfer *x) { return verb_failed(x, "ibv_poll_cq", errno ? errno : EIO); }

static int wc_failed(rb_xfer *x, const struct ibv_wc *wc) {
	x->fail.kind = RB_FAIL_WC;
	x->fail.status = wc->status;
	x->fail.opcode = wc->opcode;
	x->fail.wr_id = wc->wr_id;
	x->fail.vendor_err = wc->vendor_err;
	x->fail.qp_num = wc->qp_num;
	x->fail.verb = "ibv_poll_cq";
	return -1;
}

// unexpected: a completion for no WR the loop has outstanding. The queue is not in the
// state the loop believes, so it stops rather than count it.
static int unexpected(rb_xfer *x, const struct ibv_wc *wc) {
	wc_failed(x, wc);
	x->fail.verb = "unexpected completion";
	return -1;
}

static int timed_out(rb_xfer *x, const char *wait) {
	x->fail.kind = RB_FAIL_TIMEOUT;
	x->fail.verb = wait;
	return -1;
}

// A watchdog for waits on the peer: rb_now() is read only every so many idle spins
// (it can cost a microsecond), and progress resets it.
typedef struct {
	int64_t since; // rb_now() of the last progress seen, 0 = not started
	uint32_t spins;
} watchdog;

// idle says whether the peer has now been silent past the timeout.
static inline int idle(watchdog *w, const rb_xfer *x) {
	if (x->timeout_ns <= 0 || (++w->spins & 4095) != 0)
		return 0;
	int64_t now = rb_now();
	if (w->since == 0)
		w->since = now;
	return now - w->since > x->timeout_ns;
}

static inline void progress(watchdog *w) { w->since = 0; }

static inline int stopped(const rb_xfer *x) { return __atomic_load_n(x->stop, __ATOMIC_RELAXED) != 0; }

#define POLL_BATCH 16
#define SEQMASK ((1ULL << RB_QSHIFT) - 1)

// ---- bandwidth ----

static int bw(rb_bw_args *a, uint64_t *posted, uint64_t *target, uint32_t *lcur, uint32_t *rcur,
              int64_t *pts, int64_t *qlast, struct ibv_send_wr *wr, struct ibv_sge *sge, int64_t *t_start, int64_t *t_end,
              int64_t *ss_t);

// ticks_ns converts the span from t0 to t1 with the loop's calibration.
static int64_t ticks_ns(const rb_xfer *x, int64_t t0, int64_t t1) {
	return t1 > t0 ? (int64_t)((double)(t1 - t0) * x->ns_per_tick + 0.5) : 0;
}

int rb_bw(rb_bw_args *a) {
	const int nqp = a->nqp;
	rb_xfer *x = &a->x;
	uint64_t *posted = calloc(nqp, sizeof(uint64_t));
	uint64_t *target = calloc(nqp, sizeof(uint64_t));
	uint32_t *lcur = calloc(nqp, sizeof(uint32_t));
	uint32_t *rcur = calloc(nqp, sizeof(uint32_t));
	int64_t *pts = calloc((size_t)nqp * a->tx_depth, sizeof(int64_t));
	int64_t *qlast = calloc(nqp, sizeof(int64_t));
	struct ibv_send_wr *wr = calloc(a->post_list, sizeof(*wr));
	struct ibv_sge *sge = calloc(a->post_list, sizeof(*sge));
	int64_t t_start = 0, t_end = 0, ss_t[2] = {0, 0};
	int rc;
	rb_clock clk;
	memset(&x->fail, 0, sizeof(x->fail));
	for (int q = 0; q < nqp; q++)
		a->done[q] = 0;
	a->events = 0;
	a->steady_wrs = 0;
	a->steady_ns = 0;
	clk_begin(&clk);
	if (a->gate) { // arrive even when failing, so that no other loop waits for this one
		__atomic_add_fetch(a->gate, 1, __ATOMIC_ACQ_REL);
		for (int64_t until = rb_now() + 1000000000; __atomic_load_n(a->gate, __ATOMIC_ACQUIRE) < a->gate_n &&
		                                            !stopped(x) && rb_now() < until;)
			;
	}
	if (!posted || !target || !lcur || !rcur || !pts || !qlast || !wr || !sge)
		rc = verb_failed(x, "calloc", ENOMEM);
	else
		rc = bw(a, posted, target, lcur, rcur, pts, qlast, wr, sge, &t_start, &t_end, ss_t);
	rc = clk_end(&clk, x, rc);
	x->duration_ns = ticks_ns(x, t_start, t_end);
	a->steady_ns = ticks_ns(x, ss_t[0], ss_t[1]);
	if (!a->steady_ns)
		a->steady_wrs = 0;
	x->start_ns = 0;
	if (t_start)
		x->start_ns = clk.ns0 + (t_start > clk.t0 ? ticks_ns(x, clk.t0, t_start) : 0);
	a->completed = 0;
	for (int q = 0; q < nqp; q++) {
		a->completed += a->done[q];
		a->qlast_ns[q] = a->done[q] ? ticks_ns(x, t_start, qlast[q]) : 0;
	}
	free(qlast);
	free(posted);
	free(target);
	free(lcur);
	free(rcur);
	free(pts);
	free(wr);
	free(sge);
	return rc;
}

// Why this loop cannot deadlock: a QP's send-queue slots are freed only when a signalled
// WR completes (and with it every earlier one). Posting stops for a QP only when its
// queue is full: tx_depth WRs outstanding, numbered done..done+tx_depth-1. Since
// cq_mod <= tx_depth, those include a multiple of cq_mod, a signalled WR whose
// completion frees the queue. Chains are therefore cut to what fits; posting a whole
// chain or nothing would stall with as few as tx_depth-post_list+1 WRs outstanding.
// On a stop or the deadline each QP posts at most one more WR, signalled, so that
// everything posted is seen to complete.
static int bw(rb_bw_args *a, uint64_t *posted, uint64_t *target, uint32_t *lcur, uint32_t *rcur,
              int64_t *pts, int64_t *qlast, struct ibv_send_wr *wr, struct ibv_sge *sge, int64_t *t_start, int64_t *t_end,
              int64_t *ss_t) {
	rb_xfer *x = &a->x;
	const int nqp = a->nqp;
	const uint64_t depth = a->tx_depth, mod = a->cq_mod;
	const uint32_t pl = a->post_list;
	uint64_t *done = a->done;
	// What the WRs are built from, read once (see the post loop).
	const int send_flags = x->send_flags;
	const uint64_t laddr = x->laddr, lstride = a->lstride, stride = a->stride;
	const uint32_t lslots = a->lslots, rslots = a->rslots;
	const uint64_t *const raddr = a->raddr;
	const uint32_t *const rkey = a->rkey;
	struct ibv_qp *const *const qps = a->qps;
	struct ibv_qp_ex *const *const qpx = x->qpx;
	for (uint32_t i = 0; i < pl; i++) {
		sge[i].length = x->size;
		sge[i].lkey = x->lkey;
		wr[i].sg_list = &sge[i];
		wr[i].num_sge = 1;
		wr[i].opcode = a->opcode;
		wr[i].next = i + 1 < pl ? &wr[i + 1] : NULL;
	}
	int active = 0; // QPs with WRs still to complete
	for (int q = 0; q < nqp; q++) {
		target[q] = a->iters;
		active += a->iters > 0;
	}
	// The steady window (rb_bw_args.steady_*): from the first poll after every queue
	// turned over once (`turn` WRs complete: the fill, and the completions it held back,
	// behind it) to the last poll while every QP still had WRs to post. `feeding`
	// counts the QPs that have; `total` is every QP's done[] added up.
	int feeding = active;
	const uint64_t turn = (uint64_t)nqp * depth;
	uint64_t total = 0, ss_c0 = 0, ss_c1 = 0;
	int64_t ss_t0 = 0, ss_t1 = 0;
	int ss_open = 0;
	int stopping = 0;
	watchdog wd = {0};
	struct ibv_wc wc[POLL_BATCH];
	if (a->channel) {
		// An event left over from an earlier loop on this CQ (the warm-up's last
		// arming) is not this loop's: consume it uncounted, then arm.
		struct ibv_cq *ev_cq;
		void *ev_ctx;
		while (rb_wait_fd(a->channel->fd, 0) > 0) {
			if (ibv_get_cq_event(a->channel, &ev_cq, &ev_ctx))
				return verb_failed(x, "ibv_get_cq_event", errno);
			ibv_ack_cq_events(ev_cq, 1);
		}
		int err = ibv_req_notify_cq(x->cq, 0);
		if (err)
			return verb_failed(x, "ibv_req_notify_cq", err);
	}
	*t_start = *t_end = ticks();
	// Look at the stop flag and the clock every 64 units of work, a unit being a loop
	// turn or a WR posted: a turn can post a whole queue of WRs, and where the
	// provider does the transfer inside ibv_post_send (rxe in loopback) that takes long.
	uint32_t work = 0;
	// Each turn that posts starts at the QP after the one the last such turn started at:
	// where the provider does work inside ibv_post_send, the QP posted first would
	// otherwise be served first every time and get more than its share. Turns that post
	// nothing (e.g. the wake-up turn with --events) do not move it (one QP: q0 = 0).
	int q0 = 0;
	while (active > 0) {
		int check = work >= 64;
		if (check)
			work = 0;
		work++;
		uint32_t work0 = work;
		for (int k = 0, q = q0; k < nqp; k++, q = q + 1 == nqp ? 0 : q + 1) {
			// The QP's counts and addresses in locals: the post is an opaque call, after
			// which the compiler would load every one of them again for each WR.
			uint64_t p = posted[q];
			const uint64_t tq = target[q], dq = done[q];
			const uint64_t lbase = laddr + q * lstride, rbase = raddr[q];
			const uint32_t rk = rkey[q];
			struct ibv_qp *qp = qps[q];
			uint32_t lc = lcur[q], rc = rcur[q];
			while (p < tq) {
				uint64_t n = tq - p, room = depth - (p - dq);
				if (n > pl)
					n = pl;
				if (n > room)
					n = room;
				if (n == 0)
					break;
				int signalled = 0;
				for (uint64_t i = 0; i < n; i++) {
					uint64_t seq = p + i;
					wr[i].wr_id = ((uint64_t)q << RB_QSHIFT) | seq;
					wr[i].send_flags = send_flags;
					if ((seq + 1) % mod == 0 || seq + 1 == tq) {
						wr[i].send_flags |= IBV_SEND_SIGNALED;
						signalled = 1;
					}
					sge[i].addr = lbase + (uint64_t)lc * stride;
					wr[i].wr.rdma.remote_addr = rbase + (uint64_t)rc * stride;
					wr[i].wr.rdma.rkey = rk;
					if (++lc == lslots)
						lc = 0;
					if (++rc == rslots)
						rc = 0;
				}
				if (n < pl) // a whole chain ends in NULL already
					wr[n - 1].next = NULL;
				if (signalled) {
					int64_t t = ticks();
					for (uint64_t i = 0; i < n; i++)
						if (wr[i].send_flags & IBV_SEND_SIGNALED)
							pts[(size_t)q * depth + (p + i) % depth] = t;
				}
				int err = post_qpx(qpx, q, qp, wr);
				if (n < pl)
					wr[n - 1].next = &wr[n];
				if (err) {
					posted[q] = p;
					lcur[q] = lc;
					rcur[q] = rc;
					return verb_failed(x, post_verb(x), err);
				}
				p += n;
				work += n;
				if (p == tq)
					feeding--;
			}
			posted[q] = p;
			lcur[q] = lc;
			rcur[q] = rc;
		}
		if (work != work0 && ++q0 == nqp)
			q0 = 0;
		int ne = ibv_poll_cq(x->cq, POLL_BATCH, wc);
		if (ne < 0)
			return poll_failed(x);
		if (ne > 0) {
			int64_t t = ticks();
			for (int i = 0; i < ne; i++) {
				if (wc[i].status != IBV_WC_SUCCESS)
					return wc_failed(x, &wc[i]);
				int q = (int)(wc[i].wr_id >> RB_QSHIFT);
				uint64_t seq = wc[i].wr_id & SEQMASK;
				if (q >= nqp || seq < done[q] || seq >= posted[q])
					return unexpected(x, &wc[i]);
				int64_t dt = t - pts[(size_t)q * depth + seq % depth];
				sample(x, dt);
				if (a->qhist)
					rb_hist_add(&a->qhist[q], dt);
				qlast[q] = t;
				total += seq + 1 - done[q];
				// Atomic (a plain store on x86-64 and arm64): Go reads done[] during
				// the loop for --interval.
				__atomic_store_n(&done[q], seq + 1, __ATOMIC_RELAXED);
				if (done[q] == target[q])
					active--;
			}
			*t_end = t;
			if (!stopping && feeding == nqp && total >= turn) {
				if (!ss_open) {
					ss_open = 1;
					ss_t0 = ss_t1 = t;
					ss_c0 = ss_c1 = total;
				} else {
					ss_t1 = t;
					ss_c1 = total;
				}
			}
			progress(&wd);
		} else {
			if (a->channel) {
				// Nothing to reap: sleep until the CQ signals (or 100 ms, or the
				// deadline), re-arm, and poll again before the next sleep (a
				// completion after the re-arm raises an event).
				int ms = 100;
				if (a->deadline_ns && !stopping) {
					int64_t left = (a->deadline_ns - rb_now()) / 1000000 + 1;
					if (left < ms)
						ms = left < 1 ? 1 : (int)left;
				}
				int r = rb_wait_fd(a->channel->fd, ms);
				if (r < 0)
					return verb_failed(x, "poll(completion channel)", errno);
				if (r > 0) {
					struct ibv_cq *ev_cq;
					void *ev_ctx;
					if (ibv_get_cq_event(a->channel, &ev_cq, &ev_ctx))
						return verb_failed(x, "ibv_get_cq_event", errno);
					ibv_ack_cq_events(ev_cq, 1);
					a->events++;
					int err = ibv_req_notify_cq(x->cq, 0);
					if (err)
						return verb_failed(x, "ibv_req_notify_cq", err);
				}
				check = 1;
				wd.spins = 4095; // an idle sleep counts as a watchdog look
			}
			if (idle(&wd, x))
				return timed_out(x, "completions");
		}
		if (!stopping && check && (stopped(x) || (a->deadline_ns && rb_now() >= a->deadline_ns))) {
			stopping = 1;
			active = 0;
			for (int q = 0; q < nqp; q++) {
				// The last WR posted must be signalled; if it was not, post one more.
				uint64_t last = posted[q];
				int last_signalled = last == 0 || last % mod == 0 || last == target[q];
				if (last < target[q])
					target[q] = last_signalled ? last : last + 1;
				active += done[q] < target[q];
			}
		}
	}
	if (ss_open && ss_t1 > ss_t0) { // rb_bw converts the ticks once the loop's calibrated
		a->steady_wrs = ss_c1 - ss_c0;
		ss_t[0] = ss_t0;
		ss_t[1] = ss_t1;
	}
	return 0;
}

// ---- rounds ----

// span is the window a loop measured: the first post to the last completion or answer seen.
typedef struct {
	int64_t first, last;
} span;

static void span_end(rb_xfer *x, const span *w) { x->duration_ns = ticks_ns(x, w->first, w->last); }

static int rounds(rb_rounds_args *a, int64_t *tq, span *w);

int rb_rounds(rb_rounds_args *a) {
	rb_xfer *x = &a->x;
	int64_t *tq = calloc(a->nqp, sizeof(int64_t));
	memset(&x->fail, 0, sizeof(x->fail));
	for (int q = 0; q < a->nqp; q++)
		a->done[q] = 0;
	a->rounds = 0;
	rb_clock clk;
	span w = {0, 0};
	clk_begin(&clk);
	int rc = tq ? rounds(a, tq, &w) : verb_failed(x, "calloc", ENOMEM);
	rc = clk_end(&clk, x, rc);
	span_end(x, &w);
	for (int q = 0; q < a->nqp; q++)
		a->qlast_ns[q] = tq && a->done[q] ? ticks_ns(x, w.first, tq[q]) : 0;
	free(tq);
	return rc;
}

// Each QP has at most one WR outstanding, WR r of round r; its completion is that QP's
// part of the round. tq[q] is the tick at which QP q's completion was seen. Round r
// posts first to QP r mod nqp, so that over the rounds every QP waits as often behind
// the others' posts (a fixed order would make the last QP's latency look longest).
static int rounds(rb_rounds_args *a, int64_t *tq, span *w) {
	rb_xfer *x = &a->x;
	const int nqp = a->nqp;
	struct ibv_sge sge = {.length = x->size, .lkey = x->lkey};
	struct ibv_send_wr wr = {.sg_list = &sge, .num_sge = 1, .opcode = a->opcode};
	struct ibv_wc wc[POLL_BATCH];
	for (uint64_t r = 0; r < a->iters; r++) {
		if (stopped(x) || (a->deadline_ns && rb_now() >= a->deadline_ns))
			break;
		uint64_t lslot = r % a->lslots, rslot = r % a->rslots;
		int64_t t0 = ticks();
		for (int k = 0, q = (int)(r % (uint64_t)nqp); k < nqp; k++, q = q + 1 == nqp ? 0 : q + 1) {
			sge.addr = x->laddr + q * a->lstride + lslot * a->stride;
			wr.wr.rdma.remote_addr = a->raddr[q] + rslot * a->stride;
			wr.wr.rdma.rkey = a->rkey[q];
			wr.wr_id = ((uint64_t)q << RB_QSHIFT) | r;
			wr.send_flags = x->send_flags | IBV_SEND_SIGNALED;
			int err = post(x, q, a->qps[q], &wr);
			if (err) // the QPs posted before q this round still have its WR outstanding
				return verb_failed(x, post_verb(x), err);
		}
		int left = nqp;
		int64_t t1 = t0;
		watchdog wd = {0};
		while (left > 0) {
			int ne = ibv_poll_cq(x->cq, POLL_BATCH, wc);
			if (ne < 0)
				return poll_failed(x);
			if (ne == 0) {
				if (idle(&wd, x))
					return timed_out(x, "a round's completions");
				continue;
			}
			int64_t t = ticks();
			for (int i = 0; i < ne; i++) {
				if (wc[i].status != IBV_WC_SUCCESS)
					return wc_failed(x, &wc[i]);
				int q = (int)(wc[i].wr_id >> RB_QSHIFT);
				if (q >= nqp || (wc[i].wr_id & SEQMASK) != r || a->done[q] != r)
					return unexpected(x, &wc[i]);
				tq[q] = t;
				__atomic_store_n(&a->done[q], r + 1, __ATOMIC_RELAXED);
				left--;
			}
			t1 = t;
			w->last = t; // a round that fails half-way still counts its completions in the window
			if (r == 0)
				w->first = t0;
			progress(&wd);
		}
		sample(x, t1 - t0);
		if (a->qhist)
			for (int q = 0; q < nqp; q++)
				rb_hist_add(&a->qhist[q], tq[q] - t0);
		if (r == 0)
			w->first = t0;
		w->last = t1;
		a->rounds = r + 1;
	}
	return 0;
}

// ---- WRITE ping-pong ----

// reap polls the send completions once; *completed becomes the count of WRs known
// complete (RC completes in order).
static int reap(rb_xfer *x, struct ibv_wc *wc, uint64_t posted, uint64_t *completed) {
	int ne = ibv_poll_cq(x->cq, POLL_BATCH, wc);
	if (ne < 0)
		return poll_failed(x);
	for (int k = 0; k < ne; k++) {
		if (wc[k].status != IBV_WC_SUCCESS)
			return wc_failed(x, &wc[k]);
		if (wc[k].wr_id < *completed || wc[k].wr_id >= posted)
			return unexpected(x, &wc[k]);
		*completed = wc[k].wr_id + 1;
	}
	return 0;
}

// drain reaps until at most `left` WRs are outstanding. 1: done, 0: stopped, -1: failed.
static int drain(rb_xfer *x, struct ibv_wc *wc, uint64_t posted, uint64_t *completed, uint64_t left, const char *what) {
	watchdog wd = {0};
	while (posted - *completed > left) {
		if (reap(x, wc, posted, completed))
			return -1;
		if (stopped(x))
			return 0;
		if (idle(&wd, x))
			return timed_out(x, what);
	}
	return 1;
}

// await spins until the last byte of the receive region reads v. Every 256 spins it
// polls the CQ (a failed WR surfaces there, e.g. when the peer is gone) and looks at the
// stop flag; the watchdog bounds the wait. 1: arrived, 0: stopped, -1: failed.
static int await(rb_pp_args *a, uint8_t v, struct ibv_wc *wc, uint64_t posted, uint64_t *completed) {
	rb_xfer *x = &a->x;
	watchdog wd = {0};
	for (uint32_t spin = 1;; spin++) {
		if (*a->rx_last == v)
			return 1;
		if ((spin & 255) == 0) {
			if (reap(x, wc, posted, completed))
				return -1;
			if (stopped(x))
				return 0;
			if (idle(&wd, x))
				return timed_out(x, a->initiator ? "the peer's answer" : "the peer's next message");
		}
	}
}

static int pingpong(rb_pp_args *a, struct ibv_send_wr *wrp, volatile uint8_t *tx_last, struct ibv_wc *wc, span *w);

int rb_pingpong(rb_pp_args *a) {
	rb_xfer *x = &a->x;
	struct ibv_sge sge = {.addr = x->laddr, .length = x->size, .lkey = x->lkey};
	struct ibv_send_wr wr = {
	    .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
	    .wr.rdma.remote_addr = x->raddr, .wr.rdma.rkey = x->rkey};
	volatile uint8_t *tx_last = (volatile uint8_t *)(uintptr_t)(x->laddr + x->size - 1);
	struct ibv_wc wc[POLL_BATCH];
	memset(&x->fail, 0, sizeof(x->fail));
	rb_clock clk;
	span w = {0, 0};
	clk_begin(&clk);
	int rc = pingpong(a, &wr, tx_last, wc, &w);
	rc = clk_end(&clk, x, rc);
	span_end(x, &w);
	return rc;
}

static int pingpong(rb_pp_args *a, struct ibv_send_wr *wrp, volatile uint8_t *tx_last, struct ibv_wc *wc, span *w) {
	rb_xfer *x = &a->x;
	struct ibv_send_wr wr = *wrp;
	uint64_t posted = 0, completed = 0;
	a->done = 0;
	int64_t answered = 0; // a timed responder: when it posted its last answer
	for (uint64_t i = 0; i < a->iters; i++) {
		uint64_t round = a->first + i;
		uint8_t v = a->perftest_bytes ? (uint8_t)(round + 1) : (uint8_t)(round % 255 + 1); // differs from the round before
		// Room in the send queue first (it is full only with sq_depth WRs outstanding):
		// the initiator before its clock starts, the responder before it looks for the
		// ping, so that nothing but the post stands between a ping and its pong.
		int r = drain(x, wc, posted, &completed, a->sq_depth - 1, "send-queue room");
		if (r <= 0)
			return r;
		if (!a->initiator && (r = await(a, v, wc, posted, &completed)) <= 0)
			return r;
		if (a->timed_responder && i > 0) {
			int64_t t1 = ticks();
			sample(x, t1 - answered);
			if (i == 1)
				w->first = answered;
			w->last = t1;
		}
		*tx_last = v;
		wr.wr_id = posted;
		wr.send_flags = x->send_flags;
		if ((posted + 1) % a->cq_mod == 0 || i + 1 == a->iters)
			wr.send_flags |= IBV_SEND_SIGNALED;
		int64_t t0 = a->initiator || a->timed_responder ? ticks() : 0;
		int err = post(x, 0, a->qp, &wr);
		if (err)
			return verb_failed(x, post_verb(x), err);
		posted++;
		answered = t0;
		if (a->initiator) {
			if ((r = await(a, v, wc, posted, &completed)) <= 0)
				return r;
			int64_t t1 = ticks();
			sample(x, t1 - t0);
			if (i == 0)
				w->first = t0;
			w->last = t1;
		}
		// Reap after posting, outside the round trip. (perftest's sample is the time
		// from one post to the next, so it also holds this reap and the loop's own
		// work; ours is the post to the answer seen.)
		if (reap(x, wc, posted, &completed))
			return -1;
		a->done = i + 1;
	}
	// Wait for the last (signalled) write so that the QP is idle when we return.
	int r = drain(x, wc, posted, &completed, 0, "the last completion");
	return r < 0 ? r : 0;
}

// ---- READ latency ----

static int read_lat(rb_rl_args *a, struct ibv_send_wr *wrp, span *w);

int rb_read_lat(rb_rl_args *a) {
	rb_xfer *x = &a->x;
	struct ibv_sge sge = {.addr = x->laddr, .length = x->size, .lkey = x->lkey};
	struct ibv_send_wr wr = {
	    .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_READ,
	    .send_flags = IBV_SEND_SIGNALED,
	    .wr.rdma.remote_addr = x->raddr, .wr.rdma.rkey = x->rkey};
	memset(&x->fail, 0, sizeof(x->fail));
	rb_clock clk;
	span w = {0, 0};
	clk_begin(&clk);
	int rc = read_lat(a, &wr, &w);
	rc = clk_end(&clk, x, rc);
	span_end(x, &w);
	return rc;
}

static int read_lat(rb_rl_args *a, struct ibv_send_wr *wrp, span *w) {
	rb_xfer *x = &a->x;
	struct ibv_send_wr wr = *wrp;
	struct ibv_wc wc;
	a->done = 0;
	for (uint64_t i = 0; i < a->iters; i++) {
		wr.wr_id = i;
		int64_t t0 = ticks();
		int err = post(x, 0, a->qp, &wr);
		if (err)
			return verb_failed(x, post_verb(x), err);
		int ne;
		watchdog wd = {0};
		while ((ne = ibv_poll_cq(x->cq, 1, &wc)) == 0) {
			if (stopped(x))
				return 0;
			if (idle(&wd, x))
				return timed_out(x, "the READ's completion");
		}
		int64_t t1 = ticks();
		if (ne < 0)
			return poll_failed(x);
		if (wc.status != IBV_WC_SUCCESS)
			return wc_failed(x, &wc);
		if (wc.wr_id != i)
			return unexpected(x, &wc);
		sample(x, t1 - t0);
		if (i == 0)
			w->first = t0;
		w->last = t1;
		a->done = i + 1;
	}
	return 0;
}

// ---- bandwidth with the registration in the loop ----

// An outstanding WR of rb_bw_mr: its post stamp (when signalled) and the registration
// it uses: per-io its own MR (NULL once deregistered), cache an entry.
typedef struct {
	int64_t pt;
	struct ibv_mr *mr;
	int32_t ent;
} mr_wr;

// A registration of the cache: the slot it covers, the outstanding WRs using it, and
// its place in the idle list (entries no WR uses, the most recently released first;
// completions come in order, so that is the order of their last use).
typedef struct {
	uint64_t addr;
	uint32_t len, refs;
	struct ibv_mr *mr; // NULL: not registered
	int32_t prev, next;
} mr_ent;

// The cache: at most cap entries, found by (address, length) in an open-addressing
// table (linear probing, at least twice as many buckets as entries, so a look-up costs
// the same whatever the cache's size).
typedef struct {
	mr_ent *e;
	uint32_t n, cap;
	int32_t *tab; // entry index, -1: empty
	uint32_t mask;
	int32_t idle_head, idle_tail;
} mr_cache;

typedef struct {
	rb_bw_mr_args *a;
	mr_wr *ring; // tx_depth entries, WR seq at seq % tx_depth
	mr_cache c;
	uint64_t posted;
	int64_t t_start, t_end;
	int64_t reg_t, dereg_t; // ticks inside ibv_reg_mr, and inside ibv_dereg_mr in the window
} mr_loop;

static uint32_t mr_hash(uint64_t addr, uint32_t len) {
	uint64_t h = (addr ^ ((uint64_t)len << 40) ^ (addr >> 29)) * 0x9E3779B97F4A7C15ULL;
	return (uint32_t)(h >> 32);
}

static int cache_init(mr_cache *c, uint32_t cap) {
	uint32_t buckets = 2;
	while (buckets < 2 * (uint64_t)cap)
		buckets <<= 1;
	c->e = calloc(cap, sizeof(mr_ent));
	c->tab = malloc((size_t)buckets * sizeof(int32_t));
	if (!c->e || !c->tab)
		return -1;
	memset(c->tab, 0xff, (size_t)buckets * sizeof(int32_t));
	c->n = 0;
	c->cap = cap;
	c->mask = buckets - 1;
	c->idle_head = c->idle_tail = -1;
	return 0;
}

// cache_find returns the entry holding (addr, len), or -1.
static int32_t cache_find(const mr_cache *c, uint64_t addr, uint32_t len) {
	for (uint32_t i = mr_hash(addr, len) & c->mask;; i = (i + 1) & c->mask) {
		int32_t k = c->tab[i];
		if (k < 0 || (c->e[k].addr == addr && c->e[k].len == len))
			return k;
	}
}

static void cache_insert(mr_cache *c, int32_t k) {
	uint32_t i = mr_hash(c->e[k].addr, c->e[k].len) & c->mask;
	while (c->tab[i] >= 0)
		i = (i + 1) & c->mask;
	c->tab[i] = k;
}

// cache_remove takes entry k out of the table, moving back the entries after it that
// would no longer be found (deletion without tombstones).
static void cache_remove(mr_cache *c, int32_t k) {
	uint32_t i = mr_hash(c->e[k].addr, c->e[k].len) & c->mask;
	while (c->tab[i] != k)
		i = (i + 1) & c->mask;
	for (uint32_t j = i;;) {
		j = (j + 1) & c->mask;
		int32_t m = c->tab[j];
		if (m < 0)
			break;
		uint32_t h = mr_hash(c->e[m].addr, c->e[m].len) & c->mask;
		// m stays where it is when its home bucket h lies cyclically in (i, j].
		if (i <= j ? (i < h && h <= j) : (i < h || h <= j))
			continue;
		c->tab[i] = m;
		i = j;
	}
	c->tab[i] = -1;
}

static void idle_push(mr_cache *c, int32_t k) {
	c->e[k].prev = -1;
	c->e[k].next = c->idle_head;
	if (c->idle_head >= 0)
		c->e[c->idle_head].prev = k;
	else
		c->idle_tail = k;
	c->idle_head = k;
}

static void idle_unlink(mr_cache *c, int32_t k) {
	mr_ent *e = &c->e[k];
	if (e->prev >= 0)
		c->e[e->prev].next = e->next;
	else
		c->idle_head = e->next;
	if (e->next >= 0)
		c->e[e->next].prev = e->prev;
	else
		c->idle_tail = e->prev;
	e->prev = e->next = -1;
}

// dereg_err is ibv_dereg_mr's outcome as an errno (it returns one; a provider may
// return -1 and set errno instead).
static int dereg_err(struct ibv_mr *mr) {
	errno = 0;
	int rc = ibv_dereg_mr(mr);
	if (rc == 0)
		return 0;
	return rc > 0 ? rc : errno ? errno : EIO;
}

// mr_reg registers size bytes at addr, timed, into *mrp.
static int mr_reg(mr_loop *l, uint64_t addr, struct ibv_mr **mrp) {
	rb_xfer *x = &l->a->x;
	int64_t t0 = ticks();
	errno = 0;
	struct ibv_mr *mr = ibv_reg_mr(l->a->pd, (void *)(uintptr_t)addr, x->size, l->a->access);
	int err = errno;
	int64_t t1 = ticks();
	if (t1 > t0)
		l->reg_t += t1 - t0;
	if (!mr)
		return verb_failed(x, "ibv_reg_mr", err ? err : ENOMEM);
	l->a->regs++;
	*mrp = mr;
	return 0;
}

// mr_dereg deregisters *mrp inside the window, timed; *end becomes the tick it returned.
// On a failure *mrp stays, for the sweep after the window to try again.
static int mr_dereg(mr_loop *l, struct ibv_mr **mrp, int64_t *end) {
	int64_t t0 = ticks();
	int err = dereg_err(*mrp);
	int64_t t1 = ticks();
	if (t1 > t0)
		l->dereg_t += t1 - t0;
	if (err)
		return verb_failed(&l->a->x, "ibv_dereg_mr", err);
	*mrp = NULL;
	l->a->deregs++;
	if (t1 > *end)
		*end = t1;
	return 0;
}

// mr_get gives WR seq, about to be posted from addr, its registration: *hit says whether
// the cache had it.
static int mr_get(mr_loop *l, uint64_t seq, uint64_t addr, uint32_t *lkey, int *hit) {
	rb_bw_mr_args *a = l->a;
	mr_wr *w = &l->ring[seq % a->tx_depth];
	*hit = 0;
	if (a->mode == RB_MRMODE_PER_IO) {
		if (mr_reg(l, addr, &w->mr))
			return -1;
		*lkey = w->mr->lkey;
		return 0;
	}
	mr_cache *c = &l->c;
	int32_t k = cache_find(c, addr, a->x.size);
	if (k >= 0) {
		*hit = 1;
		if (c->e[k].refs++ == 0)
			idle_unlink(c, k);
	} else {
		if (c->n < c->cap) {
			k = (int32_t)c->n++;
		} else {
			// Full: evict the least recently used entry that no outstanding WR uses.
			// There is one: at most tx_depth-1 WRs are outstanding, each holding one
			// entry, and cap >= tx_depth.
			k = c->idle_tail;
			if (k < 0)
				return verb_failed(&a->x, "registration cache (every entry in use)", ENOSPC);
			idle_unlink(c, k);
			cache_remove(c, k);
			int64_t end = 0;
			if (mr_dereg(l, &c->e[k].mr, &end))
				return -1;
		}
		c->e[k].addr = addr;
		c->e[k].len = a->x.size;
		c->e[k].refs = 1;
		c->e[k].prev = c->e[k].next = -1;
		if (mr_reg(l, addr, &c->e[k].mr))
			return -1;
		cache_insert(c, k);
	}
	w->ent = k;
	*lkey = c->e[k].mr->lkey;
	return 0;
}

// mr_put: WR seq is known complete. Per-io its MR goes (*end: when that was done); in
// the cache its entry is released, idle once no outstanding WR uses it.
static int mr_put(mr_loop *l, uint64_t seq, int64_t *end) {
	mr_wr *w = &l->ring[seq % l->a->tx_depth];
	if (l->a->mode == RB_MRMODE_PER_IO)
		return mr_dereg(l, &w->mr, end);
	if (--l->c.e[w->ent].refs == 0)
		idle_push(&l->c, w->ent);
	return 0;
}

// mr_sweep deregisters, after the window, every MR the loop still holds; rc is the
// loop's outcome, which a failure here replaces only where it was a success. On a
// failed loop (a failed post, a timeout, an error completion) WRs may still be on the
// QP: their MRs go too, so a NIC still retrying them completes them with a local
// protection error into a CQ nobody polls; the run has failed and the session (its QPs
// and CQ) is destroyed next, so nothing reads or writes the memory afterwards.
static int mr_sweep(mr_loop *l, int rc) {
	rb_bw_mr_args *a = l->a;
	uint32_t n = l->ring && a->mode == RB_MRMODE_PER_IO ? a->tx_depth : 0, m = l->c.e ? l->c.n : 0;
	for (uint32_t i = 0; i < n + m; i++) {
		struct ibv_mr **mrp = i < n ? &l->ring[i].mr : &l->c.e[i - n].mr;
		if (!*mrp)
			continue;
		int err = dereg_err(*mrp);
		if (err) {
			if (rc == 0)
				rc = verb_failed(&a->x, "ibv_dereg_mr", err);
			continue;
		}
		*mrp = NULL;
		a->deregs++;
		a->deregs_after++;
	}
	return rc;
}

static int bw_mr(mr_loop *l);

int rb_bw_mr(rb_bw_mr_args *a) {
	rb_xfer *x = &a->x;
	mr_loop l;
	memset(&l, 0, sizeof(l));
	l.a = a;
	memset(&x->fail, 0, sizeof(x->fail));
	*a->done = 0;
	a->completed = a->regs = a->deregs = a->deregs_after = a->hits = a->misses = 0;
	a->reg_ns = a->dereg_ns = 0;
	rb_clock clk;
	int rc;
	clk_begin(&clk);
	if ((a->mode != RB_MRMODE_PER_IO && a->mode != RB_MRMODE_CACHE) || a->tx_depth < 1 || a->cq_mod < 1 ||
	    a->cq_mod > a->tx_depth || a->lslots < 1 || a->rslots < 1 ||
	    (a->mode == RB_MRMODE_CACHE && (a->cache_size < a->tx_depth || a->cache_size > (1u << 30))))
		rc = verb_failed(x, "rb_bw_mr(arguments)", EINVAL);
	else if (!(l.ring = calloc(a->tx_depth, sizeof(mr_wr))) ||
	         (a->mode == RB_MRMODE_CACHE && cache_init(&l.c, a->cache_size)))
		rc = verb_failed(x, "calloc", ENOMEM);
	else
		rc = bw_mr(&l);
	rc = mr_sweep(&l, rc); // the window is closed
	rc = clk_end(&clk, x, rc);
	x->duration_ns = ticks_ns(x, l.t_start, l.t_end);
	a->completed = *a->done;
	*a->qlast_ns = a->completed ? x->duration_ns : 0;
	a->reg_ns = ticks_ns(x, 0, l.reg_t);
	a->dereg_ns = ticks_ns(x, 0, l.dereg_t);
	free(l.ring);
	free(l.c.e);
	free(l.c.tab);
	return rc;
}

// The loop is rb_bw's on one QP with a post list of 1, so the same argument rules out a
// deadlock (a signalled WR among any tx_depth outstanding ones), and a stop or the
// deadline posts at most one more WR, signalled. What it adds: each WR gets its
// registration just before it is posted, and gives it back when it is known complete
// (with cq_mod > 1, at the completion of the signalled WR after it). The window runs
// from before the first registration to the end of the last batch of completions'
// handling, deregistrations included.
static int bw_mr(mr_loop *l) {
	rb_bw_mr_args *a = l->a;
	rb_xfer *x = &a->x;
	const uint64_t depth = a->tx_depth, mod = a->cq_mod;
	uint64_t *done = a->done, target = a->iters;
	uint32_t lcur = 0, rcur = 0;
	struct ibv_sge sge = {.length = x->size};
	struct ibv_send_wr wr = {.sg_list = &sge, .num_sge = 1, .opcode = a->opcode};
	wr.wr.rdma.rkey = x->rkey;
	int stopping = 0;
	watchdog wd = {0};
	struct ibv_wc wc[POLL_BATCH];
	l->t_start = l->t_end = ticks();
	uint32_t work = 0; // as in rb_bw: a loop turn or a WR posted
	while (*done < target) {
		int check = work >= 64;
		if (check)
			work = 0;
		work++;
		while (l->posted < target && l->posted - *done < depth) {
			uint64_t seq = l->posted;
			int hit;
			sge.addr = x->laddr + (uint64_t)lcur * a->stride;
			if (mr_get(l, seq, sge.addr, &sge.lkey, &hit))
				return -1;
			wr.wr_id = seq;
			wr.send_flags = x->send_flags;
			wr.wr.rdma.remote_addr = x->raddr + (uint64_t)rcur * a->stride;
			if ((seq + 1) % mod == 0 || seq + 1 == target) {
				wr.send_flags |= IBV_SEND_SIGNALED;
				l->ring[seq % depth].pt = ticks();
			}
			int err = post(x, 0, a->qp, &wr);
			if (err) // its registration stays where the sweep finds it
				return verb_failed(x, post_verb(x), err);
			l->posted++;
			if (a->mode == RB_MRMODE_CACHE) {
				if (hit)
					a->hits++;
				else
					a->misses++;
			}
			if (++lcur == a->lslots)
				lcur = 0;
			if (++rcur == a->rslots)
				rcur = 0;
			work++;
		}
		int ne = ibv_poll_cq(x->cq, POLL_BATCH, wc);
		if (ne < 0)
			return poll_failed(x);
		if (ne > 0) {
			int64_t t = ticks(), end = t;
			for (int i = 0; i < ne; i++) {
				if (wc[i].status != IBV_WC_SUCCESS)
					return wc_failed(x, &wc[i]);
				uint64_t seq = wc[i].wr_id;
				if (seq < *done || seq >= l->posted)
					return unexpected(x, &wc[i]);
				sample(x, t - l->ring[seq % depth].pt);
				for (uint64_t s = *done; s <= seq; s++)
					if (mr_put(l, s, &end))
						return -1;
				__atomic_store_n(done, seq + 1, __ATOMIC_RELAXED);
			}
			l->t_end = end;
			progress(&wd);
		} else if (idle(&wd, x)) {
			return timed_out(x, "completions");
		}
		if (!stopping && check && (stopped(x) || (a->deadline_ns && rb_now() >= a->deadline_ns))) {
			stopping = 1;
			// The last WR posted must be signalled; if it was not, post one more.
			uint64_t last = l->posted;
			int last_signalled = last == 0 || last % mod == 0 || last == target;
			if (last < target)
				target = last_signalled ? last : last + 1;
		}
	}
	return 0;
}
