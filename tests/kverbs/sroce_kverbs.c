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

static int kv_fmr_setup(struct kv_test *t, struct kv_fmr *f, struct ib_pd *pd,
			struct ib_qp *qp, struct ib_cq *cq)
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
	return kv_fmr_reg(t, f, qp, cq);
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

/* ---- the cases ---- */

struct kv_ctx {
	struct ib_pd *pd, *pd2;
	struct kv_pair p;
	struct kv_fmr f;
	struct kv_buf buf;
};

static int kv_ctx_init(struct kv_test *t, struct kv_ctx *c, bool two_pds,
		       u32 buf_len)
{
	memset(c, 0, sizeof(*c));
	c->pd = ib_alloc_pd(t->dev, 0);
	if (IS_ERR(c->pd)) {
		KV_FAIL(t, "ib_alloc_pd: %ld", PTR_ERR(c->pd));
		c->pd = NULL;
		return -ENOMEM;
	}
	c->pd2 = c->pd;
	if (two_pds) {
		c->pd2 = ib_alloc_pd(t->dev, 0);
		if (IS_ERR(c->pd2)) {
			KV_FAIL(t, "ib_alloc_pd: %ld", PTR_ERR(c->pd2));
			c->pd2 = NULL;
			return -ENOMEM;
		}
	}
	if (kv_buf_alloc(t, &c->buf, buf_len)) {
		KV_FAIL(t, "buffer of %u bytes", buf_len);
		return -ENOMEM;
	}
	return kv_pair_create(t, &c->p, c->pd, c->pd2);
}

static void kv_ctx_fini(struct kv_test *t, struct kv_ctx *c)
{
	kv_pair_destroy(&c->p);
	kv_fmr_free(t, &c->f);
	kv_buf_free(t, &c->buf);
	if (c->pd2 && c->pd2 != c->pd)
		ib_dealloc_pd(c->pd2);
	if (c->pd)
		ib_dealloc_pd(c->pd);
}

/*
 * REG_MR of 4 non-contiguous pages with offsets; RDMA WRITE through the
 * rkey lands exactly there (also a WRITE across a page boundary), RDMA
 * READ returns exactly the MR's bytes.
 */
static void kv_case_fastreg_write_read(struct kv_test *t)
{
	struct kv_ctx c;
	struct ib_sge sge;
	u32 off, len;
	long bad;

	if (kv_ctx_init(t, &c, false, KV_MR_LEN))
		goto out;
	if (kv_fmr_setup(t, &c.f, c.pd, c.p.qp_b, c.p.cq_b))
		goto out;

	/* the whole MR */
	kv_fill(c.buf.va, KV_MR_LEN, 1);
	sge = kv_sge(c.pd, c.buf.dma, KV_MR_LEN);
	if (kv_post_rdma(t, c.p.qp_a, IB_WR_RDMA_WRITE, 1, &sge,
			 c.f.mr->iova, c.f.mr->rkey))
		goto out;
	if (kv_expect(t, "WRITE", c.p.cq_a, 1, IB_WC_SUCCESS,
		      IB_WC_RDMA_WRITE, NULL))
		goto out;
	if (kv_fmr_check(t, &c.f, 0, KV_MR_LEN, 1))
		goto out;

	/* 300 bytes across the boundary of the first and second page */
	off = PAGE_SIZE - c.f.start - 100;
	len = 300;
	kv_fill(c.buf.va, len, 2);
	kv_fmr_fill(&c.f, 0, KV_MR_LEN, 1);
	sge = kv_sge(c.pd, c.buf.dma, len);
	if (kv_post_rdma(t, c.p.qp_a, IB_WR_RDMA_WRITE, 2, &sge,
			 c.f.mr->iova + off, c.f.mr->rkey))
		goto out;
	if (kv_expect(t, "WRITE across pages", c.p.cq_a, 2, IB_WC_SUCCESS,
		      IB_WC_RDMA_WRITE, NULL))
		goto out;
	for (bad = 0; bad < KV_MR_LEN; bad++) {
		u8 want = bad >= off && bad < off + len ?
			  kv_pattern(bad - off, 2) : kv_pattern(bad, 1);

		if (KV_UNLESS(t, *kv_fmr_byte(&c.f, bad) == want,
			      "MR byte %ld after the cross-page WRITE", bad))
			goto out;
	}

	/* READ the MR back: new bytes written by the CPU on b's side */
	kv_fmr_fill(&c.f, 0, KV_MR_LEN, 3);
	memset(c.buf.va, 0, KV_MR_LEN);
	sge = kv_sge(c.pd, c.buf.dma, KV_MR_LEN);
	if (kv_post_rdma(t, c.p.qp_a, IB_WR_RDMA_READ, 3, &sge,
			 c.f.mr->iova, c.f.mr->rkey))
		goto out;
	if (kv_expect(t, "READ", c.p.cq_a, 3, IB_WC_SUCCESS, IB_WC_RDMA_READ,
		      NULL))
		goto out;
	bad = kv_mismatch(c.buf.va, KV_MR_LEN, 3);
	if (KV_UNLESS(t, bad < 0, "READ returned a wrong byte at %ld", bad))
		goto out;
	/* the pages outside the MR were never touched */
	if (KV_UNLESS(t, *kv_fmr_byte(&c.f, -1) == KV_GUARD &&
		      *kv_fmr_byte(&c.f, KV_MR_LEN) == KV_GUARD,
		      "bytes beside the MR changed"))
		goto out;
out:
	kv_ctx_fini(t, &c);
}

