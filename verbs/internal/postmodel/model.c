//go:build linux && cgo

// The code under test: verbs/rb_post.c (rb_post_c.h is a symbolic link to it, so that
// the go command rebuilds this package when it changes).
#include "rb_post_c.h"
#include "model.h"
#include <poll.h>
#include <unistd.h>

static pm_model *of(struct ibv_context *ctx) { return (pm_model *)ctx; }

static int pm_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad) {
	pm_model *m = of(qp->context);
	m->lists++;
	m->chain_ok = 1;
	int i = 0;
	for (struct ibv_send_wr *w = wr; w; w = w->next, i++) {
		if (i == m->fail_at) {
			*bad = w;
			m->fail_at = -1;
			m->last_n = i;
			return m->fail_rc;
		}
		if (i >= PM_MAX)
			return EINVAL;
		m->wrs[i] = *w;
		if (w->num_sge == 1)
			m->sges[i] = w->sg_list[0];
		if (w->next && w->next != w + 1)
			m->chain_ok = 0;
	}
	m->last_n = i;
	return 0;
}

static int pm_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc) {
	pm_model *m = of(cq->context);
	int k = 0;
	while (k < n && m->cq_head < m->cq_len)
		wc[k++] = m->cqes[m->cq_head++];
	return k;
}

static int pm_req_notify_cq(struct ibv_cq *cq, int solicited_only) {
	(void)solicited_only;
	pm_model *m = of(cq->context);
	m->armed = 1;
	m->notifies++;
	return 0;
}

int ibv_get_cq_event(struct ibv_comp_channel *ch, struct ibv_cq **cq, void **cq_ctx) {
	pm_model *m = of(ch->context);
	char b;
	if (read(m->pipe[0], &b, 1) != 1)
		return -1;
	m->events++;
	m->armed = 0;
	*cq = &m->cq;
	*cq_ctx = NULL;
	return 0;
}

void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int n) { of(cq->context)->acked += (int)n; }

int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask) {
	pm_model *m = of(qp->context);
	m->modifies++;
	m->qp_state = (int)attr->qp_state;
	m->attr_mask = attr_mask;
	return m->modify_rc;
}

int rb_wait_fd(int fd, int timeout_ms) {
	struct pollfd p = {.fd = fd, .events = POLLIN};
	int rc = poll(&p, 1, timeout_ms);
	return rc < 0 ? -1 : rc > 0;
}

pm_model *pm_new(void) {
	pm_model *m = calloc(1, sizeof *m);
	if (!m || pipe(m->pipe)) {
		free(m);
		return NULL;
	}
	m->ctx.ops.post_send = pm_post_send;
	m->ctx.ops.poll_cq = pm_poll_cq;
	m->ctx.ops.req_notify_cq = pm_req_notify_cq;
	m->cq.context = m->qp.context = &m->ctx;
	m->ch.context = &m->ctx;
	m->ch.fd = m->pipe[0];
	m->fail_at = -1;
	return m;
}

void pm_free(pm_model *m) {
	close(m->pipe[0]);
	close(m->pipe[1]);
	free(m);
}

rb_pq *pm_queue(pm_model *m, int with_channel, int max_post, int max_poll) {
	return rb_pq_new(&m->cq, with_channel ? &m->ch : NULL, max_post, max_poll);
}

void pm_push_wc(pm_model *m, uint64_t wr_id, int status, int opcode, uint32_t vendor_err, uint32_t qp_num, uint32_t len) {
	struct ibv_wc *w = &m->cqes[m->cq_len++];
	memset(w, 0, sizeof *w);
	w->wr_id = wr_id;
	w->status = (enum ibv_wc_status)status;
	w->opcode = (enum ibv_wc_opcode)opcode;
	w->vendor_err = vendor_err;
	w->qp_num = qp_num;
	w->byte_len = len;
}

void pm_event(pm_model *m) {
	char b = 1;
	if (write(m->pipe[1], &b, 1) != 1)
		abort();
}
