// rb.h: the C side of the verbs layer. Everything that runs per work request lives
// here, so a measurement is one cgo call: Go sets up resources, C runs the timed
// post/poll loop and fills C-allocated sample arrays, Go reads them afterwards.
#ifndef RB_H
#define RB_H
#include <stdint.h>
#include <infiniband/verbs.h>

// rb_now returns CLOCK_MONOTONIC_RAW in nanoseconds (no NTP slewing).
int64_t rb_now(void);

// The loops stamp with a tick counter: on x86-64 the TSC (a few ns to read, where
// clock_gettime can cost a microsecond when the kernel's clocksource is HPET, as under
// qemu emulation), else rb_now(). Each loop converts ticks to ns with the ratio
// measured against CLOCK_MONOTONIC_RAW across the loop itself (two points at least
// 20 ms apart): no fit that can fail the way perftest's calibration does.
// rb_set_clock(0) forces rb_now().
void rb_set_clock(int use_tsc);
int rb_clock_is_tsc(void);

// Buffers live outside the Go heap: mmap'ed, page-aligned base, optional hugepages.
void *rb_mmap(size_t len, int huge);
int rb_munmap(void *p, size_t len);
void rb_fill(uint8_t *p, size_t len, uint32_t seed);
int64_t rb_check(const uint8_t *p, size_t len, uint32_t seed); // -1 ok, else first bad offset

int rb_query_port(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr);

typedef struct {
	int status;      // ibv_wc_status of a failed completion, -1 when a verb failed
	int opcode;      // ibv_wc_opcode of the failed completion
	uint64_t wr_id;
	int err;         // errno of a failed verb
	const char *verb; // the verb that failed
} rb_fail;

// Bandwidth: keep tx_depth WRs in flight per QP, chain post_list WRs per ibv_post_send,
// signal every cq_mod-th WR and the last, poll the shared CQ in batches of 16.
typedef struct {
	struct ibv_qp **qps;
	int nqp;
	struct ibv_cq *cq;
	int opcode;           // IBV_WR_RDMA_WRITE or IBV_WR_RDMA_READ
	uint64_t laddr;
	uint32_t lkey;
	uint64_t raddr;
	uint32_t rkey;
	uint32_t size;
	uint64_t iters;       // WRs per QP
	uint32_t tx_depth, post_list, cq_mod;
	int send_flags;       // e.g. IBV_SEND_INLINE
	struct ibv_comp_channel *channel; // non-NULL: sleep on completion events instead of spinning
	int64_t deadline_ns;  // absolute rb_now() value; 0 = none
	volatile int *stop;   // set from another thread (Ctrl-C): finish in-flight WRs and return
	// out
	int64_t *lat;         // completion latency of each signalled WR (post to poll), ns
	uint64_t lat_cap, lat_n;
	uint64_t completed;   // WRs completed, all QPs
	uint64_t events;      // completion events waited for
	int64_t duration_ns;  // first post to last completion
	rb_fail fail;
} rb_bw_args;
int rb_bw(rb_bw_args *a);

// WRITE ping-pong (perftest's write_lat): the initiator writes size bytes whose last
// byte carries a round number into the peer's buffer and spins on its own buffer's last
// byte until the peer's answer arrives; the responder mirrors it.
typedef struct {
	struct ibv_qp *qp;
	struct ibv_cq *cq;
	uint64_t laddr;       // local send region
	uint32_t lkey;
	uint64_t raddr;       // peer's receive region
	uint32_t rkey;
	uint32_t size;
	volatile uint8_t *rx_last; // last byte of the local receive region
	uint64_t first, iters;     // rounds first .. first+iters-1
	int initiator;
	uint32_t sq_depth, cq_mod;
	int send_flags;
	volatile int *stop;
	int64_t *rtt;         // initiator: per-round round-trip time, ns
	uint64_t done;
	rb_fail fail;
} rb_pp_args;
int rb_pingpong(rb_pp_args *a);

// READ latency: one signalled READ at a time, busy-poll its completion.
typedef struct {
	struct ibv_qp *qp;
	struct ibv_cq *cq;
	uint64_t laddr;
	uint32_t lkey;
	uint64_t raddr;
	uint32_t rkey;
	uint32_t size;
	uint64_t iters;
	volatile int *stop;
	int64_t *lat;
	uint64_t done;
	rb_fail fail;
} rb_rl_args;
int rb_read_lat(rb_rl_args *a);
#endif
