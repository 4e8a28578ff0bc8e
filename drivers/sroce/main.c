// SPDX-License-Identifier: GPL-2.0
/*
 * sroce: a software RoCEv2 RDMA device on any Ethernet netdev.
 *
 * This file owns the device's life: `rdma link add NAME type sroce netdev
 * DEV` (rdma_link_ops), removal by `rdma link delete`, by the netdev going
 * away (netdevice notifier) or by module unload, the port state events
 * that follow the carrier, and the sysfs attribute the provider matches.
 *
 * Device list
 * -----------
 * sroce_devs holds every device from newlink until it is reaped. Writers
 * hold sroce_devs_lock (a mutex, never held while calling into ib_core
 * registration, which takes RTNL, because the netdev notifier runs under
 * RTNL and takes the mutex); readers walk the list under RCU and take an
 * ib_device_try_get() reference, which only a registered device grants.
 * ib_core frees devices with kfree_rcu(), so RCU readers never see freed
 * memory.
 *
 * An entry stays on the list after its unregistration (dead) because
 * ib_core calls sroce_dealloc_driver() from several threads (rdma link
 * delete, the unregistration work queued by the notifier): only
 * ib_unregister_device() on the device, which waits for the device's
 * unregistration lock, proves that such a call has returned. Reaping does
 * that before dropping the list's device reference, so module unload
 * cannot free code another thread is still running.
 */
#include <linux/module.h>
#include <linux/if_arp.h>
#include <linux/if_vlan.h>
#include <linux/rtnetlink.h>
#include <net/addrconf.h>
#include <rdma/rdma_netlink.h>
#include <rdma/sroce-abi.h>

#include "sroce.h"
#include "icrc.h"
#include "odp.h"
#include "qp.h"

static LIST_HEAD(sroce_devs);
static DEFINE_MUTEX(sroce_devs_lock);

struct sroce_dev *sroce_dev_get_by_netdev(const struct net_device *ndev)
{
	struct sroce_dev *sdev, *found = NULL;

	rcu_read_lock();
	list_for_each_entry_rcu(sdev, &sroce_devs, list) {
		if (sdev->ndev == ndev && ib_device_try_get(&sdev->ibdev)) {
			found = sdev;
			break;
		}
	}
	rcu_read_unlock();
	return found;
}

/*
 * Each concern of the driver contributes its ib_device_ops and per-device
 * state here, before the device is registered. Add a concern by calling
 * its init (unwinding the earlier ones on failure) and ib_set_device_ops()
 * with its ops, and its cleanup in sroce_dev_cleanup_concerns().
 */
static int sroce_dev_init_concerns(struct sroce_dev *sdev)
{
	int err;

	err = sroce_verbs_dev_init(sdev);
	if (err)
		return err;
	ib_set_device_ops(&sdev->ibdev, &sroce_verbs_ops);

	err = sroce_transport_dev_init(sdev);
	if (err) {
		sroce_verbs_dev_cleanup(sdev);
		return err;
	}
	ib_set_device_ops(&sdev->ibdev, &sroce_transport_ops);

	err = sroce_net_open(sdev, sdev->ndev);
	if (err) {
		sroce_transport_dev_cleanup(sdev);
		sroce_verbs_dev_cleanup(sdev);
		return err;
	}
	ib_set_device_ops(&sdev->ibdev, &sroce_net_ops);
	return 0;
}

/* Reverse order of sroce_dev_init_concerns(); the device is unregistered. */
static void sroce_dev_cleanup_concerns(struct sroce_dev *sdev)
{
	sroce_net_port_release(sdev);
	sroce_transport_dev_cleanup(sdev);
	sroce_verbs_dev_cleanup(sdev);
}

/*
 * Called by ib_core once the device is unregistered (or when registration
 * failed), possibly concurrently with module unload: see the file comment.
 */
static void sroce_dealloc_driver(struct ib_device *ibdev)
{
	struct sroce_dev *sdev = to_sdev(ibdev);

	sroce_dev_cleanup_concerns(sdev);
	netdev_put(sdev->ndev, &sdev->ndev_tracker);

	mutex_lock(&sroce_devs_lock);
	sdev->dead = true;
	mutex_unlock(&sroce_devs_lock);
}

static ssize_t sroce_abi_version_show(struct device *dev,
				      struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%d\n", SROCE_ABI_VERSION);
}

/* Named by the uapi header, so the provider and driver agree by build. */
static struct device_attribute sroce_abi_version_attr = {
	.attr = { .name = SROCE_SYSFS_ABI_ATTR, .mode = 0444 },
	.show = sroce_abi_version_show,
};

static struct attribute *sroce_dev_attrs[] = {
	&sroce_abi_version_attr.attr,
	NULL,
};

