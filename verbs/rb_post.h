// rb_post.h: the data path of package rdma's asynchronous API (verbs/post.go). Go fills
// an array of rb_pwr in C memory and posts it to one QP in one call, as one
// ibv_post_send post list; the poller drains the CQ into an array of rb_pwc, also in C
// memory. No Go pointer ever crosses into C, and one cgo call moves a whole batch.
#ifndef RB_POST_H
#define RB_POST_H
#include <stddef.h>
#include <stdint.h>
#include <infiniband/verbs.h>

// One RDMA WRITE or READ. The Go twin is verbs.WR: same fields, same offsets (checked
// on both sides at compile time).
enum { RB_PWR_WRITE = 0, RB_PWR_READ = 1 };
enum { RB_PWR_SIGNALED = 1 };
typedef struct {
	uint64_t wr_id;
	uint64_t laddr; // local buffer: address, lkey, length
	uint64_t raddr; // remote buffer: address, rkey
	uint32_t len;
	uint32_t lkey;
	uint32_t rkey;
	uint8_t opcode; // RB_PWR_WRITE or RB_PWR_READ
	uint8_t flags;  // RB_PWR_SIGNALED
	uint8_t pad[2];
} rb_pwr;

// One work completion, the fields of struct ibv_wc that package rdma reads. The Go
// twin is verbs.WC.
typedef struct {
	uint64_t wr_id;
	uint32_t status;     // enum ibv_wc_status
	uint32_t opcode;     // enum ibv_wc_opcode (undefined when status is an error)
	uint32_t vendor_err;
	uint32_t qp_num;
	uint32_t byte_len;
	uint32_t pad;
} rb_pwc;

// A session's post list and completion arrays, allocated once (rb_pq_new) in one block.
typedef struct {
	struct ibv_cq *cq;
	struct ibv_comp_channel *channel; // NULL: rb_pq_wait only polls
	int max_post, max_poll;
	rb_pwr *wrs;             // max_post: what Go fills
	struct ibv_send_wr *swr; // max_post: built from wrs by rb_pq_post
	struct ibv_sge *sge;     // max_post
	rb_pwc *wcs;             // max_poll: what Go reads
	struct ibv_wc *iwc;      // max_poll: what ibv_poll_cq fills
	int armed;               // the CQ is armed (ibv_req_notify_cq) and no event was consumed
	int bad;                 // out of rb_pq_post: index of the first WR not posted
} rb_pq;

rb_pq *rb_pq_new(struct ibv_cq *cq, struct ibv_comp_channel *channel, int max_post, int max_poll);
void rb_pq_free(rb_pq *q);

// rb_pq_post posts wrs[0..n) to qp as one chained list of n ibv_send_wr (a WR of length
// 0 with no scatter/gather entry: a zero-length WRITE touches no memory). It returns 0
// or ibv_post_send's error (an errno); then bad is the index of the first WR not
// posted (those before it were).
int rb_pq_post(rb_pq *q, struct ibv_qp *qp, int n);

// rb_qp_error moves qp to the error state (ibv_modify_qp to IBV_QPS_ERR): the NIC stops
// its WRs, and every outstanding one, signalled or not, completes with
// IBV_WC_WR_FLUSH_ERR on the CQ. It returns 0 or ibv_modify_qp's error (an errno).
int rb_qp_error(struct ibv_qp *qp);

// rb_pq_poll polls up to max_poll completions into wcs: their count, or -1.
int rb_pq_poll(rb_pq *q);

// rb_pq_wait sleeps until the CQ has completions or timeout_ms passes: it arms the CQ,
// polls once more (a completion that arrived before the arming raises no event), and
// only then waits for the completion event on the channel, consumes and acknowledges
// it, and polls. It returns the number of completions polled into wcs (0 on timeout),
// or -errno.
int rb_pq_wait(rb_pq *q, int timeout_ms);
#endif
