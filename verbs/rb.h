// rb.h: the C side of the verbs layer. Everything that runs per work request lives
// here, so a measurement is one cgo call: Go sets up resources, C runs the timed
// post/poll loop and records every sample into a C-side histogram, Go reads it after.
//
// The loops (rb_*.c over rb_loop.h, and rb.c) use only the data-path verbs that
// libibverbs inlines through the context's ops table (ibv_post_send, ibv_poll_cq,
// ibv_req_notify_cq), or through an extended QP's (ibv_wr_start, ibv_wr_rdma_write,
// ibv_wr_rdma_read, ibv_wr_set_sge, ibv_wr_set_inline_data, ibv_wr_complete), plus
// ibv_get_cq_event and ibv_ack_cq_events (and, in rb_bw_mr, ibv_reg_mr and
// ibv_dereg_mr), so they can be compiled against a model of the verbs queues
// (verbs/internal/qmodel) and tested without a device. Building with -DRB_MODEL makes
// rb_now() and rb_wait_fd() the model's (a simulated clock), not the kernel's.
#ifndef RB_H
#define RB_H
#include <stdint.h>
#include <infiniband/verbs.h>

// rb_now returns CLOCK_MONOTONIC_RAW in nanoseconds (no NTP slewing).
int64_t rb_now(void);

// rb_wait_fd waits up to timeout_ms for fd to become readable: 1 readable, 0 timeout,
// -1 error (errno set).
int rb_wait_fd(int fd, int timeout_ms);

// The loops stamp with a tick counter: on x86-64 the TSC when rb_set_clock(1) (a few ns
// to read, where clock_gettime can cost a microsecond when the kernel's clocksource is
// HPET, as under qemu emulation), else rb_now(). Go decides which (verbs.ClockVerdict:
// the TSC only where the CPU and the kernel vouch for it). Each loop converts ticks to
// ns with the ratio measured against CLOCK_MONOTONIC_RAW across the loop itself (two
// points at least 20 ms apart); a TSC that did not advance fails the loop.
void rb_set_clock(int use_tsc);
int rb_clock_is_tsc(void);

// Buffers live outside the Go heap: mmap'ed, page-aligned base, optional hugepages.
// node >= 0 binds the pages to that NUMA node, preferred (mbind MPOL_PREFERRED), before
// they are touched; *bound says whether the kernel took the policy.
void *rb_mmap(size_t len, int huge, int node, int *bound);
int rb_munmap(void *p, size_t len);

// IBV_ACCESS_RELAXED_ORDERING came with libibverbs' optional access flags (rdma-core
// 28, 2020); it is an enum, so the guard is the optional range's macro. Against older
// headers RB_ACCESS_RELAXED_ORDERING is 0: relaxed ordering cannot be asked for, and
// the Go side refuses a plan that asks (verbs.RelaxedOrderingBuilt).
#ifdef IBV_ACCESS_OPTIONAL_FIRST
#define RB_ACCESS_RELAXED_ORDERING IBV_ACCESS_RELAXED_ORDERING
#else
#define RB_ACCESS_RELAXED_ORDERING 0
#endif

// rb_reg_mr is ibv_reg_mr as C sees it: libibverbs' macro, which hands access flags in
// the optional range to ibv_reg_mr_iova2, where the flags the kernel does not support
// are dropped instead of failing the registration (cgo cannot call the macro itself).
static inline struct ibv_mr *rb_reg_mr(struct ibv_pd *pd, void *addr, size_t len, int access) {
	return ibv_reg_mr(pd, addr, len, access);
}
void rb_fill(uint8_t *p, size_t len, uint32_t seed);
int64_t rb_check(const uint8_t *p, size_t len, uint32_t seed); // -1 ok, else first bad offset
int rb_query_port(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr);
// rb_pin pins the calling thread to the n CPUs given (sched_setaffinity; -1, errno on
// failure); rb_allowed_cpus lists the CPUs this thread may run on (at most max; -1 on
// failure); rb_getcpu is the CPU the caller is on now.
int rb_pin(const int *cpus, int n);
int rb_allowed_cpus(int *cpus, int max);
int rb_getcpu(void);
// rb_now, rb_wait_fd, the buffers and rb_query_port live in rb_sys.c; the loops in
// rb_bw.c, rb_bw_mr.c, rb_rounds.c, rb_pingpong.c and rb_read_lat.c, what they share in
// rb.c and rb_loop.h.