static const struct attribute_group sroce_dev_attr_group = {
	.attrs = sroce_dev_attrs,
};

static const struct ib_device_ops sroce_dev_ops = {
	.owner = THIS_MODULE,
	.driver_id = RDMA_DRIVER_UNKNOWN,
	.uverbs_abi_ver = SROCE_ABI_VERSION,
	.device_group = &sroce_dev_attr_group,
	.dealloc_driver = sroce_dealloc_driver,
};

/*
 * Take the first device (the first dead one if dead_only) off the list.
 * Unlinked nodes are never relinked, so RCU readers walking past them
 * stay on the list; the memory itself is freed by ib_core after a grace
 * period.
 */
static struct sroce_dev *sroce_unlist_first(bool dead_only)
{
	struct sroce_dev *sdev, *found = NULL;

	mutex_lock(&sroce_devs_lock);
	list_for_each_entry(sdev, &sroce_devs, list) {
		if (!dead_only || sdev->dead) {
			list_del_rcu(&sdev->list);
			found = sdev;
			break;
		}
	}
	mutex_unlock(&sroce_devs_lock);
	return found;
}

/*
 * Drop the list's reference to an unlisted device. ib_unregister_device()
 * unregisters it if it still is registered, and otherwise returns only
 * after the thread that unregistered it has left sroce_dealloc_driver().
 */
static void sroce_release_dev(struct sroce_dev *sdev)
{
	ib_unregister_device(&sdev->ibdev);
	put_device(&sdev->ibdev.dev);
}

/* Free the entries of devices whose unregistration has completed. */
static void sroce_reap_dead(void)
{
	struct sroce_dev *sdev;

	while ((sdev = sroce_unlist_first(true)))
		sroce_release_dev(sdev);
}

/* The live sroce device on @ndev, if any. sroce_devs_lock held. */
static struct sroce_dev *sroce_dev_on(const struct net_device *ndev)
{
	struct sroce_dev *sdev;

	lockdep_assert_held(&sroce_devs_lock);
	list_for_each_entry(sdev, &sroce_devs, list)
		if (sdev->ndev == ndev && !sdev->dead)
			return sdev;
	return NULL;
}

struct sroce_stack_walk {
	struct net_device *stacked;	/* found: a netdev with a device */
	struct sroce_dev *owner;	/* its device */
};

static int sroce_stacked_owner(struct net_device *stacked,
			       struct netdev_nested_priv *priv)
{
	struct sroce_stack_walk *walk = priv->data;

	walk->owner = sroce_dev_on(stacked);
	walk->stacked = stacked;
	return walk->owner ? 1 : 0;	/* non-zero ends the walk */
}

/*
 * ib_core gives a RoCE port the GIDs of its netdev's upper devices
 * (macvlan, ipvlan, bond...) in every namespace. Two devices on one stack
 * would hold the same GIDs: rdma_cm could put a connection on one while
 * its packets arrive at the other. That holds across namespaces too (a
 * container's macvlan on the host's NIC): RDMA devices are shared by all
 * namespaces, and the device on the NIC serves the container. The device
 * of @ndev's stack, if any, and in @stacked its netdev, which that device
 * holds for as long as sroce_devs_lock (held) keeps it listed.
 */
static struct sroce_dev *sroce_stack_owner(struct net_device *ndev,
					   struct net_device **stacked)
{
	struct sroce_stack_walk walk = {};
	struct netdev_nested_priv priv = { .data = &walk };

	rcu_read_lock();
	netdev_walk_all_lower_dev_rcu(ndev, sroce_stacked_owner, &priv);
	if (!walk.owner)
		netdev_walk_all_upper_dev_rcu(ndev, sroce_stacked_owner, &priv);
	if (walk.owner)
		*stacked = walk.stacked;
	rcu_read_unlock();
	return walk.owner;
}

/*
 * Put sdev on the list unless its netdev, or one stacked under or on it,
 * already has a live sroce device: the check and the
 * insertion are one step, so two concurrent newlinks on one netdev cannot
 * both succeed. The list holds a device reference.
 */
static int sroce_claim_netdev(struct sroce_dev *sdev)
{
	struct net_device *stacked;
	struct sroce_dev *other;
	int err = 0;

	mutex_lock(&sroce_devs_lock);
	other = sroce_dev_on(sdev->ndev);
	if (other) {
		pr_err("%s already has RDMA device %s\n",
		       netdev_name(sdev->ndev), dev_name(&other->ibdev.dev));
		err = -EEXIST;
		goto out;
	}
	other = sroce_stack_owner(sdev->ndev, &stacked);
	if (other) {
		pr_err("%s is stacked with %s, whose RDMA device %s has its GIDs\n",
		       netdev_name(sdev->ndev), netdev_name(stacked),
		       dev_name(&other->ibdev.dev));
		err = -EOPNOTSUPP;
		goto out;
	}
	get_device(&sdev->ibdev.dev);
	list_add_tail_rcu(&sdev->list, &sroce_devs);
out:
	mutex_unlock(&sroce_devs_lock);
	return err;
}

