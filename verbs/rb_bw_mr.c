//go:build linux && cgo

// rb_bw_mr.c: bandwidth with the registration in the loop, rb_bw_mr: the registration
// cache and the loop. See rb.h for its contract, rb_loop.h for the rules it shares
// with rb_bw. No function here calls back into Go.
#include "rb_loop.h"
#include <stdlib.h>
#include <string.h>

// An outstanding WR of rb_bw_mr: its post stamp (when signalled) and the registration
// it uses: per-io its own MR (NULL once deregistered), cache an entry.
typedef struct {
	int64_t pt;
	struct ibv_mr *mr;
	int32_t ent;
} mr_wr;

// A registration of the cache: the slot it covers, the outstanding WRs using it, and
// its place in the idle list (entries no WR uses, the most recently released first;
// completions come in order, so that is the order of their last use).
typedef struct {
	uint64_t addr;
	uint32_t len, refs;
	struct ibv_mr *mr; // NULL: not registered
	int32_t prev, next;
} mr_ent;

// The cache: at most cap entries, found by (address, length) in an open-addressing
// table (linear probing, at least twice as many buckets as entries, so a look-up costs
// the same whatever the cache's size).
typedef struct {
	mr_ent *e;
	uint32_t n, cap;
	int32_t *tab; // entry index, -1: empty
	uint32_t mask;
	int32_t idle_head, idle_tail;
} mr_cache;

typedef struct {
	rb_bw_mr_args *a;
	mr_wr *ring; // tx_depth entries, WR seq at seq % tx_depth
	mr_cache c;
	uint64_t posted;
	int64_t t_start, t_end;
	int64_t reg_t, dereg_t; // ticks inside ibv_reg_mr, and inside ibv_dereg_mr in the window
} mr_loop;

static uint32_t mr_hash(uint64_t addr, uint32_t len) {
	uint64_t h = (addr ^ ((uint64_t)len << 40) ^ (addr >> 29)) * 0x9E3779B97F4A7C15ULL;
	return (uint32_t)(h >> 32);
}

static int cache_init(mr_cache *c, uint32_t cap) {
	uint32_t buckets = 2;
	while (buckets < 2 * (uint64_t)cap)
		buckets <<= 1;
	c->e = calloc(cap, sizeof(mr_ent));
	c->tab = malloc((size_t)buckets * sizeof(int32_t));
	if (!c->e || !c->tab)
		return -1;
	memset(c->tab, 0xff, (size_t)buckets * sizeof(int32_t));
	c->n = 0;
	c->cap = cap;
	c->mask = buckets - 1;
	c->idle_head = c->idle_tail = -1;
	return 0;
}

// cache_find returns the entry holding (addr, len), or -1.
static int32_t cache_find(const mr_cache *c, uint64_t addr, uint32_t len) {
	for (uint32_t i = mr_hash(addr, len) & c->mask;; i = (i + 1) & c->mask) {
		int32_t k = c->tab[i];
		if (k < 0 || (c->e[k].addr == addr && c->e[k].len == len))
			return k;
	}
}

static void cache_insert(mr_cache *c, int32_t k) {
	uint32_t i = mr_hash(c->e[k].addr, c->e[k].len) & c->mask;
	while (c->tab[i] >= 0)
		i = (i + 1) & c->mask;
	c->tab[i] = k;
}

// cache_remove takes entry k out of the table, moving back the entries after it that
// would no longer be found (deletion without tombstones).
static void cache_remove(mr_cache *c, int32_t k) {
	uint32_t i = mr_hash(c->e[k].addr, c->e[k].len) & c->mask;
	while (c->tab[i] != k)
		i = (i + 1) & c->mask;
	for (uint32_t j = i;;) {
		j = (j + 1) & c->mask;
		int32_t m = c->tab[j];
		if (m < 0)
			break;
		uint32_t h = mr_hash(c->e[m].addr, c->e[m].len) & c->mask;
		// m stays where it is when its home bucket h lies cyclically in (i, j].
		if (i <= j ? (i < h && h <= j) : (i < h || h <= j))
			continue;
		c->tab[i] = m;
		i = j;
	}
	c->tab[i] = -1;
}

