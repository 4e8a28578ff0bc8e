// SPDX-License-Identifier: GPL-2.0
/*
 * RoCEv2 over UDP/IP: per-namespace sockets on port 4791, transmit through
 * the IP stack (so qdiscs, netem, tcpdump, neighbour resolution and the
 * loopback path all apply) and receive straight from the socket's
 * encap_rcv in softirq context.
 */
#include <linux/etherdevice.h>
#include <linux/if_vlan.h>
#include <linux/inetdevice.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/jhash.h>
#include <linux/netdevice.h>
#include <linux/skbuff.h>
#include <linux/udp.h>
#include <net/addrconf.h>
#include <net/dst_cache.h>
#include <net/ip.h>
#include <net/ip6_checksum.h>
#include <net/ip6_route.h>
#include <net/ipv6.h>
#include <net/net_namespace.h>
#include <net/netns/generic.h>
#include <net/route.h>
#include <net/udp_tunnel.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_cache.h>

#include "cc.h"
#include "icrc.h"
#include "sroce.h"

/*
 * One network namespace's RoCEv2 sockets and the devices receiving on them.
 * @lock serialises sroce_net_open()/sroce_net_close() and the uppers'
 * sync: @users, the sockets and writers of @ports. The receive path reads
 * @ports under RCU (UDP receive runs under rcu_read_lock()).
 *
 * @users counts the ports in the namespace, plus one while @serves_uppers:
 * a netdev here sits on a port of another namespace (a container's macvlan
 * on the host's NIC). ib_core gives that port the upper device's GIDs, so
 * packets to them arrive here and must find a socket.
 * sroce_uppers_lock serialises the writers of @serves_uppers.
 */
struct sroce_net {
	struct mutex lock;		/* see above */
	unsigned int users;
	bool serves_uppers;
	struct socket *sock4;
	struct socket *sock6;		/* NULL when IPv6 is disabled */
	struct list_head ports;
};

static unsigned int sroce_net_id __read_mostly;

/*
 * Held across a sync of namespaces' @serves_uppers: computing whether a
 * namespace needs sockets and taking or dropping them is one step. Taken
 * under RTNL (the netdev notifier), never the other way round.
 */
static DEFINE_MUTEX(sroce_uppers_lock);

static struct sroce_net *sroce_net_of(const struct net *net)
{
	return net_generic(net, sroce_net_id);
}

/* ---- receive ---- */

/* Softirq context: this CPU's counters are ours. */
static void sroce_rx_count(struct sroce_net_port *port, int err,
			   unsigned int bytes)
{
	struct sroce_net_stats *st = this_cpu_ptr(port->stats);

	u64_stats_update_begin(&st->syncp);
	if (!err) {
		u64_stats_inc(&st->rx_packets);
		u64_stats_add(&st->rx_bytes, bytes);
	} else if (err == -EBADMSG) {
		u64_stats_inc(&st->rx_icrc_errors);
	} else {
		u64_stats_inc(&st->rx_malformed);
	}
	u64_stats_update_end(&st->syncp);
}

int sroce_net_parse(struct sk_buff *skb)
{
	const unsigned int udp_len = sizeof(struct udphdr);
	const struct sroce_opcode_info *info;
	unsigned int len, hdr_len, pad, nh_len, payload_len;
	struct sroce_pkt *pkt;
	struct sroce_bth *bth;
	u8 network_type;

	/*
	 * The IP stack has validated the IP header. The ICRC covers the IP
	 * header directly followed by UDP: refuse IPv6 extension headers.
	 */
	nh_len = skb_transport_header(skb) - skb_network_header(skb);
	switch (ip_hdr(skb)->version) {
	case 4:
		if (nh_len < sizeof(struct iphdr) || nh_len > 60)
			return -EINVAL;
		network_type = RDMA_NETWORK_IPV4;
		break;
	case 6:
		if (nh_len != sizeof(struct ipv6hdr))
			return -EINVAL;
		network_type = RDMA_NETWORK_IPV6;
		break;
	default:
		return -EINVAL;
	}
	if (skb_transport_offset(skb) != 0)
		return -EINVAL;

	len = skb->len;
	if (len < udp_len + SROCE_BTH_LEN + SROCE_ICRC_LEN ||
	    !pskb_may_pull(skb, udp_len + SROCE_BTH_LEN))
		return -EINVAL;
	len -= udp_len;

	bth = (struct sroce_bth *)(skb->data + udp_len);
	if (sroce_bth_tver(bth) != SROCE_BTH_TVER)
		return -EOPNOTSUPP;
	info = sroce_opinfo(sroce_bth_opcode(bth));
	if (!(info->flags & SROCE_OPF_VALID))
		return -EOPNOTSUPP;

	hdr_len = info->hdr_len;
	pad = sroce_bth_pad(bth);
	if (len < hdr_len + pad + SROCE_ICRC_LEN)
		return -EINVAL;
	payload_len = len - hdr_len - pad - SROCE_ICRC_LEN;
	if (!(info->flags & SROCE_OPF_PAYLOAD) && (payload_len || pad))
		return -EINVAL;
	if (!pskb_may_pull(skb, udp_len + hdr_len))
		return -EINVAL;

	if (sroce_icrc_check(skb))
		return -EBADMSG;

	/* pskb_may_pull() may have moved the data. */
	bth = (struct sroce_bth *)(skb->data + udp_len);
	pkt = sroce_pkt(skb);
	pkt->flags = info->flags;
	pkt->psn = sroce_bth_psn(bth);
	pkt->qpn = sroce_bth_qpn(bth);
	pkt->payload_len = payload_len;
	pkt->bth_offset = (u8 *)bth - skb->head;
	pkt->udp_sport = udp_hdr(skb)->source;
	pkt->opcode = sroce_bth_opcode(bth);
	pkt->hdr_len = hdr_len;
	pkt->pad = pad;
	pkt->network_type = network_type;
	memset(pkt->transport_priv, 0, sizeof(pkt->transport_priv));
	return 0;
}