static void sroce_unclaim_netdev(struct sroce_dev *sdev)
{
	mutex_lock(&sroce_devs_lock);
	list_del_rcu(&sdev->list);
	mutex_unlock(&sroce_devs_lock);
}

static void sroce_dev_setup_attrs(struct sroce_dev *sdev,
				  struct net_device *ndev)
{
	struct ib_device *ibdev = &sdev->ibdev;

	addrconf_addr_eui48((u8 *)&ibdev->node_guid, ndev->dev_addr);
	strscpy(ibdev->node_desc, "sroce", sizeof(ibdev->node_desc));
	ibdev->node_type = RDMA_NODE_IB_CA;
	ibdev->phys_port_cnt = 1;
	ibdev->num_comp_vectors = num_possible_cpus();
	/*
	 * User space finds the netdev of an RDMA device through
	 * /sys/class/infiniband/DEV/device/net/ (rdma-core's tests, udev
	 * naming): the NIC becomes the parent, as for a hardware device. A
	 * netdev without one (veth, bridge) leaves the device top-level.
	 */
	ibdev->dev.parent = ndev->dev.parent;
	/*
	 * The provider posts through mmapped rings; these write commands
	 * are its doorbell and its CQ arming, and ib_core disables them by
	 * default.
	 */
	ibdev->uverbs_cmd_mask |= BIT_ULL(IB_USER_VERBS_CMD_POST_SEND) |
				  BIT_ULL(IB_USER_VERBS_CMD_REQ_NOTIFY_CQ);
	sdev->port_state = sroce_port_state(ndev);
}

static int sroce_newlink(const char *ibdev_name, struct net_device *ndev)
{
	struct sroce_dev *sdev;
	int err;

	if (!strncmp(ibdev_name, "rxe", 3)) {
		pr_err("%s: rxe* device names belong to rdma_rxe\n",
		       ibdev_name);
		return -EINVAL;
	}
	if (ndev->type != ARPHRD_ETHER) {
		pr_err("%s: %s is not an Ethernet device\n", ibdev_name,
		       netdev_name(ndev));
		return -EINVAL;
	}
	/*
	 * ib_core gives a RoCE port the GIDs of its netdev and of that
	 * netdev's VLAN devices, none of a VLAN device's own: a device on
	 * one could never be addressed. RoCE over a VLAN is a device on the
	 * real netdev.
	 */
	if (is_vlan_dev(ndev)) {
		pr_err("%s: %s is a VLAN device: add it on %s, whose GIDs include the VLAN's\n",
		       ibdev_name, netdev_name(ndev),
		       netdev_name(vlan_dev_real_dev(ndev)));
		return -EOPNOTSUPP;
	}
	sroce_reap_dead();

	sdev = ib_alloc_device(sroce_dev, ibdev);
	if (!sdev)
		return -ENOMEM;
	sdev->ndev = ndev;
	netdev_hold(ndev, &sdev->ndev_tracker, GFP_KERNEL);
	sroce_dev_setup_attrs(sdev, ndev);

	err = sroce_claim_netdev(sdev);
	if (err)
		goto err_put_netdev;

	err = sroce_dev_init_concerns(sdev);
	if (err)
		goto err_unclaim;
	/* From here on, ib_dealloc_device() cleans up via dealloc_driver. */
	ib_set_device_ops(&sdev->ibdev, &sroce_dev_ops);

	err = ib_device_set_netdev(&sdev->ibdev, ndev, SROCE_PORT);
	if (err)
		goto err_dealloc;
	err = ib_register_device(&sdev->ibdev, ibdev_name, NULL);
	/*
	 * A taken name is the one -ENFILE of ib_core, which says nothing
	 * itself. Asked under its lock, unlike a lookup beforehand (which
	 * 7.2 no longer exports anyway).
	 */
	if (err == -ENFILE) {
		pr_err("%s: an RDMA device of that name exists\n", ibdev_name);
		err = -EEXIST;
	}
	if (err)
		goto err_dealloc;

	pr_info("%s: added on %s\n", dev_name(&sdev->ibdev.dev),
		netdev_name(ndev));
	return 0;

err_dealloc:
	sroce_unclaim_netdev(sdev);
	ib_dealloc_device(&sdev->ibdev);
	put_device(&sdev->ibdev.dev);
	return err;
err_unclaim:
	sroce_unclaim_netdev(sdev);
	put_device(&sdev->ibdev.dev);
err_put_netdev:
	netdev_put(ndev, &sdev->ndev_tracker);
	ib_dealloc_device(&sdev->ibdev);
	return err;
}

