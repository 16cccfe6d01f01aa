//go:build linux && cgo

// See rb_post.h. No function here calls back into Go.
#include "rb_post.h"
#include "rb.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>

// The Go twins (verbs/post_types.go) pin the same layout.
_Static_assert(sizeof(rb_pwr) == 40, "rb_pwr layout");
_Static_assert(offsetof(rb_pwr, raddr) == 16, "rb_pwr layout");
_Static_assert(offsetof(rb_pwr, len) == 24, "rb_pwr layout");
_Static_assert(offsetof(rb_pwr, lkey) == 28, "rb_pwr layout");
_Static_assert(offsetof(rb_pwr, rkey) == 32, "rb_pwr layout");
_Static_assert(offsetof(rb_pwr, opcode) == 36, "rb_pwr layout");
_Static_assert(offsetof(rb_pwr, flags) == 37, "rb_pwr layout");
_Static_assert(sizeof(rb_pwc) == 32, "rb_pwc layout");
_Static_assert(offsetof(rb_pwc, status) == 8, "rb_pwc layout");
_Static_assert(offsetof(rb_pwc, opcode) == 12, "rb_pwc layout");
_Static_assert(offsetof(rb_pwc, vendor_err) == 16, "rb_pwc layout");
_Static_assert(offsetof(rb_pwc, qp_num) == 20, "rb_pwc layout");
_Static_assert(offsetof(rb_pwc, byte_len) == 24, "rb_pwc layout");

rb_pq *rb_pq_new(struct ibv_cq *cq, struct ibv_comp_channel *channel, int max_post, int max_poll) {
	if (max_post < 1 || max_poll < 1)
		return NULL;
	rb_pq *q = calloc(1, sizeof *q);
	if (!q)
		return NULL;
	q->cq = cq;
	q->channel = channel;
	q->max_post = max_post;
	q->max_poll = max_poll;
	q->wrs = calloc((size_t)max_post, sizeof *q->wrs);
	q->swr = calloc((size_t)max_post, sizeof *q->swr);
	q->sge = calloc((size_t)max_post, sizeof *q->sge);
	q->wcs = calloc((size_t)max_poll, sizeof *q->wcs);
	q->iwc = calloc((size_t)max_poll, sizeof *q->iwc);
	if (!q->wrs || !q->swr || !q->sge || !q->wcs || !q->iwc) {
		rb_pq_free(q);
		return NULL;
	}
	return q;
}

void rb_pq_free(rb_pq *q) {
	if (!q)
		return;
	free(q->wrs);
	free(q->swr);
	free(q->sge);
	free(q->wcs);
	free(q->iwc);
	free(q);
}

int rb_pq_post(rb_pq *q, struct ibv_qp *qp, int n) {
	q->bad = 0;
	if (n < 1 || n > q->max_post)
		return EINVAL;
	for (int i = 0; i < n; i++) {
		const rb_pwr *w = &q->wrs[i];
		struct ibv_send_wr *s = &q->swr[i];
		struct ibv_sge *g = &q->sge[i];
		g->addr = w->laddr;
		g->length = w->len;
		g->lkey = w->lkey;
		memset(s, 0, sizeof *s);
		s->wr_id = w->wr_id;
		s->next = i + 1 < n ? &q->swr[i + 1] : NULL;
		s->sg_list = g;
		// A zero-length WR (a signalled cover for unsignalled ones) names no memory: a
		// data segment of length 0 means 2 GiB to some providers.
		s->num_sge = w->len ? 1 : 0;
		s->opcode = w->opcode == RB_PWR_READ ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE;
		s->send_flags = (w->flags & RB_PWR_SIGNALED) ? IBV_SEND_SIGNALED : 0;
		s->wr.rdma.remote_addr = w->raddr;
		s->wr.rdma.rkey = w->rkey;
	}
	struct ibv_send_wr *bad = NULL;
	int rc = ibv_post_send(qp, q->swr, &bad);
	if (rc) {
		q->bad = bad ? (int)(bad - q->swr) : 0;
		if (q->bad < 0 || q->bad > n)
			q->bad = 0;
	}
	return rc;
}

int rb_qp_error(struct ibv_qp *qp) {
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_ERR;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE);
}

static void convert(rb_pq *q, int n) {
	for (int i = 0; i < n; i++) {
		const struct ibv_wc *w = &q->iwc[i];
		rb_pwc *c = &q->wcs[i];
		c->wr_id = w->wr_id;
		c->status = (uint32_t)w->status;
		c->opcode = (uint32_t)w->opcode;
		c->vendor_err = w->vendor_err;
		c->qp_num = w->qp_num;
		c->byte_len = w->byte_len;
		c->pad = 0;
	}
}

int rb_pq_poll(rb_pq *q) {
	int n = ibv_poll_cq(q->cq, q->max_poll, q->iwc);
	if (n > 0)
		convert(q, n);
	return n < 0 ? -1 : n;
}

int rb_pq_wait(rb_pq *q, int timeout_ms) {
	if (!q->channel) {
		int n = rb_pq_poll(q);
		return n < 0 ? -EIO : n;
	}
	if (!q->armed) {
		int err = ibv_req_notify_cq(q->cq, 0);
		if (err)
			return -err;
		q->armed = 1;
	}
	int n = rb_pq_poll(q);
	if (n != 0)
		return n < 0 ? -EIO : n;
	int rc = rb_wait_fd(q->channel->fd, timeout_ms);
	if (rc < 0)
		return -errno;
	if (rc == 0)
		return 0; // still armed: the next wait need not arm again
	struct ibv_cq *ev_cq;
	void *ev_ctx;
	if (ibv_get_cq_event(q->channel, &ev_cq, &ev_ctx))
		return -errno;
	ibv_ack_cq_events(ev_cq, 1);
	q->armed = 0;
	n = rb_pq_poll(q);
	return n < 0 ? -EIO : n;
}