SROCE_EXPORT_FOR_KUNIT(sroce_net_parse);

static struct sroce_net_port *sroce_port_find(struct sroce_net *snet,
					      const struct net_device *ndev)
{
	struct sroce_net_port *port;

	list_for_each_entry_rcu(port, &snet->ports, node)
		if (port->ndev == ndev)
			return port;
	return NULL;
}

/* The device that owns the destination address of a looped-back packet. */
static struct net_device *sroce_local_dev(struct sk_buff *skb)
{
	if (ip_hdr(skb)->version == 4)
		return __ip_dev_find(dev_net(skb->dev), ip_hdr(skb)->daddr,
				     false);
	return ipv6_dev_find(dev_net(skb->dev), &ipv6_hdr(skb)->daddr, NULL);
}

/* A lower device may be in another namespace, its port in that one's list. */
static int sroce_lower_port(struct net_device *lower,
			    struct netdev_nested_priv *priv)
{
	struct sroce_net_port **port = priv->data;

	*port = sroce_port_find(sroce_net_of(dev_net(lower)), lower);
	return *port ? 1 : 0;	/* non-zero ends the walk */
}

/*
 * ib_core gives a RoCE port the GIDs of every upper device of its netdev
 * (VLAN, macvlan, ipvlan), in any namespace: a packet that arrived on one
 * of those belongs to the device on a netdev below it. Called under RCU,
 * as the walk needs.
 */
static struct sroce_net_port *sroce_lower_port_find(struct net_device *ndev)
{
	struct sroce_net_port *port = NULL;
	struct netdev_nested_priv priv = { .data = &port };

	netdev_walk_all_lower_dev_rcu(ndev, sroce_lower_port, &priv);
	return port;
}

static struct sroce_net_port *sroce_port_for_skb(struct sroce_net *snet,
						 struct sk_buff *skb)
{
	struct net_device *ndev = skb->dev;
	struct sroce_net_port *port;

	port = sroce_port_find(snet, ndev);
	if (likely(port))
		return port;

	if (ndev->flags & IFF_LOOPBACK) {
		ndev = sroce_local_dev(skb);
		if (!ndev)
			return NULL;
		port = sroce_port_find(snet, ndev);
		if (port)
			return port;
	}
	return sroce_lower_port_find(ndev);
}

static int sroce_udp_encap_rcv(struct sock *sk, struct sk_buff *skb)
{
	struct sroce_net *snet = rcu_dereference_sk_user_data(sk);
	struct sroce_net_port *port;
	int err;

	port = snet ? sroce_port_for_skb(snet, skb) : NULL;
	if (unlikely(!port))
		goto drop;

	err = sroce_net_parse(skb);
	if (unlikely(err)) {
		sroce_rx_count(port, err, 0);
		goto drop;
	}
	sroce_rx_count(port, 0, skb->len - sizeof(struct udphdr));
	/* skb->dev is the VLAN device here, not when the packet is used */
	sroce_pkt(skb)->cqe_vlan = is_vlan_dev(skb->dev) ?
		SROCE_CQE_VLAN_VALID | vlan_dev_vlan_id(skb->dev) : 0;
	__skb_pull(skb, sizeof(struct udphdr));
	sroce_transport_rcv(port->sdev, skb);
	return 0;

drop:
	kfree_skb(skb);
	return 0;
}

void sroce_pkt_network_hdr(const struct sk_buff *skb,
			   union rdma_network_hdr *hdr)
{
	if (sroce_pkt_c(skb)->network_type == RDMA_NETWORK_IPV4) {
		memset(hdr->reserved, 0, sizeof(hdr->reserved));
		memcpy(&hdr->roce4grh, ip_hdr(skb), sizeof(hdr->roce4grh));
	} else {
		memcpy(&hdr->ibgrh, ipv6_hdr(skb), sizeof(hdr->ibgrh));
	}
}

/* ---- sockets and ports ---- */

static struct socket *sroce_sock_create(struct net *net,
					struct sroce_net *snet, bool ipv6)
{
	struct udp_tunnel_sock_cfg tcfg = {
		.sk_user_data = snet,
		.encap_type = 1,
		.encap_rcv = sroce_udp_encap_rcv,
	};
	struct udp_port_cfg cfg = {
		.family = ipv6 ? AF_INET6 : AF_INET,
		.local_udp_port = htons(SROCE_UDP_PORT),
		/* RoCEv2 senders leave the UDP checksum 0, as we do. */
		.use_udp6_rx_checksums = false,
		.ipv6_v6only = ipv6,
	};
	struct socket *sock;
	int err;

	err = udp_sock_create(net, &cfg, &sock);
	if (err)
		return ERR_PTR(err);
	sroce_udp_tunnel_setup(net, sock, &tcfg);
	return sock;
}

static int sroce_sockets_open(struct net *net, struct sroce_net *snet)
{
	struct socket *sock;

	sock = sroce_sock_create(net, snet, false);
	if (IS_ERR(sock)) {
		pr_warn("sroce: cannot bind UDP port %u for IPv4 (%pe); is rdma_rxe using it?\n",
			SROCE_UDP_PORT, sock);
		return PTR_ERR(sock);
	}
	snet->sock4 = sock;

	sock = sroce_sock_create(net, snet, true);
	if (IS_ERR(sock)) {
		if (PTR_ERR(sock) != -EAFNOSUPPORT) {
			pr_warn("sroce: cannot bind UDP port %u for IPv6 (%pe)\n",
				SROCE_UDP_PORT, sock);
			sroce_udp_tunnel_release(snet->sock4);
			snet->sock4 = NULL;
			return PTR_ERR(sock);
		}
		pr_info("sroce: IPv6 is disabled, RoCEv2 over IPv4 only\n");
		sock = NULL;
	}
	snet->sock6 = sock;
	return 0;
}

static void sroce_sockets_close(struct sroce_net *snet)
{
	if (snet->sock6)
		sroce_udp_tunnel_release(snet->sock6);
	sroce_udp_tunnel_release(snet->sock4);
	snet->sock4 = NULL;
	snet->sock6 = NULL;
}

