//go:build linux && cgo

// The model of the verbs queues: see model.h.
#include "model.h"
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static __thread qm_model *cur; // the model the loop on this thread is driving

#define MODEL_OF(ctxp) ((qm_model *)((char *)(ctxp) - offsetof(qm_model, ctx)))

static void violation(qm_model *m, int v, const char *fmt, ...) {
	if (m->viol[v]++ == 0) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(m->viol_msg[v], sizeof(m->viol_msg[v]), fmt, ap);
		va_end(ap);
	}
}

static uint64_t rnd(qm_model *m) {
	// xorshift64*
	uint64_t x = m->rng;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	m->rng = x;
	return x * 0x2545F4914F6CDD1DULL;
}

// ---- the CQ ----

static void cq_push(qm_model *m, const qm_cqe *e) {
	if (m->cq_end == m->cq_alloc) {
		if (m->cq_head > 0) {
			memmove(m->cqes, m->cqes + m->cq_head, (m->cq_end - m->cq_head) * sizeof(qm_cqe));
			m->cq_vis -= m->cq_head;
			m->cq_end -= m->cq_head;
			m->cq_head = 0;
		}
		if (m->cq_end == m->cq_alloc) {
			m->cq_alloc = m->cq_alloc ? 2 * m->cq_alloc : 64;
			m->cqes = realloc(m->cqes, m->cq_alloc * sizeof(qm_cqe));
			if (!m->cqes)
				abort();
		}
	}
	m->cqes[m->cq_end++] = *e;
}

// cq_arrive moves the CQEs that are due into the CQ, raising an event for the first
// one while the CQ is armed.
static void cq_arrive(qm_model *m) {
	while (m->cq_vis < m->cq_end && m->cqes[m->cq_vis].due <= m->tick) {
		m->cq_vis++;
		uint64_t n = m->cq_vis - m->cq_head;
		if (n > m->max_cq)
			m->max_cq = n;
		if (n > m->cfg.cq_cap)
			violation(m, QM_V_CQ_OVERFLOW, "%llu CQEs in a CQ of %u", (unsigned long long)n, m->cfg.cq_cap);
		if (m->armed) {
			m->armed = 0;
			m->ev_pending++;
			m->ev_raised++;
		}
	}
}

// ---- the network ----

static void peer_schedule(qm_model *m, int kind, uint8_t v, uint64_t round, int64_t post_clock) {
	if (m->nact == QM_MAX_ACTIONS) {
		violation(m, QM_V_PEER_QUEUE, "more than %d peer actions pending", QM_MAX_ACTIONS);
		return;
	}
	qm_action *a = &m->act[m->nact++];
	a->due = m->tick + m->cfg.peer_delay;
	a->kind = kind;
	a->v = v;
	a->round = round;
	a->post_clock = post_clock;
}

static uint8_t round_byte(qm_model *m, uint64_t r) {
	if (m->cfg.pp_perftest)
		return (uint8_t)(m->cfg.pp_first + r + 1); // perftest's write_lat: (char)count
	return (uint8_t)((m->cfg.pp_first + r) % 255 + 1);
}

// A WRITE of the loop's has landed in the peer's buffer: the ping-pong peer looks at it.
static void peer_sees_write(qm_model *m, const qm_wr *w) {
	uint32_t size = m->cfg.pp_size;
	if (m->cfg.pp == QM_PP_NONE || w->raddr + w->len != (uint64_t)(uintptr_t)m->cfg.rbase + size)
		return;
	uint8_t v = m->cfg.rbase[size - 1];
	uint64_t r = m->pp_round++;
	if (r >= m->cfg.pp_iters) {
		violation(m, QM_V_PP_BYTE, "a message after the last round (%llu)", (unsigned long long)r);
		return;
	}
	if (v != round_byte(m, r))
		violation(m, QM_V_PP_BYTE, "round %llu carried %u, want %u", (unsigned long long)r, v, round_byte(m, r));
	if (r >= m->cfg.peer_rounds)
		return; // the peer has gone silent
	if (m->cfg.pp == QM_PP_PEER_RESPONDS)
		peer_schedule(m, 1, v, r, w->post_clock);
	else if (r + 1 < m->cfg.pp_iters && r + 1 < m->cfg.peer_rounds)
		peer_schedule(m, 2, round_byte(m, r + 1), r + 1, w->post_clock);
}

static void times_add(qm_times *t, int64_t d) {
	if (t->n == 0 || d < t->min)
		t->min = d;
	if (t->n == 0 || d > t->max)
		t->max = d;
	t->n++;
	t->sum += d;
}

