/* SPDX-License-Identifier: GPL-2.0 */
/*
 * RoCEv2 over UDP/IP: the sockets on port 4791, address vectors, transmit
 * of a built packet and receive up to sroce_transport_rcv().
 *
 * Sockets are per network namespace, not per device: port 4791 can be
 * bound only once per namespace, and every sroce device of a namespace
 * must receive on it. The first sroce_net_open() in a namespace creates an
 * IPv4 and an IPv6 socket (IPv6 is optional: it may be disabled), the last
 * sroce_net_close() releases them. So a namespace without sroce devices
 * leaves the port free, e.g. for rdma_rxe.
 *
 * Receive runs in softirq context straight from the UDP socket's
 * encap_rcv: find the device by skb->dev, validate, parse into
 * struct sroce_pkt (wire.h) and call sroce_transport_rcv() - no hop
 * through a workqueue.
 *
 * Packets to one of the host's own addresses (sroce to sroce on one host)
 * take the normal IP path through the loopback device; the receive side
 * then finds the device owning the destination address.
 */
#ifndef SROCE_NET_H
#define SROCE_NET_H

#include <linux/if_ether.h>
#include <linux/in6.h>
#include <linux/list.h>
#include <linux/skbuff.h>
#include <linux/types.h>
#include <linux/u64_stats_sync.h>
#include <net/dst_cache.h>
#include <rdma/ib_verbs.h>
#include <rdma/sroce-abi.h>

#include "wire.h"

struct sroce_dev;
struct sroce_net;

/* Per-CPU traffic counters of one device. */
struct sroce_net_stats {
	u64_stats_t tx_packets;
	u64_stats_t tx_bytes;
	u64_stats_t tx_errors;		/* no route, too big, dropped by IP */
	u64_stats_t tx_zcopy_packets;	/* sent with payload pages by reference */
	u64_stats_t rx_packets;		/* handed to the transport */
	u64_stats_t rx_bytes;
	u64_stats_t rx_icrc_errors;
	u64_stats_t rx_malformed;	/* bad lengths, opcode, version */
	u64_stats_t sq_doorbells;	/* send doorbells of user QPs */
	u64_stats_t sq_user_wqes;	/* send WQEs taken from user rings */
	struct u64_stats_sync syncp;
};

/* A snapshot of the counters summed over CPUs. */
struct sroce_net_counters {
	u64 tx_packets;
	u64 tx_bytes;
	u64 tx_errors;
	u64 tx_zcopy_packets;
	u64 rx_packets;
	u64 rx_bytes;
	u64 rx_icrc_errors;
	u64 rx_malformed;
	u64 sq_doorbells;
	u64 sq_user_wqes;
};

/*
 * The network attachment of one sroce device; struct sroce_dev embeds it as
 * member net_port. Set up by sroce_net_open(), torn down by
 * sroce_net_close(). node is on its namespace's port list (RCU readers in
 * receive, writers under the namespace's mutex).
 */
struct sroce_net_port {
	struct sroce_dev *sdev;
	struct net_device *ndev;	/* sdev->ndev; sdev holds the reference */
	struct sroce_net *snet;
	struct list_head node;
	struct sroce_net_stats __percpu *stats;
};

union sroce_ipaddr {
	__be32 v4;
	struct in6_addr v6;
};

/*
 * A resolved path: everything needed to put a packet on the wire.
 * Build it with sroce_av_from_ah_attr(). AVs live in zeroed memory.
 * dst_cache caches the route: call sroce_av_cache_init() (may sleep) for a
 * long-lived AV such as a QP's path, and sroce_av_cache_destroy() before
 * freeing it; an AV without an initialised cache looks the route up per
 * packet. Copy an AV only with sroce_av_copy(), which leaves the
 * destination's cache alone.
 */
struct sroce_av {
	u8 network_type;	/* RDMA_NETWORK_IPV4 or RDMA_NETWORK_IPV6 */
	u8 sgid_index;		/* for query_qp / query_ah */
	u8 sl;
	u8 hop_limit;		/* TTL / hop limit; 0: the route's default */
	u8 tclass;		/* IPv4 TOS / IPv6 traffic class (DSCP, ECN) */
	u8 dmac[ETH_ALEN];
	u8 smac[ETH_ALEN];
	__be16 sport;		/* UDP source port, 0xc000..0xffff */
	u16 vlan_id;		/* 0xffff: none */
	u32 flow_label;		/* IPv6 flow label, 20 bits */
	int ifindex;		/* the source GID's net device */
	/*
	 * That netdev is in another namespace than the device's: sent by
	 * @dmac, @smac and @vlan_id on the device's netdev, not routed.
	 */
	bool frame_by_mac;
	union sroce_ipaddr saddr;
	union sroce_ipaddr daddr;
	struct dst_cache dst_cache;
};

/* Module init/exit: build the opcode table, register per-namespace state. */
int sroce_net_module_init(void);
void sroce_net_module_exit(void);

/*
 * Attach sdev to ndev: take the namespace's sockets (creating them on first
 * use) and start delivering packets received on ndev, on its upper devices
 * in any namespace (whose namespaces get sockets too), or addressed to
 * ndev's addresses over loopback, to sroce_transport_rcv(sdev, ...).
 * Process context, RTNL not required. Returns 0 or -errno.
 */
int sroce_net_open(struct sroce_dev *sdev, struct net_device *ndev);
/*
 * Detach: after return no new packet reaches sroce_transport_rcv() for sdev
 * (waits for running receivers). Idempotent. Process context; call it from
 * the NETDEV_UNREGISTER notifier synchronously (not from queued work), so
 * the namespace's sockets are gone before the namespace is.
 */