// wr_id carries the QP index above RB_QSHIFT and the WR's sequence number below.
#define RB_QSHIFT 48

// Latency histogram of ticks, log-linear with HdrHistogram's layout at 3 significant
// digits: values below 2048 exactly, then 1024 sub-buckets per power of two. Every
// sample is counted; samples whose end stamp precedes their start go to `backwards`
// and nowhere else.
#define RB_HIST_SUB 2048
#define RB_HIST_HALF 1024
#define RB_HIST_LEN (RB_HIST_SUB + 53 * RB_HIST_HALF)
typedef struct {
	uint64_t counts[RB_HIST_LEN];
	uint64_t n, backwards;
	int64_t min, max;            // ticks
	uint64_t sum_lo, sum_hi;     // 128-bit sum, ticks
	uint64_t sumsq_lo, sumsq_hi; // 128-bit sum of squares, ticks^2
} rb_hist;
void rb_hist_reset(rb_hist *h);
void rb_hist_add(rb_hist *h, int64_t ticks);
// rb_hist_low and rb_hist_width: the lowest tick value of bucket i and its width.
uint64_t rb_hist_low(uint32_t i);
uint64_t rb_hist_width(uint32_t i);

// Why a loop failed.
enum {
	RB_FAIL_NONE = 0,
	RB_FAIL_VERB,    // a verb returned an error: verb, err
	RB_FAIL_WC,      // a completion with an error status: status, opcode, wr_id, vendor_err, qp_num
	RB_FAIL_TIMEOUT, // the peer made no progress for timeout_ns: verb names the wait
	RB_FAIL_CLOCK,   // the tick counter did not advance across the loop
};
typedef struct {
	int kind;
	int status;       // ibv_wc_status
	int opcode;       // ibv_wc_opcode
	uint64_t wr_id;
	uint32_t vendor_err;
	uint32_t qp_num;
	int err;          // errno of a failed verb
	const char *verb; // the verb or the wait that failed
} rb_fail;

// What every loop shares: the CQ, the local and remote buffer, the message size, the
// stop flag, the bound on waiting for the peer, and the outcome.
typedef struct {
	struct ibv_cq *cq;
	uint64_t laddr;
	uint32_t lkey;
	uint64_t raddr;
	uint32_t rkey;
	uint32_t size;
	int send_flags;       // e.g. IBV_SEND_INLINE
	volatile int *stop;   // set from another thread (Ctrl-C, end of test): finish and return
	int64_t timeout_ns;   // fail when the peer makes no progress for this long; 0 = never
	rb_hist *hist;        // every sample, in ticks (NULL: none recorded)
	// The loop's QPs as extended QPs (ibv_qp_to_qp_ex), in the loop's QP order: set,
	// every WR is posted with ibv_wr_start .. ibv_wr_complete (one batch per chain);
	// NULL, with ibv_post_send.
	struct ibv_qp_ex *const *qpx;
	// out
	double ns_per_tick;   // the loop's calibration
	int64_t duration_ns;  // first post to the last completion (or answer) seen
	// rb_bw: the first post on the rb_now() clock (0: nothing posted), so that loops
	// run at once on several threads add up to one window.
	int64_t start_ns;
	rb_fail fail;
} rb_xfer;