static void peer_act(qm_model *m) {
	int k = 0;
	while (k < m->nact) {
		qm_action *a = &m->act[k];
		if (a->due > m->tick) {
			k++;
			continue;
		}
		// The peer's message lands in the local receive region, its last byte last.
		uint32_t size = m->cfg.pp_size;
		memcpy(m->cfg.lbase, m->peer_tx, size - 1);
		__atomic_store_n(&m->cfg.lbase[size - 1], a->v, __ATOMIC_RELEASE);
		if (a->post_clock >= 0) {
			times_add(&m->rt, m->clock - a->post_clock);
		}
		if (a->kind == 1) {
			m->pp_answers++;
		} else {
			m->pp_pings++;
			m->ping_waiting = 1;
			m->ping_new = 1;
			m->ping_poll = m->polls;
		}
		m->act[k] = m->act[--m->nact];
	}
}

static int in_range(uint64_t a, uint32_t len, const uint8_t *base, size_t blen) {
	uint64_t b = (uint64_t)(uintptr_t)base;
	return a >= b && len <= blen && a - b <= blen - len;
}

static int faulty(qm_model *m, int q) {
	return m->cfg.fault != QM_FAULT_NONE && (m->cfg.fault_mask == 0 || (m->cfg.fault_mask >> q & 1));
}

static const char *mr_wrong(qm_model *m, uint32_t lkey, uint64_t addr, uint32_t len, int opcode);

// exec executes up to n WRs of QP p, in order.
static void exec(qm_model *m, qm_qp *p, uint64_t n) {
	for (; n > 0 && p->exec < p->tail; n--) {
		int fq = faulty(m, p->idx);
		if (!p->errored && fq && m->cfg.fault == QM_FAULT_STALL && p->taken >= m->cfg.fault_after)
			return; // the peer has vanished: nothing executes, nothing completes
		uint64_t seq = p->exec++;
		qm_wr *w = &p->ring[seq % m->cfg.depth];
		p->taken++;
		int status = IBV_WC_SUCCESS;
		if (p->errored)
			status = IBV_WC_WR_FLUSH_ERR;
		else if (fq && m->cfg.fault == QM_FAULT_FAIL && p->executed >= m->cfg.fault_after) {
			status = IBV_WC_RETRY_EXC_ERR;
			p->errored = 1;
		} else if (m->cfg.mr_check && mr_wrong(m, w->lkey, w->laddr, w->len, w->opcode)) {
			violation(m, QM_V_MR_INFLIGHT, "QP %d: WR %llx executed with lkey %#x: %s", p->idx,
			          (unsigned long long)w->wr_id, w->lkey, mr_wrong(m, w->lkey, w->laddr, w->len, w->opcode));
			status = IBV_WC_LOC_PROT_ERR;
			p->errored = 1;
		}
		if (status == IBV_WC_SUCCESS) {
			void *l = (void *)(uintptr_t)w->laddr, *r = (void *)(uintptr_t)w->raddr;
			if (w->opcode == IBV_WR_RDMA_WRITE)
				memmove(r, l, w->len);
			else
				memmove(l, r, w->len);
			p->executed++;
			if (w->signalled)
				m->sig_executed++;
			if (p->naddr == p->addrcap) {
				p->addrcap = p->addrcap ? 2 * p->addrcap : 256;
				p->addrs = realloc(p->addrs, p->addrcap * sizeof(qm_addr));
				if (!p->addrs)
					abort();
			}
			p->addrs[p->naddr].l = w->laddr - (uint64_t)(uintptr_t)m->cfg.lbase;
			p->addrs[p->naddr].r = w->raddr - (uint64_t)(uintptr_t)m->cfg.rbase;
			p->addrs[p->naddr].rkey = w->rkey;
			p->naddr++;
			if (w->opcode == IBV_WR_RDMA_WRITE)
				peer_sees_write(m, w);
		}
		if (fq && m->cfg.fault == QM_FAULT_STRAY && !m->strayed && p->executed > m->cfg.fault_after) {
			m->strayed = 1;
			qm_cqe s = {
			    .wr_id = m->cfg.stray_wrid ? m->cfg.stray_wrid : QM_STRAY_WRID,
			    .status = IBV_WC_SUCCESS,
			    .opcode = w->opcode == IBV_WR_RDMA_WRITE ? IBV_WC_RDMA_WRITE : IBV_WC_RDMA_READ,
			    .qp_num = p->qp.qp_num,
			    .qp = p->idx,
			    .seq = p->head > 0 ? p->head - 1 : 0, // frees nothing
			    .due = m->tick + m->cfg.ack_delay,
			};
			cq_push(m, &s);
		}
		if (status != IBV_WC_SUCCESS || w->signalled) {
			qm_cqe e = {
			    .wr_id = w->wr_id,
			    .status = status,
			    .opcode = w->opcode == IBV_WR_RDMA_WRITE ? IBV_WC_RDMA_WRITE : IBV_WC_RDMA_READ,
			    .qp_num = p->qp.qp_num,
			    .vendor_err = status == IBV_WC_RETRY_EXC_ERR ? 0x81 : status == IBV_WC_WR_FLUSH_ERR ? 0xf9 : 0,
			    .qp = p->idx,
			    .seq = seq,
			    .signalled = w->signalled,
			    .due = m->tick + m->cfg.ack_delay,
			    .post_clock = w->post_clock,
			};
			if (status != IBV_WC_SUCCESS)
				m->err_cqes++;
			cq_push(m, &e);
		}
	}
}

