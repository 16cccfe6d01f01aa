//go:build linux && cgo

// rb_bw.c: the bandwidth loop, rb_bw. See rb.h for its contract, rb_loop.h for the
// rules it shares with rb_bw_mr. No function here calls back into Go.
#include "rb_loop.h"
#include <stdlib.h>
#include <string.h>

// bw_mem: what rb_bw allocates for the loop, and the window the loop measured (ticks).
typedef struct {
	uint64_t *posted, *target; // per QP: WRs posted; WRs to post (cut at a stop)
	uint32_t *lcur, *rcur;     // per QP: the next WR's local and remote slot
	int64_t *pts;              // per QP, tx_depth: a signalled WR's post stamp, at seq % tx_depth
	int64_t *qlast;            // per QP: its last completion seen
	struct ibv_send_wr *wr;    // the chain, post_list WRs
	struct ibv_sge *sge;
	int64_t t_start, t_end;
	int64_t ss_t0, ss_t1; // the steady window (0, 0: none)
} bw_mem;

// bw_loop: the loop's arrays and what its WRs are built from, read once into a local of
// bw that only the always_inline steps see, so that its fields stay in registers: the
// post is an opaque call, after which the compiler would load each of them again through
// a and x for every WR.
typedef struct {
	bw_mem *m;
	uint64_t *done;
	int nqp;
	int send_flags;
	uint32_t pl, lslots, rslots;
	uint64_t depth, mod, laddr, lstride, stride;
	const uint64_t *raddr;
	const uint32_t *rkey;
	struct ibv_qp *const *qps;
	struct ibv_qp_ex *const *qpx;
} bw_loop;

// bw_steady: the steady window (rb_bw_args.steady_*): from the first poll after every
// queue turned over once (nqp x tx_depth WRs complete: the fill, and the completions it
// held back, behind it) to the last poll while every QP still had WRs to post.
typedef struct {
	int open;
	uint64_t c0, c1; // WRs complete, all QPs, at its ends
	int64_t t0, t1;
} bw_steady;

// bw_state: the loop's counts, a local of bw that only the always_inline steps see.
typedef struct {
	int active;      // QPs with WRs still to complete
	int feeding;     // QPs with WRs still to post
	int stopping;    // the stop flag or the deadline was seen: targets are cut
	uint64_t total;  // every QP's done[] added up
	bw_steady ss;
	watchdog wd;
} bw_state;

static int bw(rb_bw_args *a, bw_mem *m);

// gate_wait arrives at the gate of loops on several threads and waits (a second at
// most) for the others; a loop arrives even when failing, so that none waits for it.
static void gate_wait(rb_bw_args *a) {
	__atomic_add_fetch(a->gate, 1, __ATOMIC_ACQ_REL);
	for (int64_t until = rb_now() + 1000000000;
	     __atomic_load_n(a->gate, __ATOMIC_ACQUIRE) < a->gate_n && !stopped(&a->x) && rb_now() < until;)
		;
}

