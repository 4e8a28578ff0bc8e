/* SPDX-License-Identifier: GPL-2.0 */
/*
 * sroce core objects: the device, the user context and the protection
 * domain, shared by every concern of the driver.
 *
 * Adding state for a concern: put a field (or an embedded struct of the
 * concern's own) in struct sroce_dev, initialise it from that concern's
 * per-device init hook called by sroce_dev_init_concerns() in main.c and
 * release it from sroce_dev_cleanup_concerns(). Write the lock that
 * protects it beside the field.
 */
#ifndef SROCE_H
#define SROCE_H

#include <linux/list.h>
#include <linux/netdevice.h>
#include <linux/idr.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>

#include "compat.h"
#include "limits.h"
#include "mcast.h"
#include "net.h"
#include "resp.h"

/* sroce devices have exactly one port, numbered as IB requires. */
#define SROCE_PORT 1

/*
 * Limits reported by query_device, which the verbs must enforce. They are
 * the design limits of the transport; features (capability flags, atomics,
 * SRQ, memory windows, ...) are only advertised once they work: update
 * sroce_query_device() in verbs.c when one lands.
 */
#define SROCE_MAX_QP		(64 * 1024)
#define SROCE_MAX_QP_WR		(16 * 1024)
#define SROCE_MAX_SGE		32
#define SROCE_MAX_INLINE_DATA	512
#define SROCE_MAX_CQ		(64 * 1024)
#define SROCE_MAX_CQE		(64 * 1024 - 1)
#define SROCE_MAX_MR		(256 * 1024)
#define SROCE_MAX_MW		(256 * 1024)
#define SROCE_MAX_PD		(64 * 1024)
#define SROCE_MAX_AH		(64 * 1024)
#define SROCE_MAX_SRQ		(16 * 1024)
#define SROCE_MAX_SRQ_WR	(16 * 1024)
#define SROCE_MAX_RD_ATOMIC	128
#define SROCE_MAX_MSG_SIZE	BIT(31)
#define SROCE_GID_TABLE_LEN	128
#define SROCE_LOCAL_CA_ACK_DELAY 15

/*
 * One sroce device: an ib_device bound to one Ethernet netdev.
 *
 * Lifetime: allocated by the rdma_link_ops newlink handler, freed by
 * ib_core after sroce_dealloc_driver() once unregistration is complete
 * (rdma link delete, netdev unregister or module unload). Code holding a
 * struct sroce_dev * outside a verb call must hold ib_device_try_get().
 */
struct sroce_dev {
	struct ib_device ibdev;		/* first: ib_alloc_device() needs it */

	/*
	 * The bound netdev, referenced from newlink until dealloc_driver, so
	 * the pointer is valid for the device's whole life; after the netdev
	 * began unregistering it must not be used to transmit.
	 */
	struct net_device *ndev;
	netdevice_tracker ndev_tracker;

	/*
	 * Entry in the module's device list (main.c): added and removed under
	 * its mutex, walked under RCU. It outlives unregistration (dead set)
	 * until main.c reaps it, so module unload can fence every teardown.
	 */
	struct list_head list;
	bool dead;			/* dealloc_driver ran; under the mutex */

	/* Last port state dispatched; set before registration, then under RTNL. */
	enum ib_port_state port_state;
	/* IB_EVENT_DEVICE_FATAL dispatched (the netdev is going); under RTNL. */
	bool fatal_sent;

	/*
	 * Objects held against the reported limits, in all and per user
	 * (limits.h): atomics, and an xarray that locks itself.
	 */
	struct sroce_limits limits;

	/* PD numbers; struct ida locks itself. */
	struct ida pdn_ida;

	/*
	 * Transport objects by number (qp.c, mr.c, ah.c): the xarrays lock
	 * themselves, readers look up under RCU. qpn_next: xa_alloc_cyclic()
	 * cursor, under the xarray's lock.
	 */
	struct xarray qp_xa;
	u32 qpn_next;
	struct xarray mr_xa;
	struct xarray ah_xa;
	u32 ah_next;
	/*
	 * XRC SRQs by SRQ number, for the XRCETH of incoming requests
	 * (srq.c); same rules as the tables above.
	 */
	struct xarray srq_xa;