// tick: one step of the network and the peer, model time tick_ns.
static void tick(qm_model *m) {
	m->tick++;
	m->clock += m->cfg.tick_ns;
	for (int q = 0; q < m->cfg.nqp; q++) {
		uint64_t n = m->cfg.per_tick;
		if (m->cfg.random)
			n = rnd(m) % (n + 1);
		exec(m, &m->qps[q], n);
	}
	peer_act(m);
	cq_arrive(m);
}

// busy says whether ticking can still change anything.
static int busy(qm_model *m) {
	if (m->cq_vis < m->cq_end || m->nact > 0)
		return 1;
	for (int q = 0; q < m->cfg.nqp; q++) {
		qm_qp *p = &m->qps[q];
		if (p->exec == p->tail)
			continue;
		if (p->errored || !faulty(m, q) || m->cfg.fault != QM_FAULT_STALL || p->taken < m->cfg.fault_after)
			return 1;
	}
	return 0;
}

// ---- the verbs ----

#define QM_NO_FAIL UINT32_MAX

// post_call counts a post call (ibv_post_send or ibv_wr_complete) and says whether it
// is the one the configuration fails (qm_config.post_fail_at).
static int post_call(qm_model *m, qm_qp *p) {
	m->post_calls++;
	if (!m->cfg.post_fail_at || m->post_calls != m->cfg.post_fail_at)
		return 0;
	m->post_failed = 1;
	m->post_fail_qp = p->idx;
	return 1;
}

// post_chain posts a chain of WRs to p; fail_wr (QM_NO_FAIL: none) is the WR of the
// chain at which an injected failure strikes (the last one if the chain is shorter).
static int post_chain(qm_model *m, qm_qp *p, struct ibv_send_wr *wr, struct ibv_send_wr **bad, uint32_t fail_wr) {
	int64_t entry = m->clock;
	m->posts++;
	if (!m->posted_since_poll) {
		m->posted_since_poll = 1;
		p->leads++;
	}
	if (m->ping_waiting) {
		uint64_t n = m->polls - m->ping_poll;
		m->polls_before_pong_total += n;
		if (n > m->max_polls_before_pong)
			m->max_polls_before_pong = n;
		if (n > 0 && !m->ping_sq_full)
			m->needless_polls_before_pong += n;
		m->ping_waiting = 0;
	}
	if (!m->first_post_seen) {
		m->first_post_seen = 1;
		m->first_post_clock = m->clock;
	}
	m->last_post_clock = m->clock;
	if (fail_wr != QM_NO_FAIL) {
		uint32_t n = 0;
		for (struct ibv_send_wr *w = wr; w; w = w->next)
			n++;
		m->post_fail_len = n;
	}
	for (uint32_t i = 0; wr; wr = wr->next, i++) {
		if (fail_wr != QM_NO_FAIL && (i == fail_wr || !wr->next)) {
			m->post_fail_posted = i;
			*bad = wr;
			return m->cfg.post_fail_err;
		}
		if (p->tail - p->head >= m->cfg.depth) {
			violation(m, QM_V_SQ_OVERFLOW, "QP %d: post with %llu of %u slots in use", p->idx,
			          (unsigned long long)(p->tail - p->head), m->cfg.depth);
			*bad = wr;
			return ENOMEM;
		}
		if ((wr->opcode != IBV_WR_RDMA_WRITE && wr->opcode != IBV_WR_RDMA_READ) || wr->num_sge != 1 || !wr->sg_list ||
		    !in_range(wr->sg_list[0].addr, wr->sg_list[0].length, m->cfg.lbase, m->cfg.llen) ||
		    !in_range(wr->wr.rdma.remote_addr, wr->sg_list[0].length, m->cfg.rbase, m->cfg.rlen) ||
		    (wr->opcode == IBV_WR_RDMA_READ && (wr->send_flags & IBV_SEND_INLINE))) {
			violation(m, QM_V_BAD_WR, "QP %d: WR %llx: opcode %d, %d SGEs, local %llx+%u, remote %llx", p->idx,
			          (unsigned long long)wr->wr_id, wr->opcode, wr->num_sge,
			          wr->sg_list ? (unsigned long long)wr->sg_list[0].addr : 0ULL,
			          wr->sg_list ? wr->sg_list[0].length : 0, (unsigned long long)wr->wr.rdma.remote_addr);
			*bad = wr;
			return EINVAL;
		}
		const char *why;
		if (m->cfg.mr_check && (why = mr_wrong(m, wr->sg_list[0].lkey, wr->sg_list[0].addr, wr->sg_list[0].length, wr->opcode)))
			violation(m, QM_V_MR_LKEY, "QP %d: WR %llx posted with lkey %#x: %s", p->idx, (unsigned long long)wr->wr_id,
			          wr->sg_list[0].lkey, why); // an HCA takes the post and fails the WR when it executes
		qm_wr *w = &p->ring[p->tail % m->cfg.depth];
		w->wr_id = wr->wr_id;
		w->lkey = wr->sg_list[0].lkey;
		w->rkey = wr->wr.rdma.rkey;
		w->laddr = wr->sg_list[0].addr;
		w->raddr = wr->wr.rdma.remote_addr;
		w->len = wr->sg_list[0].length;
		w->opcode = wr->opcode;
		w->signalled = (wr->send_flags & IBV_SEND_SIGNALED) != 0;
		w->post_clock = entry;
		p->tail++;
		m->clock += m->cfg.post_ns;
		if (p->tail - p->head > p->max_occ)
			p->max_occ = (uint32_t)(p->tail - p->head);
	}
	if (m->cfg.on_post) {
		exec(m, p, m->cfg.on_post);
		cq_arrive(m);
	}
	return 0;
}

