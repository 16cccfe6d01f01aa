//go:build linux && cgo

// rb_read_lat.c: READ latency, rb_read_lat. See rb.h for its contract, rb_loop.h for
// the steps it shares. No function here calls back into Go.
#include "rb_loop.h"
#include <stdlib.h>
#include <string.h>

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
	rc = rb_clk_end(&clk, x, rc);
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