	/* UD multicast groups (mcast.c); its lock is in the struct. */
	struct sroce_mcast mcast;

	/* UDP/IP attachment: sroce_net_open() .. sroce_net_close() (net.h). */
	struct sroce_net_port net_port;

	/* Receive path and responder counters (rx.c, resp.c); atomics. */
	struct sroce_rx_stats rx_stats;
};

struct sroce_ucontext {
	struct ib_ucontext ibuc;
	kuid_t uid;			/* the opener's real uid */
	/*
	 * That uid's counts (limits.h), which its objects charge: NULL until
	 * the first charge (sroce_udata_user()), then set once.
	 */
	struct sroce_user *user;
};

struct sroce_pd {
	struct ib_pd ibpd;
	u32 pdn;			/* immutable; unique per device */
	/* What the PD and the MRs in it are charged to; NULL: the kernel. */
	struct sroce_user *user;
};

/* An XRC domain: ib_core tracks its users and its target QPs. */
struct sroce_xrcd {
	struct ib_xrcd ibxrcd;
	/* Charged to; also its target QPs, which ib_core makes without udata. */
	struct sroce_user *user;
};

/*
 * A vmalloc_user() buffer offered to one ucontext for mmap. The entry owns
 * buf once inserted: it is freed when the entry has been removed with
 * sroce_mmap_remove() and no mapping of it is left.
 */
struct sroce_mmap_entry {
	struct rdma_user_mmap_entry rdma;
	void *buf;
};

static inline struct sroce_dev *to_sdev(struct ib_device *ibdev)
{
	return container_of(ibdev, struct sroce_dev, ibdev);
}

static inline struct sroce_ucontext *to_suctx(struct ib_ucontext *ibuc)
{
	return container_of(ibuc, struct sroce_ucontext, ibuc);
}

static inline struct sroce_pd *to_spd(struct ib_pd *ibpd)
{
	return container_of(ibpd, struct sroce_pd, ibpd);
}

static inline struct sroce_xrcd *to_sxrcd(struct ib_xrcd *ibxrcd)
{
	return container_of(ibxrcd, struct sroce_xrcd, ibxrcd);
}

struct sroce_user *sroce_udata_user(struct ib_udata *udata);

static inline struct sroce_mmap_entry *
to_smmap(struct rdma_user_mmap_entry *rdma)
{
	return container_of(rdma, struct sroce_mmap_entry, rdma);
}

/*
 * main.c: the sroce device bound to ndev, with a reference taken by
 * ib_device_try_get() (release with ib_device_put()), or NULL. Any context,
 * softirq included.
 */
struct sroce_dev *sroce_dev_get_by_netdev(const struct net_device *ndev);

/* verbs.c: device, port, ucontext, PD and mmap verbs. */
extern const struct ib_device_ops sroce_verbs_ops;
int sroce_verbs_dev_init(struct sroce_dev *sdev);
void sroce_verbs_dev_cleanup(struct sroce_dev *sdev);
enum ib_port_state sroce_port_state(const struct net_device *ndev);

/*
 * Offer buf (from vmalloc_user(len)) for mmap on uctx's command fd; *key is
 * the mmap offset to hand to user space. On success the entry owns buf
 * (see struct sroce_mmap_entry); the caller may keep using buf until it
 * calls sroce_mmap_remove(). On error the caller still owns buf.
 */
struct sroce_mmap_entry *sroce_mmap_insert(struct sroce_ucontext *uctx,
					   void *buf, size_t len, u64 *key);

/* Withdraw an entry: no new mmap of it; buf is freed after the last unmap. */
void sroce_mmap_remove(struct sroce_mmap_entry *entry);

#endif /* SROCE_H */