static int post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad) {
	qm_model *m = MODEL_OF(qp->context);
	qm_qp *p = (qm_qp *)qp;
	return post_chain(m, p, wr, bad, post_call(m, p) ? m->cfg.post_fail_wr : QM_NO_FAIL);
}

// ---- the extended QP API (ibv_wr_*) ----

static qm_qp *qp_of(struct ibv_qp_ex *e) { return (qm_qp *)e; }

static void wr_start(struct ibv_qp_ex *e) {
	qm_qp *p = qp_of(e);
	if (p->staging)
		violation(p->m, QM_V_WR_API, "QP %d: ibv_wr_start inside a batch of %u WRs", p->idx, p->nstage);
	p->staging = 1;
	p->nstage = 0;
	p->stage_err = 0;
}

// wr_build stages the next WR of the batch with the QP's wr_id and wr_flags as set now.
static void wr_build(struct ibv_qp_ex *e, int opcode, uint32_t rkey, uint64_t raddr) {
	qm_qp *p = qp_of(e);
	if (!p->staging) {
		violation(p->m, QM_V_WR_API, "QP %d: a WR built outside ibv_wr_start .. ibv_wr_complete", p->idx);
		return;
	}
	if (p->nstage > p->m->cfg.depth) { // a provider fails the batch when it does not fit its queue
		p->stage_err = ENOMEM;
		return;
	}
	qm_staged *w = &p->stage[p->nstage++];
	memset(w, 0, sizeof(*w));
	w->wr.wr_id = e->wr_id;
	w->wr.send_flags = (int)e->wr_flags;
	w->wr.opcode = opcode;
	w->wr.wr.rdma.rkey = rkey;
	w->wr.wr.rdma.remote_addr = raddr;
}

static void wr_rdma_write(struct ibv_qp_ex *e, uint32_t rkey, uint64_t raddr) { wr_build(e, IBV_WR_RDMA_WRITE, rkey, raddr); }
static void wr_rdma_read(struct ibv_qp_ex *e, uint32_t rkey, uint64_t raddr) { wr_build(e, IBV_WR_RDMA_READ, rkey, raddr); }

