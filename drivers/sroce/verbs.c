// SPDX-License-Identifier: GPL-2.0
/*
 * Device and port attributes, user contexts, protection domains and the
 * mmap entries through which user space maps the rings.
 *
 * The GID table is ib_core's: the port's netdev is set with
 * ib_device_set_netdev() and the port is RoCEv2-only, so ib_core fills the
 * table from the netdev's IPv4/IPv6 addresses and keeps it current. sroce
 * needs no add_gid/del_gid hooks because it has no hardware table to
 * mirror; the transport reads GIDs through the sgid_attr of each AH/QP.
 */
#include <linux/cred.h>
#include <linux/ethtool.h>
#include <linux/mm.h>
#include <linux/rtnetlink.h>
#include <linux/vmalloc.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_mad.h>
#include <rdma/sroce-abi.h>

#include "sroce.h"
#include "cq.h"
#include "mr.h"

/* No IEEE OUI: all ones, as other software RDMA devices report. */
#define SROCE_VENDOR_ID 0xffffff

enum ib_port_state sroce_port_state(const struct net_device *ndev)
{
	return netif_running(ndev) && netif_carrier_ok(ndev) ?
	       IB_PORT_ACTIVE : IB_PORT_DOWN;
}

/*
 * The largest IB MTU whose packets fit the netdev's MTU with the biggest
 * RoCEv2 headers (iboe_get_mtu() subtracts IPv6, UDP, BTH, the largest
 * extension headers and the ICRC). Below 256 bytes RoCE cannot carry a
 * packet at all; report the smallest MTU rather than an invalid value.
 */
static enum ib_mtu sroce_active_mtu(const struct net_device *ndev)
{
	enum ib_mtu mtu = iboe_get_mtu(READ_ONCE(ndev->mtu));

	return mtu ? mtu : IB_MTU_256;
}

#define SROCE_ODP_CAPS_UC \
	(IB_ODP_SUPPORT_SEND | IB_ODP_SUPPORT_RECV | IB_ODP_SUPPORT_WRITE | \
	 IB_ODP_SUPPORT_SRQ_RECV)
#define SROCE_ODP_CAPS_RC \
	(SROCE_ODP_CAPS_UC | IB_ODP_SUPPORT_READ | IB_ODP_SUPPORT_ATOMIC | \
	 SROCE_ODP_SUPPORT_PLACEMENT)

/*
 * Features appear in device_cap_flags/atomic_cap/max_srq/... only once
 * they are implemented; the numeric limits are the transport's design
 * limits (sroce.h) that every verb enforces, the object counts lowered by
 * the module parameters the device was added with (limits.c).
 */
static int sroce_query_device(struct ib_device *ibdev,
			      struct ib_device_attr *attr,
			      struct ib_udata *udata)
{
	const u32 *max = to_sdev(ibdev)->limits.max;

	if (udata && udata->inlen &&
	    !ib_is_udata_cleared(udata, 0, udata->inlen))
		return -EINVAL;

