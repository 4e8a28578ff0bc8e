// SPDX-License-Identifier: GPL-2.0
/*
 * sroce_kverbs: a kernel consumer of an RDMA device, the way NVMe-oF, NFS
 * over RDMA and iSER use one: fast registration (ib_alloc_mr,
 * ib_map_mr_sg, IB_WR_REG_MR), IB_WR_LOCAL_INV, SEND with Invalidate and
 * the PD's local DMA lkey. It runs its cases while it loads, between two RC
 * QPs of the same device connected to each other through the device's own
 * GID (loopback), and prints KTAP to the kernel log:
 *
 *   insmod sroce_kverbs.ko ibdev=sroce0 gid_index=N
 *
 * Every case checks the bytes that moved and the exact completion status
 * and opcode; error cases also check what happened to both QPs. Loading
 * always succeeds once the cases ran (the verdict is the KTAP), so the
 * caller can rmmod it; every object a case made is gone before it ends.
 * tests/integration/kverbs.sh runs it.
 */

#include <linux/module.h>
#include <linux/delay.h>
#include <linux/jiffies.h>
#include <linux/mm.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_verbs.h>

static char *ibdev;
module_param(ibdev, charp, 0444);
MODULE_PARM_DESC(ibdev, "RDMA device to test (ib_device name)");

static int gid_index = -1;
module_param(gid_index, int, 0444);
MODULE_PARM_DESC(gid_index, "RoCE v2 GID index of port 1 both QPs use");

static unsigned int poll_ms = 20000;
module_param(poll_ms, uint, 0444);
MODULE_PARM_DESC(poll_ms, "how long to wait for one completion (ms)");

#define KV_PORT		1
#define KV_CQE		64
#define KV_WR		32
#define KV_SGE		4
#define KV_PAGES	4
#define KV_GUARD	0xee

struct kv_test {
	struct ib_device *dev;
	u8 dmac[ETH_ALEN];
	union ib_gid gid;
	char reason[160];
};