// wr_sge gives the WR built last its one SGE (inline: the bytes at addr, no lkey).
static void wr_sge(struct ibv_qp_ex *e, uint32_t lkey, uint64_t addr, uint32_t len, int inl) {
	qm_qp *p = qp_of(e);
	if (!p->staging || p->nstage == 0 || p->stage[p->nstage - 1].wr.num_sge) {
		if (!p->stage_err)
			violation(p->m, QM_V_WR_API, "QP %d: an SGE set with no WR built for it", p->idx);
		return;
	}
	qm_staged *w = &p->stage[p->nstage - 1];
	w->sge = (struct ibv_sge){.addr = addr, .length = len, .lkey = lkey};
	w->wr.sg_list = &w->sge;
	w->wr.num_sge = 1;
	if (inl != ((w->wr.send_flags & IBV_SEND_INLINE) != 0))
		violation(p->m, QM_V_WR_API, "QP %d: WR %llx: inline data %s IBV_SEND_INLINE in wr_flags", p->idx,
		          (unsigned long long)w->wr.wr_id, inl ? "without" : "for a WR with");
}

static void wr_set_sge(struct ibv_qp_ex *e, uint32_t lkey, uint64_t addr, uint32_t len) { wr_sge(e, lkey, addr, len, 0); }
static void wr_set_inline_data(struct ibv_qp_ex *e, void *addr, size_t len) {
	wr_sge(e, 0, (uint64_t)(uintptr_t)addr, (uint32_t)len, 1);
}

static int wr_complete(struct ibv_qp_ex *e) {
	qm_qp *p = qp_of(e);
	qm_model *m = p->m;
	if (!p->staging) {
		violation(m, QM_V_WR_API, "QP %d: ibv_wr_complete without ibv_wr_start", p->idx);
		return EINVAL;
	}
	p->staging = 0;
	if (post_call(m, p)) { // the provider refuses the batch: none of it is posted
		m->post_fail_len = p->nstage;
		m->post_fail_posted = 0;
		return m->cfg.post_fail_err;
	}
	if (p->stage_err || p->tail - p->head + p->nstage > m->cfg.depth) {
		violation(m, QM_V_SQ_OVERFLOW, "QP %d: a batch of %u WRs with %llu of %u slots in use", p->idx, p->nstage,
		          (unsigned long long)(p->tail - p->head), m->cfg.depth);
		return ENOMEM; // nothing of the batch is posted
	}
	if (p->nstage == 0)
		return 0;
	for (uint32_t i = 0; i < p->nstage; i++) {
		if (!p->stage[i].wr.num_sge) {
			violation(m, QM_V_WR_API, "QP %d: WR %llx posted without an SGE", p->idx, (unsigned long long)p->stage[i].wr.wr_id);
			return EINVAL;
		}
		p->stage[i].wr.next = i + 1 < p->nstage ? &p->stage[i + 1].wr : NULL;
	}
	m->wr_batches++;
	struct ibv_send_wr *bad;
	return post_chain(m, p, &p->stage[0].wr, &bad, QM_NO_FAIL);
}

static void wr_abort(struct ibv_qp_ex *e) {
	qm_qp *p = qp_of(e);
	p->staging = 0;
	p->nstage = 0;
}

static int poll_cq(struct ibv_cq *cq, int num, struct ibv_wc *wc) {
	qm_model *m = MODEL_OF(cq->context);
	m->posted_since_poll = 0;
	if (cq != &m->cq || num < 1) {
		violation(m, QM_V_POLL_ARGS, "ibv_poll_cq(%p, %d)", (void *)cq, num);
		errno = EINVAL;
		return -1;
	}
	m->polls++;
	if (m->cfg.stop_after_polls && m->polls == m->cfg.stop_after_polls)
		m->stop = 1;
	if (m->polls > m->cfg.max_polls) {
		if (m->polls == m->cfg.max_polls + 1)
			violation(m, QM_V_RUNAWAY, "still polling after %llu polls", (unsigned long long)m->cfg.max_polls);
		m->stop = 1;
		if (m->polls > m->cfg.max_polls + 1000000) {
			errno = EIO; // the loop ignores the stop flag: make it fail
			return -1;
		}
	}
	tick(m);
	int k = 0;
	for (; k < num && m->cq_head < m->cq_vis; k++) {
		qm_cqe *e = &m->cqes[m->cq_head++];
		memset(&wc[k], 0, sizeof(wc[k]));
		wc[k].wr_id = e->wr_id;
		wc[k].status = e->status;
		wc[k].opcode = e->opcode;
		wc[k].vendor_err = e->vendor_err;
		wc[k].qp_num = e->qp_num;
		qm_qp *p = &m->qps[e->qp];
		if (e->seq + 1 > p->head)
			p->head = e->seq + 1; // frees the WR and every earlier one
		m->cqes_polled++;
		if (e->signalled && e->status == IBV_WC_SUCCESS) {
			m->sig_polled++;
			times_add(&m->lat, m->clock - e->post_clock);
			times_add(&p->lat, m->clock - e->post_clock);
		}
	}
	if (k > 0)
		m->last_cqe_clock = m->clock;
	if (m->ping_new) {
		// What the loop knows when it sees the ping: it can post at once unless the
		// send queue is full (by the CQEs it has polled).
		qm_qp *p = &m->qps[0];
		m->ping_sq_full = p->tail - p->head >= m->cfg.depth;
		m->ping_new = 0;
	}
	return k;
}