	*attr = (struct ib_device_attr) {
		.sys_image_guid = ibdev->node_guid,
		.max_mr_size = SROCE_MAX_MR_SIZE,
		.page_size_cap = PAGE_SIZE,
		.vendor_id = SROCE_VENDOR_ID,
		.max_qp = max[SROCE_OBJ_QP],
		.max_qp_wr = SROCE_MAX_QP_WR,
		/*
		 * REG_MR, LOCAL_INV and SEND with Invalidate (mr.c); memory
		 * windows of type 1 and 2B (mw.c); ATOMIC WRITE; FLUSH to
		 * global visibility where MRs can grant it, never to
		 * persistence (compat.h, resp.c); XRC (srq.c, resp.c)
		 */
		.device_cap_flags = IB_DEVICE_SYS_IMAGE_GUID |
				    IB_DEVICE_XRC |
				    IB_DEVICE_PORT_ACTIVE_EVENT |
				    IB_DEVICE_MEM_MGT_EXTENSIONS |
				    IB_DEVICE_MEM_WINDOW |
				    IB_DEVICE_MEM_WINDOW_TYPE_2B |
				    SROCE_DEVICE_ATOMIC_WRITE |
				    (SROCE_HAVE_FLUSH_ACCESS ?
				     SROCE_DEVICE_FLUSH_GLOBAL : 0),
		.max_fast_reg_page_list_len = SROCE_MAX_FAST_REG_PAGES,
		/* completion timestamps (cq.c): a 64-bit clock in ns */
		.timestamp_mask = U64_MAX,
		.hca_core_clock = SROCE_CLOCK_KHZ,
		.kernel_cap_flags = IBK_ALLOW_USER_UNREG | IBK_ON_DEMAND_PAGING,
		/*
		 * ODP MRs (odp.c) for every access of RC and UC; UD sends
		 * only: a UD receive that finds its ODP pages missing is
		 * dropped (RC answers RNR NAK and the peer retries).
		 * Implicit MRs (the whole address space) too.
		 */
		.odp_caps = {
			.general_caps = IB_ODP_SUPPORT |
					IB_ODP_SUPPORT_IMPLICIT,
			.per_transport_caps = {
				.rc_odp_caps = SROCE_ODP_CAPS_RC,
				.uc_odp_caps = SROCE_ODP_CAPS_UC,
				.ud_odp_caps = IB_ODP_SUPPORT_SEND,
				/* what rdma-core's suite checks over XRC */
				.xrc_odp_caps = IB_ODP_SUPPORT_SEND |
						IB_ODP_SUPPORT_SRQ_RECV,
			},
		},
		.max_send_sge = SROCE_MAX_SGE,
		.max_recv_sge = SROCE_MAX_SGE,
		.max_sge_rd = SROCE_MAX_SGE,
		.max_cq = max[SROCE_OBJ_CQ],
		.max_cqe = SROCE_MAX_CQE,
		.max_mr = max[SROCE_OBJ_MR],
		.max_mw = max[SROCE_OBJ_MW],
		.max_pd = max[SROCE_OBJ_PD],
		.max_qp_rd_atom = SROCE_MAX_RD_ATOMIC,
		.max_qp_init_rd_atom = SROCE_MAX_RD_ATOMIC,
		.max_res_rd_atom = SROCE_MAX_RD_ATOMIC * max[SROCE_OBJ_QP],
		/*
		 * 64-bit CAS/FAA are CPU atomics on the target memory, which
		 * would justify GLOB; HCA (atomic among this device's QPs) is
		 * the weaker promise RoCE hardware and rxe make, and the one
		 * UCX up to 1.13 looks for before it uses device atomics.
		 */
		.atomic_cap = IB_ATOMIC_HCA,
		.masked_atomic_cap = IB_ATOMIC_NONE,
		.max_ah = max[SROCE_OBJ_AH],
		.max_srq = max[SROCE_OBJ_SRQ],
		.max_srq_wr = SROCE_MAX_SRQ_WR,
		.max_srq_sge = SROCE_MAX_SGE,
		/* UD multicast (mcast.c) */
		.max_mcast_grp = SROCE_MAX_MCAST_GRP,
		.max_mcast_qp_attach = SROCE_MAX_MCAST_QP_ATTACH,
		.max_total_mcast_qp_attach = SROCE_MAX_TOT_MCAST_QP_ATTACH,
		.max_pkeys = 1,
		.local_ca_ack_delay = SROCE_LOCAL_CA_ACK_DELAY,
	};
	return 0;
}

/*
 * The IB rate nearest the netdev's link speed, for consumers that budget
 * by port rate. ib_get_eth_speed() would do, but it logs a warning on every
 * query for netdevs without a known speed (virtio, veth): those are
 * reported as the slowest rate, silently.
 */
static const struct {
	u32 max_mbps;
	u16 speed;
	u8 width;
} sroce_rates[] = {
	{ 2500, IB_SPEED_SDR, IB_WIDTH_1X },
	{ 5000, IB_SPEED_DDR, IB_WIDTH_1X },
	{ 10000, IB_SPEED_QDR, IB_WIDTH_1X },
	{ 20000, IB_SPEED_DDR, IB_WIDTH_4X },
	{ 25000, IB_SPEED_EDR, IB_WIDTH_1X },
	{ 40000, IB_SPEED_QDR, IB_WIDTH_4X },
	{ 50000, IB_SPEED_HDR, IB_WIDTH_1X },
	{ 100000, IB_SPEED_EDR, IB_WIDTH_4X },
	{ 200000, IB_SPEED_HDR, IB_WIDTH_4X },
	{ U32_MAX, IB_SPEED_NDR, IB_WIDTH_4X },
};

