//go:build linux && cgo

// rb_rounds.c: the rounds loop (fan-out / fan-in), rb_rounds. See rb.h for its
// contract, rb_loop.h for the steps it shares. No function here calls back into Go.
#include "rb_loop.h"
#include <stdlib.h>
#include <string.h>

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
	rc = rb_clk_end(&clk, x, rc);
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
		if (time_to_stop(x, a->deadline_ns))
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
