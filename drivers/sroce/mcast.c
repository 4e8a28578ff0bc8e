// SPDX-License-Identifier: GPL-2.0
/*
 * UD multicast groups (see mcast.h): attach/detach, the host's IGMP/MLD
 * membership on the netdev, and the lookup of a received packet's group.
 *
 * A group lives from its first attached QP to its last. Its QP slots are
 * RCU pointers: receive takes a reference on each QP it finds there, and
 * a QP leaves every slot before destroy_qp's grace period, so a reader
 * never sees a freed QP.
 */
#include <linux/igmp.h>
#include <linux/inetdevice.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/jhash.h>
#include <linux/rtnetlink.h>
#include <linux/slab.h>
#include <net/addrconf.h>
#include <net/ipv6.h>
#include <rdma/ib_addr.h>

#include "sroce.h"
#include "mcast.h"
#include "qp.h"

struct sroce_mcast_grp {
	struct hlist_node node;		/* in sroce_mcast.hash, RCU */
	union ib_gid mgid;		/* immutable */
	unsigned int num_qp;		/* under sroce_mcast.lock */
	struct rcu_head rcu;
	/* written under sroce_mcast.lock, read under RCU */
	struct sroce_qp __rcu *qp[SROCE_MAX_MCAST_QP_ATTACH];
};

static struct hlist_head *mcast_bucket(struct sroce_mcast *mc,
				       const union ib_gid *mgid)
{
	u32 h = jhash(mgid->raw, sizeof(mgid->raw), 0);

	return &mc->hash[h & (ARRAY_SIZE(mc->hash) - 1)];
}

/* Under mc->lock or RCU. */
static struct sroce_mcast_grp *mcast_find(struct sroce_mcast *mc,
					  const union ib_gid *mgid)
{
	struct sroce_mcast_grp *grp;

	hlist_for_each_entry_rcu(grp, mcast_bucket(mc, mgid), node,
				 lockdep_is_held(&mc->lock))
		if (!memcmp(grp->mgid.raw, mgid->raw, sizeof(mgid->raw)))
			return grp;
	return NULL;
}

/* The slot of @qp in @grp, or -1. Under mc->lock. */
static int mcast_slot(struct sroce_mcast *mc, struct sroce_mcast_grp *grp,
		      const struct sroce_qp *qp)
{
	int i;

	for (i = 0; i < SROCE_MAX_MCAST_QP_ATTACH; i++)
		if (rcu_dereference_protected(grp->qp[i],
					      lockdep_is_held(&mc->lock)) == qp)
			return i;
	return -1;
}

/*
 * Make the host a member of the group on the device's netdev, or stop
 * being one: IGMP for an IPv4-mapped MGID, MLD for an IPv6 one. The
 * netdev keeps a count, so another member (a socket, rdma_cm's own IGMP
 * join) keeps the group. A netdev already unregistering has no in_device
 * or inet6_dev any more: joining fails, leaving has nothing to do.
 */
static int mcast_membership(struct sroce_dev *sdev, const union ib_gid *mgid,
			    bool join)
{
	const struct in6_addr *addr = (const struct in6_addr *)mgid->raw;
	struct in_device *in_dev;
	int err = 0;

	rtnl_lock();
	if (ipv6_addr_v4mapped(addr)) {
		in_dev = __in_dev_get_rtnl(sdev->ndev);
		if (!in_dev)
			err = -ENODEV;
		else if (join)
			ip_mc_inc_group(in_dev, addr->s6_addr32[3]);
		else
			ip_mc_dec_group(in_dev, addr->s6_addr32[3]);
	} else if (join) {
		err = ipv6_dev_mc_inc(sdev->ndev, addr);
	} else {
		err = ipv6_dev_mc_dec(sdev->ndev, addr);
	}
	rtnl_unlock();
	return join ? err : 0;
}

/* Take @qp out of slot @i of @grp; the last QP ends the group. */
static void mcast_remove(struct sroce_dev *sdev, struct sroce_mcast_grp *grp,
			 int i, struct sroce_qp *qp)
{
	struct sroce_mcast *mc = &sdev->mcast;

	lockdep_assert_held(&mc->lock);
	RCU_INIT_POINTER(grp->qp[i], NULL);
	grp->num_qp--;
	mc->num_attach--;
	qp->mcast_num--;
	if (grp->num_qp)
		return;
	hlist_del_rcu(&grp->node);
	mc->num_grp--;
	mcast_membership(sdev, &grp->mgid, false);
	kfree_rcu(grp, rcu);
}

