// SPDX-License-Identifier: GPL-2.0
/*
 * A packet's payload MRs are looked up once (sroce_sgl_hold()): the MR
 * that sized the packet is the MR that fills it, even when
 * ibv_rereg_mr() hands the key's slot to another MR in between. The
 * requester once looked each lkey up twice, sized a packet for zero copy
 * from a user MR and filled it from the ODP MR that took its key:
 * skb_put() past the tail (issue 29, item 1). Here the slot changes hands
 * at that very point, deterministically, which the race tests can only
 * hope to hit.
 */
#include <kunit/test.h>
#include <linux/mm.h>
#include <linux/skbuff.h>

#include "mr.h"
#include "sroce.h"

#define MR_IOVA		0x100000ULL
#define PAYLOAD		1000

struct mr_ctx {
	struct sroce_dev *sdev;
	struct ib_pd *pd;
	u32 index;
};

/* A one-page user MR at MR_IOVA whose page is filled with @fill. */
static struct sroce_mr *user_mr(struct kunit *test, struct mr_ctx *c,
				u8 fill)
{
	struct sroce_mr *mr = kunit_kzalloc(test, sizeof(*mr), GFP_KERNEL);
	struct page **pages = kunit_kcalloc(test, 1, sizeof(*pages),
					    GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, mr);
	KUNIT_ASSERT_NOT_NULL(test, pages);
	pages[0] = alloc_page(GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, pages[0]);
	memset(page_address(pages[0]), fill, PAGE_SIZE);
	mr->type = SROCE_MR_USER;
	mr->pages = pages;
	mr->npages = 1;
	mr->iova = MR_IOVA;
	mr->length = PAGE_SIZE;
	mr->access = IB_ACCESS_LOCAL_WRITE;
	mr->ibmr.pd = c->pd;
	mr->state = SROCE_MR_VALID;
	spin_lock_init(&mr->lock);
	refcount_set(&mr->ref, 1);	/* the key table's */
	init_completion(&mr->released);
	return mr;
}

static void mr_free(struct sroce_mr *mr)
{
	__free_page(mr->pages[0]);
}

static int mr_test_init(struct kunit *test)
{
	struct mr_ctx *c = kunit_kzalloc(test, sizeof(*c), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, c);
	c->sdev = kunit_kzalloc(test, sizeof(*c->sdev), GFP_KERNEL);
	c->pd = kunit_kzalloc(test, sizeof(*c->pd), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, c->sdev);
	KUNIT_ASSERT_NOT_NULL(test, c->pd);
	sroce_mr_table_init(c->sdev);
	test->priv = c;
	return 0;
}

static void mr_test_exit(struct kunit *test)
{
	struct mr_ctx *c = test->priv;

	xa_erase(&c->sdev->mr_xa, c->index);
	sroce_mr_table_fini(c->sdev);
}

/* What ibv_rereg_mr() with the key kept does to the table: @to takes it. */
static void rereg(struct mr_ctx *c, struct sroce_mr *from,
		  struct sroce_mr *to)
{
	to->key = from->key;
	xa_store(&c->sdev->mr_xa, c->index, to, GFP_KERNEL);
	sroce_mr_put(from);	/* the table's reference */
}

/* The PAYLOAD bytes @skb holds, each compared with @want. */
static unsigned int bytes_not(struct kunit *test, struct sk_buff *skb,
			      u8 want)
{
	u8 *buf = kunit_kzalloc(test, PAYLOAD, GFP_KERNEL);
	unsigned int i, bad = 0;

	KUNIT_ASSERT_NOT_NULL(test, buf);
	KUNIT_ASSERT_EQ(test, skb->len, PAYLOAD);
	KUNIT_ASSERT_EQ(test, skb_copy_bits(skb, 0, buf, PAYLOAD), 0);
	for (i = 0; i < PAYLOAD; i++)
		bad += buf[i] != want;
	return bad;
}

/*
 * Size a packet from one SGE (zero copy when the MR allows it, as the
 * requester does), let the key change hands, then fill the packet:
 * every byte comes from the MR that sized it.
 */
static void fill(struct kunit *test, bool zcopy_wanted)
{
	struct mr_ctx *c = test->priv;
	struct sroce_mr *old = user_mr(test, c, 'A');
	struct sroce_mr *succ = user_mr(test, c, 'B');
	struct sroce_sge sge = { .addr = MR_IOVA + 100, .length = PAYLOAD };
	struct sroce_sgl_mrs held;
	struct sk_buff *skb;
	bool zcopy;

	KUNIT_ASSERT_EQ(test, sroce_key_insert(c->sdev, old, &c->index), 0);
	old->key = c->index << 8 | 0x5a;
	sge.lkey = old->key;

	KUNIT_ASSERT_EQ(test, sroce_sgl_hold(&held, c->sdev, c->pd, &sge, 1,
					     0, PAYLOAD), 0);
	zcopy = zcopy_wanted && sroce_sgl_frags(&held) < MAX_SKB_FRAGS;
	KUNIT_EXPECT_EQ(test, zcopy, zcopy_wanted);
	skb = alloc_skb(zcopy ? 0 : PAYLOAD, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, skb);

	rereg(c, old, succ);
	KUNIT_EXPECT_EQ(test, sroce_sgl_append_skb(&held, skb, zcopy), 0);
	KUNIT_EXPECT_EQ(test, skb_shinfo(skb)->nr_frags, zcopy ? 1 : 0);
	KUNIT_EXPECT_EQ(test, bytes_not(test, skb, 'A'), 0);
	kfree_skb(skb);
	sroce_sgl_release(&held);
	KUNIT_EXPECT_TRUE(test, completion_done(&old->released));

	/* the key stayed valid: the next packet finds the successor */
	KUNIT_EXPECT_PTR_EQ(test, sroce_mr_get(c->sdev, c->pd, sge.lkey,
					       sge.addr, PAYLOAD, 0), succ);
	sroce_mr_put(succ);
	mr_free(old);
	mr_free(succ);
}

static void zero_copy_fill_test(struct kunit *test)
{
	fill(test, true);
}

static void copy_fill_test(struct kunit *test)
{
	fill(test, false);
}

static struct kunit_case sroce_mr_cases[] = {
	KUNIT_CASE(zero_copy_fill_test),
	KUNIT_CASE(copy_fill_test),
	{}
};

static struct kunit_suite sroce_mr_suite = {
	.name = "sroce_mr",
	.init = mr_test_init,
	.exit = mr_test_exit,
	.test_cases = sroce_mr_cases,
};

kunit_test_suites(&sroce_mr_suite);