/*
 * IB_WR_LOCAL_INV on b, then a's WRITE with the old rkey: REM_ACCESS_ERR,
 * nothing written, both QPs in error.
 */
static void kv_case_local_inv(struct kv_test *t)
{
	struct kv_ctx c;
	u32 rkey;

	if (kv_ctx_init(t, &c, false, KV_MR_LEN))
		goto out;
	if (kv_fmr_setup(t, &c.f, c.pd, c.p.qp_b, c.p.cq_b))
		goto out;
	rkey = c.f.mr->rkey;
	if (kv_post_local_inv(t, c.p.qp_b, 10, rkey))
		goto out;
	if (kv_expect(t, "LOCAL_INV", c.p.cq_b, 10, IB_WC_SUCCESS,
		      IB_WC_LOCAL_INV, NULL))
		goto out;
	kv_fill(c.buf.va, KV_MR_LEN, 4);
	if (kv_write_refused(t, &c.p, c.pd, &c.buf, c.f.mr->iova, KV_MR_LEN,
			     rkey))
		goto out;
	kv_fmr_check(t, &c.f, 0, 0, 0);
out:
	kv_ctx_fini(t, &c);
}

/*
 * LOCAL_INV, ib_update_fast_reg_key(), map again and REG_MR: the new key
 * works, the old one is refused.
 */
static void kv_case_rereg_new_key(struct kv_test *t)
{
	struct kv_ctx c;
	struct ib_sge sge;
	u32 old, len;
	int n;

	/* the second mapping has no sg offset: KV_SG_OFF bytes longer */
	if (kv_ctx_init(t, &c, false, KV_MR_LEN + KV_SG_OFF))
		goto out;
	if (kv_fmr_setup(t, &c.f, c.pd, c.p.qp_b, c.p.cq_b))
		goto out;
	old = c.f.mr->rkey;
	if (kv_post_local_inv(t, c.p.qp_b, 20, old))
		goto out;
	if (kv_expect(t, "LOCAL_INV", c.p.cq_b, 20, IB_WC_SUCCESS,
		      IB_WC_LOCAL_INV, NULL))
		goto out;
	ib_update_fast_reg_key(c.f.mr, ib_inc_rkey(old) & 0xff);
	if (KV_UNLESS(t, c.f.mr->rkey != old && c.f.mr->rkey >> 8 == old >> 8,
		      "ib_update_fast_reg_key: rkey %#x from %#x", c.f.mr->rkey, old))
		goto out;
	/* a different layout this time: no offset into the first entry */
	n = kv_fmr_map(t, &c.f, KV_FIRST_OFF, KV_LAST_LEN, 0);
	if (KV_UNLESS(t, n == KV_PAGES, "ib_map_mr_sg mapped %d", n))
		goto out;
	if (kv_fmr_reg(t, &c.f, c.p.qp_b, c.p.cq_b))
		goto out;

	len = c.f.mr->length;
	if (KV_UNLESS(t, len == KV_MR_LEN + KV_SG_OFF,
		      "MR length %u after the new mapping", len))
		goto out;
	kv_fill(c.buf.va, len, 5);
	sge = kv_sge(c.pd, c.buf.dma, len);
	if (kv_post_rdma(t, c.p.qp_a, IB_WR_RDMA_WRITE, 21, &sge,
			 c.f.mr->iova, c.f.mr->rkey))
		goto out;
	if (kv_expect(t, "WRITE with the new key", c.p.cq_a, 21, IB_WC_SUCCESS,
		      IB_WC_RDMA_WRITE, NULL))
		goto out;
	if (kv_fmr_check(t, &c.f, 0, len, 5))
		goto out;
	kv_fill(c.buf.va, len, 6);
	if (kv_write_refused(t, &c.p, c.pd, &c.buf, c.f.mr->iova, len, old))
		goto out;
	kv_fmr_check(t, &c.f, 0, len, 5);
out:
	kv_ctx_fini(t, &c);
}

