// rb_loop.h: what the timed loops share, private to them (the contract is rb.h). One
// file per loop (rb_bw.c, rb_bw_mr.c, rb_rounds.c, rb_pingpong.c, rb_read_lat.c) over
// this header and rb.c, which holds the clock's calibration, the extended-API batch,
// the histogram and nothing per loop.
//
// The steps here run per WR or per poll, so they are static inline: a loop that calls
// them compiles to what it would with the step written out, its counts and addresses
// kept in registers across the (opaque) post and poll. The few functions shared across
// files (rb_clk_end, rb_post_wr_api, rb_use_tsc) are hidden (RB_HIDDEN), so that a
// call or a load is as direct under -fPIC as it was within one file.
#ifndef RB_LOOP_H
#define RB_LOOP_H
#include "rb.h"
#include <errno.h>

// RB_HIDDEN: a function or variable shared by the loops' files and no one else.
#define RB_HIDDEN __attribute__((visibility("hidden")))

// ---- the clock ----

#if defined(__x86_64__) && !defined(RB_MODEL)
#include <x86intrin.h>
extern RB_HIDDEN int rb_use_tsc; // rb_set_clock's choice
static inline int tsc_on(void) { return rb_use_tsc; }
static inline int64_t ticks(void) { return rb_use_tsc ? (int64_t)__rdtsc() : rb_now(); }
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

// Go places the loop's thread (verbs.Session.runThreads): on the NIC's NUMA node's CPUs
// by default, the kernel choosing one of them, since a spinning loop pinned to one CPU
// can sit on the CPU its peer (or the kernel's RDMA work) needs, which costs a scheduler
// tick per round trip; on one CPU each only where --cpu asks. The TSC is used only where
// Go found it invariant and trusted by the kernel.

// A loop's calibration: where its ticks and rb_now() stood when it began.
typedef struct {
	int64_t t0, ns0;
} rb_clock;

static inline void clk_begin(rb_clock *c) {
	c->ns0 = rb_now();
	c->t0 = ticks();
}

// rb_clk_end (rb.c) sets x->ns_per_tick for the loop, or fails it (RB_FAIL_CLOCK) where
// rc was a success and the ticks did not advance at a rate a CPU has.
RB_HIDDEN int rb_clk_end(rb_clock *c, rb_xfer *x, int rc);

// ticks_ns converts the span from t0 to t1 with the loop's calibration.
static inline int64_t ticks_ns(const rb_xfer *x, int64_t t0, int64_t t1) {
	return t1 > t0 ? (int64_t)((double)(t1 - t0) * x->ns_per_tick + 0.5) : 0;
}

// span is the window a loop measured: the first post to the last completion or answer seen.
typedef struct {
	int64_t first, last;
} span;

static inline void span_end(rb_xfer *x, const span *w) { x->duration_ns = ticks_ns(x, w->first, w->last); }

// ---- posting ----

// rb_post_wr_api (rb.c) is post's extended-API batch, out of line: post itself is
// inlined into every loop, so that the legacy path costs the loops no call of their own
// (ibv_post_send is one).
RB_HIDDEN int rb_post_wr_api(struct ibv_qp_ex *e, struct ibv_send_wr *wr);

// post_qpx is post with x->qpx given (a loop that read it once, into a register).
static inline __attribute__((always_inline)) int post_qpx(struct ibv_qp_ex *const *qpx, int q, struct ibv_qp *qp,
                                                          struct ibv_send_wr *wr) {
	if (!qpx) {
		struct ibv_send_wr *bad;
		return ibv_post_send(qp, wr, &bad);
	}
	return rb_post_wr_api(qpx[q], wr);
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

static inline void sample(rb_xfer *x, int64_t t) {
	if (x->hist)
		rb_hist_add(x->hist, t);
}

// ---- failures ----

static inline int verb_failed(rb_xfer *x, const char *verb, int err) {
	x->fail.kind = RB_FAIL_VERB;
	x->fail.verb = verb;
	x->fail.err = err;
	return -1;
}

// poll_failed: ibv_poll_cq returned < 0, which not every provider backs with errno.
static inline int poll_failed(rb_xfer *x) { return verb_failed(x, "ibv_poll_cq", errno ? errno : EIO); }

static inline int wc_failed(rb_xfer *x, const struct ibv_wc *wc) {
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
static inline int unexpected(rb_xfer *x, const struct ibv_wc *wc) {
	wc_failed(x, wc);
	x->fail.verb = "unexpected completion";
	return -1;
}

static inline int timed_out(rb_xfer *x, const char *wait) {
	x->fail.kind = RB_FAIL_TIMEOUT;
	x->fail.verb = wait;
	return -1;
}

// ---- waiting, and stopping ----

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

// time_to_stop: the stop flag is set or the deadline (0: none) has passed.
static inline int time_to_stop(const rb_xfer *x, int64_t deadline_ns) {
	return stopped(x) || (deadline_ns && rb_now() >= deadline_ns);
}

#define POLL_BATCH 16
#define SEQMASK ((1ULL << RB_QSHIFT) - 1)

// ---- the bandwidth loops' rules (rb_bw and rb_bw_mr) ----

// signals: WR seq of a QP whose last WR is target-1 is signalled: every mod-th, and the last.
static inline int signals(uint64_t seq, uint64_t mod, uint64_t target) {
	return (seq + 1) % mod == 0 || seq + 1 == target;
}

// stop_target is a QP's target once the loop stops with `posted` WRs posted: the last
// WR posted must be signalled, so that everything posted is seen to complete; if it
// was not, one more is posted.
static inline uint64_t stop_target(uint64_t posted, uint64_t mod, uint64_t target) {
	if (posted >= target)
		return target;
	int last_signalled = posted == 0 || posted % mod == 0;
	return last_signalled ? posted : posted + 1;
}

// check_turn counts a loop turn as a unit of work and says whether this turn looks at
// the stop flag and the clock: every 64 units, a unit being a loop turn or a WR posted
// (a turn can post a whole queue of WRs, and where the provider does the transfer inside
// ibv_post_send, as rxe in loopback, that takes long).
static inline int check_turn(uint32_t *work) {
	int check = *work >= 64;
	if (check)
		*work = 0;
	(*work)++;
	return check;
}

#endif
