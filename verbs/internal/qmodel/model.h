//go:build linux && cgo

// model.h: a model of the verbs queues the loops of verbs (rb_bw.c, ...) drive, for
// testing them without an RDMA device. They are compiled with -DRB_MODEL against this
// model: their data path (ibv_post_send, ibv_poll_cq, ibv_req_notify_cq: static
// inlines that call through the context's ops table) lands in the model's functions,
// and the model defines rb_now(), rb_wait_fd(), ibv_get_cq_event(),
// ibv_ack_cq_events(), and ibv_reg_mr() and ibv_dereg_mr().
//
// What is modelled, per QP, is an in-order RC send queue of capacity `depth`: a post
// that does not fit fails with ENOMEM (as mlx5 does: the WRs before the one that does
// not fit are posted, *bad_wr names it) and is recorded as an SQ overflow; slots are
// freed only when a CQE is polled (it frees its WR and every earlier one of the QP).
// The "network" executes posted WRs in order per QP, some per tick. A tick happens at
// every ibv_poll_cq call, and while the loop sleeps in rb_wait_fd. Executing a WRITE
// copies the bytes from the local to the remote buffer, a READ the other way; a
// signalled WR (and any WR that fails or is flushed) produces a CQE, visible
// ack_delay ticks later. The peer can fail (RETRY_EXC_ERR, then FLUSH_ERR for every
// later WR) or stall (nothing more executes). For the WRITE ping-pong the model plays
// the other side. Time is simulated: rb_now() and every tick advance a model clock.
// Registrations (rb_bw_mr) are records of the model's: with mr_check, a WR whose lkey
// names no live registration covering its SGE is a violation when posted, and one whose
// MR is gone by the time it executes fails with IBV_WC_LOC_PROT_ERR, as on an HCA.
// Every executed WR's addresses and rkey are recorded per QP. A test can make the k-th
// post call fail with an errno of its choice (qm_config.post_fail_at).
//
// The model a thread drives is thread-local, so that several tests can run at once.
#ifndef QMODEL_H
#define QMODEL_H
#include <stddef.h>
#include <stdint.h>
#include <infiniband/verbs.h>
#include "rb.h"

// Violations: things the loop did that a real HCA would punish or that break the
// loop's own contract with the queues.
enum {
	QM_V_SQ_OVERFLOW,     // ibv_post_send beyond the send queue's capacity
	QM_V_CQ_OVERFLOW,     // more CQEs in the CQ than its capacity
	QM_V_BAD_WR,          // a WR the model cannot execute (opcode, SGE, bounds, flags)
	QM_V_SLEEP_UNARMED,   // rb_wait_fd with the CQ not armed and no event pending
	QM_V_SLEEP_WITH_CQES, // rb_wait_fd with CQEs in the CQ (no event will come for them)
	QM_V_NO_EVENT,        // ibv_get_cq_event with no event pending (would block)
	QM_V_ACK,             // ibv_ack_cq_events of more events than were got
	QM_V_FD,              // rb_wait_fd on an fd that is not the channel's
	QM_V_RUNAWAY,         // the loop went on past max_polls (the model set the stop flag)
	QM_V_PP_BYTE,         // ping-pong: a message carried the wrong round byte
	QM_V_POLL_ARGS,       // ibv_poll_cq with num_entries < 1 or a foreign CQ
	QM_V_PEER_QUEUE,      // the model peer's action queue overflowed
	QM_V_MR_LKEY,         // a WR posted with an lkey that names no live MR covering its SGE
	QM_V_MR_INFLIGHT,     // a WR executed when its lkey was no longer (or never) a live MR covering it
	QM_V_MR_REG,          // ibv_reg_mr of memory outside the local buffer, or on a foreign PD
	QM_V_MR_DEREG,        // ibv_dereg_mr of an MR that is not registered (twice, or foreign)
	QM_V_MR_LEAK,         // MRs of the loop's still registered when it returned
	QM_V_WR_API,          // the extended QP API used out of order (a builder outside ibv_wr_start .. complete, a WR without its SGE)
	QM_V_N
};

typedef struct {
	uint64_t l, r; // offsets from the local / remote buffer's base
	uint32_t rkey; // the remote key the WR carried
} qm_addr;

typedef struct {
	uint64_t wr_id;
	uint64_t laddr, raddr;
	uint32_t len;
	int opcode;
	int signalled;
	uint32_t lkey, rkey;
	int64_t post_clock; // the model clock when ibv_post_send was called with it
} qm_wr;

typedef struct qm_model qm_model;

// qm_times sums durations the model recorded on its own clock.
typedef struct {
	uint64_t n;
	int64_t sum, min, max;
} qm_times;

// A staged WR of the extended QP API: built by ibv_wr_rdma_write/read and
// ibv_wr_set_sge/set_inline_data, posted by ibv_wr_complete.
typedef struct {
	struct ibv_send_wr wr;
	struct ibv_sge sge;
} qm_staged;