// Bandwidth: keep tx_depth WRs in flight per QP, chain up to post_list WRs per
// ibv_post_send (the part of a chain that fits the send queue), signal every
// cq_mod-th WR and each QP's last, poll the shared CQ in batches of 16. WR number i of
// QP q goes from local slot i % lslots to remote slot i % rslots of that QP's region
// (local region q starts at laddr + q*lstride, remote region q at raddr[q] with key
// rkey[q]: the QPs may lead to one peer or to one peer each; slots are `stride` bytes
// apart). x.raddr and x.rkey are not used.
// Samples: post to completion of each signalled WR (also into qhist[q], when given).
typedef struct {
	rb_xfer x;
	struct ibv_qp **qps;
	int nqp;
	int opcode;           // IBV_WR_RDMA_WRITE or IBV_WR_RDMA_READ
	uint32_t lslots, rslots, stride;
	uint64_t lstride;     // 0: every QP sends from (or lands in) the same local region
	const uint64_t *raddr; // nqp entries
	const uint32_t *rkey;  // nqp entries
	rb_hist *qhist;       // nqp histograms, or NULL
	uint64_t iters;       // WRs per QP (with deadline_ns: an upper bound, UINT64_MAX for none)
	uint32_t tx_depth, post_list, cq_mod;
	struct ibv_comp_channel *channel; // non-NULL: sleep on completion events instead of spinning
	int64_t deadline_ns;  // absolute rb_now() value; 0 = none. Posting stops there.
	// gate (loops on several threads, --threads): each loop adds one to *gate and waits
	// until gate_n have (or a stop, or a second) before its window opens, so that the
	// threads start together; NULL for one loop.
	volatile int *gate;
	int gate_n;
	// out
	uint64_t *done;       // nqp entries: WRs of each QP known complete
	int64_t *qlast_ns;    // nqp entries: the loop's first post to each QP's last completion
	uint64_t completed;   // all QPs
	uint64_t events;      // completion events waited for
	// The steady window: from the first poll that reaped completions once every queue
	// had turned over (nqp x tx_depth WRs complete) to the last poll that reaped some
	// while every QP still had WRs to post (before the deadline, the stop flag or a QP's
	// last WR), the WRs completed in between (all QPs) and its length. Inside it every
	// queue is kept full and the fill's transient (a first burst of completions held
	// back, as rxe shows with post lists) is behind it, so steady_wrs / steady_ns is the
	// link's rate without the fill and drain that the whole window includes. 0, 0 when
	// fewer than two such polls were made.
	uint64_t steady_wrs;
	int64_t steady_ns;
} rb_bw_args;
int rb_bw(rb_bw_args *a);

// Rounds (fan-out / fan-in): each round posts one signalled WR on every QP, WR r of QP
// q moving local slot r % lslots (region q*lstride) to or from remote slot r % rslots
// at raddr[q], and waits until all have completed before the next round. The stop flag
// and the deadline are looked at between rounds; a round in progress always finishes,
// so the QPs are idle when the loop returns.
// Samples: x.hist gets each round's time from its first post to its last completion
// ("until the last peer has it"); qhist[q], when given, the time from the round's
// first post to QP q's completion.
typedef struct {
	rb_xfer x;
	struct ibv_qp **qps;
	int nqp;
	int opcode;
	uint32_t lslots, rslots, stride;
	uint64_t lstride;
	const uint64_t *raddr;
	const uint32_t *rkey;
	rb_hist *qhist;
	uint64_t iters;       // rounds (with deadline_ns: an upper bound)
	int64_t deadline_ns;  // absolute rb_now() value; 0 = none
	// out
	uint64_t *done;       // nqp entries: WRs of each QP known complete
	int64_t *qlast_ns;    // nqp entries: the first post to each QP's last completion
	uint64_t rounds;      // rounds completed
} rb_rounds_args;
int rb_rounds(rb_rounds_args *a);

// WRITE ping-pong (perftest's write_lat): the initiator writes size bytes whose last
// byte carries a round number into the peer's buffer and spins on its own buffer's last
// byte until the peer's answer arrives; the responder mirrors it. Both poll their CQ
// after posting, outside the round trip; both watch it for errors while they spin.
// Samples (initiator): the round-trip time of each round. A timed responder (against
// perftest's write_lat server, which sends first) samples from each answer it posts to
// the next message seen: the same round trip, one fewer. Round r's byte is r % 255 + 1
// (never 0), or with perftest_bytes perftest's own count, (r + 1) % 256.
typedef struct {
	rb_xfer x;
	struct ibv_qp *qp;
	volatile uint8_t *rx_last; // last byte of the local receive region
	uint64_t first, iters;     // rounds first .. first+iters-1
	int initiator;
	int timed_responder, perftest_bytes;
	uint32_t sq_depth, cq_mod;
	uint64_t done;             // out: rounds completed
} rb_pp_args;
int rb_pingpong(rb_pp_args *a);

