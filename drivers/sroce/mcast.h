/* SPDX-License-Identifier: GPL-2.0 */
/*
 * UD multicast: the device's groups, keyed by MGID, with the UD QPs
 * attached to each (attach_mcast/detach_mcast), and the host's membership
 * of the group on the device's netdev (IGMP for IPv4-mapped MGIDs, MLD for
 * IPv6 ones) from the first attached QP to the last.
 *
 * The namespace's UDP sockets accept every group the host is a member of
 * (IP_MULTICAST_ALL is on for kernel sockets), so a joined group reaches
 * sroce_transport_rcv(), which hands a packet with DQPN 0xFFFFFF to every
 * QP sroce_mcast_collect() returns.
 */
#ifndef SROCE_MCAST_H
#define SROCE_MCAST_H

#include <linux/mutex.h>
#include <linux/rcupdate.h>
#include <linux/skbuff.h>
#include <linux/types.h>
#include <rdma/ib_verbs.h>

struct sroce_dev;
struct sroce_qp;

#define SROCE_MAX_MCAST_GRP		1024	/* groups per device */
#define SROCE_MAX_MCAST_QP_ATTACH	32	/* QPs per group */
#define SROCE_MAX_TOT_MCAST_QP_ATTACH	4096	/* attachments per device */

#define SROCE_MCAST_HASH_BITS		6

/*
 * The groups of one device. @lock serialises attach, detach and the
 * cleanup of a destroyed QP: the hash lists' writers, the counts, every
 * group's QP slots and sroce_qp.mcast_num. It is taken outside RTNL (the
 * membership change takes RTNL inside it) and never under a spinlock.
 * Receive reads the hash lists and slots under RCU.
 */
struct sroce_mcast {
	struct mutex lock;		/* see above */
	struct hlist_head hash[1 << SROCE_MCAST_HASH_BITS];
	unsigned int num_grp;
	unsigned int num_attach;
};

void sroce_mcast_dev_init(struct sroce_dev *sdev);
void sroce_mcast_dev_cleanup(struct sroce_dev *sdev);

int sroce_attach_mcast(struct ib_qp *ibqp, union ib_gid *mgid, u16 mlid);
int sroce_detach_mcast(struct ib_qp *ibqp, union ib_gid *mgid, u16 mlid);

/*
 * Detach @qp from every group it is still attached to: from destroy_qp,
 * before the QP leaves the QP table. Process context.
 */
void sroce_mcast_qp_cleanup(struct sroce_qp *qp);

/*
 * The QPs attached to the group that the destination address of @skb (a
 * validated packet) names, each with a reference (sroce_qp_put()), in
 * @qps; returns how many (0: not a multicast address or no such group
 * here). Softirq context, under rcu_read_lock().
 */
unsigned int sroce_mcast_collect(struct sroce_dev *sdev,
				 const struct sk_buff *skb,
				 struct sroce_qp **qps);

#endif /* SROCE_MCAST_H */