/*
 * SEND with Invalidate from a names b's MR: b's receive completes with
 * IB_WC_WITH_INVALIDATE and the rkey, and the rkey is dead afterwards.
 */
static void kv_case_send_with_inv(struct kv_test *t)
{
	struct kv_ctx c;
	struct kv_buf rbuf = {};
	struct ib_sge sge, rsge;
	struct ib_wc wc;
	u32 rkey;

	if (kv_ctx_init(t, &c, false, KV_MR_LEN))
		goto out;
	if (kv_fmr_setup(t, &c.f, c.pd, c.p.qp_b, c.p.cq_b))
		goto out;
	rkey = c.f.mr->rkey;
	if (KV_UNLESS(t, !kv_buf_alloc(t, &rbuf, 256), "receive buffer"))
		goto out;
	rsge = kv_sge(c.pd, rbuf.dma, 256);
	if (kv_post_recv(t, c.p.qp_b, 30, &rsge, 1))
		goto out;
	kv_fill(c.buf.va, 64, 7);
	sge = kv_sge(c.pd, c.buf.dma, 64);
	if (kv_post_send_inv(t, c.p.qp_a, 31, &sge, rkey))
		goto out;
	if (kv_expect(t, "SEND_WITH_INV", c.p.cq_a, 31, IB_WC_SUCCESS,
		      IB_WC_SEND, NULL))
		goto out;
	if (kv_expect(t, "its receive", c.p.cq_b, 30, IB_WC_SUCCESS,
		      IB_WC_RECV, &wc))
		goto out;
	if (KV_UNLESS(t, wc.byte_len == 64, "byte_len %u, expected 64", wc.byte_len))
		goto out;
	if (KV_UNLESS(t, wc.wc_flags & IB_WC_WITH_INVALIDATE,
		      "no IB_WC_WITH_INVALIDATE (wc_flags %#x)", wc.wc_flags))
		goto out;
	if (KV_UNLESS(t, !(wc.wc_flags & IB_WC_WITH_IMM), "IB_WC_WITH_IMM set"))
		goto out;
	if (KV_UNLESS(t, wc.ex.invalidate_rkey == rkey,
		      "invalidate_rkey %#x, expected %#x", wc.ex.invalidate_rkey,
		      rkey))
		goto out;
	if (KV_UNLESS(t, kv_mismatch(rbuf.va, 64, 7) < 0, "received bytes differ"))
		goto out;
	if (KV_UNLESS(t, ((u8 *)rbuf.va)[64] == 0, "receive wrote past 64 bytes"))
		goto out;
	kv_fill(c.buf.va, KV_MR_LEN, 8);
	if (kv_write_refused(t, &c.p, c.pd, &c.buf, c.f.mr->iova, KV_MR_LEN,
			     rkey))
		goto out;
	kv_fmr_check(t, &c.f, 0, 0, 0);
out:
	kv_buf_free(t, &rbuf);
	kv_ctx_fini(t, &c);
}

/*
 * SEND with Invalidate of an rkey b cannot invalidate: invalid request
 * (IBTA 10.6.7.2): a's SEND completes with IB_WC_REM_INV_REQ_ERR, b's
 * receive with the same status, both QPs end in error and the MR stays
 * valid.
 */