/* A user of @net's sockets: the first opens them. Under snet->lock. */
static int sroce_net_get(struct net *net, struct sroce_net *snet)
{
	int err = 0;

	lockdep_assert_held(&snet->lock);
	if (!snet->users)
		err = sroce_sockets_open(net, snet);
	if (!err)
		snet->users++;
	return err;
}

static void sroce_net_put(struct sroce_net *snet)
{
	lockdep_assert_held(&snet->lock);
	if (!--snet->users)
		sroce_sockets_close(snet);
}

static int sroce_foreign_port_below(struct net_device *lower,
				    struct netdev_nested_priv *priv)
{
	const struct net *net = priv->data;

	if (net_eq(dev_net(lower), net))
		return 0;
	return sroce_port_find(sroce_net_of(dev_net(lower)), lower) ? 1 : 0;
}

/* Does @ndev sit on a port of another namespace? Under RCU. */
static bool sroce_on_foreign_port(struct net_device *ndev)
{
	struct netdev_nested_priv priv = { .data = dev_net(ndev) };

	return netdev_walk_all_lower_dev_rcu(ndev, sroce_foreign_port_below,
					     &priv);
}

/* Does a netdev of @net sit on a port of another namespace? Under RCU. */
static bool sroce_net_has_foreign_uppers(struct net *net)
{
	struct net_device *ndev;

	for_each_netdev_rcu(net, ndev)
		if (sroce_on_foreign_port(ndev))
			return true;
	return false;
}

/*
 * Take or drop @net's sockets on behalf of its upper devices of other
 * namespaces' ports. Every change that can alter the answer (a port
 * opened or closed, an upper device linked, unlinked or moved) is
 * followed by a sync, and syncs are serialised, so the last one holds.
 */
static void sroce_net_uppers_sync(struct net *net)
{
	struct sroce_net *snet = sroce_net_of(net);
	bool needed;
	int err = 0;

	lockdep_assert_held(&sroce_uppers_lock);
	rcu_read_lock();
	needed = sroce_net_has_foreign_uppers(net);
	rcu_read_unlock();
	if (needed == snet->serves_uppers)
		return;

	mutex_lock(&snet->lock);
	if (needed)
		err = sroce_net_get(net, snet);
	else
		sroce_net_put(snet);
	if (!err)
		snet->serves_uppers = needed;
	mutex_unlock(&snet->lock);
	if (err)
		pr_warn_ratelimited("sroce: no RoCEv2 socket for upper devices in a namespace (%pe)\n",
				    ERR_PTR(err));
}

/* A port came or went: any namespace may have uppers of it. */
static void sroce_net_uppers_sync_all(void)
{
	struct net *net;

	mutex_lock(&sroce_uppers_lock);
	down_read(&net_rwsem);
	for_each_net(net)
		sroce_net_uppers_sync(net);
	up_read(&net_rwsem);
	mutex_unlock(&sroce_uppers_lock);
}

void sroce_net_upper_event(struct net_device *ndev, unsigned long event,
			   void *ptr)
{
	struct netdev_notifier_changeupper_info *info = ptr;
	bool needed;

	ASSERT_RTNL();
	switch (event) {
	case NETDEV_CHANGEUPPER:
		ndev = info->upper_dev;
		break;
	case NETDEV_REGISTER:	/* also the end of a move between namespaces */
		rcu_read_lock();
		needed = sroce_on_foreign_port(ndev);
		rcu_read_unlock();
		if (!needed)
			return;
		break;
	case NETDEV_UNREGISTER:	/* also the start of a move */
		break;
	default:
		return;
	}
	mutex_lock(&sroce_uppers_lock);
	/* not a walk of the namespace per netdev when a batch goes */
	if (event != NETDEV_UNREGISTER ||
	    sroce_net_of(dev_net(ndev))->serves_uppers)
		sroce_net_uppers_sync(dev_net(ndev));
	mutex_unlock(&sroce_uppers_lock);
}

int sroce_net_open(struct sroce_dev *sdev, struct net_device *ndev)
{
	struct sroce_net_port *port = &sdev->net_port;
	struct net *net = dev_net(ndev);
	struct sroce_net *snet = sroce_net_of(net);
	int err;

	if (WARN_ON(port->snet))
		return -EBUSY;
	if (!port->stats) {
		port->stats = netdev_alloc_pcpu_stats(struct sroce_net_stats);
		if (!port->stats)
			return -ENOMEM;
	}
	port->sdev = sdev;
	port->ndev = ndev;

	mutex_lock(&snet->lock);
	err = sroce_net_get(net, snet);
	if (!err) {
		list_add_tail_rcu(&port->node, &snet->ports);
		WRITE_ONCE(port->snet, snet);
	}
	mutex_unlock(&snet->lock);
	if (!err)
		sroce_net_uppers_sync_all();
	return err;
}

void sroce_net_close(struct sroce_dev *sdev)
{
	struct sroce_net_port *port = &sdev->net_port;
	struct sroce_net *snet = port->snet;

	if (!snet)
		return;
	mutex_lock(&snet->lock);
	list_del_rcu(&port->node);
	WRITE_ONCE(port->snet, NULL);
	sroce_net_put(snet);
	mutex_unlock(&snet->lock);
	sroce_net_uppers_sync_all();
	/* Receivers that found the port have finished with it. */
	synchronize_net();
}

void sroce_net_port_release(struct sroce_dev *sdev)
{
	sroce_net_close(sdev);
	free_percpu(sdev->net_port.stats);
	sdev->net_port.stats = NULL;
}