int sroce_attach_mcast(struct ib_qp *ibqp, union ib_gid *mgid, u16 mlid)
{
	struct sroce_dev *sdev = to_sdev(ibqp->device);
	struct sroce_mcast *mc = &sdev->mcast;
	struct sroce_qp *qp = to_sqp(ibqp);
	struct sroce_mcast_grp *grp;
	int i, err;

	if (ibqp->qp_type != IB_QPT_UD ||
	    !rdma_is_multicast_addr((struct in6_addr *)mgid->raw))
		return -EINVAL;

	mutex_lock(&mc->lock);
	grp = mcast_find(mc, mgid);
	if (grp && mcast_slot(mc, grp, qp) >= 0) {
		err = 0;	/* attached already: as rxe */
		goto out;
	}
	err = -ENOMEM;
	if (mc->num_attach >= SROCE_MAX_TOT_MCAST_QP_ATTACH ||
	    (grp && grp->num_qp >= SROCE_MAX_MCAST_QP_ATTACH) ||
	    (!grp && mc->num_grp >= SROCE_MAX_MCAST_GRP))
		goto out;
	if (!grp) {
		grp = kzalloc(sizeof(*grp), GFP_KERNEL);
		if (!grp)
			goto out;
		grp->mgid = *mgid;
		err = mcast_membership(sdev, mgid, true);
		if (err) {
			kfree(grp);
			goto out;
		}
		hlist_add_head_rcu(&grp->node, mcast_bucket(mc, mgid));
		mc->num_grp++;
	}
	i = mcast_slot(mc, grp, NULL);
	rcu_assign_pointer(grp->qp[i], qp);
	grp->num_qp++;
	mc->num_attach++;
	qp->mcast_num++;
	err = 0;
out:
	mutex_unlock(&mc->lock);
	return err;
}

int sroce_detach_mcast(struct ib_qp *ibqp, union ib_gid *mgid, u16 mlid)
{
	struct sroce_dev *sdev = to_sdev(ibqp->device);
	struct sroce_mcast *mc = &sdev->mcast;
	struct sroce_qp *qp = to_sqp(ibqp);
	struct sroce_mcast_grp *grp;
	int i, err = -EINVAL;

	mutex_lock(&mc->lock);
	grp = mcast_find(mc, mgid);
	i = grp ? mcast_slot(mc, grp, qp) : -1;
	if (i >= 0) {
		mcast_remove(sdev, grp, i, qp);
		err = 0;
	}
	mutex_unlock(&mc->lock);
	/* No delivery to @qp that started before the detach is still running. */
	if (!err)
		synchronize_rcu();
	return err;
}

void sroce_mcast_qp_cleanup(struct sroce_qp *qp)
{
	struct sroce_dev *sdev = qp->sdev;
	struct sroce_mcast *mc = &sdev->mcast;
	struct sroce_mcast_grp *grp;
	struct hlist_node *tmp;
	unsigned int b;
	int i;

	mutex_lock(&mc->lock);
	for (b = 0; b < ARRAY_SIZE(mc->hash) && qp->mcast_num; b++) {
		hlist_for_each_entry_safe(grp, tmp, &mc->hash[b], node) {
			i = mcast_slot(mc, grp, qp);
			if (i >= 0)
				mcast_remove(sdev, grp, i, qp);
		}
	}
	WARN_ON(qp->mcast_num);
	mutex_unlock(&mc->lock);
}

unsigned int sroce_mcast_collect(struct sroce_dev *sdev,
				 const struct sk_buff *skb,
				 struct sroce_qp **qps)
{
	struct sroce_mcast_grp *grp;
	struct sroce_qp *qp;
	union ib_gid mgid;
	unsigned int n = 0;
	int i;

	if (ip_hdr(skb)->version == 4)
		ipv6_addr_set_v4mapped(ip_hdr(skb)->daddr,
				       (struct in6_addr *)mgid.raw);
	else
		memcpy(mgid.raw, &ipv6_hdr(skb)->daddr, sizeof(mgid.raw));
	if (!rdma_is_multicast_addr((struct in6_addr *)mgid.raw))
		return 0;

	grp = mcast_find(&sdev->mcast, &mgid);
	if (!grp)
		return 0;
	for (i = 0; i < SROCE_MAX_MCAST_QP_ATTACH; i++) {
		qp = rcu_dereference(grp->qp[i]);
		if (qp && refcount_inc_not_zero(&qp->ref))
			qps[n++] = qp;
	}
	return n;
}

void sroce_mcast_dev_init(struct sroce_dev *sdev)
{
	struct sroce_mcast *mc = &sdev->mcast;
	unsigned int b;

	mutex_init(&mc->lock);
	for (b = 0; b < ARRAY_SIZE(mc->hash); b++)
		INIT_HLIST_HEAD(&mc->hash[b]);
	mc->num_grp = 0;
	mc->num_attach = 0;
}

/* Every QP is destroyed, so every group is gone. */
void sroce_mcast_dev_cleanup(struct sroce_dev *sdev)
{
	WARN_ON(sdev->mcast.num_grp || sdev->mcast.num_attach);
	mutex_destroy(&sdev->mcast.lock);
}