static void sroce_port_rate(struct net_device *ndev, struct ib_port_attr *attr)
{
	struct ethtool_link_ksettings ks;
	u32 mbps = 0;
	int i;

	rtnl_lock();
	if (ndev->reg_state == NETREG_REGISTERED &&
	    !__ethtool_get_link_ksettings(ndev, &ks) &&
	    ks.base.speed != SPEED_UNKNOWN)
		mbps = ks.base.speed;
	rtnl_unlock();

	for (i = 0; mbps > sroce_rates[i].max_mbps; i++)
		;
	attr->active_speed = sroce_rates[i].speed;
	attr->active_width = sroce_rates[i].width;
}

static int sroce_query_port(struct ib_device *ibdev, u32 port,
			    struct ib_port_attr *attr)
{
	struct net_device *ndev = to_sdev(ibdev)->ndev;

	attr->state = sroce_port_state(ndev);
	if (attr->state == IB_PORT_ACTIVE)
		attr->phys_state = IB_PORT_PHYS_STATE_LINK_UP;
	else if (netif_running(ndev))
		attr->phys_state = IB_PORT_PHYS_STATE_POLLING;
	else
		attr->phys_state = IB_PORT_PHYS_STATE_DISABLED;
	attr->max_mtu = IB_MTU_4096;
	attr->active_mtu = sroce_active_mtu(ndev);
	attr->gid_tbl_len = SROCE_GID_TABLE_LEN;
	attr->ip_gids = true;
	attr->port_cap_flags = IB_PORT_CM_SUP;
	attr->max_msg_sz = SROCE_MAX_MSG_SIZE;
	attr->pkey_tbl_len = 1;
	attr->max_vl_num = 1;
	sroce_port_rate(ndev, attr);
	return 0;
}

static int sroce_query_pkey(struct ib_device *ibdev, u32 port, u16 index,
			    u16 *pkey)
{
	if (index)
		return -EINVAL;
	*pkey = IB_DEFAULT_PKEY_FULL;
	return 0;
}

/*
 * RoCEv2 only: sroce does not speak RoCEv1 (Ethertype 0x8915), so no v1
 * GIDs may appear in the table, or rdma_cm would pick one by default.
 */
static int sroce_get_port_immutable(struct ib_device *ibdev, u32 port,
				    struct ib_port_immutable *immutable)
{
	immutable->core_cap_flags = RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP;
	immutable->pkey_tbl_len = 1;
	immutable->gid_tbl_len = SROCE_GID_TABLE_LEN;
	immutable->max_mad_size = IB_MGMT_MAD_SIZE;
	return 0;
}

static enum rdma_link_layer sroce_get_link_layer(struct ib_device *ibdev,
						 u32 port)
{
	return IB_LINK_LAYER_ETHERNET;
}

static int sroce_alloc_ucontext(struct ib_ucontext *ibuc,
				struct ib_udata *udata)
{
	struct sroce_alloc_ucontext_resp resp = {
		.abi_version = SROCE_ABI_VERSION,
		.max_inline_data = SROCE_MAX_INLINE_DATA,
	};
	struct sroce_ucontext *uctx = to_suctx(ibuc);

	/* the real uid, as the kernel's own per-user counts (RLIMIT_NPROC) */
	uctx->uid = current_uid();
	/*
	 * Nothing here may fail: ib_core's ioctl GET_CONTEXT frees a context
	 * its driver refused without dropping the task reference the
	 * context's restrack entry took (6.1 to at least 7.2), so each
	 * refusal would leak a task_struct for any local user. Hence the
	 * uid's entry is made at the first charge, a request payload (none
	 * is defined; a later ABI would say in the response that it read
	 * one) is not looked at, and a response the caller gave no room for
	 * is the caller's loss: its provider reads no ABI version.
	 */
	if (ib_copy_to_udata(udata, &resp, min(sizeof(resp), udata->outlen)))
		ibdev_dbg(ibuc->device, "context response not written\n");
	return 0;
}