void sroce_net_counters(struct sroce_dev *sdev, struct sroce_net_counters *c)
{
	struct sroce_net_stats __percpu *stats = sdev->net_port.stats;
	int cpu;

	memset(c, 0, sizeof(*c));
	if (!stats)
		return;
	for_each_possible_cpu(cpu) {
		const struct sroce_net_stats *st = per_cpu_ptr(stats, cpu);
		struct sroce_net_counters v;
		unsigned int start;

		do {
			start = u64_stats_fetch_begin(&st->syncp);
			v.tx_packets = u64_stats_read(&st->tx_packets);
			v.tx_bytes = u64_stats_read(&st->tx_bytes);
			v.tx_errors = u64_stats_read(&st->tx_errors);
			v.tx_zcopy_packets = u64_stats_read(&st->tx_zcopy_packets);
			v.rx_packets = u64_stats_read(&st->rx_packets);
			v.rx_bytes = u64_stats_read(&st->rx_bytes);
			v.rx_icrc_errors = u64_stats_read(&st->rx_icrc_errors);
			v.rx_malformed = u64_stats_read(&st->rx_malformed);
			v.sq_doorbells = u64_stats_read(&st->sq_doorbells);
			v.sq_user_wqes = u64_stats_read(&st->sq_user_wqes);
		} while (u64_stats_fetch_retry(&st->syncp, start));

		c->tx_packets += v.tx_packets;
		c->tx_bytes += v.tx_bytes;
		c->tx_errors += v.tx_errors;
		c->tx_zcopy_packets += v.tx_zcopy_packets;
		c->rx_packets += v.rx_packets;
		c->rx_bytes += v.rx_bytes;
		c->rx_icrc_errors += v.rx_icrc_errors;
		c->rx_malformed += v.rx_malformed;
		c->sq_doorbells += v.sq_doorbells;
		c->sq_user_wqes += v.sq_user_wqes;
	}
}

/*
 * Doorbells come from process context, fetches from wherever the
 * requester runs: interrupts off keeps a 32-bit writer's sequence whole.
 */
void sroce_net_count_sq(struct sroce_dev *sdev, unsigned int doorbells,
			unsigned int wqes)
{
	struct sroce_net_stats *st = get_cpu_ptr(sdev->net_port.stats);
	unsigned long flags;

	flags = u64_stats_update_begin_irqsave(&st->syncp);
	u64_stats_add(&st->sq_doorbells, doorbells);
	u64_stats_add(&st->sq_user_wqes, wqes);
	u64_stats_update_end_irqrestore(&st->syncp, flags);
	put_cpu_ptr(sdev->net_port.stats);
}

/* The counters as port hw_counters (sysfs, `rdma statistic`). */
enum sroce_net_counter {
	SROCE_CNT_TX_PACKETS,
	SROCE_CNT_TX_BYTES,
	SROCE_CNT_TX_ERRORS,
	SROCE_CNT_TX_ZCOPY_PACKETS,
	SROCE_CNT_RX_PACKETS,
	SROCE_CNT_RX_BYTES,
	SROCE_CNT_RX_ICRC_ERRORS,
	SROCE_CNT_RX_MALFORMED,
	SROCE_CNT_SQ_DOORBELLS,
	SROCE_CNT_SQ_USER_WQES,
	SROCE_CNT_RX_STATS,	/* then enum sroce_rx_stat (resp.h) */
	SROCE_CNT_NUM = SROCE_CNT_RX_STATS + SROCE_RX_STATS_NUM
};

static const struct rdma_stat_desc sroce_net_stat_descs[SROCE_CNT_NUM] = {
	[SROCE_CNT_TX_PACKETS] = { .name = "tx_packets" },
	[SROCE_CNT_TX_BYTES] = { .name = "tx_bytes" },
	[SROCE_CNT_TX_ERRORS] = { .name = "tx_errors" },
	[SROCE_CNT_TX_ZCOPY_PACKETS] = { .name = "tx_zcopy_packets" },
	[SROCE_CNT_RX_PACKETS] = { .name = "rx_packets" },
	[SROCE_CNT_RX_BYTES] = { .name = "rx_bytes" },
	[SROCE_CNT_RX_ICRC_ERRORS] = { .name = "rx_icrc_errors" },
	[SROCE_CNT_RX_MALFORMED] = { .name = "rx_malformed" },
	[SROCE_CNT_SQ_DOORBELLS] = { .name = "sq_doorbells" },
	[SROCE_CNT_SQ_USER_WQES] = { .name = "sq_user_wqes" },
	[SROCE_CNT_RX_STATS + SROCE_RX_NO_QP] = { .name = "rx_drop_no_qp" },
	[SROCE_CNT_RX_STATS + SROCE_RX_BAD_TRANSPORT] = { .name = "rx_drop_qp_type" },
	[SROCE_CNT_RX_STATS + SROCE_RX_BAD_STATE] = { .name = "rx_drop_qp_state" },
	[SROCE_CNT_RX_STATS + SROCE_RX_BAD_PKEY] = { .name = "rx_drop_pkey" },
	[SROCE_CNT_RX_STATS + SROCE_RX_BAD_QKEY] = { .name = "rx_drop_qkey" },
	[SROCE_CNT_RX_STATS + SROCE_RX_BAD_ADDR] = { .name = "rx_drop_address" },
	[SROCE_CNT_RX_STATS + SROCE_RP_CNP_IGNORED] = { .name = "rp_cnp_ignored" },
	[SROCE_CNT_RX_STATS + SROCE_RESP_DROPPED] = { .name = "resp_dropped" },
	[SROCE_CNT_RX_STATS + SROCE_RESP_DUPLICATES] = { .name = "resp_duplicates" },
	[SROCE_CNT_RX_STATS + SROCE_RESP_SEQ_NAKS] = { .name = "resp_seq_naks" },
	[SROCE_CNT_RX_STATS + SROCE_RESP_RNR_NAKS] = { .name = "resp_rnr_naks" },
	[SROCE_CNT_RX_STATS + SROCE_RESP_ERR_NAKS] = { .name = "resp_err_naks" },
	[SROCE_CNT_RX_STATS + SROCE_REQ_TIMEOUTS] = { .name = "req_timeouts" },
	[SROCE_CNT_RX_STATS + SROCE_REQ_ALLOC_FAILURES] = { .name = "req_alloc_failures" },
	[SROCE_CNT_RX_STATS + SROCE_REQ_TIMEOUTS_AVERTED] = { .name = "req_timeouts_averted" },
	[SROCE_CNT_RX_STATS + SROCE_NP_ECN_MARKED] = { .name = "np_ecn_marked_roce_packets" },
	[SROCE_CNT_RX_STATS + SROCE_NP_CNP_SENT] = { .name = "np_cnp_sent" },
	[SROCE_CNT_RX_STATS + SROCE_RP_CNP_HANDLED] = { .name = "rp_cnp_handled" },
	[SROCE_CNT_RX_STATS + SROCE_RP_WINDOW_CUTS] = { .name = "rp_window_cuts" },
	[SROCE_CNT_RX_STATS + SROCE_REQ_SEQ_NAKS] = { .name = "req_seq_naks" },
	[SROCE_CNT_RX_STATS + SROCE_REQ_RNR_NAKS] = { .name = "req_rnr_naks" },
	[SROCE_CNT_RX_STATS + SROCE_REQ_RETRANSMITS] = { .name = "req_retransmits" },
	[SROCE_CNT_RX_STATS + SROCE_RESP_OUT_OF_SEQ] = { .name = "resp_out_of_seq" },
	[SROCE_CNT_RX_STATS + SROCE_MR_FAST_REGS] = { .name = "mr_fast_regs" },
	[SROCE_CNT_RX_STATS + SROCE_MR_LOCAL_INVS] = { .name = "mr_local_invs" },
	[SROCE_CNT_RX_STATS + SROCE_MR_REMOTE_INVS] = { .name = "mr_remote_invs" },
	[SROCE_CNT_RX_STATS + SROCE_RX_MCAST_PACKETS] = { .name = "rx_mcast_packets" },
	[SROCE_CNT_RX_STATS + SROCE_RX_MCAST_DELIVERIES] = { .name = "rx_mcast_deliveries" },
	[SROCE_CNT_RX_STATS + SROCE_MW_BINDS] = { .name = "mw_binds" },
	[SROCE_CNT_RX_STATS + SROCE_MW_LOCAL_INVS] = { .name = "mw_local_invs" },
	[SROCE_CNT_RX_STATS + SROCE_MW_REMOTE_INVS] = { .name = "mw_remote_invs" },
	[SROCE_CNT_RX_STATS + SROCE_ODP_PAGES] = { .name = "odp_pages" },
	[SROCE_CNT_RX_STATS + SROCE_ODP_CHILDREN] = { .name = "odp_children" },
};