#define KV_FAIL(t, fmt, ...) \
	snprintf((t)->reason, sizeof((t)->reason), fmt, ##__VA_ARGS__)

/* True, with a reason, unless @cond holds: if (KV_UNLESS(...)) goto out; */
#define KV_UNLESS(t, cond, fmt, ...) \
	(!(cond) ? (KV_FAIL(t, fmt, ##__VA_ARGS__), true) : false)

/* ---- two RC QPs connected to each other ---- */

struct kv_pair {
	struct ib_cq *cq_a, *cq_b;	/* each QP's send and receive CQ */
	struct ib_qp *qp_a, *qp_b;
};

static struct ib_qp *kv_qp_create(struct ib_pd *pd, struct ib_cq *cq)
{
	struct ib_qp_init_attr init = {
		.send_cq = cq,
		.recv_cq = cq,
		.cap = {
			.max_send_wr = KV_WR,
			.max_recv_wr = KV_WR,
			.max_send_sge = KV_SGE,
			.max_recv_sge = KV_SGE,
		},
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.qp_type = IB_QPT_RC,
	};

	return ib_create_qp(pd, &init);
}

static int kv_qp_connect(struct kv_test *t, struct ib_qp *qp, u32 dest_qpn)
{
	struct ib_qp_attr attr = {
		.qp_state = IB_QPS_INIT,
		.port_num = KV_PORT,
		.qp_access_flags = IB_ACCESS_REMOTE_WRITE |
				   IB_ACCESS_REMOTE_READ |
				   IB_ACCESS_REMOTE_ATOMIC,
	};
	int err;

	err = ib_modify_qp(qp, &attr, IB_QP_STATE | IB_QP_PKEY_INDEX |
			   IB_QP_PORT | IB_QP_ACCESS_FLAGS);
	if (err)
		return err;

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IB_QPS_RTR;
	attr.path_mtu = IB_MTU_1024;
	attr.dest_qp_num = dest_qpn;
	attr.rq_psn = dest_qpn & 0xffffff;
	attr.max_dest_rd_atomic = 1;
	attr.min_rnr_timer = 12;
	attr.ah_attr.type = RDMA_AH_ATTR_TYPE_ROCE;
	rdma_ah_set_port_num(&attr.ah_attr, KV_PORT);
	rdma_ah_set_grh(&attr.ah_attr, &t->gid, 0, gid_index, 64, 0);
	memcpy(attr.ah_attr.roce.dmac, t->dmac, ETH_ALEN);
	err = ib_modify_qp(qp, &attr, IB_QP_STATE | IB_QP_AV | IB_QP_PATH_MTU |
			   IB_QP_DEST_QPN | IB_QP_RQ_PSN |
			   IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_MIN_RNR_TIMER);
	if (err)
		return err;

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IB_QPS_RTS;
	attr.timeout = 14;
	attr.retry_cnt = 7;
	attr.rnr_retry = 7;
	attr.sq_psn = qp->qp_num & 0xffffff;
	attr.max_rd_atomic = 1;
	return ib_modify_qp(qp, &attr, IB_QP_STATE | IB_QP_TIMEOUT |
			    IB_QP_RETRY_CNT | IB_QP_RNR_RETRY | IB_QP_SQ_PSN |
			    IB_QP_MAX_QP_RD_ATOMIC);
}

static void kv_pair_destroy(struct kv_pair *p)
{
	if (!IS_ERR_OR_NULL(p->qp_a))
		ib_destroy_qp(p->qp_a);
	if (!IS_ERR_OR_NULL(p->qp_b))
		ib_destroy_qp(p->qp_b);
	if (!IS_ERR_OR_NULL(p->cq_a))
		ib_free_cq(p->cq_a);
	if (!IS_ERR_OR_NULL(p->cq_b))
		ib_free_cq(p->cq_b);
	memset(p, 0, sizeof(*p));
}

/* QP a in @pd_a, QP b in @pd_b, connected to each other, both RTS. */
static int kv_pair_create(struct kv_test *t, struct kv_pair *p,
			  struct ib_pd *pd_a, struct ib_pd *pd_b)
{
	int err;

	memset(p, 0, sizeof(*p));
	p->cq_a = ib_alloc_cq(t->dev, NULL, KV_CQE, 0, IB_POLL_DIRECT);
	p->cq_b = ib_alloc_cq(t->dev, NULL, KV_CQE, 0, IB_POLL_DIRECT);
	if (IS_ERR(p->cq_a) || IS_ERR(p->cq_b)) {
		err = IS_ERR(p->cq_a) ? PTR_ERR(p->cq_a) : PTR_ERR(p->cq_b);
		KV_FAIL(t, "ib_alloc_cq: %d", err);
		goto err;
	}
	p->qp_a = kv_qp_create(pd_a, p->cq_a);
	p->qp_b = kv_qp_create(pd_b, p->cq_b);
	if (IS_ERR(p->qp_a) || IS_ERR(p->qp_b)) {
		err = IS_ERR(p->qp_a) ? PTR_ERR(p->qp_a) : PTR_ERR(p->qp_b);
		KV_FAIL(t, "ib_create_qp: %d", err);
		goto err;
	}
	err = kv_qp_connect(t, p->qp_a, p->qp_b->qp_num);
	if (!err)
		err = kv_qp_connect(t, p->qp_b, p->qp_a->qp_num);
	if (err) {
		KV_FAIL(t, "connecting the QPs: %d", err);
		goto err;
	}
	return 0;
err:
	kv_pair_destroy(p);
	return err ? err : -EINVAL;
}

static enum ib_qp_state kv_qp_state(struct ib_qp *qp)
{
	struct ib_qp_init_attr init;
	struct ib_qp_attr attr;

	if (ib_query_qp(qp, &attr, IB_QP_STATE, &init))
		return -1;
	return attr.qp_state;
}

/* ---- completions ---- */

static int kv_poll(struct ib_cq *cq, struct ib_wc *wc)
{
	unsigned long end = jiffies + msecs_to_jiffies(poll_ms);
	int n;

	for (;;) {
		n = ib_poll_cq(cq, 1, wc);
		if (n)
			return n < 0 ? n : 0;
		if (time_after(jiffies, end))
			return -ETIMEDOUT;
		usleep_range(200, 1000);
	}
}

/*
 * The next completion of @cq must be @wr_id with @status (and, on success,
 * @opcode): 0, or a reason in t->reason.
 */
static int kv_expect(struct kv_test *t, const char *what, struct ib_cq *cq,
		     u64 wr_id, enum ib_wc_status status,
		     enum ib_wc_opcode opcode, struct ib_wc *out)
{
	struct ib_wc wc;
	int err = kv_poll(cq, &wc);

	if (err) {
		KV_FAIL(t, "%s: no completion (%d)", what, err);
		return err;
	}
	if (wc.wr_id != wr_id || wc.status != status ||
	    (status == IB_WC_SUCCESS && wc.opcode != opcode)) {
		KV_FAIL(t, "%s: wr_id %llu status %s opcode %d, expected %llu %s %d",
			what, wc.wr_id, ib_wc_status_msg(wc.status), wc.opcode,
			wr_id, ib_wc_status_msg(status), opcode);
		return -EINVAL;
	}
	if (out)
		*out = wc;
	return 0;
}

/* Nothing more on @cq within a short while. */
static int kv_expect_none(struct kv_test *t, const char *what,
			  struct ib_cq *cq)
{
	struct ib_wc wc;

	msleep(20);
	if (ib_poll_cq(cq, 1, &wc) == 0)
		return 0;
	KV_FAIL(t, "%s: unexpected completion wr_id %llu status %s", what,
		wc.wr_id, ib_wc_status_msg(wc.status));
	return -EINVAL;
}

/* ---- kernel buffers reached through the PD's local DMA lkey ---- */

struct kv_buf {
	void *va;
	u64 dma;
	u32 len;
};

static int kv_buf_alloc(struct kv_test *t, struct kv_buf *b, u32 len)
{
	b->len = len;
	b->va = kzalloc(len, GFP_KERNEL);
	if (!b->va)
		return -ENOMEM;
	b->dma = ib_dma_map_single(t->dev, b->va, len, DMA_BIDIRECTIONAL);
	if (ib_dma_mapping_error(t->dev, b->dma)) {
		kfree(b->va);
		b->va = NULL;
		return -ENOMEM;
	}
	return 0;
}

static void kv_buf_free(struct kv_test *t, struct kv_buf *b)
{
	if (!b->va)
		return;
	ib_dma_unmap_single(t->dev, b->dma, b->len, DMA_BIDIRECTIONAL);
	kfree(b->va);
	b->va = NULL;
}

static struct ib_sge kv_sge(struct ib_pd *pd, u64 dma, u32 len)
{
	return (struct ib_sge){ .addr = dma, .length = len,
				.lkey = pd->local_dma_lkey };
}

static u8 kv_pattern(u32 i, u8 seed)
{
	return (u8)(i * 7 + (i >> 9) + seed);
}

static void kv_fill(u8 *p, u32 len, u8 seed)
{
	u32 i;

	for (i = 0; i < len; i++)
		p[i] = kv_pattern(i, seed);
}

/* Index of the first byte of @p that is not the pattern, or -1. */
static long kv_mismatch(const u8 *p, u32 len, u8 seed)
{
	u32 i;

	for (i = 0; i < len; i++)
		if (p[i] != kv_pattern(i, seed))
			return i;
	return -1;
}

/* ---- work requests ---- */

static int kv_posted(struct kv_test *t, const char *what, int err)
{
	if (err)
		KV_FAIL(t, "posting %s: %d", what, err);
	return err;
}

static int kv_post_rdma(struct kv_test *t, struct ib_qp *qp,
			enum ib_wr_opcode op, u64 wr_id, struct ib_sge *sge,
			u64 raddr, u32 rkey)
{
	const struct ib_send_wr *bad;
	struct ib_rdma_wr wr = {
		.wr = {
			.wr_id = wr_id,
			.opcode = op,
			.sg_list = sge,
			.num_sge = 1,
			.send_flags = IB_SEND_SIGNALED,
		},
		.remote_addr = raddr,
		.rkey = rkey,
	};

	return kv_posted(t, "RDMA", ib_post_send(qp, &wr.wr, &bad));
}

static int kv_post_local_inv(struct kv_test *t, struct ib_qp *qp, u64 wr_id,
			     u32 key)
{
	const struct ib_send_wr *bad;
	struct ib_send_wr wr = {
		.wr_id = wr_id,
		.opcode = IB_WR_LOCAL_INV,
		.send_flags = IB_SEND_SIGNALED,
		.ex.invalidate_rkey = key,
	};

	return kv_posted(t, "LOCAL_INV", ib_post_send(qp, &wr, &bad));
}

static int kv_post_send_inv(struct kv_test *t, struct ib_qp *qp, u64 wr_id,
			    struct ib_sge *sge, u32 rkey)
{
	const struct ib_send_wr *bad;
	struct ib_send_wr wr = {
		.wr_id = wr_id,
		.opcode = IB_WR_SEND_WITH_INV,
		.sg_list = sge,
		.num_sge = 1,
		.send_flags = IB_SEND_SIGNALED,
		.ex.invalidate_rkey = rkey,
	};

	return kv_posted(t, "SEND_WITH_INV", ib_post_send(qp, &wr, &bad));
}

static int kv_post_recv(struct kv_test *t, struct ib_qp *qp, u64 wr_id,
			struct ib_sge *sge, int num_sge)
{
	const struct ib_recv_wr *bad;
	struct ib_recv_wr wr = {
		.wr_id = wr_id,
		.sg_list = sge,
		.num_sge = num_sge,
	};

	return kv_posted(t, "RECV", ib_post_recv(qp, &wr, &bad));
}

#define KV_FAST_ACCESS \
	(IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ)

static void kv_reg_wr(struct ib_reg_wr *wr, struct ib_mr *mr, u64 wr_id,
		      int access, bool signaled)
{
	memset(wr, 0, sizeof(*wr));
	wr->wr.wr_id = wr_id;
	wr->wr.opcode = IB_WR_REG_MR;
	wr->wr.send_flags = signaled ? IB_SEND_SIGNALED : 0;
	wr->mr = mr;
	wr->key = mr->rkey;
	wr->access = access;
}

/* ---- a fast-registration MR over non-contiguous pages ---- */

/*
 * KV_PAGES pages, each the second page of its own order-1 block, so no two
 * are physically adjacent. The scatterlist starts @first_off into the
 * first page and ends @last_len into the last; ib_map_mr_sg() skips
 * another @sg_off bytes. MR byte i is byte first_off + sg_off + i of the
 * pages laid end to end.
 */
struct kv_fmr {
	struct page *blocks[KV_PAGES];
	u8 *va[KV_PAGES];
	struct scatterlist sg[KV_PAGES];
	int nents;		/* DMA-mapped scatterlist entries */
	struct ib_mr *mr;
	u32 start;		/* first_off + sg_off */
};

static void kv_fmr_free(struct kv_test *t, struct kv_fmr *f)
{
	int i;

	if (!IS_ERR_OR_NULL(f->mr))
		ib_dereg_mr(f->mr);
	if (f->nents)
		ib_dma_unmap_sg(t->dev, f->sg, KV_PAGES, DMA_BIDIRECTIONAL);
	for (i = 0; i < KV_PAGES; i++)
		if (f->blocks[i])
			__free_pages(f->blocks[i], 1);
	memset(f, 0, sizeof(*f));
}

static int kv_fmr_alloc(struct kv_test *t, struct kv_fmr *f, struct ib_pd *pd,
			u32 max_num_sg)
{
	int i;

	memset(f, 0, sizeof(*f));
	sg_init_table(f->sg, KV_PAGES);
	for (i = 0; i < KV_PAGES; i++) {
		f->blocks[i] = alloc_pages(GFP_KERNEL, 1);
		if (!f->blocks[i]) {
			KV_FAIL(t, "alloc_pages failed");
			goto err;
		}
		f->va[i] = page_address(f->blocks[i] + 1);
		memset(f->va[i], KV_GUARD, PAGE_SIZE);
	}
	f->mr = ib_alloc_mr(pd, IB_MR_TYPE_MEM_REG, max_num_sg);
	if (IS_ERR(f->mr)) {
		KV_FAIL(t, "ib_alloc_mr(%u): %ld", max_num_sg, PTR_ERR(f->mr));
		goto err;
	}
	return 0;
err:
	kv_fmr_free(t, f);
	return -ENOMEM;
}

/* Map the pages into the MR: returns ib_map_mr_sg()'s count. */
static int kv_fmr_map(struct kv_test *t, struct kv_fmr *f, u32 first_off,
		      u32 last_len, u32 sg_off)
{
	unsigned int off = sg_off;
	int i;

	if (f->nents)
		ib_dma_unmap_sg(t->dev, f->sg, KV_PAGES, DMA_BIDIRECTIONAL);
	sg_init_table(f->sg, KV_PAGES);
	sg_set_page(&f->sg[0], f->blocks[0] + 1, PAGE_SIZE - first_off,
		    first_off);
	for (i = 1; i < KV_PAGES - 1; i++)
		sg_set_page(&f->sg[i], f->blocks[i] + 1, PAGE_SIZE, 0);
	sg_set_page(&f->sg[KV_PAGES - 1], f->blocks[KV_PAGES - 1] + 1,
		    last_len, 0);
	f->nents = ib_dma_map_sg(t->dev, f->sg, KV_PAGES, DMA_BIDIRECTIONAL);
	if (f->nents <= 0) {
		f->nents = 0;
		KV_FAIL(t, "ib_dma_map_sg failed");
		return -ENOMEM;
	}
	f->start = first_off + sg_off;
	return ib_map_mr_sg(f->mr, f->sg, f->nents, &off, PAGE_SIZE);
}

static u8 *kv_fmr_byte(struct kv_fmr *f, u32 i)
{
	u32 pos = f->start + i;

	return f->va[pos / PAGE_SIZE] + pos % PAGE_SIZE;
}

/*
 * MR bytes [from, from + len) hold the pattern of @seed and every other
 * byte of the pages is still the guard: 0, or a reason.
 */
static int kv_fmr_check(struct kv_test *t, struct kv_fmr *f, u32 from,
			u32 len, u8 seed)
{
	u32 lo = f->start + from, hi = lo + len, pos;
	u8 want, got;

	for (pos = 0; pos < KV_PAGES * PAGE_SIZE; pos++) {
		got = f->va[pos / PAGE_SIZE][pos % PAGE_SIZE];
		want = pos >= lo && pos < hi ? kv_pattern(pos - lo, seed) :
		       KV_GUARD;
		if (got != want) {
			KV_FAIL(t, "page %lu byte %lu is %#x, not %#x (MR bytes %u..%u written)",
				pos / PAGE_SIZE, pos % PAGE_SIZE, got, want,
				from, from + len);
			return -EINVAL;
		}
	}
	return 0;
}

static void kv_fmr_fill(struct kv_fmr *f, u32 from, u32 len, u8 seed)
{
	u32 i;

	for (i = 0; i < len; i++)
		*kv_fmr_byte(f, from + i) = kv_pattern(i, seed);
}

/* Post REG_MR of @f->mr on @qp with its current key; wait for success. */
static int kv_fmr_reg(struct kv_test *t, struct kv_fmr *f, struct ib_qp *qp,
		      struct ib_cq *cq)
{
	const struct ib_send_wr *bad;
	struct ib_reg_wr wr;
	int err;

	kv_reg_wr(&wr, f->mr, 100, KV_FAST_ACCESS, true);
	err = ib_post_send(qp, &wr.wr, &bad);
	if (err) {
		KV_FAIL(t, "posting REG_MR: %d", err);
		return err;
	}
	return kv_expect(t, "REG_MR", cq, 100, IB_WC_SUCCESS, IB_WC_REG_MR,
			 NULL);
}

/* The standard MR: 4 pages, 100 bytes into the first, 2000 into the last. */
#define KV_FIRST_OFF	100
#define KV_LAST_LEN	2000
#define KV_SG_OFF	50
#define KV_MR_LEN \
	(KV_PAGES * PAGE_SIZE - KV_FIRST_OFF - KV_SG_OFF - \
	 (PAGE_SIZE - KV_LAST_LEN))

/* The standard MR allocated and mapped, its length and iova checked. */
static int kv_fmr_std(struct kv_test *t, struct kv_fmr *f, struct ib_pd *pd)
{
	int n;

	if (kv_fmr_alloc(t, f, pd, KV_PAGES))
		return -ENOMEM;
	n = kv_fmr_map(t, f, KV_FIRST_OFF, KV_LAST_LEN, KV_SG_OFF);
	if (n != KV_PAGES) {
		KV_FAIL(t, "ib_map_mr_sg mapped %d of %d entries", n, KV_PAGES);
		return -EINVAL;
	}
	if (f->mr->length != KV_MR_LEN ||
	    f->mr->iova != sg_dma_address(&f->sg[0]) + KV_SG_OFF) {
		KV_FAIL(t, "MR length %llu iova %#llx, expected %lu at first entry + %d",
			f->mr->length, f->mr->iova, KV_MR_LEN, KV_SG_OFF);
		return -EINVAL;
	}
	return 0;
}

/*
 * A remote WRITE from a with @rkey fails: a sees IB_WC_REM_ACCESS_ERR, b
 * NAKed it as a class C error (rxe does the same: both
 * QPs end in the error state and b's posted receive is flushed). The MR's
 * pages are unchanged (checked by the caller).
 */
static int kv_write_refused(struct kv_test *t, struct kv_pair *p,
			    struct ib_pd *pd_a, struct kv_buf *src, u64 raddr,
			    u32 len, u32 rkey)
{
	struct ib_sge sge = kv_sge(pd_a, src->dma, len);
	struct ib_sge rsge = kv_sge(p->qp_b->pd, src->dma, 1);
	enum ib_qp_state st;
	int err;

	/* a receive on b only to see it flushed: nothing may land in it */
	err = kv_post_recv(t, p->qp_b, 900, &rsge, 1);
	if (!err)
		err = kv_post_rdma(t, p->qp_a, IB_WR_RDMA_WRITE, 901, &sge, raddr,
				   rkey);
	if (err)
		return err;
	err = kv_expect(t, "WRITE with a dead rkey", p->cq_a, 901,
			IB_WC_REM_ACCESS_ERR, 0, NULL);
	if (err)
		return err;
	err = kv_expect(t, "b's receive after the NAK", p->cq_b, 900,
			IB_WC_WR_FLUSH_ERR, 0, NULL);
	if (err)
		return err;
	st = kv_qp_state(p->qp_b);
	if (st != IB_QPS_ERR) {
		KV_FAIL(t, "responder QP state %d after the access error, expected ERR",
			st);
		return -EINVAL;
	}
	st = kv_qp_state(p->qp_a);
	if (st != IB_QPS_ERR) {
		KV_FAIL(t, "requester QP state %d after REM_ACCESS_ERR, expected ERR",
			st);
		return -EINVAL;
	}
	return 0;
}

/* ---- the cases: a table of setups and steps ---- */

/* What a case has before its steps run, and what they work on. */
struct kv_ctx {
	struct ib_pd *pd, *pd2;		/* a's and b's PD (the same unless two_pds) */
	struct kv_pair p;		/* a in pd, b in pd2 */
	struct kv_pair p2;		/* made by KV_PAIR: both in pd */
	struct kv_fmr f;		/* the MR under test, in pd */
	struct kv_buf buf;		/* a's source and READ target */
	struct kv_buf rbuf;		/* KV_RECV's buffer */
	u32 old_rkey;			/* KV_KEY_OLD: set by a step function */
	const struct kv_step *recv;	/* a posted KV_RECV not yet completed */
	u64 recv_id;
	struct ib_wc wc;		/* the last KV_RECV's completion */
};

#define KV_RBUF_LEN	256

/* Which QP a step posts on; its completions come on that QP's CQ. */
enum kv_qp_sel { KV_A, KV_B, KV_A2 };

/* The key a step names. */
enum kv_key_sel {
	KV_KEY_MR,	/* the MR's current rkey */
	KV_KEY_WRONG,	/* the MR's rkey with another key byte: no MR */
	KV_KEY_OLD,	/* the key ctx->old_rkey kept */
};

enum kv_op {
	KV_END,		/* ends a step list */
	KV_WRITE,	/* a .len-byte WRITE of pattern .seed to the MR's start */
	KV_READ,	/* CPU fills the MR with .seed; a READ of .len must match */
	KV_SEND_INV,	/* a .len-byte SEND of .seed invalidating .key */
	KV_LINV,	/* LOCAL_INV of .key */
	KV_REG,		/* REG_MR of the MR with its current key */
	KV_REG_INV,	/* unsignaled REG_MR and LOCAL_INV of its key, one post */
	KV_RECV,	/* a .len-byte receive: completes after the next send WR */
	KV_REG_BAD,	/* REG_MR with access .arg: ib_post_send() refuses it */
	KV_REFUSED,	/* kv_write_refused() of .len bytes of .seed with .key */
	KV_CHECK,	/* MR bytes [0, .len) hold .seed, the rest of its pages guard */
	KV_STATE,	/* the QP is in state .arg */
	KV_NONE,	/* no completion on the QP's CQ */
	KV_PAIR,	/* make ctx->p2 */
	KV_CALL,	/* .fn: what only one case does */
};

/*
 * One step. The send WRs (KV_WRITE .. KV_REG_INV) are posted signaled and
 * their completion must have status .status (and on success the WR's
 * opcode); so must a pending KV_RECV's, polled right after.
 */
struct kv_step {
	enum kv_op op;
	enum kv_qp_sel qp;
	enum kv_key_sel key;
	u8 seed;
	u32 len;
	int arg;
	enum ib_wc_status status;
	const char *what;
	int (*fn)(struct kv_test *t, struct kv_ctx *c);
};

/* The MR a case starts with. */
enum kv_mr_setup {
	KV_MR_NONE,	/* none: its steps make one */
	KV_MR_MAPPED,	/* the standard MR mapped, not registered */
	KV_MR_ON_A,	/* ... and registered by a REG_MR on a */
	KV_MR_ON_B,	/* ... on b */
};

struct kv_case {
	const char *name;
	bool two_pds;
	u32 buf_len;
	enum kv_mr_setup mr;
	const struct kv_step *steps;
};

static struct ib_qp *kv_qp(struct kv_ctx *c, enum kv_qp_sel sel)
{
	return sel == KV_A ? c->p.qp_a : sel == KV_B ? c->p.qp_b : c->p2.qp_a;
}

static struct ib_cq *kv_cq(struct kv_ctx *c, enum kv_qp_sel sel)
{
	return sel == KV_A ? c->p.cq_a : sel == KV_B ? c->p.cq_b : c->p2.cq_a;
}

static u32 kv_key(struct kv_ctx *c, enum kv_key_sel sel)
{
	if (sel == KV_KEY_OLD)
		return c->old_rkey;
	return sel == KV_KEY_WRONG ? ib_inc_rkey(c->f.mr->rkey) : c->f.mr->rkey;
}

static int kv_ctx_init(struct kv_test *t, struct kv_ctx *c,
		       const struct kv_case *kc)
{
	c->pd = ib_alloc_pd(t->dev, 0);
	if (IS_ERR(c->pd)) {
		KV_FAIL(t, "ib_alloc_pd: %ld", PTR_ERR(c->pd));
		c->pd = NULL;
		return -ENOMEM;
	}
	c->pd2 = c->pd;
	if (kc->two_pds) {
		c->pd2 = ib_alloc_pd(t->dev, 0);
		if (IS_ERR(c->pd2)) {
			KV_FAIL(t, "ib_alloc_pd: %ld", PTR_ERR(c->pd2));
			c->pd2 = NULL;
			return -ENOMEM;
		}
	}
	if (kv_buf_alloc(t, &c->buf, kc->buf_len) ||
	    kv_buf_alloc(t, &c->rbuf, KV_RBUF_LEN)) {
		KV_FAIL(t, "buffers of %u and %u bytes", kc->buf_len, KV_RBUF_LEN);
		return -ENOMEM;
	}
	return kv_pair_create(t, &c->p, c->pd, c->pd2);
}

static int kv_mr_init(struct kv_test *t, struct kv_ctx *c,
		      enum kv_mr_setup mr)
{
	enum kv_qp_sel on = mr == KV_MR_ON_A ? KV_A : KV_B;

	if (mr == KV_MR_NONE)
		return 0;
	if (kv_fmr_std(t, &c->f, c->pd))
		return -EINVAL;
	if (mr == KV_MR_MAPPED)
		return 0;
	return kv_fmr_reg(t, &c->f, kv_qp(c, on), kv_cq(c, on));
}

/* The QPs go before the memory their WRs named. */
static void kv_ctx_fini(struct kv_test *t, struct kv_ctx *c)
{
	kv_pair_destroy(&c->p2);
	kv_pair_destroy(&c->p);
	kv_fmr_free(t, &c->f);
	kv_buf_free(t, &c->buf);
	kv_buf_free(t, &c->rbuf);
	if (c->pd2 && c->pd2 != c->pd)
		ib_dealloc_pd(c->pd2);
	if (c->pd)
		ib_dealloc_pd(c->pd);
}

/* Post the send WR of step @s as @id. */
static int kv_post_step(struct kv_test *t, struct kv_ctx *c,
			const struct kv_step *s, u64 id)
{
	struct ib_qp *qp = kv_qp(c, s->qp);
	struct ib_sge sge = kv_sge(qp->pd, c->buf.dma, s->len);
	const struct ib_send_wr *bad;
	struct ib_send_wr inv = {
		.wr_id = id,
		.opcode = IB_WR_LOCAL_INV,
		.send_flags = IB_SEND_SIGNALED,
	};
	struct ib_reg_wr reg;

	switch (s->op) {
	case KV_WRITE:
		kv_fill(c->buf.va, s->len, s->seed);
		return kv_post_rdma(t, qp, IB_WR_RDMA_WRITE, id, &sge,
				    c->f.mr->iova, kv_key(c, s->key));
	case KV_READ:
		kv_fmr_fill(&c->f, 0, s->len, s->seed);
		memset(c->buf.va, 0, s->len);
		return kv_post_rdma(t, qp, IB_WR_RDMA_READ, id, &sge,
				    c->f.mr->iova, kv_key(c, s->key));
	case KV_SEND_INV:
		kv_fill(c->buf.va, s->len, s->seed);
		return kv_post_send_inv(t, qp, id, &sge, kv_key(c, s->key));
	case KV_LINV:
		return kv_post_local_inv(t, qp, id, kv_key(c, s->key));
	case KV_REG:
		kv_reg_wr(&reg, c->f.mr, id, KV_FAST_ACCESS, true);
		return kv_posted(t, "REG_MR", ib_post_send(qp, &reg.wr, &bad));
	default:	/* KV_REG_INV */
		kv_reg_wr(&reg, c->f.mr, id - 1, KV_FAST_ACCESS, false);
		inv.ex.invalidate_rkey = c->f.mr->rkey;
		reg.wr.next = &inv;
		return kv_posted(t, "REG_MR + LOCAL_INV",
				 ib_post_send(qp, &reg.wr, &bad));
	}
}

static const enum ib_wc_opcode kv_wc_opcode[] = {
	[KV_WRITE] = IB_WC_RDMA_WRITE,
	[KV_READ] = IB_WC_RDMA_READ,
	[KV_SEND_INV] = IB_WC_SEND,
	[KV_LINV] = IB_WC_LOCAL_INV,
	[KV_REG] = IB_WC_REG_MR,
	[KV_REG_INV] = IB_WC_LOCAL_INV,
};

/* A send WR: post it, its completion, the pending receive's, and data. */
static int kv_send_step(struct kv_test *t, struct kv_ctx *c,
			const struct kv_step *s, u64 id)
{
	const struct kv_step *r = c->recv;
	long bad;

	if (kv_post_step(t, c, s, id) ||
	    kv_expect(t, s->what, kv_cq(c, s->qp), id, s->status,
		      kv_wc_opcode[s->op], NULL))
		return -EIO;
	c->recv = NULL;
	if (r && kv_expect(t, r->what, kv_cq(c, r->qp), c->recv_id, r->status,
			   IB_WC_RECV, &c->wc))
		return -EIO;
	if (s->op != KV_READ || s->status != IB_WC_SUCCESS)
		return 0;
	bad = kv_mismatch(c->buf.va, s->len, s->seed);
	if (KV_UNLESS(t, bad < 0, "READ returned a wrong byte at %ld", bad))
		return -EIO;
	return 0;
}

static int kv_recv_step(struct kv_test *t, struct kv_ctx *c,
			const struct kv_step *s, u64 id)
{
	struct ib_qp *qp = kv_qp(c, s->qp);
	struct ib_sge sge = kv_sge(qp->pd, c->rbuf.dma, s->len);

	c->recv = s;
	c->recv_id = id;
	return kv_post_recv(t, qp, id, &sge, 1);
}

/* ib_post_send() refuses the REG_MR WR itself: -EINVAL, @bad names it. */
static int kv_reg_bad_step(struct kv_test *t, struct kv_ctx *c,
			   const struct kv_step *s, u64 id)
{
	const struct ib_send_wr *bad = NULL;
	struct ib_reg_wr wr;
	int err;

	kv_reg_wr(&wr, c->f.mr, id, s->arg, true);
	err = ib_post_send(kv_qp(c, s->qp), &wr.wr, &bad);
	if (KV_UNLESS(t, err == -EINVAL && bad == &wr.wr,
		      "REG_MR with access %#x: ib_post_send %d", s->arg, err))
		return -EIO;
	return 0;
}

static int kv_state_step(struct kv_test *t, struct kv_ctx *c,
			 const struct kv_step *s)
{
	int st = kv_qp_state(kv_qp(c, s->qp));

	if (KV_UNLESS(t, st == s->arg, "%s: QP state %d, expected %d",
		      s->what, st, s->arg))
		return -EIO;
	return 0;
}

static int kv_step(struct kv_test *t, struct kv_ctx *c,
		   const struct kv_step *s, u64 id)
{
	switch (s->op) {
	case KV_RECV:
		return kv_recv_step(t, c, s, id);
	case KV_REG_BAD:
		return kv_reg_bad_step(t, c, s, id);
	case KV_REFUSED:
		kv_fill(c->buf.va, s->len, s->seed);
		return kv_write_refused(t, &c->p, c->pd, &c->buf, c->f.mr->iova,
					s->len, kv_key(c, s->key));
	case KV_CHECK:
		return kv_fmr_check(t, &c->f, 0, s->len, s->seed);
	case KV_STATE:
		return kv_state_step(t, c, s);
	case KV_NONE:
		return kv_expect_none(t, s->what, kv_cq(c, s->qp));
	case KV_PAIR:
		return kv_pair_create(t, &c->p2, c->pd, c->pd);
	case KV_CALL:
		return s->fn(t, c);
	default:
		return kv_send_step(t, c, s, id);
	}
}

/* Set up case @kc, run its steps until one fails; a reason in t->reason. */
static void kv_case_run(struct kv_test *t, const struct kv_case *kc, int nr)
{
	const struct kv_step *s;
	struct kv_ctx *c;
	u64 id = nr * 100;

	c = kzalloc(sizeof(*c), GFP_KERNEL);
	if (!c) {
		KV_FAIL(t, "no memory for the case");
		return;
	}
	if (!kv_ctx_init(t, c, kc) && !kv_mr_init(t, c, kc->mr)) {
		for (s = kc->steps; s->op != KV_END; s++)
			if (kv_step(t, c, s, ++id))
				break;
	}
	kv_ctx_fini(t, c);
	kfree(c);
}

/* ---- what only one case does ---- */

/* fastreg_write_read: 300 bytes across the first and second page. */
static int kv_cross_page(struct kv_test *t, struct kv_ctx *c)
{
	u32 off = PAGE_SIZE - c->f.start - 100, len = 300;
	struct ib_sge sge = kv_sge(c->pd, c->buf.dma, len);
	long i;
	u8 want;

	kv_fill(c->buf.va, len, 2);
	kv_fmr_fill(&c->f, 0, KV_MR_LEN, 1);
	if (kv_post_rdma(t, c->p.qp_a, IB_WR_RDMA_WRITE, 2, &sge,
			 c->f.mr->iova + off, c->f.mr->rkey))
		return -EIO;
	if (kv_expect(t, "WRITE across pages", c->p.cq_a, 2, IB_WC_SUCCESS,
		      IB_WC_RDMA_WRITE, NULL))
		return -EIO;
	for (i = 0; i < KV_MR_LEN; i++) {
		want = i >= off && i < off + len ? kv_pattern(i - off, 2) :
		       kv_pattern(i, 1);
		if (KV_UNLESS(t, *kv_fmr_byte(&c->f, i) == want,
			      "MR byte %ld after the cross-page WRITE", i))
			return -EIO;
	}
	return 0;
}

/* fastreg_write_read: the pages outside the MR were never touched. */
static int kv_beside_mr(struct kv_test *t, struct kv_ctx *c)
{
	if (KV_UNLESS(t, *kv_fmr_byte(&c->f, -1) == KV_GUARD &&
		      *kv_fmr_byte(&c->f, KV_MR_LEN) == KV_GUARD,
		      "bytes beside the MR changed"))
		return -EIO;
	return 0;
}

/*
 * rereg_new_key: ib_update_fast_reg_key() and a different layout, no
 * offset into the first entry: KV_SG_OFF bytes longer.
 */
#define KV_REREG_LEN	(KV_MR_LEN + KV_SG_OFF)

static int kv_new_key(struct kv_test *t, struct kv_ctx *c)
{
	u32 old = c->f.mr->rkey;
	int n;

	c->old_rkey = old;
	ib_update_fast_reg_key(c->f.mr, ib_inc_rkey(old) & 0xff);
	if (KV_UNLESS(t, c->f.mr->rkey != old && c->f.mr->rkey >> 8 == old >> 8,
		      "ib_update_fast_reg_key: rkey %#x from %#x", c->f.mr->rkey, old))
		return -EIO;
	n = kv_fmr_map(t, &c->f, KV_FIRST_OFF, KV_LAST_LEN, 0);
	if (KV_UNLESS(t, n == KV_PAGES, "ib_map_mr_sg mapped %d", n))
		return -EIO;
	if (KV_UNLESS(t, c->f.mr->length == KV_REREG_LEN,
		      "MR length %llu after the new mapping", c->f.mr->length))
		return -EIO;
	return 0;
}

/* send_with_inv: what the receive completion and buffer say. */
static int kv_inv_received(struct kv_test *t, struct kv_ctx *c)
{
	struct ib_wc *wc = &c->wc;
	u32 rkey = c->f.mr->rkey;

	if (KV_UNLESS(t, wc->byte_len == 64, "byte_len %u, expected 64", wc->byte_len))
		return -EIO;
	if (KV_UNLESS(t, wc->wc_flags & IB_WC_WITH_INVALIDATE,
		      "no IB_WC_WITH_INVALIDATE (wc_flags %#x)", wc->wc_flags))
		return -EIO;
	if (KV_UNLESS(t, !(wc->wc_flags & IB_WC_WITH_IMM), "IB_WC_WITH_IMM set"))
		return -EIO;
	if (KV_UNLESS(t, wc->ex.invalidate_rkey == rkey,
		      "invalidate_rkey %#x, expected %#x", wc->ex.invalidate_rkey,
		      rkey))
		return -EIO;
	if (KV_UNLESS(t, kv_mismatch(c->rbuf.va, 64, 7) < 0, "received bytes differ"))
		return -EIO;
	if (KV_UNLESS(t, ((u8 *)c->rbuf.va)[64] == 0, "receive wrote past 64 bytes"))
		return -EIO;
	return 0;
}

/* map_too_many: ib_alloc_mr() beyond the device limit fails cleanly. */
static int kv_alloc_too_big(struct kv_test *t, struct kv_ctx *c)
{
	u32 limit = t->dev->attrs.max_fast_reg_page_list_len;
	struct ib_mr *big = ib_alloc_mr(c->pd, IB_MR_TYPE_MEM_REG, limit + 1);

	if (!IS_ERR(big))
		ib_dereg_mr(big);
	if (KV_UNLESS(t, IS_ERR(big) && PTR_ERR(big) == -EINVAL,
		      "ib_alloc_mr(%u > max_fast_reg_page_list_len): %ld",
		      limit + 1, IS_ERR(big) ? PTR_ERR(big) : 0L))
		return -EIO;
	return 0;
}

/* map_too_many: ib_map_mr_sg() of 4 pages into a 2-page MR maps 2. */
#define KV_TWO_LEN	(2 * PAGE_SIZE - KV_FIRST_OFF)

static int kv_map_two(struct kv_test *t, struct kv_ctx *c)
{
	int n;

	if (kv_fmr_alloc(t, &c->f, c->pd, 2))
		return -ENOMEM;
	n = kv_fmr_map(t, &c->f, KV_FIRST_OFF, KV_LAST_LEN, 0);
	if (KV_UNLESS(t, n == 2, "ib_map_mr_sg mapped %d of %d entries into 2 pages",
		      n, KV_PAGES))
		return -EIO;
	if (KV_UNLESS(t, c->f.mr->length == KV_TWO_LEN,
		      "MR length %llu, expected %lu", c->f.mr->length, KV_TWO_LEN))
		return -EIO;
	return 0;
}

/*
 * dma_mr_send_recv: SEND/RECV through pd->local_dma_lkey of kmalloc'ed
 * memory and of vmalloc'ed memory, mapped the only way DMA allows: page
 * by page (vmalloc_to_page + ib_dma_map_page), one SGE per page.
 */
#define KV_SLAB_LEN	300
#define KV_VPAGES	2
#define KV_VTAIL	1000

/*
 * Post the 3-SGE RECV and SEND of kv_dma_send_recv and check what
 * arrived: apart so that the case's frame stays small on KASAN kernels.
 */
static noinline_for_stack int kv_dma_msg_run(struct kv_test *t,
					     struct kv_ctx *c,
					     struct ib_sge *ssge,
					     struct ib_sge *rsge)
{
	const struct ib_recv_wr *rbad;
	const struct ib_send_wr *bad;
	struct ib_send_wr swr = {};
	struct ib_recv_wr rwr = {};
	struct ib_wc wc;

	rwr.wr_id = 90;
	rwr.sg_list = rsge;
	rwr.num_sge = 3;
	if (KV_UNLESS(t, !ib_post_recv(c->p.qp_b, &rwr, &rbad), "posting RECV"))
		return -EIO;
	swr.wr_id = 91;
	swr.opcode = IB_WR_SEND;
	swr.sg_list = ssge;
	swr.num_sge = 3;
	swr.send_flags = IB_SEND_SIGNALED;
	if (KV_UNLESS(t, !ib_post_send(c->p.qp_a, &swr, &bad), "posting SEND"))
		return -EIO;
	if (kv_expect(t, "SEND", c->p.cq_a, 91, IB_WC_SUCCESS, IB_WC_SEND,
		      NULL))
		return -EIO;
	if (kv_expect(t, "RECV", c->p.cq_b, 90, IB_WC_SUCCESS, IB_WC_RECV,
		      &wc))
		return -EIO;
	if (KV_UNLESS(t, wc.byte_len == KV_SLAB_LEN + PAGE_SIZE + KV_VTAIL,
		      "byte_len %u, expected %lu", wc.byte_len,
		      KV_SLAB_LEN + PAGE_SIZE + KV_VTAIL))
		return -EIO;
	if (KV_UNLESS(t, !(wc.wc_flags & (IB_WC_WITH_INVALIDATE | IB_WC_WITH_IMM)),
		      "wc_flags %#x", wc.wc_flags))
		return -EIO;
	return 0;
}

static int kv_dma_send_recv(struct kv_test *t, struct kv_ctx *c)
{
	u64 sdma[KV_VPAGES] = {}, rdma[KV_VPAGES] = {};
	struct ib_sge ssge[KV_SGE], rsge[KV_SGE];
	struct kv_buf sslab = {}, rslab = {};
	u8 *svm = NULL, *rvm = NULL;
	int mapped = 0, err = -EIO;
	u32 i;
	u8 *got;

	svm = vmalloc(KV_VPAGES * PAGE_SIZE);
	rvm = vmalloc(KV_VPAGES * PAGE_SIZE);
	if (KV_UNLESS(t, svm && rvm, "vmalloc failed"))
		goto out;
	if (KV_UNLESS(t, !kv_buf_alloc(t, &sslab, KV_SLAB_LEN) &&
		      !kv_buf_alloc(t, &rslab, KV_SLAB_LEN), "kmalloc failed"))
		goto out;
	memset(rvm, KV_GUARD, KV_VPAGES * PAGE_SIZE);
	/* the message: slab bytes, then a page and a bit of vmalloc memory */
	kv_fill(sslab.va, KV_SLAB_LEN, 13);
	kv_fill(svm, KV_VPAGES * PAGE_SIZE, 14);
	for (i = 0; i < KV_VPAGES; i++) {
		sdma[i] = ib_dma_map_page(t->dev, vmalloc_to_page(svm + i * PAGE_SIZE),
					  0, PAGE_SIZE, DMA_TO_DEVICE);
		rdma[i] = ib_dma_map_page(t->dev, vmalloc_to_page(rvm + i * PAGE_SIZE),
					  0, PAGE_SIZE, DMA_FROM_DEVICE);
		mapped = i + 1;
		if (KV_UNLESS(t, !ib_dma_mapping_error(t->dev, sdma[i]) &&
			      !ib_dma_mapping_error(t->dev, rdma[i]),
			      "ib_dma_map_page failed"))
			goto out;
	}
	ssge[0] = kv_sge(c->pd, sslab.dma, KV_SLAB_LEN);
	ssge[1] = kv_sge(c->pd, sdma[0], PAGE_SIZE);
	ssge[2] = kv_sge(c->pd, sdma[1], KV_VTAIL);
	rsge[0] = kv_sge(c->pd, rslab.dma, KV_SLAB_LEN);
	rsge[1] = kv_sge(c->pd, rdma[0], PAGE_SIZE);
	rsge[2] = kv_sge(c->pd, rdma[1], PAGE_SIZE);
	if (kv_dma_msg_run(t, c, ssge, rsge))
		goto out;
	if (KV_UNLESS(t, kv_mismatch(rslab.va, KV_SLAB_LEN, 13) < 0,
		      "slab part of the message differs"))
		goto out;
	if (KV_UNLESS(t, kv_mismatch(rvm, PAGE_SIZE + KV_VTAIL, 14) < 0,
		      "vmalloc part of the message differs"))
		goto out;
	got = rvm + PAGE_SIZE + KV_VTAIL;
	for (i = 0; i < PAGE_SIZE - KV_VTAIL; i++)
		if (KV_UNLESS(t, got[i] == KV_GUARD,
			      "receive wrote past the message (byte %u)", i))
			goto out;
	err = 0;
out:
	for (i = 0; i < mapped; i++) {
		ib_dma_unmap_page(t->dev, sdma[i], PAGE_SIZE, DMA_TO_DEVICE);
		ib_dma_unmap_page(t->dev, rdma[i], PAGE_SIZE, DMA_FROM_DEVICE);
	}
	/* the QPs go before the memory their WRs named */
	kv_pair_destroy(&c->p);
	kv_buf_free(t, &sslab);
	kv_buf_free(t, &rslab);
	vfree(svm);
	vfree(rvm);
	return err;
}

/*
 * A consumer's completion handler is not called under the responder's
 * lock: a receive arriving in softirq finds its handler with interrupts
 * on (the lock is taken with interrupts off), and the handler may use the
 * QP at once: it polls the receive and posts the next one.
 */
struct kv_handler_seen {
	struct ib_qp *qp;
	struct ib_sge sge;
	atomic_t calls;
	atomic_t irqs_off;
	atomic_t reposted;
	struct ib_wc wc;
};

static void kv_recv_handler(struct ib_cq *cq, void *ctx)
{
	struct kv_handler_seen *seen = ctx;
	const struct ib_recv_wr *bad;
	struct ib_recv_wr wr = {
		.wr_id = 71, .sg_list = &seen->sge, .num_sge = 1,
	};

	if (irqs_disabled())
		atomic_inc(&seen->irqs_off);
	if (ib_poll_cq(cq, 1, &seen->wc) == 1 &&
	    !ib_post_recv(seen->qp, &wr, &bad))
		atomic_inc(&seen->reposted);
	atomic_inc(&seen->calls);
}

static int kv_handler_run(struct kv_test *t, struct kv_ctx *c,
			  struct kv_handler_seen *seen, struct ib_qp *qp_a)
{
	unsigned long end = jiffies + msecs_to_jiffies(poll_ms);
	struct ib_sge sge = kv_sge(c->pd, c->buf.dma, 64);
	const struct ib_send_wr *bad;
	struct ib_send_wr wr = {
		.wr_id = 72, .opcode = IB_WR_SEND, .sg_list = &sge,
		.num_sge = 1, .send_flags = IB_SEND_SIGNALED,
	};

	if (kv_post_recv(t, seen->qp, 70, &seen->sge, 1))
		return -EIO;
	if (kv_posted(t, "SEND", ib_post_send(qp_a, &wr, &bad)))
		return -EIO;
	if (kv_expect(t, "SEND", c->p.cq_a, 72, IB_WC_SUCCESS, IB_WC_SEND,
		      NULL))
		return -EIO;
	while (!atomic_read(&seen->calls) && time_before(jiffies, end))
		usleep_range(200, 1000);
	if (KV_UNLESS(t, atomic_read(&seen->calls) == 1,
		      "the receive CQ's handler ran %d times, expected once",
		      atomic_read(&seen->calls)))
		return -EIO;
	if (KV_UNLESS(t, !atomic_read(&seen->irqs_off),
		      "the handler ran with interrupts off (under a lock)"))
		return -EIO;
	if (KV_UNLESS(t, atomic_read(&seen->reposted) &&
		      seen->wc.wr_id == 70 && seen->wc.status == IB_WC_SUCCESS,
		      "the handler polled wr_id %llu status %s, reposted %d",
		      seen->wc.wr_id, ib_wc_status_msg(seen->wc.status),
		      atomic_read(&seen->reposted)))
		return -EIO;
	return 0;
}

static int kv_handler_unlocked(struct kv_test *t, struct kv_ctx *c)
{
	struct ib_cq_init_attr attr = { .cqe = KV_CQE };
	struct kv_handler_seen seen = {};
	struct ib_qp *qp_a = NULL;
	struct ib_cq *cq;
	int err = -EIO;

	/* a new pair: a on a's CQ, b on a CQ with a handler */
	cq = ib_create_cq(t->dev, kv_recv_handler, NULL, &seen, &attr);
	if (KV_UNLESS(t, !IS_ERR(cq), "ib_create_cq: %ld", PTR_ERR(cq)))
		return -EIO;
	seen.sge = kv_sge(c->pd, c->rbuf.dma, KV_RBUF_LEN);
	seen.qp = kv_qp_create(c->pd, cq);
	if (KV_UNLESS(t, !IS_ERR(seen.qp), "ib_create_qp: %ld",
		      PTR_ERR(seen.qp)))
		goto out_cq;
	qp_a = kv_qp_create(c->pd, c->p.cq_a);
	if (KV_UNLESS(t, !IS_ERR(qp_a), "ib_create_qp: %ld", PTR_ERR(qp_a)))
		goto out_qp;
	if (KV_UNLESS(t, !kv_qp_connect(t, seen.qp, qp_a->qp_num) &&
		      !kv_qp_connect(t, qp_a, seen.qp->qp_num),
		      "connecting the QPs") ||
	    KV_UNLESS(t, !ib_req_notify_cq(cq, IB_CQ_NEXT_COMP),
		      "ib_req_notify_cq"))
		goto out_qp;
	err = kv_handler_run(t, c, &seen, qp_a);
out_qp:
	if (!IS_ERR(qp_a) && qp_a)
		ib_destroy_qp(qp_a);
	ib_destroy_qp(seen.qp);
out_cq:
	ib_destroy_cq(cq);
	return err;
}

/* ---- the table ---- */

#define KV_ERR		IB_QPS_ERR

/*
 * reg_send_chain: a REG_MR and a SEND that gathers from the MR it
 * registers (by its lkey) posted in one chain, the REG_MR unsignaled, as
 * iSER sends a write's immediate data: send WRs run in order, so the SEND
 * sees the registration. The bytes cross the first page boundary.
 */
static int kv_reg_send(struct kv_test *t, struct kv_ctx *c)
{
	u32 len = KV_RBUF_LEN, off = PAGE_SIZE - c->f.start - len / 2;
	struct ib_sge sge = { .addr = c->f.mr->iova + off, .length = len,
			      .lkey = c->f.mr->lkey };
	struct ib_sge rsge = kv_sge(c->pd, c->rbuf.dma, len);
	struct ib_send_wr send = {
		.wr_id = 3,
		.opcode = IB_WR_SEND,
		.sg_list = &sge,
		.num_sge = 1,
		.send_flags = IB_SEND_SIGNALED,
	};
	const struct ib_send_wr *bad;
	struct ib_reg_wr reg;
	long at;

	kv_fmr_fill(&c->f, off, len, 15);
	memset(c->rbuf.va, 0, len);
	if (kv_post_recv(t, c->p.qp_b, 1, &rsge, 1))
		return -EIO;
	kv_reg_wr(&reg, c->f.mr, 2, KV_FAST_ACCESS, false);
	reg.wr.next = &send;
	if (kv_posted(t, "REG_MR + SEND", ib_post_send(c->p.qp_a, &reg.wr, &bad)) ||
	    kv_expect(t, "SEND from the MR just registered", c->p.cq_a, 3,
		      IB_WC_SUCCESS, IB_WC_SEND, NULL) ||
	    kv_expect(t, "its receive", c->p.cq_b, 1, IB_WC_SUCCESS,
		      IB_WC_RECV, NULL))
		return -EIO;
	at = kv_mismatch(c->rbuf.va, len, 15);
	if (KV_UNLESS(t, at < 0, "received byte %ld differs from the MR's", at))
		return -EIO;
	return 0;
}

/*
 * atomic_kernel_align: an atomic's target must be 8-byte aligned in
 * memory, not only in its iova. The MR starts f.start (150) bytes into its
 * first page. Registered at iova f.start % 8, iova KV_ATOMIC_VA is an
 * aligned word: a FETCH_ADD there returns it and adds 1. Registered
 * zero-based, KV_ATOMIC_VA is MR byte 8, 6 bytes off alignment: an
 * invalid request (as for a misaligned iova), and the MR is unchanged.
 */
#define KV_ATOMIC_VA	8

static int kv_fetch_add(struct kv_test *t, struct kv_ctx *c,
			enum ib_wc_status status, const char *what)
{
	struct ib_sge sge = kv_sge(c->pd, c->buf.dma, sizeof(u64));
	const struct ib_send_wr *bad;
	struct ib_atomic_wr wr = {
		.wr = {
			.wr_id = 5,
			.opcode = IB_WR_ATOMIC_FETCH_AND_ADD,
			.sg_list = &sge,
			.num_sge = 1,
			.send_flags = IB_SEND_SIGNALED,
		},
		.remote_addr = KV_ATOMIC_VA,
		.compare_add = 1,
		.rkey = c->f.mr->rkey,
	};

	memset(c->buf.va, 0, sizeof(u64));
	if (kv_posted(t, "FETCH_ADD", ib_post_send(c->p.qp_a, &wr.wr, &bad)))
		return -EIO;
	return kv_expect(t, what, c->p.cq_a, 5, status, IB_WC_FETCH_ADD, NULL);
}

/* Register the MR on b at @iova for atomics too, fill it with @seed. */
static int kv_fmr_reg_at(struct kv_test *t, struct kv_ctx *c, u64 iova,
			 u8 seed)
{
	const struct ib_send_wr *bad;
	struct ib_reg_wr wr;

	c->f.mr->iova = iova;
	kv_reg_wr(&wr, c->f.mr, 7, KV_FAST_ACCESS | IB_ACCESS_REMOTE_ATOMIC,
		  true);
	if (kv_posted(t, "REG_MR", ib_post_send(c->p.qp_b, &wr.wr, &bad)) ||
	    kv_expect(t, "REG_MR with remote atomic", c->p.cq_b, 7,
		      IB_WC_SUCCESS, IB_WC_REG_MR, NULL))
		return -EIO;
	kv_fmr_fill(&c->f, 0, KV_MR_LEN, seed);
	return 0;
}

static int kv_atomic_align(struct kv_test *t, struct kv_ctx *c)
{
	u32 byte = KV_ATOMIC_VA - c->f.start % 8;
	u64 want = 0, got;
	u32 i;

	if (kv_fmr_reg_at(t, c, c->f.start % 8, 16))
		return -EIO;
	for (i = 0; i < sizeof(want); i++)
		((u8 *)&want)[i] = kv_pattern(byte + i, 16);
	if (kv_fetch_add(t, c, IB_WC_SUCCESS, "FETCH_ADD on an aligned word"))
		return -EIO;
	got = *(u64 *)kv_fmr_byte(&c->f, byte);
	if (KV_UNLESS(t, *(u64 *)c->buf.va == want && got == want + 1,
		      "FETCH_ADD returned %#llx and left %#llx, expected %#llx and %#llx",
		      *(u64 *)c->buf.va, got, want, want + 1))
		return -EIO;

	if (kv_post_local_inv(t, c->p.qp_b, 6, c->f.mr->rkey) ||
	    kv_expect(t, "LOCAL_INV", c->p.cq_b, 6, IB_WC_SUCCESS,
		      IB_WC_LOCAL_INV, NULL) ||
	    kv_fmr_reg_at(t, c, 0, 17) ||
	    kv_fetch_add(t, c, IB_WC_REM_INV_REQ_ERR,
			 "FETCH_ADD on a misaligned word at an aligned iova"))
		return -EIO;
	return kv_fmr_check(t, &c->f, 0, KV_MR_LEN, 17);
}

/*
 * send_inv_bad_rkey, send_inv_other_pd: SEND with Invalidate of an rkey b
 * cannot invalidate (@key: another key byte, or a's MR in a's PD) is an
 * invalid request (IBTA 10.6.7.2): a's SEND completes with
 * IB_WC_REM_INV_REQ_ERR, b's receive with the same status, both QPs end
 * in error and the MR stays valid: a fresh pair in its PD writes
 * through it.
 */
#define KV_SEND_INV_REFUSED(k) ((const struct kv_step[]){ \
	{ KV_RECV, KV_B, .len = KV_RBUF_LEN, \
	  .status = IB_WC_REM_INV_REQ_ERR, .what = "its receive" }, \
	{ KV_SEND_INV, KV_A, k, .seed = 9, .len = 64, \
	  .status = IB_WC_REM_INV_REQ_ERR, .what = "SEND_WITH_INV" }, \
	{ KV_STATE, KV_B, .arg = KV_ERR, .what = "responder" }, \
	{ KV_STATE, KV_A, .arg = KV_ERR, .what = "requester" }, \
	{ KV_PAIR }, \
	{ KV_WRITE, KV_A2, .seed = 10, .len = KV_MR_LEN, \
	  .what = "WRITE after the refused invalidation" }, \
	{ KV_CHECK, .seed = 10, .len = KV_MR_LEN }, \
	{} })

static const struct kv_case kv_cases[] = {
	/*
	 * REG_MR of 4 non-contiguous pages with offsets; RDMA WRITE through
	 * the rkey lands exactly there (also a WRITE across a page
	 * boundary), RDMA READ returns exactly the MR's bytes.
	 */
	{ "fastreg_write_read", .buf_len = KV_MR_LEN, .mr = KV_MR_ON_B,
	  .steps = (const struct kv_step[]){
		{ KV_WRITE, KV_A, .seed = 1, .len = KV_MR_LEN, .what = "WRITE" },
		{ KV_CHECK, .seed = 1, .len = KV_MR_LEN },
		{ KV_CALL, .fn = kv_cross_page },
		{ KV_READ, KV_A, .seed = 3, .len = KV_MR_LEN, .what = "READ" },
		{ KV_CALL, .fn = kv_beside_mr },
		{} } },
	/*
	 * IB_WR_LOCAL_INV on b, then a's WRITE with the old rkey:
	 * REM_ACCESS_ERR, nothing written, both QPs in error.
	 */
	{ "local_inv", .buf_len = KV_MR_LEN, .mr = KV_MR_ON_B,
	  .steps = (const struct kv_step[]){
		{ KV_LINV, KV_B, .what = "LOCAL_INV" },
		{ KV_REFUSED, .seed = 4, .len = KV_MR_LEN },
		{ KV_CHECK },
		{} } },
	/*
	 * LOCAL_INV, ib_update_fast_reg_key(), map again and REG_MR: the new
	 * key works, the old one is refused.
	 */
	{ "rereg_new_key", .buf_len = KV_REREG_LEN, .mr = KV_MR_ON_B,
	  .steps = (const struct kv_step[]){
		{ KV_LINV, KV_B, .what = "LOCAL_INV" },
		{ KV_CALL, .fn = kv_new_key },
		{ KV_REG, KV_B, .what = "REG_MR" },
		{ KV_WRITE, KV_A, .seed = 5, .len = KV_REREG_LEN,
		  .what = "WRITE with the new key" },
		{ KV_CHECK, .seed = 5, .len = KV_REREG_LEN },
		{ KV_REFUSED, .key = KV_KEY_OLD, .seed = 6, .len = KV_REREG_LEN },
		{ KV_CHECK, .seed = 5, .len = KV_REREG_LEN },
		{} } },
	/*
	 * SEND with Invalidate from a names b's MR: b's receive completes
	 * with IB_WC_WITH_INVALIDATE and the rkey, and the rkey is dead
	 * afterwards.
	 */
	{ "send_with_inv", .buf_len = KV_MR_LEN, .mr = KV_MR_ON_B,
	  .steps = (const struct kv_step[]){
		{ KV_RECV, KV_B, .len = KV_RBUF_LEN, .what = "its receive" },
		{ KV_SEND_INV, KV_A, .seed = 7, .len = 64, .what = "SEND_WITH_INV" },
		{ KV_CALL, .fn = kv_inv_received },
		{ KV_REFUSED, .seed = 8, .len = KV_MR_LEN },
		{ KV_CHECK },
		{} } },
	{ "send_inv_bad_rkey", .buf_len = KV_MR_LEN, .mr = KV_MR_ON_B,
	  .steps = KV_SEND_INV_REFUSED(KV_KEY_WRONG) },
	{ "send_inv_other_pd", .two_pds = true, .buf_len = KV_MR_LEN,
	  .mr = KV_MR_ON_A, .steps = KV_SEND_INV_REFUSED(KV_KEY_MR) },
	/*
	 * LOCAL_INV of a key that names no MR (wrong key byte) and of
	 * another PD's MR: IB_WC_LOC_QP_OP_ERR (as rxe), the QP in error,
	 * the MR still valid: a QP of its PD can invalidate it.
	 */
	{ "local_inv_refused", .two_pds = true, .buf_len = 64,
	  .mr = KV_MR_ON_A, .steps = (const struct kv_step[]){
		{ KV_LINV, KV_A, KV_KEY_WRONG, .status = IB_WC_LOC_QP_OP_ERR,
		  .what = "LOCAL_INV of a wrong key" },
		{ KV_STATE, KV_A, .arg = KV_ERR,
		  .what = "after a failed LOCAL_INV" },
		{ KV_LINV, KV_B, .status = IB_WC_LOC_QP_OP_ERR,
		  .what = "LOCAL_INV of another PD's MR" },
		{ KV_PAIR },
		{ KV_LINV, KV_A2, .what = "LOCAL_INV in the MR's PD" },
		{} } },
	/*
	 * More pages than max_num_sg: ib_alloc_mr() beyond the device limit
	 * fails cleanly; ib_map_mr_sg() maps only what fits, REG_MR
	 * registers that much, and a WRITE one byte past it is refused.
	 */
	{ "map_too_many", .buf_len = KV_MR_LEN,
	  .steps = (const struct kv_step[]){
		{ KV_CALL, .fn = kv_alloc_too_big },
		{ KV_CALL, .fn = kv_map_two },
		{ KV_REG, KV_B, .what = "REG_MR" },
		{ KV_WRITE, KV_A, .seed = 11, .len = KV_TWO_LEN,
		  .what = "WRITE of the mapped part" },
		{ KV_CHECK, .seed = 11, .len = KV_TWO_LEN },
		{ KV_REFUSED, .seed = 11, .len = KV_TWO_LEN + 1 },
		{ KV_CHECK, .seed = 11, .len = KV_TWO_LEN },
		{} } },
	/*
	 * REG_MR with access rights no registration may have: remote write
	 * or atomic without local write (what ib_check_mr_access() refuses
	 * for other registrations) or a flag a fast-registration MR cannot
	 * have. ib_post_send() refuses the WR, the QP stays usable and the
	 * MR invalid.
	 */
	{ "reg_bad_access", .buf_len = KV_MR_LEN, .mr = KV_MR_MAPPED,
	  .steps = (const struct kv_step[]){
		{ KV_REG_BAD, KV_B, .arg = IB_ACCESS_REMOTE_WRITE },
		{ KV_REG_BAD, KV_B,
		  .arg = IB_ACCESS_REMOTE_ATOMIC | IB_ACCESS_REMOTE_READ },
		{ KV_REG_BAD, KV_B, .arg = KV_FAST_ACCESS | IB_ACCESS_ON_DEMAND },
		{ KV_NONE, KV_B, .what = "after the refused REG_MRs" },
		{ KV_STATE, KV_B, .arg = IB_QPS_RTS,
		  .what = "after refused REG_MRs" },
		{ KV_REFUSED, .len = 64 },
		{ KV_CHECK },
		{} } },
	/*
	 * REG_MR and a LOCAL_INV of the same key posted together, the REG_MR
	 * unsignaled and not executed yet when LOCAL_INV is posted: send WRs
	 * run in order, so the LOCAL_INV succeeds after the registration
	 * and the key is dead. Also REG_MR of an MR that is still valid:
	 * IB_WC_LOC_QP_OP_ERR (only a free MR may be registered).
	 */
	{ "reg_inv_chain", .buf_len = KV_MR_LEN, .mr = KV_MR_MAPPED,
	  .steps = (const struct kv_step[]){
		{ KV_REG_INV, KV_B, .what = "LOCAL_INV behind REG_MR" },
		{ KV_NONE, KV_B, .what = "unsignaled REG_MR" },
		{ KV_REFUSED, .seed = 12, .len = 64 },
		{ KV_CHECK },
		{ KV_PAIR },
		{ KV_REG, KV_A2, .what = "REG_MR" },
		{ KV_REG, KV_A2, .status = IB_WC_LOC_QP_OP_ERR,
		  .what = "REG_MR of a valid MR" },
		{ KV_STATE, KV_A2, .arg = KV_ERR, .what = "after a failed REG_MR" },
		{} } },
	{ "reg_send_chain", .buf_len = 64, .mr = KV_MR_MAPPED,
	  .steps = (const struct kv_step[]){
		{ KV_CALL, .fn = kv_reg_send },
		{} } },
	{ "atomic_kernel_align", .buf_len = 64, .mr = KV_MR_MAPPED,
	  .steps = (const struct kv_step[]){
		{ KV_CALL, .fn = kv_atomic_align },
		{} } },
	{ "dma_mr_send_recv", .buf_len = 64,
	  .steps = (const struct kv_step[]){
		{ KV_CALL, .fn = kv_dma_send_recv },
		{} } },
	{ "handler_unlocked", .buf_len = 64,
	  .steps = (const struct kv_step[]){
		{ KV_CALL, .fn = kv_handler_unlocked },
		{} } },
};

/*
 * The device named ibdev=, found the way any kernel client meets devices
 * (ib_core no longer exports its lookup by name since 7.2): the client's
 * add callback sees each registered device once, keeps a reference to
 * ours and declines them all, so there is nothing to remove afterwards.
 * kv_found is written by kv_client_add only, during ib_register_client().
 */
static struct ib_device *kv_found;

static int kv_client_add(struct ib_device *dev)
{
	if (!kv_found && !strcmp(dev_name(&dev->dev), ibdev) &&
	    ib_device_try_get(dev))
		kv_found = dev;
	return -EOPNOTSUPP;
}

static struct ib_client kv_client = {
	.name = "sroce_kverbs",
	.add = kv_client_add,
	.no_kverbs_req = 1,
};

static struct ib_device *kv_device_get(void)
{
	kv_found = NULL;
	if (ib_register_client(&kv_client))
		return NULL;
	ib_unregister_client(&kv_client);
	return kv_found;
}

/* Our device's GID at gid_index and the MAC behind it. */
static int kv_setup(struct kv_test *t)
{
	const struct ib_gid_attr *attr;
	int err;

	attr = rdma_get_gid_attr(t->dev, KV_PORT, gid_index);
	if (IS_ERR(attr)) {
		pr_err("sroce_kverbs: no GID %d on %s port %d\n", gid_index,
		       ibdev, KV_PORT);
		return PTR_ERR(attr);
	}
	if (attr->gid_type != IB_GID_TYPE_ROCE_UDP_ENCAP) {
		pr_err("sroce_kverbs: GID %d is not RoCE v2\n", gid_index);
		rdma_put_gid_attr(attr);
		return -EINVAL;
	}
	t->gid = attr->gid;
	err = rdma_read_gid_l2_fields(attr, NULL, t->dmac);
	rdma_put_gid_attr(attr);
	return err;
}

static int __init sroce_kverbs_init(void)
{
	struct kv_test *t;
	int i, failed = 0, err;

	if (!ibdev || gid_index < 0) {
		pr_err("sroce_kverbs: ibdev= and gid_index= are required\n");
		return -EINVAL;
	}
	t = kzalloc(sizeof(*t), GFP_KERNEL);
	if (!t)
		return -ENOMEM;
	t->dev = kv_device_get();
	if (!t->dev) {
		pr_err("sroce_kverbs: no RDMA device %s\n", ibdev);
		kfree(t);
		return -ENODEV;
	}
	err = kv_setup(t);
	if (err)
		goto out;

	pr_info("KTAP version 1\n");
	pr_info("# sroce_kverbs: %s, GID %d %pI6\n", ibdev, gid_index,
		t->gid.raw);
	pr_info("1..%zu\n", ARRAY_SIZE(kv_cases));
	for (i = 0; i < ARRAY_SIZE(kv_cases); i++) {
		t->reason[0] = '\0';
		kv_case_run(t, &kv_cases[i], i + 1);
		if (t->reason[0]) {
			failed++;
			pr_info("not ok %d %s # %s\n", i + 1, kv_cases[i].name,
				t->reason);
		} else {
			pr_info("ok %d %s\n", i + 1, kv_cases[i].name);
		}
	}
	pr_info("# sroce_kverbs: %d of %zu failed\n", failed,
		ARRAY_SIZE(kv_cases));
out:
	ib_device_put(t->dev);
	kfree(t);
	return err;
}

static void __exit sroce_kverbs_exit(void)
{
}

module_init(sroce_kverbs_init);
module_exit(sroce_kverbs_exit);

MODULE_DESCRIPTION("sroce kernel-verbs self-test: fast registration and invalidation");
MODULE_LICENSE("GPL");