static void idle_push(mr_cache *c, int32_t k) {
	c->e[k].prev = -1;
	c->e[k].next = c->idle_head;
	if (c->idle_head >= 0)
		c->e[c->idle_head].prev = k;
	else
		c->idle_tail = k;
	c->idle_head = k;
}

static void idle_unlink(mr_cache *c, int32_t k) {
	mr_ent *e = &c->e[k];
	if (e->prev >= 0)
		c->e[e->prev].next = e->next;
	else
		c->idle_head = e->next;
	if (e->next >= 0)
		c->e[e->next].prev = e->prev;
	else
		c->idle_tail = e->prev;
	e->prev = e->next = -1;
}

// dereg_err is ibv_dereg_mr's outcome as an errno (it returns one; a provider may
// return -1 and set errno instead).
static int dereg_err(struct ibv_mr *mr) {
	errno = 0;
	int rc = ibv_dereg_mr(mr);
	if (rc == 0)
		return 0;
	return rc > 0 ? rc : errno ? errno : EIO;
}

// mr_reg registers size bytes at addr, timed, into *mrp.
static int mr_reg(mr_loop *l, uint64_t addr, struct ibv_mr **mrp) {
	rb_xfer *x = &l->a->x;
	int64_t t0 = ticks();
	errno = 0;
	struct ibv_mr *mr = ibv_reg_mr(l->a->pd, (void *)(uintptr_t)addr, x->size, l->a->access);
	int err = errno;
	int64_t t1 = ticks();
	if (t1 > t0)
		l->reg_t += t1 - t0;
	if (!mr)
		return verb_failed(x, "ibv_reg_mr", err ? err : ENOMEM);
	l->a->regs++;
	*mrp = mr;
	return 0;
}

// mr_dereg deregisters *mrp inside the window, timed; *end becomes the tick it returned.
// On a failure *mrp stays, for the sweep after the window to try again.
static int mr_dereg(mr_loop *l, struct ibv_mr **mrp, int64_t *end) {
	int64_t t0 = ticks();
	int err = dereg_err(*mrp);
	int64_t t1 = ticks();
	if (t1 > t0)
		l->dereg_t += t1 - t0;
	if (err)
		return verb_failed(&l->a->x, "ibv_dereg_mr", err);
	*mrp = NULL;
	l->a->deregs++;
	if (t1 > *end)
		*end = t1;
	return 0;
}

// mr_get gives WR seq, about to be posted from addr, its registration: *hit says whether
// the cache had it.
static int mr_get(mr_loop *l, uint64_t seq, uint64_t addr, uint32_t *lkey, int *hit) {
	rb_bw_mr_args *a = l->a;
	mr_wr *w = &l->ring[seq % a->tx_depth];
	*hit = 0;
	if (a->mode == RB_MRMODE_PER_IO) {
		if (mr_reg(l, addr, &w->mr))
			return -1;
		*lkey = w->mr->lkey;
		return 0;
	}
	mr_cache *c = &l->c;
	int32_t k = cache_find(c, addr, a->x.size);
	if (k >= 0) {
		*hit = 1;
		if (c->e[k].refs++ == 0)
			idle_unlink(c, k);
	} else {
		if (c->n < c->cap) {
			k = (int32_t)c->n++;
		} else {
			// Full: evict the least recently used entry that no outstanding WR uses.
			// There is one: at most tx_depth-1 WRs are outstanding, each holding one
			// entry, and cap >= tx_depth.
			k = c->idle_tail;
			if (k < 0)
				return verb_failed(&a->x, "registration cache (every entry in use)", ENOSPC);
			idle_unlink(c, k);
			cache_remove(c, k);
			int64_t end = 0;
			if (mr_dereg(l, &c->e[k].mr, &end))
				return -1;
		}
		c->e[k].addr = addr;
		c->e[k].len = a->x.size;
		c->e[k].refs = 1;
		c->e[k].prev = c->e[k].next = -1;
		if (mr_reg(l, addr, &c->e[k].mr))
			return -1;
		cache_insert(c, k);
	}
	w->ent = k;
	*lkey = c->e[k].mr->lkey;
	return 0;
}