/*
 * ib_core answers UVERBS_METHOD_QUERY_CONTEXT (which ibv_import_device
 * issues on the shared file) only for drivers with this op. A context has
 * no driver-specific state to report: every mapped ring is described by
 * its own object's create response.
 */
static int sroce_query_ucontext(struct ib_ucontext *ibuc,
				struct uverbs_attr_bundle *attrs)
{
	return 0;
}

/* Objects mapping memory removed their entries when they were destroyed. */
static void sroce_dealloc_ucontext(struct ib_ucontext *ibuc)
{
	struct sroce_user *user = to_suctx(ibuc)->user;

	if (user)
		sroce_user_put(&to_sdev(ibuc->device)->limits, user);
}

static int sroce_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct sroce_dev *sdev = to_sdev(ibpd->device);
	struct sroce_pd *pd = to_spd(ibpd);
	struct sroce_alloc_pd_resp resp = {};
	int pdn, err;

	pd->user = sroce_udata_user(udata);
	err = sroce_obj_charge(&sdev->limits, pd->user, SROCE_OBJ_PD);
	if (err)
		return err;
	/* pdn 0 is never handed out, so a zeroed pdn is never a valid PD. */
	pdn = ida_alloc_range(&sdev->pdn_ida, 1, SROCE_MAX_PD, GFP_KERNEL);
	if (pdn < 0) {
		err = pdn == -ENOSPC ? -ENOMEM : pdn;
		goto err_uncharge;
	}
	pd->pdn = pdn;

	if (udata) {
		resp.pdn = pdn;
		err = ib_copy_to_udata(udata, &resp,
				       min(sizeof(resp), udata->outlen));
		if (err)
			goto err_free;
	}
	return 0;

err_free:
	ida_free(&sdev->pdn_ida, pdn);
err_uncharge:
	sroce_obj_uncharge(&sdev->limits, pd->user, SROCE_OBJ_PD);
	return err;
}

static int sroce_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct sroce_dev *sdev = to_sdev(ibpd->device);

	ida_free(&sdev->pdn_ida, to_spd(ibpd)->pdn);
	sroce_obj_uncharge(&sdev->limits, to_spd(ibpd)->user, SROCE_OBJ_PD);
	return 0;
}

/*
 * XRC domains hold no state of their own here: ib_core shares them
 * between processes (by inode), counts their users and keeps their
 * target QPs; XRC SRQs and target QPs point at them (srq.c, qp.c). They
 * are charged as PDs, so a user cannot create them without bound.
 */
static int sroce_alloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata)
{
	struct sroce_xrcd *xrcd = to_sxrcd(ibxrcd);

	if (udata && udata->inlen)
		return -EINVAL;
	xrcd->user = sroce_udata_user(udata);
	return sroce_obj_charge(&to_sdev(ibxrcd->device)->limits, xrcd->user,
				SROCE_OBJ_PD);
}

static int sroce_dealloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata)
{
	sroce_obj_uncharge(&to_sdev(ibxrcd->device)->limits,
			   to_sxrcd(ibxrcd)->user, SROCE_OBJ_PD);
	return 0;
}

struct sroce_mmap_entry *sroce_mmap_insert(struct sroce_ucontext *uctx,
					   void *buf, size_t len, u64 *key)
{
	struct sroce_mmap_entry *entry;
	int err;

	if (!len)
		return ERR_PTR(-EINVAL);

	entry = kzalloc(sizeof(*entry), GFP_KERNEL);
	if (!entry)
		return ERR_PTR(-ENOMEM);
	entry->buf = buf;

	err = rdma_user_mmap_entry_insert(&uctx->ibuc, &entry->rdma,
					  PAGE_ALIGN(len));
	if (err) {
		kfree(entry);
		return ERR_PTR(err);
	}
	*key = rdma_user_mmap_get_offset(&entry->rdma);
	return entry;
}

void sroce_mmap_remove(struct sroce_mmap_entry *entry)
{
	rdma_user_mmap_entry_remove(&entry->rdma);
}

