/* SPDX-License-Identifier: GPL-2.0 */
/* Helpers shared by the sroce KUnit suites. */
#ifndef SROCE_TEST_H
#define SROCE_TEST_H

#include <kunit/test.h>
#include <linux/skbuff.h>

/*
 * Build an skb holding pkt (an IP packet: IP header .. ICRC) with the
 * network header at the IP header and the transport header at UDP. The
 * first linear bytes are in the linear area, the rest in page fragments
 * of uneven sizes; with frag_list set, the last fragment's bytes go into a
 * second skb on the frag list instead. rx: skb->data at the UDP header, as
 * in a UDP encap_rcv; otherwise at the IP header, as on transmit.
 * Returns NULL (and fails the test) on allocation failure.
 */
struct sk_buff *sroce_test_skb(struct kunit *test, const u8 *pkt,
			       unsigned int len, unsigned int linear,
			       bool frag_list, bool rx);

/* Header length of the IP packet pkt (IPv4 IHL or 40 for IPv6). */
unsigned int sroce_test_ip_len(const u8 *pkt);

/* Recompute and store the ICRC of a linear buffer holding pkt. */
void sroce_test_fix_icrc(struct kunit *test, u8 *pkt, unsigned int len);

#endif /* SROCE_TEST_H */