void sroce_net_close(struct sroce_dev *sdev);
/*
 * Every netdev event, under RTNL: an upper device of a port linked,
 * unlinked or moved to another namespace takes or drops that namespace's
 * sockets.
 */
void sroce_net_upper_event(struct net_device *ndev, unsigned long event,
			   void *ptr);
/*
 * Close if still open and free the counters: from dealloc_driver, when
 * nothing transmits any more. Transmit between close and release fails
 * with -ENETDOWN.
 */
void sroce_net_port_release(struct sroce_dev *sdev);

void sroce_net_counters(struct sroce_dev *sdev, struct sroce_net_counters *c);
/* Count doorbells and the WQEs user SQs carried; any context. */
void sroce_net_count_sq(struct sroce_dev *sdev, unsigned int doorbells,
			unsigned int wqes);
/* Port hw_counters ops (tx_packets ... rx_icrc_errors) for the device. */
extern const struct ib_device_ops sroce_net_ops;

/*
 * Fill av from an AH / QP path attribute (RoCEv2 GID, IB_AH_GRH set, its
 * sgid_attr resolved by ib_core). The UDP source port is derived from the
 * flow label when there is one; sroce_av_set_qpns() sets it from the QP
 * numbers otherwise. Resets av's route cache. May run in atomic context.
 */
int sroce_av_from_ah_attr(struct sroce_dev *sdev,
			  const struct rdma_ah_attr *attr, struct sroce_av *av);
/* Derive the UDP source port (flow entropy) of an RC/UC connection. */
void sroce_av_set_qpns(struct sroce_av *av, u32 local_qpn, u32 remote_qpn);
/* The reverse of sroce_av_from_ah_attr() for query_qp/query_ah. */
void sroce_av_to_ah_attr(const struct sroce_av *av, struct rdma_ah_attr *attr);
void sroce_av_copy(struct sroce_av *dst, const struct sroce_av *src);
int sroce_av_cache_init(struct sroce_av *av, gfp_t gfp);
void sroce_av_cache_destroy(struct sroce_av *av);
/*
 * Drop the cached routes now (an IPv6 route's dst->ops lives in its
 * namespace, which must not outlive it). No transmit may use @av meanwhile.
 */
void sroce_av_cache_release(struct sroce_av *av);

/*
 * Allocate a packet for av: headroom for link, IP and UDP headers, and
 * hdr_len + linear_len + SROCE_ICRC_LEN + 3 bytes of linear room.
 * Returns the skb with skb->data at the BTH and hdr_len bytes put and
 * zeroed (build the BTH and extension headers there), or NULL.
 * linear_len is the payload to be copied in with sroce_net_put_data();
 * payload referenced from pages with sroce_net_add_page() needs no room.
 */
struct sk_buff *sroce_net_alloc_skb(struct sroce_dev *sdev,
				    const struct sroce_av *av,
				    unsigned int hdr_len,
				    unsigned int linear_len, gfp_t gfp);
/*
 * Whether payload should go by page reference (sroce_net_add_page()): only
 * when the netdev can send page fragments (NETIF_F_SG). Without it the
 * stack linearizes every such packet again (a new head and a copy of it
 * all), so copying at once costs one allocation and one pass less.
 */
bool sroce_net_zcopy(const struct sroce_dev *sdev);
/* Append len bytes of linear payload; returns where to copy them. */
void *sroce_net_put_data(struct sk_buff *skb, unsigned int len);
/*
 * Append len bytes at off in page by reference (zero copy): takes a page
 * reference, merges with the previous fragment when contiguous. Returns
 * -EMSGSIZE when out of fragment slots (the caller falls back to copying).
 */
int sroce_net_add_page(struct sk_buff *skb, struct page *page,
		       unsigned int off, unsigned int len);

/*
 * Transmit a packet built on an skb from sroce_net_alloc_skb(): appends the
 * BTH's pad count of zero bytes and the ICRC, prepends UDP (dport 4791,
 * sport av->sport; checksum 0 over IPv4, computed or offloaded over IPv6)
 * and IPv4/IPv6, routes (cached in av) and sends through
 * the IP stack. Consumes skb. Returns 0 or -errno (-EMSGSIZE when larger
 * than the route's MTU, -EHOSTUNREACH without a route, -ENOBUFS when the
 * stack dropped it). Process or softirq context, never with hard IRQs
 * disabled (it disables BHs itself).
 */
int sroce_net_xmit(struct sroce_dev *sdev, struct sroce_av *av,
		   struct sk_buff *skb);

/*
 * Validate the RoCEv2 packet in skb (skb->data at the UDP header, network
 * and transport headers set, skb->len the UDP length) and fill
 * sroce_pkt(skb). Returns 0, -EINVAL (malformed), -EOPNOTSUPP (unknown
 * opcode or transport version) or -EBADMSG (bad ICRC). Exposed for tests.
 */
int sroce_net_parse(struct sk_buff *skb);

/*
 * Copy the network header of a received packet as the 40-byte GRH seen by
 * UD receivers (IPv4 in its last 20 bytes, IPv6 as is).
 */
void sroce_pkt_network_hdr(const struct sk_buff *skb,
			   union rdma_network_hdr *hdr);

/* What a UD receive completion reports in sl: the packet's type. */
static inline u8 sroce_pkt_cqe_sl(const struct sk_buff *skb)
{
	return SROCE_CQE_SL_ROCEV2 |
	       (sroce_pkt_c(skb)->network_type == RDMA_NETWORK_IPV4 ?
		SROCE_CQE_SL_IPV4 : SROCE_CQE_SL_IPV6);
}

/*
 * Implemented by the transport: takes ownership of a validated packet.
 * Softirq context, under rcu_read_lock().
 */
void sroce_transport_rcv(struct sroce_dev *sdev, struct sk_buff *skb);

#endif /* SROCE_NET_H */