// READ latency: one signalled READ at a time, busy-poll its completion.
// Samples: post to completion of each READ.
typedef struct {
	rb_xfer x;
	struct ibv_qp *qp;
	uint64_t iters;
	uint64_t done;             // out
} rb_rl_args;
int rb_read_lat(rb_rl_args *a);

// Bandwidth with the registration in the loop (--mr per-io | cache), on one QP: like
// rb_bw (tx_depth WRs in flight, every cq_mod-th WR and the last signalled, completions
// polled in batches of 16, the stop flag, the deadline and the watchdog as there), one
// WR per ibv_post_send, WR i moving local slot i % lslots (at x.laddr, slots `stride`
// bytes apart) to or from remote slot i % rslots (at x.raddr, key x.rkey). x.lkey is
// not used: every WR's SGE carries the lkey of an MR this loop registered on pd, with
// `access`: IBV_ACCESS_LOCAL_WRITE (what a READ needs to land its data; a WRITE's
// source would need none, and takes the same so that the two ops' registrations cost
// the same), with IBV_ACCESS_RELAXED_ORDERING when the test registers its memory so,
// covering exactly the WR's slot (its address, size bytes):
//
//   RB_MRMODE_PER_IO  each WR registers its slot before it is posted and deregisters
//                     that MR when the WR is known complete;
//   RB_MRMODE_CACHE   an LRU of at most cache_size registrations keyed by (address,
//                     length): a WR whose slot is cached uses that MR (a hit), else (a
//                     miss) the loop registers the slot, first evicting (deregistering)
//                     the least recently used entry no outstanding WR uses when the
//                     cache is full. cache_size >= tx_depth, so that one always exists.
//
// Registrations and the deregistrations at completions and evictions happen inside the
// timed window (the first registration to the end of the last completion's handling),
// each timed on its own (reg_ns, dereg_ns). What is still registered when the loop ends
// (the cache's entries; after a stop or a failure, the MRs of WRs not known complete) is
// deregistered after the window closes, whatever the outcome, and counted in
// deregs_after (not timed); an MR whose deregistration failed in the window is tried
// again then. So the loop returns with none of its MRs registered unless an
// ibv_dereg_mr after the window failed too. A failed ibv_reg_mr or ibv_dereg_mr fails
// the loop with RB_FAIL_VERB and the verb's errno (the first failure is the one kept).
// Samples: post to completion of each signalled WR, as rb_bw (the registration comes
// before the post stamp: reg_ns has it).
enum { RB_MRMODE_PER_IO = 1, RB_MRMODE_CACHE = 2 };
typedef struct {
	rb_xfer x;
	struct ibv_qp *qp;
	struct ibv_pd *pd;    // the QP's PD: where the loop registers
	int opcode;           // IBV_WR_RDMA_WRITE or IBV_WR_RDMA_READ
	int mode;             // RB_MRMODE_*
	int access;           // every registration's access flags (verbs.Spec.LoopAccess)
	uint32_t cache_size;  // RB_MRMODE_CACHE: at most this many registrations, >= tx_depth
	uint32_t lslots, rslots, stride;
	uint64_t iters;       // WRs (with deadline_ns: an upper bound, UINT64_MAX for none)
	uint32_t tx_depth, cq_mod;
	int64_t deadline_ns;  // absolute rb_now() value; 0 = none. Posting stops there.
	// out
	uint64_t *done;       // 1 entry: WRs known complete (stored atomically: Go reads it during the loop)
	int64_t *qlast_ns;    // 1 entry: x.duration_ns (its one QP's window), 0 when nothing completed
	uint64_t completed;
	uint64_t regs, deregs;  // successful ibv_reg_mr / ibv_dereg_mr calls, deregs_after included
	uint64_t deregs_after;  // of deregs: after the window closed
	uint64_t hits, misses;  // RB_MRMODE_CACHE: lookups of posted WRs
	int64_t reg_ns, dereg_ns; // time inside ibv_reg_mr, and inside ibv_dereg_mr in the window
} rb_bw_mr_args;
int rb_bw_mr(rb_bw_mr_args *a);
#endif