static void kv_send_inv_refused(struct kv_test *t, bool other_pd)
{
	struct kv_ctx c;
	struct kv_pair p2 = {};
	struct kv_buf rbuf = {};
	struct ib_sge sge, rsge;
	struct ib_qp *owner;
	struct ib_cq *owner_cq;
	u32 rkey;

	if (kv_ctx_init(t, &c, other_pd, KV_MR_LEN))
		goto out;
	/* other PD: the MR is a's (registered on a); else b's, key wrong */
	owner = other_pd ? c.p.qp_a : c.p.qp_b;
	owner_cq = other_pd ? c.p.cq_a : c.p.cq_b;
	if (kv_fmr_setup(t, &c.f, c.pd, owner, owner_cq))
		goto out;
	rkey = other_pd ? c.f.mr->rkey : ib_inc_rkey(c.f.mr->rkey);
	if (KV_UNLESS(t, !kv_buf_alloc(t, &rbuf, 256), "receive buffer"))
		goto out;
	rsge = kv_sge(c.pd2, rbuf.dma, 256);
	if (kv_post_recv(t, c.p.qp_b, 40, &rsge, 1))
		goto out;
	kv_fill(c.buf.va, 64, 9);
	sge = kv_sge(c.pd, c.buf.dma, 64);
	if (kv_post_send_inv(t, c.p.qp_a, 41, &sge, rkey))
		goto out;
	if (kv_expect(t, "SEND_WITH_INV", c.p.cq_a, 41, IB_WC_REM_INV_REQ_ERR,
		      0, NULL))
		goto out;
	if (kv_expect(t, "its receive", c.p.cq_b, 40, IB_WC_REM_INV_REQ_ERR, 0,
		      NULL))
		goto out;
	if (KV_UNLESS(t, kv_qp_state(c.p.qp_b) == IB_QPS_ERR,
		      "responder QP state %d, expected ERR", kv_qp_state(c.p.qp_b)))
		goto out;
	if (KV_UNLESS(t, kv_qp_state(c.p.qp_a) == IB_QPS_ERR,
		      "requester QP state %d, expected ERR", kv_qp_state(c.p.qp_a)))
		goto out;

	/* the MR is still valid: a fresh pair in its PD writes through it */
	if (kv_pair_create(t, &p2, c.pd, c.pd))
		goto out;
	kv_fill(c.buf.va, KV_MR_LEN, 10);
	sge = kv_sge(c.pd, c.buf.dma, KV_MR_LEN);
	if (kv_post_rdma(t, p2.qp_a, IB_WR_RDMA_WRITE, 42, &sge,
			 c.f.mr->iova, c.f.mr->rkey))
		goto out;
	if (kv_expect(t, "WRITE after the refused invalidation", p2.cq_a, 42,
		      IB_WC_SUCCESS, IB_WC_RDMA_WRITE, NULL))
		goto out;
	kv_fmr_check(t, &c.f, 0, KV_MR_LEN, 10);
out:
	kv_pair_destroy(&p2);
	kv_buf_free(t, &rbuf);
	kv_ctx_fini(t, &c);
}

static void kv_case_send_inv_bad_rkey(struct kv_test *t)
{
	kv_send_inv_refused(t, false);
}

static void kv_case_send_inv_other_pd(struct kv_test *t)
{
	kv_send_inv_refused(t, true);
}

/*
 * LOCAL_INV of a key that names no MR (wrong key byte) and of another PD's
 * MR: IB_WC_LOC_QP_OP_ERR (as rxe), the QP in error, the MR still valid.
 */