static struct rdma_hw_stats *
sroce_alloc_hw_port_stats(struct ib_device *ibdev, u32 port)
{
	return rdma_alloc_hw_stats_struct(sroce_net_stat_descs, SROCE_CNT_NUM,
					  RDMA_HW_STATS_DEFAULT_LIFESPAN);
}

static int sroce_get_hw_stats(struct ib_device *ibdev,
			      struct rdma_hw_stats *stats, u32 port, int index)
{
	struct sroce_net_counters c;

	sroce_net_counters(to_sdev(ibdev), &c);
	stats->value[SROCE_CNT_TX_PACKETS] = c.tx_packets;
	stats->value[SROCE_CNT_TX_BYTES] = c.tx_bytes;
	stats->value[SROCE_CNT_TX_ERRORS] = c.tx_errors;
	stats->value[SROCE_CNT_TX_ZCOPY_PACKETS] = c.tx_zcopy_packets;
	stats->value[SROCE_CNT_RX_PACKETS] = c.rx_packets;
	stats->value[SROCE_CNT_RX_BYTES] = c.rx_bytes;
	stats->value[SROCE_CNT_RX_ICRC_ERRORS] = c.rx_icrc_errors;
	stats->value[SROCE_CNT_RX_MALFORMED] = c.rx_malformed;
	stats->value[SROCE_CNT_SQ_DOORBELLS] = c.sq_doorbells;
	stats->value[SROCE_CNT_SQ_USER_WQES] = c.sq_user_wqes;
	sroce_rx_stats_read(to_sdev(ibdev), &stats->value[SROCE_CNT_RX_STATS]);
	return SROCE_CNT_NUM;
}

const struct ib_device_ops sroce_net_ops = {
	.alloc_hw_port_stats = sroce_alloc_hw_port_stats,
	.get_hw_stats = sroce_get_hw_stats,
};

static int __net_init sroce_net_ns_init(struct net *net)
{
	struct sroce_net *snet = sroce_net_of(net);

	mutex_init(&snet->lock);
	INIT_LIST_HEAD(&snet->ports);
	return 0;
}

static void __net_exit sroce_net_ns_exit(struct net *net)
{
	struct sroce_net *snet = sroce_net_of(net);

	/*
	 * Devices detach, and upper devices leave, when their netdevs
	 * unregister, before this runs.
	 */
	if (WARN_ON(snet->users || !list_empty(&snet->ports)))
		sroce_sockets_close(snet);
	mutex_destroy(&snet->lock);
}

static struct pernet_operations sroce_pernet_ops = {
	.init = sroce_net_ns_init,
	.exit = sroce_net_ns_exit,
	.id = &sroce_net_id,
	.size = sizeof(struct sroce_net),
};

int __init sroce_net_module_init(void)
{
	sroce_wire_init();
	return register_pernet_subsys(&sroce_pernet_ops);
}

void sroce_net_module_exit(void)
{
	unregister_pernet_subsys(&sroce_pernet_ops);
}

/* ---- address vectors ---- */

union sroce_sockaddr {
	struct sockaddr sa;
	struct sockaddr_in in4;
	struct sockaddr_in6 in6;
};

static __be16 sroce_sport_from_flow(u32 flow_label)
{
	return cpu_to_be16(rdma_flow_label_to_udp_sport(flow_label));
}