int rb_bw(rb_bw_args *a) {
	const int nqp = a->nqp;
	rb_xfer *x = &a->x;
	bw_mem m = {
	    .posted = calloc(nqp, sizeof(uint64_t)),
	    .target = calloc(nqp, sizeof(uint64_t)),
	    .lcur = calloc(nqp, sizeof(uint32_t)),
	    .rcur = calloc(nqp, sizeof(uint32_t)),
	    .pts = calloc((size_t)nqp * a->tx_depth, sizeof(int64_t)),
	    .qlast = calloc(nqp, sizeof(int64_t)),
	    .wr = calloc(a->post_list, sizeof(struct ibv_send_wr)),
	    .sge = calloc(a->post_list, sizeof(struct ibv_sge)),
	};
	int rc;
	rb_clock clk;
	memset(&x->fail, 0, sizeof(x->fail));
	for (int q = 0; q < nqp; q++)
		a->done[q] = 0;
	a->events = 0;
	a->steady_wrs = 0;
	a->steady_ns = 0;
	clk_begin(&clk);
	if (a->gate)
		gate_wait(a);
	if (!m.posted || !m.target || !m.lcur || !m.rcur || !m.pts || !m.qlast || !m.wr || !m.sge)
		rc = verb_failed(x, "calloc", ENOMEM);
	else
		rc = bw(a, &m);
	rc = rb_clk_end(&clk, x, rc);
	x->duration_ns = ticks_ns(x, m.t_start, m.t_end);
	a->steady_ns = ticks_ns(x, m.ss_t0, m.ss_t1);
	if (!a->steady_ns)
		a->steady_wrs = 0;
	x->start_ns = 0;
	if (m.t_start)
		x->start_ns = clk.ns0 + (m.t_start > clk.t0 ? ticks_ns(x, clk.t0, m.t_start) : 0);
	a->completed = 0;
	for (int q = 0; q < nqp; q++) {
		a->completed += a->done[q];
		a->qlast_ns[q] = a->done[q] ? ticks_ns(x, m.t_start, m.qlast[q]) : 0;
	}
	free(m.qlast);
	free(m.posted);
	free(m.target);
	free(m.lcur);
	free(m.rcur);
	free(m.pts);
	free(m.wr);
	free(m.sge);
	return rc;
}

// bw_chain sets the chain's fields that no WR changes: one SGE each, the opcode, the
// links (a whole chain ends in NULL).
static void bw_chain(rb_bw_args *a, struct ibv_send_wr *wr, struct ibv_sge *sge) {
	for (uint32_t i = 0; i < a->post_list; i++) {
		sge[i].length = a->x.size;
		sge[i].lkey = a->x.lkey;
		wr[i].sg_list = &sge[i];
		wr[i].num_sge = 1;
		wr[i].opcode = a->opcode;
		wr[i].next = i + 1 < a->post_list ? &wr[i + 1] : NULL;
	}
}

// bw_post_qp posts QP q's next WRs, in chains of up to post_list cut to what its send
// queue has room for, until the queue is full or the QP has posted its target. Each WR
// posted is a unit of *work; a QP that posts its last WR leaves *feeding.
static inline __attribute__((always_inline)) int bw_post_qp(const bw_loop *L, rb_xfer *x, int q, uint32_t *work,
                                                            int *feeding) {
	bw_mem *const m = L->m;
	struct ibv_send_wr *const wr = m->wr;
	struct ibv_sge *const sge = m->sge;
	int64_t *const pts = m->pts;
	// The QP's counts and addresses in locals too, for the same reason as L's.
	uint64_t p = m->posted[q];
	const uint64_t tq = m->target[q], dq = L->done[q];
	const uint64_t lbase = L->laddr + q * L->lstride, rbase = L->raddr[q];
	const uint32_t rk = L->rkey[q];
	struct ibv_qp *qp = L->qps[q];
	uint32_t lc = m->lcur[q], rc = m->rcur[q];
	while (p < tq) {
		uint64_t n = tq - p, room = L->depth - (p - dq);
		if (n > L->pl)
			n = L->pl;
		if (n > room)
			n = room;
		if (n == 0)
			break;
		int signalled = 0;
		for (uint64_t i = 0; i < n; i++) {
			uint64_t seq = p + i;
			wr[i].wr_id = ((uint64_t)q << RB_QSHIFT) | seq;
			wr[i].send_flags = L->send_flags;
			if (signals(seq, L->mod, tq)) {
				wr[i].send_flags |= IBV_SEND_SIGNALED;
				signalled = 1;
			}
			sge[i].addr = lbase + (uint64_t)lc * L->stride;
			wr[i].wr.rdma.remote_addr = rbase + (uint64_t)rc * L->stride;
			wr[i].wr.rdma.rkey = rk;
			if (++lc == L->lslots)
				lc = 0;
			if (++rc == L->rslots)
				rc = 0;
		}
		if (n < L->pl) // a whole chain ends in NULL already
			wr[n - 1].next = NULL;
		if (signalled) {
			int64_t t = ticks();
			for (uint64_t i = 0; i < n; i++)
				if (wr[i].send_flags & IBV_SEND_SIGNALED)
					pts[(size_t)q * L->depth + (p + i) % L->depth] = t;
		}
		int err = post_qpx(L->qpx, q, qp, wr);
		if (n < L->pl)
			wr[n - 1].next = &wr[n];
		if (err) {
			m->posted[q] = p;
			m->lcur[q] = lc;
			m->rcur[q] = rc;
			return verb_failed(x, post_verb(x), err);
		}
		p += n;
		*work += n;
		if (p == tq)
			(*feeding)--;
	}
	m->posted[q] = p;
	m->lcur[q] = lc;
	m->rcur[q] = rc;
	return 0;
}