/*
 * Insert the ring's pages one by one, as remap_vmalloc_range() would; that
 * one refuses buffers not from vmalloc_user(), which cannot charge them to
 * the process (queue.c). Each inserted page holds a reference, so the
 * mapping stays valid even after mmap_free has freed the buffer. A failure
 * part way leaves a partial mapping that mmap's caller unmaps.
 */
static int sroce_map_ring(struct vm_area_struct *vma, void *buf)
{
	unsigned long off, len = vma->vm_end - vma->vm_start;
	int err;

	for (off = 0; off < len; off += PAGE_SIZE) {
		err = vm_insert_page(vma, vma->vm_start + off,
				     vmalloc_to_page(buf + off));
		if (err)
			return err;
	}
	sroce_vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP);
	return 0;
}

/*
 * Rings are shared between the kernel and one process: a private (COW)
 * mapping would silently stop sharing, and nothing in them is code.
 * rdma_user_mmap_entry_get() admits only a mapping of the entry's exact
 * length, so every page mapped belongs to the buffer.
 */
static int sroce_mmap(struct ib_ucontext *ibuc, struct vm_area_struct *vma)
{
	struct rdma_user_mmap_entry *rdma;
	int err;

	if (!(vma->vm_flags & VM_SHARED) || (vma->vm_flags & VM_EXEC))
		return -EINVAL;

	rdma = rdma_user_mmap_entry_get(ibuc, vma);
	if (!rdma)
		return -EINVAL;

	sroce_vm_flags_clear(vma, VM_MAYEXEC);
	err = sroce_map_ring(vma, to_smmap(rdma)->buf);
	rdma_user_mmap_entry_put(rdma);
	return err;
}

static void sroce_mmap_free(struct rdma_user_mmap_entry *rdma)
{
	struct sroce_mmap_entry *entry = to_smmap(rdma);

	vfree(entry->buf);
	kfree(entry);
}

/*
 * The device is going away (rdma link delete, netdev removal, rmmod) while
 * a process still has it open. Offering this op is what lets ib_core
 * destroy that process's objects and unregister the device at once,
 * instead of waiting for the process to close it (a process that never
 * does would block the teardown forever). The process's ring mappings need
 * no zapping: each mapped page holds its own reference (sroce_mmap()), no
 * device register lies behind them, and with the objects destroyed the
 * kernel reads and writes them no more, so they are plain memory of that
 * process until it unmaps them. Its later verbs fail with EIO (ib_core).
 */
static void sroce_disassociate_ucontext(struct ib_ucontext *ibuc)
{
}

int sroce_verbs_dev_init(struct sroce_dev *sdev)
{
	sroce_limits_init(&sdev->limits);
	ida_init(&sdev->pdn_ida);
	return 0;
}

void sroce_verbs_dev_cleanup(struct sroce_dev *sdev)
{
	ida_destroy(&sdev->pdn_ida);
	sroce_limits_cleanup(&sdev->limits);
}

const struct ib_device_ops sroce_verbs_ops = {
	.query_device = sroce_query_device,
	.query_port = sroce_query_port,
	.query_pkey = sroce_query_pkey,
	.get_port_immutable = sroce_get_port_immutable,
	.get_link_layer = sroce_get_link_layer,
	.alloc_ucontext = sroce_alloc_ucontext,
	.dealloc_ucontext = sroce_dealloc_ucontext,
	.query_ucontext = sroce_query_ucontext,
	.disassociate_ucontext = sroce_disassociate_ucontext,
	.alloc_pd = sroce_alloc_pd,
	.dealloc_pd = sroce_dealloc_pd,
	.alloc_xrcd = sroce_alloc_xrcd,
	.dealloc_xrcd = sroce_dealloc_xrcd,
	.mmap = sroce_mmap,
	.mmap_free = sroce_mmap_free,

	INIT_RDMA_OBJ_SIZE(ib_ucontext, sroce_ucontext, ibuc),
	INIT_RDMA_OBJ_SIZE(ib_pd, sroce_pd, ibpd),
	INIT_RDMA_OBJ_SIZE(ib_xrcd, sroce_xrcd, ibxrcd),
};