typedef struct {
	union { // the QP as the legacy API and as the extended API see it (qpx.qp_base)
		struct ibv_qp qp;
		struct ibv_qp_ex qpx;
	};
	qm_model *m;
	qm_staged *stage;     // depth + 1 entries: the batch between ibv_wr_start and ibv_wr_complete
	uint32_t nstage;      // WRs staged in it
	int staging;          // ibv_wr_start was called, ibv_wr_complete or ibv_wr_abort not yet
	int stage_err;        // an error a WR builder hit, returned by ibv_wr_complete
	qm_times lat;         // this QP's part of qm_model.lat
	int idx;
	qm_wr *ring;          // depth entries, indexed by seq % depth
	uint64_t head;        // oldest WR not yet freed
	uint64_t exec;        // next WR to execute
	uint64_t tail;        // next WR to post
	uint64_t executed;    // executed successfully
	uint64_t taken;       // taken by the network (executed, failed or flushed)
	uint32_t max_occ;     // most WRs ever in the send queue
	uint64_t leads;       // posts that were the first after an ibv_poll_cq call (or the first of all)
	int errored;          // the QP is in the error state: everything flushes
	qm_addr *addrs;       // every successfully executed WR's addresses and rkey
	size_t naddr, addrcap;
} qm_qp;

typedef struct {
	uint64_t wr_id;
	int status, opcode;
	uint32_t qp_num, vendor_err;
	int qp;
	uint64_t seq;
	int signalled;
	uint64_t due; // tick at which the CQE is in the CQ
	int64_t post_clock; // its WR's
} qm_cqe;

// QM_FAULT_STRAY: once, after fault_after WRs of a faulty QP, the CQ also holds a
// successful completion for a WR no loop posted (wr_id QM_STRAY_WRID), as a leftover
// of an earlier loop on a shared CQ would be.
enum { QM_FAULT_NONE, QM_FAULT_FAIL, QM_FAULT_STALL, QM_FAULT_STRAY };
#define QM_STRAY_WRID 0x5757000000000000ull
enum { QM_PP_NONE, QM_PP_PEER_RESPONDS, QM_PP_PEER_INITIATES };

typedef struct {
	int nqp;
	uint32_t depth;        // send-queue capacity of each QP
	uint32_t cq_cap;       // CQ capacity
	uint32_t per_tick;     // WRs each QP executes per tick (the most, with random)
	int random;            // per tick and QP, a uniform 0..per_tick
	uint64_t seed;
	uint32_t on_post;      // WRs executed inside ibv_post_send itself
	uint32_t ack_delay;    // ticks from a WR's execution to its CQE
	int fault;             // QM_FAULT_*
	uint64_t fault_after;  // WRs a faulty QP executes before the fault
	uint64_t fault_mask;   // QPs the fault applies to (bit q); 0 = all
	uint64_t stray_wrid;   // QM_FAULT_STRAY's wr_id; 0: QM_STRAY_WRID
	uint64_t stop_after_polls; // set the stop flag at that poll_cq call; 0 = never
	int64_t tick_ns, now_ns;   // model time per tick and per rb_now() call
	double tsc_per_ns;         // the model's TSC rate (rb_model_tsc), when the loops use it
	uint32_t leftover_events;  // events pending on the channel when the loop starts (an earlier loop's)
	int64_t post_ns;           // model time per WR posted
	uint64_t max_polls;    // runaway guard
	uint8_t *lbase, *rbase;
	size_t llen, rlen;
	// ping-pong
	int pp;                // QM_PP_*
	uint32_t pp_size;
	uint64_t pp_first, pp_iters;
	int pp_perftest; // round bytes as perftest's write_lat counts them
	uint32_t peer_delay;   // ticks the model peer takes to answer
	uint64_t peer_rounds;  // rounds the model peer plays before it goes silent
	// registrations (rb_bw_mr): ibv_reg_mr and ibv_dereg_mr are the model's
	int mr_check;          // every WR's lkey must name a live registration of the model's
	uint64_t reg_fail_at;  // that ibv_reg_mr call (1: the first) fails with ENOMEM; 0 = none
	uint64_t dereg_fail_at; // that ibv_dereg_mr call fails with EBUSY (once); 0 = none
	int64_t reg_ns, dereg_ns; // model time per ibv_reg_mr / ibv_dereg_mr call
	// The loops post through the extended QP API (rb_xfer.qpx is set to the model's QPs):
	// ibv_wr_complete posts its batch as ibv_post_send would post the same chain (one
	// post: Record.Posts counts doorbells either way), or none of it.
	int wr_api;
	int64_t clock0; // the model clock at the start; 0: 10^12 ns
	// An injected post failure: the post_fail_at-th post call (1: the first; ibv_post_send
	// and ibv_wr_complete counted alike) fails with post_fail_err, as a provider's
	// would. ibv_post_send posts the WRs of the chain before WR post_fail_wr (the last
	// one, if the chain is shorter) and names that one in *bad_wr; ibv_wr_complete posts
	// none of its batch. 0: never.
	uint64_t post_fail_at;
	int post_fail_err;
	uint32_t post_fail_wr;
} qm_config;