static void kv_case_local_inv_refused(struct kv_test *t)
{
	struct kv_ctx c;
	struct kv_pair p2 = {};

	if (kv_ctx_init(t, &c, true, 64))
		goto out;
	if (kv_fmr_setup(t, &c.f, c.pd, c.p.qp_a, c.p.cq_a))
		goto out;
	if (kv_post_local_inv(t, c.p.qp_a, 50, ib_inc_rkey(c.f.mr->rkey)))
		goto out;
	if (kv_expect(t, "LOCAL_INV of a wrong key", c.p.cq_a, 50,
		      IB_WC_LOC_QP_OP_ERR, 0, NULL))
		goto out;
	if (KV_UNLESS(t, kv_qp_state(c.p.qp_a) == IB_QPS_ERR,
		      "QP state %d after a failed LOCAL_INV", kv_qp_state(c.p.qp_a)))
		goto out;
	/* qp_b is in the other PD */
	if (kv_post_local_inv(t, c.p.qp_b, 51, c.f.mr->rkey))
		goto out;
	if (kv_expect(t, "LOCAL_INV of another PD's MR", c.p.cq_b, 51,
		      IB_WC_LOC_QP_OP_ERR, 0, NULL))
		goto out;
	/* neither invalidated it: a QP of its PD can */
	if (kv_pair_create(t, &p2, c.pd, c.pd))
		goto out;
	if (kv_post_local_inv(t, p2.qp_a, 52, c.f.mr->rkey))
		goto out;
	if (kv_expect(t, "LOCAL_INV in the MR's PD", p2.cq_a, 52,
		      IB_WC_SUCCESS, IB_WC_LOCAL_INV, NULL))
		goto out;
out:
	kv_pair_destroy(&p2);
	kv_ctx_fini(t, &c);
}

/*
 * More pages than max_num_sg: ib_alloc_mr() beyond the device limit fails
 * cleanly; ib_map_mr_sg() maps only what fits, REG_MR registers that
 * much, and a WRITE past it is refused.
 */
static void kv_case_map_too_many(struct kv_test *t)
{
	u32 limit = t->dev->attrs.max_fast_reg_page_list_len;
	struct ib_mr *big;
	struct kv_ctx c;
	struct ib_sge sge;
	u32 len;
	int n;

	if (kv_ctx_init(t, &c, false, KV_MR_LEN))
		goto out;
	big = ib_alloc_mr(c.pd, IB_MR_TYPE_MEM_REG, limit + 1);
	if (!IS_ERR(big))
		ib_dereg_mr(big);
	if (KV_UNLESS(t, IS_ERR(big) && PTR_ERR(big) == -EINVAL,
		      "ib_alloc_mr(%u > max_fast_reg_page_list_len): %ld",
		      limit + 1, IS_ERR(big) ? PTR_ERR(big) : 0L))
		goto out;
	if (kv_fmr_alloc(t, &c.f, c.pd, 2))
		goto out;
	n = kv_fmr_map(t, &c.f, KV_FIRST_OFF, KV_LAST_LEN, 0);
	if (KV_UNLESS(t, n == 2, "ib_map_mr_sg mapped %d of %d entries into 2 pages",
		      n, KV_PAGES))
		goto out;
	len = 2 * PAGE_SIZE - KV_FIRST_OFF;
	if (KV_UNLESS(t, c.f.mr->length == len, "MR length %llu, expected %u",
		      c.f.mr->length, len))
		goto out;
	if (kv_fmr_reg(t, &c.f, c.p.qp_b, c.p.cq_b))
		goto out;
	kv_fill(c.buf.va, len, 11);
	sge = kv_sge(c.pd, c.buf.dma, len);
	if (kv_post_rdma(t, c.p.qp_a, IB_WR_RDMA_WRITE, 60, &sge,
			 c.f.mr->iova, c.f.mr->rkey))
		goto out;
	if (kv_expect(t, "WRITE of the mapped part", c.p.cq_a, 60,
		      IB_WC_SUCCESS, IB_WC_RDMA_WRITE, NULL))
		goto out;
	if (kv_fmr_check(t, &c.f, 0, len, 11))
		goto out;
	/* one byte more than was mapped */
	if (kv_write_refused(t, &c.p, c.pd, &c.buf, c.f.mr->iova, len + 1,
			     c.f.mr->rkey))
		goto out;
	kv_fmr_check(t, &c.f, 0, len, 11);
out:
	kv_ctx_fini(t, &c);
}

/*
 * REG_MR with access rights no registration may have: remote write or
 * atomic without local write (what ib_check_mr_access() refuses for other
 * registrations) or a flag a fast-registration MR cannot have.
 * ib_post_send() refuses the WR, the QP stays usable and the MR invalid.
 */