static int req_notify_cq(struct ibv_cq *cq, int solicited_only) {
	qm_model *m = MODEL_OF(cq->context);
	(void)solicited_only;
	m->armed = 1;
	m->arms++;
	return 0;
}

int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq, void **cq_context) {
	qm_model *m = MODEL_OF(channel->context);
	if (m->ev_pending == 0) {
		violation(m, QM_V_NO_EVENT, "ibv_get_cq_event with no event pending");
		errno = EAGAIN;
		return -1;
	}
	m->ev_pending--;
	m->ev_got++;
	*cq = &m->cq;
	*cq_context = m->cq.cq_context;
	return 0;
}

void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents) {
	qm_model *m = MODEL_OF(cq->context);
	m->ev_acked += nevents;
	if (m->ev_acked > m->ev_got)
		violation(m, QM_V_ACK, "%llu events acked, %llu got", (unsigned long long)m->ev_acked,
		          (unsigned long long)m->ev_got);
}

// ---- the system ----

int64_t rb_now(void) {
	qm_model *m = cur;
	if (!m)
		abort();
	m->nows++;
	m->clock += m->cfg.now_ns;
	return m->clock;
}

// rb_model_tsc is the model's TSC, when its configuration gives one a rate: tsc_per_ns
// ticks per nanosecond of model time; a read costs what a clock read does.
int rb_model_tsc_on(void) { return cur && cur->cfg.tsc_per_ns > 0; }

int64_t rb_model_tsc(void) { return (int64_t)((double)rb_now() * cur->cfg.tsc_per_ns); }

// rb_wait_fd sleeps on the completion channel: the network goes on while the loop
// sleeps, and the sleep ends with the first event or after timeout_ms of model time.
int rb_wait_fd(int fd, int timeout_ms) {
	qm_model *m = cur;
	if (!m)
		abort();
	m->waits++;
	if (fd != m->channel.fd) {
		violation(m, QM_V_FD, "rb_wait_fd(%d), the channel is %d", fd, m->channel.fd);
		errno = EBADF;
		return -1;
	}
	m->clock += m->cfg.now_ns;
	if (m->ev_pending)
		return 1;
	if (timeout_ms == 0)
		return 0; // a look, not a sleep: nothing to be armed for
	if (!m->armed)
		violation(m, QM_V_SLEEP_UNARMED, "rb_wait_fd with the CQ not armed");
	if (m->cq_head < m->cq_vis)
		violation(m, QM_V_SLEEP_WITH_CQES, "rb_wait_fd with %llu CQEs in the CQ",
		          (unsigned long long)(m->cq_vis - m->cq_head));
	int64_t end = m->clock + (int64_t)timeout_ms * 1000000;
	while (m->clock < end && busy(m)) {
		tick(m);
		m->wait_ticks++;
		if (m->ev_pending)
			return 1;
	}
	if (m->clock < end)
		m->clock = end;
	m->sleeps_ms += (uint64_t)timeout_ms;
	return 0;
}

// ---- registrations ----

static qm_reg *reg_of(qm_model *m, uint32_t lkey) {
	return lkey >= QM_LKEY0 && lkey - QM_LKEY0 < m->nreg ? m->regs[lkey - QM_LKEY0] : NULL;
}

// mr_wrong says what is wrong with an SGE's lkey (NULL: nothing): it must name a live
// registration that covers the SGE, with IBV_ACCESS_LOCAL_WRITE for a READ to land in.
static const char *mr_wrong(qm_model *m, uint32_t lkey, uint64_t addr, uint32_t len, int opcode) {
	qm_reg *r = reg_of(m, lkey);
	if (!r)
		return "never registered";
	if (!r->live)
		return "deregistered";
	uint64_t a = (uint64_t)(uintptr_t)r->mr.addr;
	if (addr < a || len > r->mr.length || addr - a > r->mr.length - len)
		return "its MR does not cover the SGE";
	if (opcode == IBV_WR_RDMA_READ && !(r->access & IBV_ACCESS_LOCAL_WRITE))
		return "a READ lands in an MR without IBV_ACCESS_LOCAL_WRITE";
	return NULL;
}