// mr_put: WR seq is known complete. Per-io its MR goes (*end: when that was done); in
// the cache its entry is released, idle once no outstanding WR uses it.
static int mr_put(mr_loop *l, uint64_t seq, int64_t *end) {
	mr_wr *w = &l->ring[seq % l->a->tx_depth];
	if (l->a->mode == RB_MRMODE_PER_IO)
		return mr_dereg(l, &w->mr, end);
	if (--l->c.e[w->ent].refs == 0)
		idle_push(&l->c, w->ent);
	return 0;
}

// mr_sweep deregisters, after the window, every MR the loop still holds; rc is the
// loop's outcome, which a failure here replaces only where it was a success. On a
// failed loop (a failed post, a timeout, an error completion) WRs may still be on the
// QP: their MRs go too, so a NIC still retrying them completes them with a local
// protection error into a CQ nobody polls; the run has failed and the session (its QPs
// and CQ) is destroyed next, so nothing reads or writes the memory afterwards.
static int mr_sweep(mr_loop *l, int rc) {
	rb_bw_mr_args *a = l->a;
	uint32_t n = l->ring && a->mode == RB_MRMODE_PER_IO ? a->tx_depth : 0, m = l->c.e ? l->c.n : 0;
	for (uint32_t i = 0; i < n + m; i++) {
		struct ibv_mr **mrp = i < n ? &l->ring[i].mr : &l->c.e[i - n].mr;
		if (!*mrp)
			continue;
		int err = dereg_err(*mrp);
		if (err) {
			if (rc == 0)
				rc = verb_failed(&a->x, "ibv_dereg_mr", err);
			continue;
		}
		*mrp = NULL;
		a->deregs++;
		a->deregs_after++;
	}
	return rc;
}

static int bw_mr(mr_loop *l);

int rb_bw_mr(rb_bw_mr_args *a) {
	rb_xfer *x = &a->x;
	mr_loop l;
	memset(&l, 0, sizeof(l));
	l.a = a;
	memset(&x->fail, 0, sizeof(x->fail));
	*a->done = 0;
	a->completed = a->regs = a->deregs = a->deregs_after = a->hits = a->misses = 0;
	a->reg_ns = a->dereg_ns = 0;
	rb_clock clk;
	int rc;
	clk_begin(&clk);
	if ((a->mode != RB_MRMODE_PER_IO && a->mode != RB_MRMODE_CACHE) || a->tx_depth < 1 || a->cq_mod < 1 ||
	    a->cq_mod > a->tx_depth || a->lslots < 1 || a->rslots < 1 ||
	    (a->mode == RB_MRMODE_CACHE && (a->cache_size < a->tx_depth || a->cache_size > (1u << 30))))
		rc = verb_failed(x, "rb_bw_mr(arguments)", EINVAL);
	else if (!(l.ring = calloc(a->tx_depth, sizeof(mr_wr))) ||
	         (a->mode == RB_MRMODE_CACHE && cache_init(&l.c, a->cache_size)))
		rc = verb_failed(x, "calloc", ENOMEM);
	else
		rc = bw_mr(&l);
	rc = mr_sweep(&l, rc); // the window is closed
	rc = rb_clk_end(&clk, x, rc);
	x->duration_ns = ticks_ns(x, l.t_start, l.t_end);
	a->completed = *a->done;
	*a->qlast_ns = a->completed ? x->duration_ns : 0;
	a->reg_ns = ticks_ns(x, 0, l.reg_t);
	a->dereg_ns = ticks_ns(x, 0, l.dereg_t);
	free(l.ring);
	free(l.c.e);
	free(l.c.tab);
	return rc;
}

