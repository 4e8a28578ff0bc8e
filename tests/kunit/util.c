// SPDX-License-Identifier: GPL-2.0
/*
 * sroce_kunit.ko: KUnit suites for sroce.ko (wire format, PSN arithmetic,
 * ICRC, receive validation), and helpers they share.
 */
#include <linux/gfp.h>
#include <linux/module.h>
#include <linux/skbuff.h>

#include "icrc.h"
#include "sroce_test.h"
#include "wire.h"

#define SROCE_TEST_HEADROOM	64

unsigned int sroce_test_ip_len(const u8 *pkt)
{
	return (pkt[0] >> 4) == 4 ? (pkt[0] & 0x0f) * 4 : 40;
}

static int sroce_test_add_frag(struct sk_buff *skb, const u8 *data,
			       unsigned int len)
{
	struct page *page;
	/* An odd in-page offset exercises unaligned fragment reads. */
	unsigned int off = 3;

	page = alloc_page(GFP_KERNEL);
	if (!page)
		return -ENOMEM;
	memcpy(page_address(page) + off, data, len);
	skb_fill_page_desc(skb, skb_shinfo(skb)->nr_frags, page, off, len);
	skb->len += len;
	skb->data_len += len;
	skb->truesize += PAGE_SIZE;
	return 0;
}

static struct sk_buff *sroce_test_frag_list(const u8 *data, unsigned int len)
{
	struct sk_buff *tail = alloc_skb(len, GFP_KERNEL);

	if (tail)
		skb_put_data(tail, data, len);
	return tail;
}

struct sk_buff *sroce_test_skb(struct kunit *test, const u8 *pkt,
			       unsigned int len, unsigned int linear,
			       bool frag_list, bool rx)
{
	static const unsigned int sizes[] = { 1, 7, 100, 2, 513 };
	unsigned int off, n, i = 0;
	struct sk_buff *skb;

	linear = min(linear, len);
	skb = alloc_skb(SROCE_TEST_HEADROOM + linear, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, skb);
	skb_reserve(skb, SROCE_TEST_HEADROOM);
	skb_put_data(skb, pkt, linear);
	skb_reset_network_header(skb);
	skb_set_transport_header(skb, sroce_test_ip_len(pkt));

	for (off = linear; off < len; off += n) {
		n = min(sizes[i++ % ARRAY_SIZE(sizes)], len - off);
		if (frag_list && off + n == len) {
			struct sk_buff *tail = sroce_test_frag_list(pkt + off, n);

			if (!tail)
				goto fail;
			skb_shinfo(skb)->frag_list = tail;
			skb->len += n;
			skb->data_len += n;
			skb->truesize += tail->truesize;
		} else if (skb_shinfo(skb)->nr_frags >= MAX_SKB_FRAGS ||
			   sroce_test_add_frag(skb, pkt + off, n)) {
			goto fail;
		}
	}
	if (rx)
		__skb_pull(skb, sroce_test_ip_len(pkt));
	return skb;

fail:
	kfree_skb(skb);
	KUNIT_FAIL(test, "cannot build a %u-byte skb", len);
	return NULL;
}

void sroce_test_fix_icrc(struct kunit *test, u8 *pkt, unsigned int len)
{
	struct sk_buff *skb = sroce_test_skb(test, pkt, len, len, false, false);
	__le32 icrc;

	if (!skb)
		return;
	icrc = cpu_to_le32(sroce_icrc_compute(skb));
	memcpy(pkt + len - SROCE_ICRC_LEN, &icrc, sizeof(icrc));
	kfree_skb(skb);
}

MODULE_DESCRIPTION("KUnit tests for sroce");
MODULE_LICENSE("GPL");
MODULE_IMPORT_NS(SROCE_KUNIT);