static struct ibv_mr *reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access) {
	qm_model *m = cur;
	if (!m)
		abort();
	m->reg_calls++;
	m->clock += m->cfg.reg_ns;
	uint64_t a = (uint64_t)(uintptr_t)addr, b = (uint64_t)(uintptr_t)m->cfg.lbase;
	if (pd != &m->pd || length == 0 || a < b || length > m->cfg.llen || a - b > m->cfg.llen - length) {
		violation(m, QM_V_MR_REG, "ibv_reg_mr(%p, %llx+%zu): %s", (void *)pd, (unsigned long long)a, length,
		          pd != &m->pd ? "a foreign PD" : "not inside the local buffer");
		errno = EINVAL;
		return NULL;
	}
	if (m->cfg.reg_fail_at && m->reg_calls == m->cfg.reg_fail_at) {
		errno = ENOMEM;
		return NULL;
	}
	if (m->nreg == m->regcap) {
		m->regcap = m->regcap ? 2 * m->regcap : 64;
		m->regs = realloc(m->regs, m->regcap * sizeof(qm_reg *));
		if (!m->regs)
			abort();
	}
	qm_reg *r = calloc(1, sizeof(*r));
	if (!r)
		abort();
	r->mr.context = &m->ctx;
	r->mr.pd = pd;
	r->mr.addr = addr;
	r->mr.length = length;
	r->mr.handle = (uint32_t)m->nreg;
	r->mr.lkey = QM_LKEY0 + (uint32_t)m->nreg;
	r->mr.rkey = 0x80000000u + (uint32_t)m->nreg;
	r->access = access;
	r->live = 1;
	m->regs[m->nreg++] = r;
	m->mr_regs++;
	if (++m->mr_live > m->mr_max_live)
		m->mr_max_live = m->mr_live;
	return &r->mr;
}

// ibv_reg_mr is a macro of libibverbs' (over an inline that calls the function or
// ibv_reg_mr_iova2): the parentheses define the function.
struct ibv_mr *(ibv_reg_mr)(struct ibv_pd *pd, void *addr, size_t length, int access) {
	return reg_mr(pd, addr, length, access);
}

struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova, unsigned int access) {
	(void)iova;
	return reg_mr(pd, addr, length, (int)access);
}

int ibv_dereg_mr(struct ibv_mr *mr) {
	qm_model *m = cur;
	if (!m)
		abort();
	m->dereg_calls++;
	m->clock += m->cfg.dereg_ns;
	qm_reg *r = mr ? reg_of(m, mr->lkey) : NULL;
	if (!r || &r->mr != mr || !r->live) {
		violation(m, QM_V_MR_DEREG, "ibv_dereg_mr of lkey %#x: %s", mr ? mr->lkey : 0,
		          !r || &r->mr != mr ? "not an MR of the model's" : "already deregistered");
		return EINVAL;
	}
	if (m->cfg.dereg_fail_at && m->dereg_calls == m->cfg.dereg_fail_at)
		return EBUSY; // it stays registered
	r->live = 0;
	m->mr_deregs++;
	m->mr_live--;
	return 0;
}

// ---- set-up ----

