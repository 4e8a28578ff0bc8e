// SPDX-License-Identifier: GPL-2.0
/*
 * Receive dispatch: a validated RoCEv2 packet (net.c) goes to the
 * responder of its destination QP when it is a request, to the completer
 * when it is a response or acknowledgment, to the congestion control
 * (cc.c) when it is a CNP. Whatever fails a check here is
 * counted in sdev->rx_stats and freed: the peer is not trusted to address
 * an existing QP of the right type in the right state.
 *
 * Softirq context under rcu_read_lock(). The skb is owned by this file
 * until it is handed to sroce_resp_rcv() or sroce_comp_rcv(), which consume
 * it; every other path frees it here.
 */
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/skbuff.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_verbs.h>

#include "cc.h"
#include "net.h"
#include "qp.h"
#include "resp.h"
#include "sroce.h"
#include "wire.h"

/*
 * Does the opcode's transport (RC/UC/UD/XRC) match the QP's type? An XRC
 * send QP only hears responses, an XRC target QP only requests.
 */
static bool rx_transport_ok(const struct sroce_qp *qp, u8 opcode,
			    bool request)
{
	switch (qp->ibqp.qp_type) {
	case IB_QPT_RC:
		return sroce_op_transport(opcode) == SROCE_OP_RC;
	case IB_QPT_XRC_INI:
		return sroce_op_transport(opcode) == SROCE_OP_XRC && !request;
	case IB_QPT_XRC_TGT:
		return sroce_op_transport(opcode) == SROCE_OP_XRC && request;
	case IB_QPT_UC:
		return sroce_op_transport(opcode) == SROCE_OP_UC;
	case IB_QPT_UD:
	case IB_QPT_GSI:
		return sroce_op_transport(opcode) == SROCE_OP_UD;
	default:
		return false;
	}
}

/*
 * Requests are served from RTR on; SQD and SQE still receive (IBTA
 * 10.3.1). Responses only make sense while the send queue is active.
 */
static bool rx_state_ok(const struct sroce_qp *qp, bool request)
{
	switch (sroce_qp_state(qp)) {
	case IB_QPS_RTR:
		return request;
	case IB_QPS_RTS:
	case IB_QPS_SQD:
	case IB_QPS_SQE:
		return true;
	default:
		return false;
	}
}

/*
 * RoCE ports have one P_Key, the default 0xffff: a packet matches when
 * its 15-bit key is the default one (full or limited member, since we are
 * a full member).
 */
static bool rx_pkey_ok(const struct sk_buff *skb)
{
	u16 pkey = sroce_bth_pkey(sroce_pkt_bth(skb));

	return (pkey & 0x7fff) == (SROCE_DEFAULT_PKEY & 0x7fff);
}

static bool rx_qkey_ok(const struct sroce_qp *qp, const struct sk_buff *skb)
{
	u32 qkey = qp->ibqp.qp_type == IB_QPT_GSI ? IB_QP1_QKEY :
						    READ_ONCE(qp->attr.qkey);

	return sroce_deth_qkey(sroce_pkt_deth(skb)) == qkey;
}

/* A connected QP only hears from its peer, at the address it was given. */
static bool rx_addr_ok(const struct sroce_qp *qp, const struct sk_buff *skb)
{
	const struct sroce_av *av = sroce_qp_av(qp);

	if (sroce_pkt_c(skb)->network_type != av->network_type)
		return false;
	if (av->network_type == RDMA_NETWORK_IPV4)
		return ip_hdr(skb)->saddr == av->daddr.v4 &&
		       ip_hdr(skb)->daddr == av->saddr.v4;
	return ipv6_addr_equal(&ipv6_hdr(skb)->saddr, &av->daddr.v6) &&
	       ipv6_addr_equal(&ipv6_hdr(skb)->daddr, &av->saddr.v6);
}

/* The counter of the first check @skb fails for @qp, or NULL. */
static atomic64_t *rx_check(struct sroce_dev *sdev, struct sroce_qp *qp,
			    const struct sk_buff *skb, bool request)
{
	const struct sroce_pkt *pkt = sroce_pkt_c(skb);
	struct sroce_rx_stats *drops = &sdev->rx_stats;

	if (!rx_transport_ok(qp, pkt->opcode, request))
		return &drops->c[SROCE_RX_BAD_TRANSPORT];
	if (!rx_state_ok(qp, request))
		return &drops->c[SROCE_RX_BAD_STATE];
	if (!rx_pkey_ok(skb))
		return &drops->c[SROCE_RX_BAD_PKEY];
	switch (qp->ibqp.qp_type) {
	case IB_QPT_RC:
	case IB_QPT_UC:
	case IB_QPT_XRC_INI:
	case IB_QPT_XRC_TGT:
		if (!rx_addr_ok(qp, skb))
			return &drops->c[SROCE_RX_BAD_ADDR];
		break;
	default:
		if (!rx_qkey_ok(qp, skb))
			return &drops->c[SROCE_RX_BAD_QKEY];
		break;
	}
	return NULL;
}

