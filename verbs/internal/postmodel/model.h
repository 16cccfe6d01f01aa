// model.h: a model of the few verbs that rb_post.c calls (ibv_post_send, ibv_poll_cq,
// ibv_req_notify_cq through a context's ops table; ibv_get_cq_event,
// ibv_ack_cq_events and ibv_modify_qp; rb_wait_fd), so that the post list and the completion arrays of
// package rdma's data path are tested without a device. It records what each post
// list held, serves completions the test queues, and raises completion events on a pipe.
#ifndef PM_MODEL_H
#define PM_MODEL_H
#include "rb_post.h"

#define PM_MAX 256

typedef struct {
	struct ibv_context ctx; // first: the model is found from any object's context
	struct ibv_cq cq;
	struct ibv_qp qp;
	struct ibv_comp_channel ch;
	int pipe[2];
	// post_send
	int lists;                   // calls
	int last_n;                  // WRs in the last list
	struct ibv_send_wr wrs[PM_MAX]; // copies of the last list, in chain order
	struct ibv_sge sges[PM_MAX];
	int chain_ok;                // every next pointed at the following WR, the last at NULL
	int fail_at, fail_rc;        // fail the next list at this WR (-1: none)
	// the CQ
	struct ibv_wc cqes[PM_MAX];
	int cq_head, cq_len;
	int armed, notifies, events, acked;
	// modify_qp
	int modifies;  // calls
	int qp_state;  // the last state asked for
	int attr_mask; // its mask
	int modify_rc; // what the next modify returns
} pm_model;

pm_model *pm_new(void);
void pm_free(pm_model *m);
rb_pq *pm_queue(pm_model *m, int with_channel, int max_post, int max_poll);
void pm_push_wc(pm_model *m, uint64_t wr_id, int status, int opcode, uint32_t vendor_err, uint32_t qp_num, uint32_t len);
void pm_event(pm_model *m); // the CQ's completion event

static inline uint64_t pm_remote_addr(const struct ibv_send_wr *w) { return w->wr.rdma.remote_addr; }
static inline uint32_t pm_rkey(const struct ibv_send_wr *w) { return w->wr.rdma.rkey; }
#endif