// bw_post_turn posts a turn: every QP, from QP *q0 on, posts what fits. Each turn that
// posts starts at the QP after the one the last such turn started at: where the
// provider does work inside ibv_post_send, the QP posted first would otherwise be
// served first every time and get more than its share. Turns that post nothing (e.g.
// the wake-up turn with --events) do not move it (one QP: *q0 = 0).
static inline __attribute__((always_inline)) int bw_post_turn(const bw_loop *L, rb_xfer *x, int *q0, uint32_t *work,
                                                              int *feeding) {
	const int nqp = L->nqp;
	uint32_t work0 = *work;
	for (int k = 0, q = *q0; k < nqp; k++, q = q + 1 == nqp ? 0 : q + 1)
		if (bw_post_qp(L, x, q, work, feeding))
			return -1;
	if (*work != work0 && ++*q0 == nqp)
		*q0 = 0;
	return 0;
}

// bw_steady_see extends the steady window to a poll at t that reaped completions, or
// opens it there.
static inline void bw_steady_see(bw_steady *ss, int64_t t, uint64_t total) {
	if (!ss->open) {
		ss->open = 1;
		ss->t0 = ss->t1 = t;
		ss->c0 = ss->c1 = total;
	} else {
		ss->t1 = t;
		ss->c1 = total;
	}
}

// bw_reap polls the CQ once and takes in what it reaped: the samples, each QP's count
// (a signalled WR's completion completes every earlier WR of its QP), the window. It
// returns the number of completions, or -1 on a failure.
static inline __attribute__((always_inline)) int bw_reap(const bw_loop *L, rb_bw_args *a, struct ibv_wc *wc,
                                                         bw_state *s) {
	rb_xfer *x = &a->x;
	bw_mem *const m = L->m;
	uint64_t *const done = L->done;
	int ne = ibv_poll_cq(x->cq, POLL_BATCH, wc);
	if (ne <= 0)
		return ne < 0 ? poll_failed(x) : 0;
	int64_t t = ticks();
	for (int i = 0; i < ne; i++) {
		if (wc[i].status != IBV_WC_SUCCESS)
			return wc_failed(x, &wc[i]);
		int q = (int)(wc[i].wr_id >> RB_QSHIFT);
		uint64_t seq = wc[i].wr_id & SEQMASK;
		if (q >= L->nqp || seq < done[q] || seq >= m->posted[q])
			return unexpected(x, &wc[i]);
		int64_t dt = t - m->pts[(size_t)q * L->depth + seq % L->depth];
		sample(x, dt);
		if (a->qhist)
			rb_hist_add(&a->qhist[q], dt);
		m->qlast[q] = t;
		s->total += seq + 1 - done[q];
		// Atomic (a plain store on x86-64 and arm64): Go reads done[] during the loop
		// for --interval.
		__atomic_store_n(&done[q], seq + 1, __ATOMIC_RELAXED);
		if (done[q] == m->target[q])
			s->active--;
	}
	m->t_end = t;
	if (!s->stopping && s->feeding == L->nqp && s->total >= (uint64_t)L->nqp * L->depth)
		bw_steady_see(&s->ss, t, s->total);
	progress(&s->wd);
	return ne;
}