/*
 * A packet to the multicast QPN goes to every QP attached to the group its
 * destination address names that accepts it (type, state, P_Key, Q_Key as
 * for its own QPN), each with its own copy; a QP that refuses it is
 * counted like a unicast drop and the others still get theirs (rxe does
 * the same). The sending QP, if attached to the group on this device,
 * receives what the IP stack loops back, like any other attached QP.
 */
static void rx_mcast(struct sroce_dev *sdev, struct sk_buff *skb)
{
	struct sroce_qp *qps[SROCE_MAX_MCAST_QP_ATTACH];
	struct sroce_rx_stats *st = &sdev->rx_stats;
	unsigned int i, n, ok = 0;
	struct sk_buff *copy;
	atomic64_t *drop;

	n = sroce_mcast_collect(sdev, skb, qps);
	if (!n) {
		atomic64_inc(&st->c[SROCE_RX_NO_QP]);
		kfree_skb(skb);
		return;
	}
	atomic64_inc(&st->c[SROCE_RX_MCAST_PACKETS]);
	/* keep the QPs that accept the packet at the front */
	for (i = 0; i < n; i++) {
		drop = rx_check(sdev, qps[i], skb, true);
		if (drop) {
			atomic64_inc(drop);
			sroce_qp_put(qps[i]);
		} else {
			qps[ok++] = qps[i];
		}
	}
	for (i = 0; i < ok; i++) {
		/* the last one gets the original */
		copy = i + 1 < ok ? skb_clone(skb, GFP_ATOMIC) : skb;
		if (copy) {
			atomic64_inc(&st->c[SROCE_RX_MCAST_DELIVERIES]);
			sroce_resp_rcv(qps[i], copy);
		} else {
			atomic64_inc(&st->c[SROCE_RESP_DROPPED]);
		}
		sroce_qp_put(qps[i]);
	}
	if (!ok)
		kfree_skb(skb);
}

/*
 * A CNP asks a QP that sends requests to slow down. Only the peer of a QP
 * with a window (RC, XRC initiator) may ask, from the QP's own path: a
 * forged CNP could otherwise throttle any QP.
 */
static void rx_cnp(struct sroce_dev *sdev, struct sk_buff *skb)
{
	struct sroce_qp *qp = sroce_qp_get(sdev, sroce_pkt_c(skb)->qpn);

	if (qp && (qp->ibqp.qp_type == IB_QPT_RC ||
		   qp->ibqp.qp_type == IB_QPT_XRC_INI) &&
	    rx_state_ok(qp, false) && rx_pkey_ok(skb) && rx_addr_ok(qp, skb)) {
		sroce_cc_cnp_rcv(qp);
		consume_skb(skb);
	} else {
		/* A drop, which drop monitors should see. */
		atomic64_inc(&sdev->rx_stats.c[SROCE_RP_CNP_IGNORED]);
		kfree_skb(skb);
	}
	if (qp)
		sroce_qp_put(qp);
}

void sroce_transport_rcv(struct sroce_dev *sdev, struct sk_buff *skb)
{
	const struct sroce_pkt *pkt = sroce_pkt_c(skb);
	bool request = pkt->flags & SROCE_OPF_REQ;
	atomic64_t *drop;
	struct sroce_qp *qp;

	if (unlikely(pkt->flags & SROCE_OPF_CNP)) {
		rx_cnp(sdev, skb);
		return;
	}
	if (pkt->qpn == IB_MULTICAST_QPN) {
		rx_mcast(sdev, skb);
		return;
	}
	qp = sroce_qp_get(sdev, pkt->qpn);
	if (unlikely(!qp)) {
		atomic64_inc(&sdev->rx_stats.c[SROCE_RX_NO_QP]);
		goto free;
	}
	drop = rx_check(sdev, qp, skb, request);
	if (unlikely(drop)) {
		atomic64_inc(drop);
		sroce_qp_put(qp);
		goto free;
	}
	if (request) {
		sroce_cc_request_rcv(qp, skb);
		sroce_resp_rcv(qp, skb);
	} else {
		sroce_comp_rcv(qp, skb);
	}
	sroce_qp_put(qp);
	return;
free:
	kfree_skb(skb);
}

void sroce_rx_stats_read(struct sroce_dev *sdev, u64 *values)
{
	unsigned int i;

	for (i = 0; i < SROCE_RX_STATS_NUM; i++)
		values[i] = atomic64_read(&sdev->rx_stats.c[i]);
}
