// SPDX-License-Identifier: GPL-2.0
/*
 * RoCEv2 congestion control: ECN-capable requests, CNPs for CE-marked
 * ones, a smaller window for CNPs (see cc.h for the design).
 */
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/moduleparam.h>
#include <linux/skbuff.h>
#include <linux/timekeeping.h>
#include <net/inet_ecn.h>

#include "cc.h"
#include "net.h"
#include "psn.h"
#include "qp.h"
#include "resp.h"
#include "wire.h"

static bool sroce_ecn = true;
module_param_named(ecn, sroce_ecn, bool, 0644);
MODULE_PARM_DESC(ecn,
		 "RoCEv2 congestion control: ECN-capable requests, CNPs for CE marks, a smaller window for CNPs (default: 1)");

/* DCQCN's spacing of CNPs to one QP; and one for this many CE marks. */
#define SROCE_CC_CNP_INTERVAL_NS	(50 * NSEC_PER_USEC)
#define SROCE_CC_CNP_MARKS		16
/* alpha's gain g = 1 / 2^SROCE_CC_ALPHA_G_SHIFT, DCQCN's 1/16 */
#define SROCE_CC_ALPHA_G_SHIFT		4
/* DCQCN's fast recovery lasts five periods without a CNP. */
#define SROCE_CC_CALM_ROUNDS		5
/* The CNP's payload: 16 reserved bytes (IBTA A17.9.2) */
#define SROCE_CC_CNP_RESERVED		16

u8 sroce_cc_tclass(u8 tclass, u8 opcode)
{
	if (READ_ONCE(sroce_ecn) && INET_ECN_is_not_ect(tclass) &&
	    (sroce_op_flags(opcode) & SROCE_OPF_REQ))
		return tclass | INET_ECN_ECT_0;
	return tclass;
}

static bool sroce_cc_ce(const struct sk_buff *skb)
{
	u8 dsfield;

	if (sroce_pkt_c(skb)->network_type == RDMA_NETWORK_IPV4)
		dsfield = ipv4_get_dsfield(ip_hdr(skb));
	else
		dsfield = ipv6_get_dsfield(ipv6_hdr(skb));
	return INET_ECN_is_ce(dsfield);
}

static void sroce_cc_send_cnp(struct sroce_qp *qp)
{
	const struct sroce_opcode_info *oi = sroce_opinfo(SROCE_OP_CNP);
	struct sroce_dev *sdev = qp->sdev;
	struct sk_buff *skb;

	skb = sroce_net_alloc_skb(sdev, sroce_qp_av(qp), oi->hdr_len,
				  SROCE_CC_CNP_RESERVED, GFP_ATOMIC);
	if (!skb)
		return;	/* the next marked request asks again */
	sroce_cnp_bth_init((struct sroce_bth *)skb->data,
			   READ_ONCE(qp->attr.dest_qpn));
	memset(sroce_net_put_data(skb, SROCE_CC_CNP_RESERVED), 0,
	       SROCE_CC_CNP_RESERVED);
	if (!sroce_net_xmit(sdev, sroce_qp_av(qp), skb))
		sroce_req_count(qp, SROCE_NP_CNP_SENT);
}

void sroce_cc_request_rcv(struct sroce_qp *qp, const struct sk_buff *skb)
{
	u64 now, last;
	u32 marks;

	if (likely(!sroce_cc_ce(skb)))
		return;
	sroce_req_count(qp, SROCE_NP_ECN_MARKED);
	/* UD requests name no QP to answer; a multicast one has no peer */
	if (!READ_ONCE(sroce_ecn) || qp->ibqp.qp_type == IB_QPT_UD ||
	    qp->ibqp.qp_type == IB_QPT_GSI)
		return;
	/* Racy by design: two CPUs may each send one, which is harmless. */
	marks = READ_ONCE(qp->resp.ce_marks);
	WRITE_ONCE(qp->resp.ce_marks, marks + 1);
	if (marks % SROCE_CC_CNP_MARKS)
		return;
	now = ktime_get_ns();
	last = READ_ONCE(qp->resp.cnp_ns);
	if (last && now - last < SROCE_CC_CNP_INTERVAL_NS)
		return;
	WRITE_ONCE(qp->resp.cnp_ns, now);
	sroce_cc_send_cnp(qp);
}