int sroce_av_from_ah_attr(struct sroce_dev *sdev,
			  const struct rdma_ah_attr *attr, struct sroce_av *av)
{
	const struct ib_global_route *grh;
	const struct ib_gid_attr *sgid_attr;
	union sroce_sockaddr src, dst;
	struct net_device *ndev;
	int type, err;

	if (!(rdma_ah_get_ah_flags(attr) & IB_AH_GRH))
		return -EINVAL;
	grh = rdma_ah_read_grh(attr);
	sgid_attr = grh->sgid_attr;
	if (!sgid_attr || sgid_attr->device != &sdev->ibdev ||
	    sgid_attr->gid_type != IB_GID_TYPE_ROCE_UDP_ENCAP)
		return -EINVAL;
	type = rdma_gid_attr_network_type(sgid_attr);

	rdma_gid2ip(&src.sa, &sgid_attr->gid);
	rdma_gid2ip(&dst.sa, &grh->dgid);
	if (type == RDMA_NETWORK_IPV4 && dst.sa.sa_family == AF_INET) {
		av->saddr.v4 = src.in4.sin_addr.s_addr;
		av->daddr.v4 = dst.in4.sin_addr.s_addr;
	} else if (type == RDMA_NETWORK_IPV6 && dst.sa.sa_family == AF_INET6) {
		av->saddr.v6 = src.in6.sin6_addr;
		av->daddr.v6 = dst.in6.sin6_addr;
	} else {
		return -EINVAL;
	}

	err = rdma_read_gid_l2_fields(sgid_attr, &av->vlan_id, av->smac);
	if (err)
		return err;
	rcu_read_lock();
	ndev = rdma_read_gid_attr_ndev_rcu(sgid_attr);
	if (IS_ERR(ndev)) {
		err = PTR_ERR(ndev);
	} else {
		av->ifindex = ndev->ifindex;
		av->frame_by_mac = !net_eq(dev_net(ndev), dev_net(sdev->ndev));
	}
	rcu_read_unlock();
	if (err)
		return err;

	av->network_type = type;
	av->sgid_index = grh->sgid_index;
	av->sl = rdma_ah_get_sl(attr);
	av->hop_limit = grh->hop_limit;
	av->tclass = grh->traffic_class;
	av->flow_label = grh->flow_label & IB_GRH_FLOWLABEL_MASK;
	ether_addr_copy(av->dmac, attr->roce.dmac);
	if (av->flow_label)
		av->sport = sroce_sport_from_flow(av->flow_label);
	else
		av->sport = sroce_sport_from_flow(jhash(&av->daddr,
							sizeof(av->daddr), 0));
	dst_cache_reset(&av->dst_cache);
	return 0;
}

void sroce_av_set_qpns(struct sroce_av *av, u32 local_qpn, u32 remote_qpn)
{
	av->sport = cpu_to_be16(rdma_get_udp_sport(av->flow_label, local_qpn,
						   remote_qpn));
}

void sroce_av_to_ah_attr(const struct sroce_av *av, struct rdma_ah_attr *attr)
{
	union ib_gid dgid;

	if (av->network_type == RDMA_NETWORK_IPV4)
		ipv6_addr_set_v4mapped(av->daddr.v4, (struct in6_addr *)&dgid);
	else
		memcpy(&dgid, &av->daddr.v6, sizeof(dgid));

	memset(attr, 0, sizeof(*attr));
	attr->type = RDMA_AH_ATTR_TYPE_ROCE;
	rdma_ah_set_sl(attr, av->sl);
	rdma_ah_set_port_num(attr, SROCE_PORT);
	rdma_ah_set_grh(attr, &dgid, av->flow_label, av->sgid_index,
			av->hop_limit, av->tclass);
	memcpy(attr->roce.dmac, av->dmac, ETH_ALEN);
}

void sroce_av_copy(struct sroce_av *dst, const struct sroce_av *src)
{
	memcpy(dst, src, offsetof(struct sroce_av, dst_cache));
	dst_cache_reset(&dst->dst_cache);
}

int sroce_av_cache_init(struct sroce_av *av, gfp_t gfp)
{
	return dst_cache_init(&av->dst_cache, gfp);
}

void sroce_av_cache_destroy(struct sroce_av *av)
{
	dst_cache_destroy(&av->dst_cache);
}

void sroce_av_cache_release(struct sroce_av *av)
{
	dst_cache_reset_now(&av->dst_cache);
}

/* ---- transmit ---- */

struct sk_buff *sroce_net_alloc_skb(struct sroce_dev *sdev,
				    const struct sroce_av *av,
				    unsigned int hdr_len,
				    unsigned int linear_len, gfp_t gfp)
{
	unsigned int headroom = LL_RESERVED_SPACE_EXTRA(sdev->ndev, VLAN_HLEN) +
				sizeof(struct udphdr) +
				(av->network_type == RDMA_NETWORK_IPV4 ?
				 sizeof(struct iphdr) : sizeof(struct ipv6hdr));
	struct sk_buff *skb;

	skb = alloc_skb(headroom + hdr_len + linear_len + 3 + SROCE_ICRC_LEN,
			gfp);
	if (unlikely(!skb))
		return NULL;
	skb_reserve(skb, headroom);
	skb_put_zero(skb, hdr_len);
	return skb;
}

bool sroce_net_zcopy(const struct sroce_dev *sdev)
{
	return READ_ONCE(sdev->ndev->features) & NETIF_F_SG;
}

void *sroce_net_put_data(struct sk_buff *skb, unsigned int len)
{
	return skb_put(skb, len);
}

int sroce_net_add_page(struct sk_buff *skb, struct page *page,
		       unsigned int off, unsigned int len)
{
	struct skb_shared_info *shinfo = skb_shinfo(skb);
	int i = shinfo->nr_frags;

	if (i && skb_can_coalesce(skb, i, page, off)) {
		skb_frag_size_add(&shinfo->frags[i - 1], len);
	} else {
		/* Keep one slot for the pad and ICRC tail. */
		if (i >= MAX_SKB_FRAGS - 1)
			return -EMSGSIZE;
		get_page(page);
		skb_fill_page_desc(skb, i, page, off, len);
	}
	/* User pages may change under us: whoever needs stable data copies. */
	shinfo->flags |= SKBFL_SHARED_FRAG;
	skb->len += len;
	skb->data_len += len;
	skb->truesize += len;
	return 0;
}