static void kv_case_reg_bad_access(struct kv_test *t)
{
	static const int bad_access[] = {
		IB_ACCESS_REMOTE_WRITE,
		IB_ACCESS_REMOTE_ATOMIC | IB_ACCESS_REMOTE_READ,
		KV_FAST_ACCESS | IB_ACCESS_ON_DEMAND,
	};
	const struct ib_send_wr *bad;
	struct ib_reg_wr wr;
	struct kv_ctx c;
	int i, n, err;

	if (kv_ctx_init(t, &c, false, KV_MR_LEN))
		goto out;
	if (kv_fmr_alloc(t, &c.f, c.pd, KV_PAGES))
		goto out;
	n = kv_fmr_map(t, &c.f, KV_FIRST_OFF, KV_LAST_LEN, KV_SG_OFF);
	if (KV_UNLESS(t, n == KV_PAGES, "ib_map_mr_sg mapped %d", n))
		goto out;
	for (i = 0; i < ARRAY_SIZE(bad_access); i++) {
		kv_reg_wr(&wr, c.f.mr, 70 + i, bad_access[i], true);
		bad = NULL;
		err = ib_post_send(c.p.qp_b, &wr.wr, &bad);
		if (KV_UNLESS(t, err == -EINVAL && bad == &wr.wr,
			      "REG_MR with access %#x: ib_post_send %d", bad_access[i],
			      err))
			goto out;
	}
	if (kv_expect_none(t, "after the refused REG_MRs", c.p.cq_b))
		goto out;
	if (KV_UNLESS(t, kv_qp_state(c.p.qp_b) == IB_QPS_RTS,
		      "QP state %d after refused REG_MRs", kv_qp_state(c.p.qp_b)))
		goto out;
	/* the MR was never registered: its rkey is refused */
	if (kv_write_refused(t, &c.p, c.pd, &c.buf, c.f.mr->iova, 64,
			     c.f.mr->rkey))
		goto out;
	kv_fmr_check(t, &c.f, 0, 0, 0);
out:
	kv_ctx_fini(t, &c);
}

/*
 * REG_MR and a LOCAL_INV of the same key posted together, the REG_MR
 * unsignaled and not executed yet when LOCAL_INV is posted: send WRs run
 * in order, so the LOCAL_INV succeeds after the registration and the key
 * is dead. Also REG_MR of an MR that is still valid: IB_WC_LOC_QP_OP_ERR
 * (only a free MR may be registered).
 */
static void kv_case_reg_inv_chain(struct kv_test *t)
{
	const struct ib_send_wr *bad;
	struct ib_send_wr inv = {
		.wr_id = 81,
		.opcode = IB_WR_LOCAL_INV,
		.send_flags = IB_SEND_SIGNALED,
	};
	struct ib_reg_wr reg;
	struct kv_pair p2 = {};
	struct kv_ctx c;
	int n;

	if (kv_ctx_init(t, &c, false, KV_MR_LEN))
		goto out;
	if (kv_fmr_alloc(t, &c.f, c.pd, KV_PAGES))
		goto out;
	n = kv_fmr_map(t, &c.f, KV_FIRST_OFF, KV_LAST_LEN, KV_SG_OFF);
	if (KV_UNLESS(t, n == KV_PAGES, "ib_map_mr_sg mapped %d", n))
		goto out;
	kv_reg_wr(&reg, c.f.mr, 80, KV_FAST_ACCESS, false);
	inv.ex.invalidate_rkey = c.f.mr->rkey;
	reg.wr.next = &inv;
	if (KV_UNLESS(t, !ib_post_send(c.p.qp_b, &reg.wr, &bad),
		      "posting REG_MR + LOCAL_INV"))
		goto out;
	if (kv_expect(t, "LOCAL_INV behind REG_MR", c.p.cq_b, 81,
		      IB_WC_SUCCESS, IB_WC_LOCAL_INV, NULL))
		goto out;
	if (kv_expect_none(t, "unsignaled REG_MR", c.p.cq_b))
		goto out;
	kv_fill(c.buf.va, 64, 12);
	if (kv_write_refused(t, &c.p, c.pd, &c.buf, c.f.mr->iova, 64,
			     c.f.mr->rkey))
		goto out;
	if (kv_fmr_check(t, &c.f, 0, 0, 0))
		goto out;

	/* register it, then register it again while valid */
	if (kv_pair_create(t, &p2, c.pd, c.pd))
		goto out;
	if (kv_fmr_reg(t, &c.f, p2.qp_a, p2.cq_a))
		goto out;
	kv_reg_wr(&reg, c.f.mr, 82, KV_FAST_ACCESS, true);
	if (KV_UNLESS(t, !ib_post_send(p2.qp_a, &reg.wr, &bad), "posting REG_MR"))
		goto out;
	if (kv_expect(t, "REG_MR of a valid MR", p2.cq_a, 82,
		      IB_WC_LOC_QP_OP_ERR, 0, NULL))
		goto out;
	if (KV_UNLESS(t, kv_qp_state(p2.qp_a) == IB_QPS_ERR,
		      "QP state %d after a failed REG_MR", kv_qp_state(p2.qp_a)))
		goto out;
out:
	kv_pair_destroy(&p2);
	kv_ctx_fini(t, &c);
}