static void sroce_cc_cut(struct sroce_comp *comp, u32 next_psn)
{
	struct sroce_cc *cc = &comp->cc;
	u32 cut = comp->cwnd * cc->alpha / (2 * SROCE_CC_ALPHA_ONE);

	comp->cwnd = max_t(u32, comp->cwnd - cut, SROCE_CWND_MIN);
	cc->ssthresh = comp->cwnd;
	cc->ca_acked = 0;
	/* the next cut waits until what is in flight now was acknowledged */
	cc->cut_psn = next_psn;
	cc->cut_wait = true;
}

bool sroce_cc_cnp(struct sroce_comp *comp, u32 next_psn)
{
	struct sroce_cc *cc = &comp->cc;

	cc->round_cnp = true;
	cc->calm_rounds = 0;
	if (cc->cut_wait)
		return false;
	sroce_cc_cut(comp, next_psn);
	return true;
}

SROCE_EXPORT_FOR_KUNIT(sroce_cc_cnp);

void sroce_cc_cnp_rcv(struct sroce_qp *qp)
{
	unsigned long flags;
	bool cut;

	sroce_req_count(qp, SROCE_RP_CNP_HANDLED);
	if (!READ_ONCE(sroce_ecn))
		return;
	spin_lock_irqsave(&qp->sq_lock, flags);
	cut = sroce_cc_cnp(&qp->comp, qp->req.psn);
	spin_unlock_irqrestore(&qp->sq_lock, flags);
	if (cut)
		sroce_req_count(qp, SROCE_RP_WINDOW_CUTS);
}

/* A round trip ended: alpha follows whether it brought a CNP. */
static void sroce_cc_round_end(struct sroce_cc *cc, u32 next_psn)
{
	cc->alpha -= cc->alpha >> SROCE_CC_ALPHA_G_SHIFT;
	if (cc->round_cnp)
		cc->alpha += SROCE_CC_ALPHA_ONE >> SROCE_CC_ALPHA_G_SHIFT;
	else if (cc->calm_rounds < SROCE_CC_CALM_ROUNDS &&
		 ++cc->calm_rounds == SROCE_CC_CALM_ROUNDS)
		cc->ssthresh = SROCE_CWND_MAX;
	cc->round_cnp = false;
	cc->round_psn = next_psn;
}

void sroce_cc_grow(struct sroce_comp *comp, u32 acked, u32 next_psn)
{
	struct sroce_cc *cc = &comp->cc;

	if (sroce_psn_diff(comp->psn, cc->round_psn) >= 0)
		sroce_cc_round_end(cc, next_psn);
	if (cc->cut_wait) {
		/* what was in flight at the cut says nothing of the new window */
		if (sroce_psn_diff(comp->psn, cc->cut_psn) >= 0)
			cc->cut_wait = false;
		return;
	}
	if (comp->cwnd < cc->ssthresh) {
		comp->cwnd = min_t(u32, comp->cwnd + acked, cc->ssthresh);
		return;
	}
	/* congestion avoidance: one packet more per window acknowledged */
	cc->ca_acked += acked;
	if (cc->ca_acked >= comp->cwnd) {
		cc->ca_acked -= comp->cwnd;
		if (comp->cwnd < SROCE_CWND_MAX)
			comp->cwnd++;
	}
}

SROCE_EXPORT_FOR_KUNIT(sroce_cc_grow);

void sroce_cc_reset(struct sroce_comp *comp)
{
	struct sroce_cc *cc = &comp->cc;

	comp->cwnd = SROCE_CWND_MAX;
	cc->ssthresh = SROCE_CWND_MAX;
	cc->ca_acked = 0;
	cc->cut_wait = false;
	cc->round_psn = comp->psn;
	cc->round_cnp = false;
	cc->calm_rounds = SROCE_CC_CALM_ROUNDS;
	/* DCQCN starts from alpha = 1: the first CNP halves the window */
	cc->alpha = SROCE_CC_ALPHA_ONE;
}

SROCE_EXPORT_FOR_KUNIT(sroce_cc_reset);