/* Append len zero bytes; returns where they are, for the ICRC. */
static u8 *sroce_put_tail(struct sk_buff *skb, unsigned int len)
{
	struct skb_shared_info *shinfo = skb_shinfo(skb);
	struct page *page;
	u8 *p;

	if (!skb_is_nonlinear(skb) && skb_tailroom(skb) >= len)
		return skb_put_zero(skb, len);

	if (shinfo->nr_frags >= MAX_SKB_FRAGS || skb_has_frag_list(skb))
		return NULL;
	p = netdev_alloc_frag(len);
	if (!p)
		return NULL;
	memset(p, 0, len);
	page = virt_to_head_page(p);
	skb_fill_page_desc(skb, shinfo->nr_frags, page,
			   p - (u8 *)page_address(page), len);
	skb->len += len;
	skb->data_len += len;
	skb->truesize += len;
	return p;
}

static struct dst_entry *sroce_route4(struct net *net, struct sroce_av *av)
{
	struct rtable *rt;
	__be32 saddr;

	rt = dst_cache_get_ip4(&av->dst_cache, &saddr);
	if (!rt) {
		struct flowi4 fl4 = {
			.flowi4_oif = av->ifindex,
			.flowi4_proto = IPPROTO_UDP,
			.daddr = av->daddr.v4,
			.saddr = av->saddr.v4,
		};

		rt = ip_route_output_key(net, &fl4);
		if (IS_ERR(rt))
			return ERR_CAST(rt);
		dst_cache_set_ip4(&av->dst_cache, &rt->dst, fl4.saddr);
	}
	return &rt->dst;
}

static struct dst_entry *sroce_route6(struct net *net, struct sroce_av *av)
{
	struct dst_entry *dst;
	struct in6_addr saddr;

	dst = dst_cache_get_ip6(&av->dst_cache, &saddr);
	if (!dst) {
		struct flowi6 fl6 = {
			.flowi6_oif = av->ifindex,
			.flowi6_proto = IPPROTO_UDP,
			.daddr = av->daddr.v6,
			.saddr = av->saddr.v6,
		};

		dst = sroce_ip6_route(net, &fl6);
		if (IS_ERR(dst))
			return dst;
		dst_cache_set_ip6(&av->dst_cache, dst, &fl6.saddr);
	}
	return dst;
}

static void sroce_push_ip4(struct sk_buff *skb, const struct sroce_av *av,
			   u8 ttl, u8 tclass)
{
	struct iphdr *iph;

	skb_push(skb, sizeof(*iph));
	skb_reset_network_header(skb);
	iph = ip_hdr(skb);
	iph->version = 4;
	iph->ihl = sizeof(*iph) / 4;
	iph->tos = tclass;
	iph->tot_len = htons(skb->len);
	/* RoCE packets are sized to the path MTU and never fragmented. */
	iph->frag_off = htons(IP_DF);
	iph->id = 0;
	iph->ttl = ttl;
	iph->protocol = IPPROTO_UDP;
	iph->check = 0;
	iph->saddr = av->saddr.v4;
	iph->daddr = av->daddr.v4;
	skb->protocol = htons(ETH_P_IP);
	memset(IPCB(skb), 0, sizeof(*IPCB(skb)));
}

static void sroce_push_ip6(struct sk_buff *skb, const struct sroce_av *av,
			   u8 hop_limit, u8 tclass)
{
	struct ipv6hdr *ip6h;

	skb_push(skb, sizeof(*ip6h));
	skb_reset_network_header(skb);
	ip6h = ipv6_hdr(skb);
	ip6_flow_hdr(ip6h, tclass, htonl(av->flow_label));
	ip6h->payload_len = htons(skb->len - sizeof(*ip6h));
	ip6h->nexthdr = IPPROTO_UDP;
	ip6h->hop_limit = hop_limit;
	ip6h->saddr = av->saddr.v6;
	ip6h->daddr = av->daddr.v6;
	skb->protocol = htons(ETH_P_IPV6);
	memset(IP6CB(skb), 0, sizeof(*IP6CB(skb)));
}

/*
 * BHs are disabled: this CPU's counters are ours. @zcopy: the packet left
 * with payload pages attached by reference, not copied (sroce_net_zcopy()).
 */
static void sroce_tx_count(struct sroce_net_port *port, unsigned int bytes,
			   bool zcopy)
{
	struct sroce_net_stats *st = this_cpu_ptr(port->stats);

	u64_stats_update_begin(&st->syncp);
	if (bytes) {
		u64_stats_inc(&st->tx_packets);
		u64_stats_add(&st->tx_bytes, bytes);
		if (zcopy)
			u64_stats_inc(&st->tx_zcopy_packets);
	} else {
		u64_stats_inc(&st->tx_errors);
	}
	u64_stats_update_end(&st->syncp);
}

/* The packet's traffic class: congestion control may set its ECN bits. */
static u8 sroce_net_tclass(const struct sroce_av *av,
			   const struct sk_buff *skb)
{
	const struct sroce_bth *bth = (const struct sroce_bth *)skb->data;

	return sroce_cc_tclass(av->tclass, bth->opcode);
}

/*
 * Put the UDP header before the BTH and room for the pad and the ICRC
 * after the payload; returns where the ICRC goes, or NULL.
 */
static u8 *sroce_net_udp(const struct sroce_av *av, struct sk_buff *skb)
{
	struct sroce_bth *bth = (struct sroce_bth *)skb->data;
	unsigned int tail = sroce_bth_pad(bth) + SROCE_ICRC_LEN;
	struct udphdr *udph;
	u8 *icrc;

	icrc = sroce_put_tail(skb, tail);
	if (unlikely(!icrc))
		return NULL;
	udph = skb_push(skb, sizeof(*udph));
	skb_reset_transport_header(skb);
	udph->source = av->sport;
	udph->dest = htons(SROCE_UDP_PORT);
	udph->len = htons(skb->len);
	udph->check = 0;
	return icrc + tail - SROCE_ICRC_LEN;
}