typedef struct {
	uint64_t due;
	int kind; // 1: the peer's answer (byte v into the local rx region); 2: a ping of round
	uint8_t v;
	uint64_t round;
	int64_t post_clock; // the model clock when the WRITE that prompted it was posted; -1: none
} qm_action;

#define QM_MAX_ACTIONS 16

struct qm_model {
	struct ibv_context ctx;
	struct ibv_cq cq;
	struct ibv_comp_channel channel;
	qm_config cfg;
	qm_qp *qps;
	struct ibv_qp **qpp;  // nqp pointers, for rb_bw_args.qps
	struct ibv_qp_ex **qpxp; // nqp pointers, for rb_xfer.qpx (with wr_api)
	volatile int stop;
	int strayed; // QM_FAULT_STRAY's completion was pushed
	// The model's own record of each signalled, successful WR: the model clock from the
	// ibv_post_send that posted it to the return of the ibv_poll_cq that delivered its
	// completion (what the loop's sample must be, give or take its own stamps).
	qm_times lat;
	// ... and of each ping-pong round: from the post of the loop's WRITE to the moment
	// the peer's message that answers it is in the loop's buffer.
	qm_times rt;
	int64_t clock, start_clock;
	uint64_t tick, polls, posts, nows, waits, wait_ticks, sleeps_ms;
	uint64_t wr_batches; // ibv_wr_complete calls that posted a batch
	uint64_t post_calls; // ibv_post_send and ibv_wr_complete calls, failed ones too
	// The injected post failure (qm_config.post_fail_at), once it happened: the QP it
	// hit, the WRs in the failed call's chain or batch, and how many of them were posted.
	int post_failed, post_fail_qp;
	uint32_t post_fail_len, post_fail_posted;
	uint64_t rng;
	// The CQ: cqes[cq_head, cq_vis) are in the CQ, cqes[cq_vis, cq_end) are still on
	// their way (ack_delay).
	qm_cqe *cqes;
	size_t cq_alloc, cq_head, cq_vis, cq_end;
	uint64_t max_cq;
	int armed;
	uint64_t arms, ev_raised, ev_pending, ev_got, ev_acked;
	// stats
	uint64_t sig_executed, sig_polled, cqes_polled, err_cqes;
	int first_post_seen;
	int posted_since_poll; // a post since the last ibv_poll_cq call
	int64_t first_post_clock, last_post_clock, last_cqe_clock, end_clock;
	uint64_t viol[QM_V_N];
	char viol_msg[QM_V_N][200];
	// ping-pong
	qm_action act[QM_MAX_ACTIONS];
	int nact;
	uint64_t pp_round;     // rounds the model has seen the loop's message for
	uint64_t pp_pings;     // pings the model initiator has delivered
	uint64_t pp_answers;   // answers the model responder has delivered
	int ping_waiting;      // a ping was delivered and the loop has not posted since
	uint64_t ping_poll;    // poll_cq count when it was delivered
	int ping_new;          // a ping was delivered in this poll_cq call
	int ping_sq_full;      // the loop's send queue was full once that call returned
	uint64_t max_polls_before_pong, polls_before_pong_total;
	uint64_t needless_polls_before_pong; // ... with room in the send queue
	uint8_t *peer_tx;
	// registrations: every MR ever registered, lkey QM_LKEY0 + its index (never reused,
	// so a stale lkey is told from a live one)
	struct ibv_pd pd;
	struct qm_reg **regs;
	size_t nreg, regcap;
	uint64_t reg_calls, dereg_calls, mr_regs, mr_deregs, mr_live, mr_max_live;
};

#define QM_LKEY0 0x1000
typedef struct qm_reg {
	struct ibv_mr mr;
	int access;
	int live;
} qm_reg;

qm_model *qm_new(const qm_config *cfg);
void qm_free(qm_model *m);
volatile int *qm_stop(qm_model *m);
// qm_bw, qm_rounds, qm_pingpong and qm_read_lat run a loop (rb_bw.c, ...) against the model.
int qm_bw(qm_model *m, rb_bw_args *a);
int qm_rounds(qm_model *m, rb_rounds_args *a);
int qm_pingpong(qm_model *m, rb_pp_args *a);
int qm_read_lat(qm_model *m, rb_rl_args *a);
int qm_bw_mr(qm_model *m, rb_bw_mr_args *a); // then QM_V_MR_LEAK for what is still registered
// qm_enter and qm_leave bracket calls of the verbs on m from this thread (the tests of
// the model's own checks); qm_leave checks for leaked MRs as qm_bw_mr does.
void qm_enter(qm_model *m);
void qm_leave(qm_model *m);
uint32_t qm_hist_index(uint64_t v); // loops.c
int64_t qm_cache_fuzz(uint32_t cap, uint64_t ops, uint64_t seed); // loops.c
#endif