static struct rdma_link_ops sroce_link_ops = {
	.type = "sroce",
	.newlink = sroce_newlink,
};

/* Tell ib_core's clients when the port goes up or down with the carrier. */
static void sroce_port_update(struct sroce_dev *sdev)
{
	enum ib_port_state state = sroce_port_state(sdev->ndev);
	struct ib_event event = {
		.device = &sdev->ibdev,
		.element.port_num = SROCE_PORT,
	};

	ASSERT_RTNL();
	if (state == sdev->port_state)
		return;
	sdev->port_state = state;
	event.event = state == IB_PORT_ACTIVE ? IB_EVENT_PORT_ACTIVE :
						IB_EVENT_PORT_ERR;
	ib_dispatch_event(&event);
}

/*
 * The netdev is going away, and the device with it: users get
 * IB_EVENT_DEVICE_FATAL first, once (the netdev core repeats
 * NETDEV_UNREGISTER while references remain). Unregistration waits for
 * user-space contexts to close, and this event is what tells them to.
 */
static void sroce_dev_fatal(struct sroce_dev *sdev)
{
	struct ib_event event = {
		.device = &sdev->ibdev,
		.element.port_num = SROCE_PORT,
		.event = IB_EVENT_DEVICE_FATAL,
	};

	ASSERT_RTNL();
	if (sdev->fatal_sent)
		return;
	sdev->fatal_sent = true;
	ib_dispatch_event(&event);
}

/*
 * A device still registering is not found here (ib_device_try_get fails);
 * the netdev core repeats NETDEV_UNREGISTER until every reference to the
 * netdev is gone, so such a device is removed on a later round.
 */
static int sroce_netdev_event(struct notifier_block *nb, unsigned long event,
			      void *ptr)
{
	struct net_device *ndev = netdev_notifier_info_to_dev(ptr);
	struct sroce_dev *sdev;

	sroce_net_upper_event(ndev, event, ptr);
	switch (event) {
	case NETDEV_UNREGISTER:
	case NETDEV_UP:
	case NETDEV_DOWN:
	case NETDEV_CHANGE:
		break;
	default:
		return NOTIFY_DONE;
	}

	sdev = sroce_dev_get_by_netdev(ndev);
	if (!sdev)
		return NOTIFY_DONE;

	if (event == NETDEV_UNREGISTER) {
		pr_info("%s: removing, %s is going away\n",
			dev_name(&sdev->ibdev.dev), netdev_name(ndev));
		sroce_dev_fatal(sdev);
		/* Synchronously: the netns may go right after the netdev. */
		sroce_net_close(sdev);
		sroce_qp_release_routes(sdev);
		ib_unregister_device_queued(&sdev->ibdev);
	} else {
		sroce_port_update(sdev);
	}
	ib_device_put(&sdev->ibdev);
	return NOTIFY_OK;
}

static struct notifier_block sroce_netdev_notifier = {
	.notifier_call = sroce_netdev_event,
};

static int __init sroce_init(void)
{
	int err;

	sroce_odp_module_init();
	sroce_icrc_module_init();
	err = sroce_net_module_init();
	if (err)
		goto err_icrc;
	err = register_netdevice_notifier(&sroce_netdev_notifier);
	if (err) {
		sroce_net_module_exit();
		goto err_icrc;
	}
	rdma_link_register(&sroce_link_ops);
	return 0;

err_icrc:
	sroce_icrc_module_exit();
	return err;
}

/*
 * Devices go before the notifier: unregistering a netdevice notifier
 * replays NETDEV_DOWN/UNREGISTER for every netdev, which would queue
 * removals and report ports down for no reason.
 */
static void __exit sroce_exit(void)
{
	struct sroce_dev *sdev;

	/* Waits for running newlinks; none can start after this. */
	rdma_link_unregister(&sroce_link_ops);

	while ((sdev = sroce_unlist_first(false)))
		sroce_release_dev(sdev);

	unregister_netdevice_notifier(&sroce_netdev_notifier);
	sroce_net_module_exit();
	/* QP paths that modify_qp replaced are freed by RCU callbacks. */
	rcu_barrier();
	sroce_icrc_module_exit();
}

module_init(sroce_init);
module_exit(sroce_exit);

MODULE_DESCRIPTION("Software RoCEv2 RDMA device");
MODULE_LICENSE("GPL");
MODULE_ALIAS_RDMA_LINK("sroce");