static void sroce_net_ip(const struct sroce_av *av, struct sk_buff *skb, u8 ttl,
			 u8 tclass)
{
	skb->ip_summed = CHECKSUM_NONE;
	if (av->network_type == RDMA_NETWORK_IPV4) {
		sroce_push_ip4(skb, av, ttl, tclass);
		return;
	}
	sroce_push_ip6(skb, av, ttl, tclass);
	/*
	 * A zero UDP checksum is legal over IPv4 only (RFC 8200). The ICRC
	 * does not cover the UDP checksum, so order is free.
	 */
	udp6_set_csum(false, skb, &av->saddr.v6, &av->daddr.v6,
		      skb->len - sizeof(struct ipv6hdr));
}

static unsigned int sroce_net_ip_hlen(const struct sroce_av *av)
{
	return av->network_type == RDMA_NETWORK_IPV4 ? sizeof(struct iphdr) :
						       sizeof(struct ipv6hdr);
}

/* The ICRC last: every field it covers is final now. */
static void sroce_net_icrc(struct sk_buff *skb, u8 *icrc)
{
	__le32 icrc_le = cpu_to_le32(sroce_icrc_compute(skb));

	memcpy(icrc, &icrc_le, sizeof(icrc_le));
}

/* Put UDP and IP headers before the BTH and the ICRC after the payload. */
static int sroce_net_encap(struct net *net, struct sroce_av *av,
			   struct sk_buff *skb, unsigned int *len)
{
	bool ipv4 = av->network_type == RDMA_NETWORK_IPV4;
	u8 tclass = sroce_net_tclass(av, skb);
	struct dst_entry *dst;
	u8 *icrc;

	icrc = sroce_net_udp(av, skb);
	if (unlikely(!icrc))
		return -ENOMEM;
	dst = ipv4 ? sroce_route4(net, av) : sroce_route6(net, av);
	if (IS_ERR(dst))
		return -EHOSTUNREACH;
	/* counted like received packets: the UDP payload, BTH to ICRC */
	*len = skb->len - sizeof(struct udphdr);
	if (unlikely(skb->len + sroce_net_ip_hlen(av) > dst_mtu(dst))) {
		dst_release(dst);
		return -EMSGSIZE;
	}
	sroce_net_ip(av, skb, av->hop_limit ?: (ipv4 ? ip4_dst_hoplimit(dst) :
					       ip6_dst_hoplimit(dst)), tclass);
	skb_dst_set(skb, dst);
	skb->dev = dst->dev;
	/*
	 * The 802.1Q priority of a VLAN's packets: the traffic class's
	 * priority through the VLAN's egress map, which is how rdma_cm chose
	 * the QP's SL (iboe_tos_to_sl()), so the tag carries that SL.
	 */
	skb->priority = rt_tos2priority(av->tclass);
	sroce_net_icrc(skb, icrc);
	return 0;
}

/*
 * A path from a GID of an upper device in another namespace (a
 * container's macvlan on our netdev): that namespace's routes and
 * neighbours are not ours to use, so the packet leaves as a RoCE NIC
 * sends it, framed with the MACs and VLAN that ib_core resolved for the
 * path in the GID's namespace, on the device's own netdev.
 */
static int sroce_net_frame(struct sroce_dev *sdev, const struct sroce_av *av,
			   struct sk_buff *skb, unsigned int *len)
{
	u8 tclass = sroce_net_tclass(av, skb);
	struct net_device *ndev = sdev->ndev;
	u8 *icrc;

	icrc = sroce_net_udp(av, skb);
	if (unlikely(!icrc))
		return -ENOMEM;
	*len = skb->len - sizeof(struct udphdr);
	if (unlikely(skb->len + sroce_net_ip_hlen(av) > READ_ONCE(ndev->mtu)))
		return -EMSGSIZE;
	/* IPDEFTTL and IPV6_DEFAULT_HOPLIMIT are both 64 */
	sroce_net_ip(av, skb, av->hop_limit ?: IPDEFTTL, tclass);
	if (av->network_type == RDMA_NETWORK_IPV4)
		ip_send_check(ip_hdr(skb));
	sroce_net_icrc(skb, icrc);

	skb->dev = ndev;
	skb->priority = rt_tos2priority(av->tclass);
	if (av->vlan_id < VLAN_N_VID)
		__vlan_hwaccel_put_tag(skb, htons(ETH_P_8021Q), av->vlan_id |
				       (av->sl & 7) << VLAN_PRIO_SHIFT);
	if (dev_hard_header(skb, ndev, ntohs(skb->protocol), av->dmac,
			    av->smac, skb->len) < 0)
		return -EINVAL;
	skb_reset_mac_header(skb);
	return 0;
}

int sroce_net_xmit(struct sroce_dev *sdev, struct sroce_av *av,
		   struct sk_buff *skb)
{
	struct net *net = dev_net(sdev->ndev);
	/* only payload is ever paged: the ICRC joins it below */
	bool zcopy = skb_is_nonlinear(skb);
	unsigned int len = 0;
	int err;

	/* dst_cache and the counters are per CPU; so is the IP output path. */
	local_bh_disable();
	if (unlikely(!READ_ONCE(sdev->net_port.snet)))
		err = -ENETDOWN;
	else if (av->frame_by_mac)
		err = sroce_net_frame(sdev, av, skb, &len);
	else
		err = sroce_net_encap(net, av, skb, &len);
	if (unlikely(err)) {
		kfree_skb(skb);
	} else {
		/* The stack consumes skb, whatever it returns. */
		if (av->frame_by_mac)
			err = dev_queue_xmit(skb);
		else if (av->network_type == RDMA_NETWORK_IPV4)
			err = ip_local_out(net, NULL, skb);
		else
			err = ip6_local_out(net, NULL, skb);
		err = net_xmit_eval(err);
		if (err > 0)	/* NET_XMIT_DROP: a full queue */
			err = -ENOBUFS;
	}
	sroce_tx_count(&sdev->net_port, err ? 0 : len, zcopy);
	local_bh_enable();
	return err;
}