// bw_arm readies the completion channel (--events): an event left over from an earlier
// loop on this CQ (the warm-up's last arming) is not this loop's, so it is consumed
// uncounted; then the CQ is armed.
static int bw_arm(rb_bw_args *a) {
	rb_xfer *x = &a->x;
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
	return 0;
}

// bw_sleep, when a poll reaped nothing (--events), sleeps until the CQ signals (or
// 100 ms, or the deadline unless the loop is stopping) and re-arms it; the loop polls
// again before the next sleep (a completion after the re-arm raises an event).
static int bw_sleep(rb_bw_args *a, int stopping) {
	rb_xfer *x = &a->x;
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
	return 0;
}

// bw_begin_stop cuts every QP's target to what it has posted (plus one signalled WR
// where its last was not: stop_target) and returns how many QPs still have WRs to
// complete.
static int bw_begin_stop(rb_bw_args *a, const uint64_t *posted, uint64_t *target) {
	int active = 0;
	for (int q = 0; q < a->nqp; q++) {
		target[q] = stop_target(posted[q], a->cq_mod, target[q]);
		active += a->done[q] < target[q];
	}
	return active;
}

// Why this loop cannot deadlock: a QP's send-queue slots are freed only when a signalled
// WR completes (and with it every earlier one). Posting stops for a QP only when its
// queue is full: tx_depth WRs outstanding, numbered done..done+tx_depth-1. Since
// cq_mod <= tx_depth, those include a multiple of cq_mod, a signalled WR whose
// completion frees the queue. Chains are therefore cut to what fits; posting a whole
// chain or nothing would stall with as few as tx_depth-post_list+1 WRs outstanding.
// On a stop or the deadline each QP posts at most one more WR, signalled, so that
// everything posted is seen to complete.
static int bw(rb_bw_args *a, bw_mem *m) {
	rb_xfer *x = &a->x;
	const bw_loop L = {
	    .m = m, .done = a->done, .nqp = a->nqp, .send_flags = x->send_flags,
	    .pl = a->post_list, .lslots = a->lslots, .rslots = a->rslots,
	    .depth = a->tx_depth, .mod = a->cq_mod, .laddr = x->laddr, .lstride = a->lstride, .stride = a->stride,
	    .raddr = a->raddr, .rkey = a->rkey, .qps = a->qps, .qpx = x->qpx,
	};
	bw_chain(a, m->wr, m->sge);
	bw_state s = {0};
	for (int q = 0; q < L.nqp; q++) {
		m->target[q] = a->iters;
		s.active += a->iters > 0;
	}
	s.feeding = s.active;
	struct ibv_wc wc[POLL_BATCH];
	if (a->channel && bw_arm(a))
		return -1;
	m->t_start = m->t_end = ticks();
	uint32_t work = 0; // see check_turn
	int q0 = 0;        // see bw_post_turn
	while (s.active > 0) {
		int check = check_turn(&work);
		if (bw_post_turn(&L, x, &q0, &work, &s.feeding))
			return -1;
		int ne = bw_reap(&L, a, wc, &s);
		if (ne < 0)
			return -1;
		if (ne == 0) {
			if (a->channel) {
				if (bw_sleep(a, s.stopping))
					return -1;
				check = 1;
				s.wd.spins = 4095; // an idle sleep counts as a watchdog look
			}
			if (idle(&s.wd, x))
				return timed_out(x, "completions");
		}
		if (!s.stopping && check && time_to_stop(x, a->deadline_ns)) {
			s.stopping = 1;
			s.active = bw_begin_stop(a, m->posted, m->target);
		}
	}
	if (s.ss.open && s.ss.t1 > s.ss.t0) { // rb_bw converts the ticks once the loop's calibrated
		a->steady_wrs = s.ss.c1 - s.ss.c0;
		m->ss_t0 = s.ss.t0;
		m->ss_t1 = s.ss.t1;
	}
	return 0;
}