/*
 * SEND/RECV through pd->local_dma_lkey of kmalloc'ed memory and of
 * vmalloc'ed memory, mapped the only way DMA allows: page by page
 * (vmalloc_to_page + ib_dma_map_page), one SGE per page.
 */
#define KV_SLAB_LEN	300
#define KV_VPAGES	2
#define KV_VTAIL	1000

/*
 * Post the 3-SGE RECV and SEND of kv_case_dma_mr_send_recv and check what
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

static void kv_case_dma_mr_send_recv(struct kv_test *t)
{
	u64 sdma[KV_VPAGES] = {}, rdma[KV_VPAGES] = {};
	struct ib_sge ssge[KV_SGE], rsge[KV_SGE];
	struct kv_buf sslab = {}, rslab = {};
	u8 *svm = NULL, *rvm = NULL;
	struct kv_ctx c;
	u32 i;
	int mapped = 0;
	u8 *got;

	if (kv_ctx_init(t, &c, false, 64))
		goto out;
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
	ssge[0] = kv_sge(c.pd, sslab.dma, KV_SLAB_LEN);
	ssge[1] = kv_sge(c.pd, sdma[0], PAGE_SIZE);
	ssge[2] = kv_sge(c.pd, sdma[1], KV_VTAIL);
	rsge[0] = kv_sge(c.pd, rslab.dma, KV_SLAB_LEN);
	rsge[1] = kv_sge(c.pd, rdma[0], PAGE_SIZE);
	rsge[2] = kv_sge(c.pd, rdma[1], PAGE_SIZE);
	if (kv_dma_msg_run(t, &c, ssge, rsge))
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
out:
	for (i = 0; i < mapped; i++) {
		ib_dma_unmap_page(t->dev, sdma[i], PAGE_SIZE, DMA_TO_DEVICE);
		ib_dma_unmap_page(t->dev, rdma[i], PAGE_SIZE, DMA_FROM_DEVICE);
	}
	/* the QPs go before the memory their WRs named */
	kv_pair_destroy(&c.p);
	kv_buf_free(t, &sslab);
	kv_buf_free(t, &rslab);
	vfree(svm);
	vfree(rvm);
	kv_ctx_fini(t, &c);
}

static const struct {
	const char *name;
	void (*run)(struct kv_test *t);
} kv_cases[] = {
	{ "fastreg_write_read", kv_case_fastreg_write_read },
	{ "local_inv", kv_case_local_inv },
	{ "rereg_new_key", kv_case_rereg_new_key },
	{ "send_with_inv", kv_case_send_with_inv },
	{ "send_inv_bad_rkey", kv_case_send_inv_bad_rkey },
	{ "send_inv_other_pd", kv_case_send_inv_other_pd },
	{ "local_inv_refused", kv_case_local_inv_refused },
	{ "map_too_many", kv_case_map_too_many },
	{ "reg_bad_access", kv_case_reg_bad_access },
	{ "reg_inv_chain", kv_case_reg_inv_chain },
	{ "dma_mr_send_recv", kv_case_dma_mr_send_recv },
};

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
	t->dev = ib_device_get_by_name(ibdev, RDMA_DRIVER_UNKNOWN);
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
		kv_cases[i].run(t);
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