qm_model *qm_new(const qm_config *cfg) {
	qm_model *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->cfg = *cfg;
	if (m->cfg.tick_ns <= 0)
		m->cfg.tick_ns = 200;
	if (m->cfg.now_ns <= 0)
		m->cfg.now_ns = 50;
	if (m->cfg.max_polls == 0)
		m->cfg.max_polls = 20000000;
	m->ev_pending = m->cfg.leftover_events;
	if (m->cfg.depth == 0)
		m->cfg.depth = 1;
	m->rng = cfg->seed * 0x9E3779B97F4A7C15ULL + 0x1234567;
	if (m->rng == 0)
		m->rng = 1;
	m->ctx.ops.post_send = post_send;
	m->ctx.ops.poll_cq = poll_cq;
	m->ctx.ops.req_notify_cq = req_notify_cq;
	m->ctx.cmd_fd = -1;
	m->ctx.async_fd = -1;
	m->channel.context = &m->ctx;
	m->channel.fd = 1000;
	m->cq.context = &m->ctx;
	m->cq.channel = &m->channel;
	m->cq.cq_context = m;
	m->cq.cqe = (int)m->cfg.cq_cap;
	m->pd.context = &m->ctx;
	m->pd.handle = 1;
	m->qps = calloc(m->cfg.nqp, sizeof(qm_qp));
	m->qpp = calloc(m->cfg.nqp, sizeof(struct ibv_qp *));
	m->qpxp = calloc(m->cfg.nqp, sizeof(struct ibv_qp_ex *));
	if (!m->qps || !m->qpp || !m->qpxp) {
		qm_free(m);
		return NULL;
	}
	for (int q = 0; q < m->cfg.nqp; q++) {
		qm_qp *p = &m->qps[q];
		p->qp.context = &m->ctx;
		p->qp.send_cq = &m->cq;
		p->qp.recv_cq = &m->cq;
		p->qp.qp_num = 0x100 + q;
		p->qp.qp_type = IBV_QPT_RC;
		p->qp.state = IBV_QPS_RTS;
		p->m = m;
		p->idx = q;
		p->ring = calloc(m->cfg.depth, sizeof(qm_wr));
		p->stage = calloc(m->cfg.depth + 1, sizeof(qm_staged));
		if (!p->ring || !p->stage) {
			qm_free(m);
			return NULL;
		}
		m->qpp[q] = &p->qp;
		m->qpxp[q] = &p->qpx;
		p->qpx.wr_start = wr_start;
		p->qpx.wr_rdma_write = wr_rdma_write;
		p->qpx.wr_rdma_read = wr_rdma_read;
		p->qpx.wr_set_sge = wr_set_sge;
		p->qpx.wr_set_inline_data = wr_set_inline_data;
		p->qpx.wr_complete = wr_complete;
		p->qpx.wr_abort = wr_abort;
	}
	if (m->cfg.pp != QM_PP_NONE) {
		m->peer_tx = malloc(m->cfg.pp_size);
		if (!m->peer_tx) {
			qm_free(m);
			return NULL;
		}
		for (uint32_t i = 0; i < m->cfg.pp_size; i++)
			m->peer_tx[i] = (uint8_t)(i * 7 + 3);
	}
	m->start_clock = m->clock = m->cfg.clock0 > 0 ? m->cfg.clock0 : 1000000000000LL; // never 0: the watchdog uses 0 as "unset"
	return m;
}

void qm_free(qm_model *m) {
	if (!m)
		return;
	if (m->qps)
		for (int q = 0; q < m->cfg.nqp; q++) {
			free(m->qps[q].ring);
			free(m->qps[q].stage);
			free(m->qps[q].addrs);
		}
	free(m->qps);
	free(m->qpp);
	free(m->qpxp);
	free(m->cqes);
	free(m->peer_tx);
	for (size_t i = 0; i < m->nreg; i++)
		free(m->regs[i]);
	free(m->regs);
	free(m);
}

volatile int *qm_stop(qm_model *m) { return &m->stop; }

// use_api gives the loop the model's QPs as extended QPs when the config asks for them.
static void use_api(qm_model *m, rb_xfer *x) { x->qpx = m->cfg.wr_api ? m->qpxp : NULL; }

int qm_bw(qm_model *m, rb_bw_args *a) {
	use_api(m, &a->x);
	cur = m;
	int rc = rb_bw(a);
	m->end_clock = m->clock;
	cur = NULL;
	return rc;
}

int qm_rounds(qm_model *m, rb_rounds_args *a) {
	use_api(m, &a->x);
	cur = m;
	int rc = rb_rounds(a);
	m->end_clock = m->clock;
	cur = NULL;
	return rc;
}

int qm_pingpong(qm_model *m, rb_pp_args *a) {
	use_api(m, &a->x);
	cur = m;
	if (m->cfg.pp == QM_PP_PEER_INITIATES && m->cfg.pp_iters > 0 && m->cfg.peer_rounds > 0)
		peer_schedule(m, 2, round_byte(m, 0), 0, -1); // the first ping
	int rc = rb_pingpong(a);
	m->end_clock = m->clock;
	cur = NULL;
	return rc;
}

void qm_enter(qm_model *m) { cur = m; }

void qm_leave(qm_model *m) {
	m->end_clock = m->clock;
	cur = NULL;
	if (m->mr_live > 0)
		violation(m, QM_V_MR_LEAK, "%llu MRs still registered when the loop returned", (unsigned long long)m->mr_live);
}

int qm_bw_mr(qm_model *m, rb_bw_mr_args *a) {
	use_api(m, &a->x);
	qm_enter(m);
	int rc = rb_bw_mr(a);
	qm_leave(m);
	return rc;
}

int qm_read_lat(qm_model *m, rb_rl_args *a) {
	use_api(m, &a->x);
	cur = m;
	int rc = rb_read_lat(a);
	m->end_clock = m->clock;
	cur = NULL;
	return rc;
}