// bw_mr_post posts the next WRs, one per post, each with its registration, until the
// send queue is full or the loop has posted *target. Each WR posted is a unit of *work.
static inline __attribute__((always_inline)) int bw_mr_post(mr_loop *l, uint64_t target, uint32_t *lcur,
                                                            uint32_t *rcur, uint32_t *work) {
	rb_bw_mr_args *a = l->a;
	rb_xfer *x = &a->x;
	const uint64_t depth = a->tx_depth, mod = a->cq_mod; // read once, as rb_bw's bw_loop
	const uint64_t *const done = a->done;
	struct ibv_sge sge = {.length = x->size};
	struct ibv_send_wr wr = {.sg_list = &sge, .num_sge = 1, .opcode = a->opcode};
	wr.wr.rdma.rkey = x->rkey;
	while (l->posted < target && l->posted - *done < depth) {
		uint64_t seq = l->posted;
		int hit;
		sge.addr = x->laddr + (uint64_t)*lcur * a->stride;
		if (mr_get(l, seq, sge.addr, &sge.lkey, &hit))
			return -1;
		wr.wr_id = seq;
		wr.send_flags = x->send_flags;
		wr.wr.rdma.remote_addr = x->raddr + (uint64_t)*rcur * a->stride;
		if (signals(seq, mod, target)) {
			wr.send_flags |= IBV_SEND_SIGNALED;
			l->ring[seq % depth].pt = ticks();
		}
		int err = post(x, 0, a->qp, &wr);
		if (err) // its registration stays where the sweep finds it
			return verb_failed(x, post_verb(x), err);
		l->posted++;
		if (a->mode == RB_MRMODE_CACHE) {
			if (hit)
				a->hits++;
			else
				a->misses++;
		}
		if (++*lcur == a->lslots)
			*lcur = 0;
		if (++*rcur == a->rslots)
			*rcur = 0;
		(*work)++;
	}
	return 0;
}

// bw_mr_reap polls the CQ once and takes in what it reaped: the samples, the count of
// WRs known complete, and the registrations of every WR a completion completes (its
// own and those before it) given back. It returns the number of completions, or -1 on
// a failure.
static inline __attribute__((always_inline)) int bw_mr_reap(mr_loop *l, struct ibv_wc *wc) {
	rb_bw_mr_args *a = l->a;
	rb_xfer *x = &a->x;
	uint64_t *done = a->done;
	int ne = ibv_poll_cq(x->cq, POLL_BATCH, wc);
	if (ne <= 0)
		return ne < 0 ? poll_failed(x) : 0;
	int64_t t = ticks(), end = t;
	for (int i = 0; i < ne; i++) {
		if (wc[i].status != IBV_WC_SUCCESS)
			return wc_failed(x, &wc[i]);
		uint64_t seq = wc[i].wr_id;
		if (seq < *done || seq >= l->posted)
			return unexpected(x, &wc[i]);
		sample(x, t - l->ring[seq % a->tx_depth].pt);
		for (uint64_t s = *done; s <= seq; s++)
			if (mr_put(l, s, &end))
				return -1;
		__atomic_store_n(done, seq + 1, __ATOMIC_RELAXED);
	}
	l->t_end = end;
	return ne;
}

// The loop is rb_bw's on one QP with a post list of 1, with rb_bw's rules (rb_loop.h:
// signals, check_turn, stop_target), so the same argument rules out a deadlock (a
// signalled WR among any tx_depth outstanding ones), and a stop or the deadline posts at
// most one more WR, signalled. What it adds: each WR gets its registration just before
// it is posted, and gives it back when it is known complete (with cq_mod > 1, at the
// completion of the signalled WR after it). The window runs from before the first
// registration to the end of the last batch of completions' handling, deregistrations
// included.
static int bw_mr(mr_loop *l) {
	rb_bw_mr_args *a = l->a;
	rb_xfer *x = &a->x;
	uint64_t target = a->iters;
	uint32_t lcur = 0, rcur = 0;
	int stopping = 0;
	watchdog wd = {0};
	struct ibv_wc wc[POLL_BATCH];
	l->t_start = l->t_end = ticks();
	uint32_t work = 0; // see check_turn
	while (*a->done < target) {
		int check = check_turn(&work);
		if (bw_mr_post(l, target, &lcur, &rcur, &work))
			return -1;
		int ne = bw_mr_reap(l, wc);
		if (ne < 0)
			return -1;
		if (ne > 0)
			progress(&wd);
		else if (idle(&wd, x))
			return timed_out(x, "completions");
		if (!stopping && check && time_to_stop(x, a->deadline_ns)) {
			stopping = 1;
			target = stop_target(l->posted, a->cq_mod, target);
		}
	}
	return 0;
}
