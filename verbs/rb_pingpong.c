//go:build linux && cgo

// rb_pingpong.c: the WRITE ping-pong, rb_pingpong. See rb.h for its contract,
// rb_loop.h for the steps it shares. No function here calls back into Go.
#include "rb_loop.h"
#include <stdlib.h>
#include <string.h>

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
	rc = rb_clk_end(&clk, x, rc);
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
