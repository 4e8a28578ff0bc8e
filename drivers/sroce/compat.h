/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Every difference between the kernels sroce builds for (Debian 12's 6.1
 * and 6.12 series, Debian unstable's 7.2) lives here, so the rest of the
 * driver is written once against the newest API.
 */
#ifndef SROCE_COMPAT_H
#define SROCE_COMPAT_H

#include <linux/bits.h>
#include <linux/export.h>
#include <linux/hmm.h>
#include <linux/mm.h>
#include <linux/timer.h>
#include <linux/version.h>
#include <net/ipv6.h>
#include <net/udp_tunnel.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_umem_odp.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>

/*
 * Functions the KUnit module (tests/kunit) tests without them being
 * static inline are exported into a namespace of their own, and only when
 * the kernel has KUnit at all.
 */
/*
 * The only version test in the driver; tools/lint lets checkpatch's
 * LINUX_VERSION_CODE warning pass for this file alone.
 */
#define SROCE_KERNEL_AT_LEAST(major, minor) \
	(KERNEL_VERSION(major, minor, 0) <= LINUX_VERSION_CODE)

/*
 * The kernels whose API this header knows: 6.1 to 6.12, and 7.2. The
 * series between them changed ib_core's driver API step by step (the
 * 7.2 changes below are gated at 7.2 because that is where they were
 * checked), and a newer kernel may change it again: refuse both here,
 * with one message, rather than with a wall of errors further on.
 */
#if !SROCE_KERNEL_AT_LEAST(6, 1) || \
	(SROCE_KERNEL_AT_LEAST(6, 13) && !SROCE_KERNEL_AT_LEAST(7, 2)) || \
	SROCE_KERNEL_AT_LEAST(7, 3)
#error "sroce builds for Linux 6.1 to 6.12 and 7.2 only: unknown RDMA driver API"
#endif

#if IS_ENABLED(CONFIG_KUNIT)
#define SROCE_EXPORT_FOR_KUNIT(sym) EXPORT_SYMBOL_NS_GPL(sym, SROCE_KUNIT)
#else
#define SROCE_EXPORT_FOR_KUNIT(sym)
#endif

/*
 * ib_device_ops.create_cq takes the whole uverbs attribute bundle since
 * 6.10 (NULL for kernel consumers), a bare udata before. Declare create_cq
 * as
 *	int sroce_create_cq(struct ib_cq *ibcq,
 *			    const struct ib_cq_init_attr *attr,
 *			    struct sroce_create_cq_arg *arg)
 * and get the udata with sroce_create_cq_udata(arg).
 */
#if SROCE_KERNEL_AT_LEAST(6, 10)
#define sroce_create_cq_arg uverbs_attr_bundle

static inline struct ib_udata *
sroce_create_cq_udata(struct sroce_create_cq_arg *attrs)
{
	return attrs ? &attrs->driver_udata : NULL;
}
#else
#define sroce_create_cq_arg ib_udata

static inline struct ib_udata *
sroce_create_cq_udata(struct sroce_create_cq_arg *udata)
{
	return udata;
}
#endif

/* vm_flags became read-only in 6.3; writers go through helpers. */
static inline void sroce_vm_flags_clear(struct vm_area_struct *vma,
					vm_flags_t flags)
{
#if SROCE_KERNEL_AT_LEAST(6, 3)
	vm_flags_clear(vma, flags);
#else
	vma->vm_flags &= ~flags;
#endif
}

static inline void sroce_vm_flags_set(struct vm_area_struct *vma,
				      vm_flags_t flags)
{
#if SROCE_KERNEL_AT_LEAST(6, 3)
	vm_flags_set(vma, flags);
#else
	vma->vm_flags |= flags;
#endif
}

/*
 * The memory placement extensions (IBTA 1.5 annex A19: ATOMIC WRITE and
 * FLUSH) entered ib_verbs.h in 6.2. Their numbers are uverbs ABI, equal
 * on every kernel, so the driver uses these names everywhere; 6.1 has
 * none of them:
 * - its ib_check_mr_access() refuses the FLUSH access bits (beyond
 *   IB_ACCESS_SUPPORTED) before reg_user_mr is called, so no MR on 6.1
 *   ever grants FLUSH and the FLUSH capability is not advertised there;
 * - its ib_uverbs copies device_cap_flags whole into device_cap_flags_ex,
 *   so the ATOMIC WRITE capability (which needs only REMOTE_WRITE on the
 *   MR) reaches user space on 6.1 as well.
 */
#define SROCE_WR_FLUSH			14	/* IB_UVERBS_WR_FLUSH */
#define SROCE_WR_ATOMIC_WRITE		15	/* IB_UVERBS_WR_ATOMIC_WRITE */
#define SROCE_UVERBS_WC_FLUSH		8	/* IB_UVERBS_WC_FLUSH */
#define SROCE_UVERBS_WC_ATOMIC_WRITE	9	/* IB_UVERBS_WC_ATOMIC_WRITE */
#define SROCE_ACCESS_FLUSH_GLOBAL	BIT(8)	/* IB_ACCESS_FLUSH_GLOBAL */
#define SROCE_ACCESS_FLUSH_PERSISTENT	BIT(9)	/* IB_ACCESS_FLUSH_PERSISTENT */
#define SROCE_DEVICE_FLUSH_GLOBAL	BIT_ULL(38)
#define SROCE_DEVICE_FLUSH_PERSISTENT	BIT_ULL(39)
#define SROCE_DEVICE_ATOMIC_WRITE	BIT_ULL(40)
/* FETH placement type bits and selectivity levels (A19.4.1) */
#define SROCE_FLUSH_GLOBAL		BIT(0)
#define SROCE_FLUSH_PERSISTENT		BIT(1)
#define SROCE_FLUSH_RANGE		0
#define SROCE_FLUSH_MR			1

#if SROCE_KERNEL_AT_LEAST(6, 2)
static_assert(SROCE_WR_FLUSH == IB_WR_FLUSH);
static_assert(SROCE_WR_ATOMIC_WRITE == IB_WR_ATOMIC_WRITE);
static_assert(SROCE_UVERBS_WC_FLUSH == IB_WC_FLUSH);
static_assert(SROCE_UVERBS_WC_ATOMIC_WRITE == IB_WC_ATOMIC_WRITE);
static_assert(SROCE_ACCESS_FLUSH_GLOBAL == IB_ACCESS_FLUSH_GLOBAL);
static_assert(SROCE_ACCESS_FLUSH_PERSISTENT == IB_ACCESS_FLUSH_PERSISTENT);
static_assert(SROCE_DEVICE_FLUSH_GLOBAL == IB_DEVICE_FLUSH_GLOBAL);
static_assert(SROCE_DEVICE_FLUSH_PERSISTENT == IB_DEVICE_FLUSH_PERSISTENT);
static_assert(SROCE_DEVICE_ATOMIC_WRITE == IB_DEVICE_ATOMIC_WRITE);
static_assert(SROCE_FLUSH_GLOBAL == IB_FLUSH_GLOBAL);
static_assert(SROCE_FLUSH_PERSISTENT == IB_FLUSH_PERSISTENT);
static_assert(SROCE_FLUSH_MR == IB_FLUSH_MR);
/* MRs can be registered with FLUSH access: advertise FLUSH */
#define SROCE_HAVE_FLUSH_ACCESS		1
#else
#define SROCE_HAVE_FLUSH_ACCESS		0
#endif

/*
 * crc32_le() is the architecture's fastest CRC-32 (PCLMULQDQ folding on
 * x86) from 6.14 on; before, it is the generic table code, about 20 times
 * slower per byte on x86, and only the crypto API's "crc32" reaches
 * crc32-pclmul (as rdma_rxe does). icrc.c asks the crypto API where
 * crc32_le() is generic.
 */
#define SROCE_CRC32_VIA_CRYPTO		(!SROCE_KERNEL_AT_LEAST(6, 14))

/*
 * Resizing a CQ became user space's business only in 7.2
 * (ib_device_ops.resize_user_cq, an unsigned count); resize_cq took an
 * int before. sroce_resize_cq() takes the unsigned count (a negative int
 * from an older kernel turns into a count beyond SROCE_MAX_CQE, refused);
 * the ops table names it with SROCE_OPS_RESIZE_CQ.
 */
int sroce_resize_cq(struct ib_cq *ibcq, unsigned int cqe,
		    struct ib_udata *udata);
#if SROCE_KERNEL_AT_LEAST(7, 2)
#define SROCE_OPS_RESIZE_CQ	.resize_user_cq = sroce_resize_cq
#else
static inline int sroce_resize_cq_int(struct ib_cq *ibcq, int cqe,
				      struct ib_udata *udata)
{
	return sroce_resize_cq(ibcq, cqe, udata);
}

#define SROCE_OPS_RESIZE_CQ	.resize_cq = sroce_resize_cq_int
#endif

/*
 * ODP capability bits for ATOMIC WRITE and FLUSH, which 6.12's ib_verbs.h
 * lacks (checked at 7.2). The responder runs both on ODP MRs: ATOMIC
 * WRITE faults its page in as a WRITE does (RNR meanwhile), FLUSH touches
 * no page.
 */
#if SROCE_KERNEL_AT_LEAST(7, 2)
#define SROCE_ODP_SUPPORT_PLACEMENT \
	(IB_ODP_SUPPORT_ATOMIC_WRITE | IB_ODP_SUPPORT_FLUSH)
#else
#define SROCE_ODP_SUPPORT_PLACEMENT	0
#endif

/*
 * reg_user_mr gained a DMA handle (TPH steering hints) argument; only
 * devices with alloc_dmah, which sroce lacks, ever get one. Older
 * kernels have no struct ib_dmah: sroce_reg_user_mr() is called with
 * NULL there. The ops table names it with SROCE_OPS_REG_USER_MR.
 */
struct ib_dmah;
struct ib_mr *sroce_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
				u64 iova, int access, struct ib_dmah *dmah,
				struct ib_udata *udata);
#if SROCE_KERNEL_AT_LEAST(7, 2)
#define SROCE_OPS_REG_USER_MR	.reg_user_mr = sroce_reg_user_mr
#else
static inline struct ib_mr *
sroce_reg_user_mr_nodmah(struct ib_pd *ibpd, u64 start, u64 length, u64 iova,
			 int access, struct ib_udata *udata)
{
	return sroce_reg_user_mr(ibpd, start, length, iova, access, NULL,
				 udata);
}

#define SROCE_OPS_REG_USER_MR	.reg_user_mr = sroce_reg_user_mr_nodmah
#endif

/*
 * Pinning user memory: ib_umem_get() became ib_umem_get_va() (beside the
 * new ways to pin a buffer user space describes by a dma-buf or an
 * attribute) in 7.2. Same arguments, same accounting.
 */
static inline struct ib_umem *sroce_umem_get(struct ib_device *device,
					     unsigned long addr, size_t size,
					     int access)
{
#if SROCE_KERNEL_AT_LEAST(7, 2)
	return ib_umem_get_va(device, addr, size, access);
#else
	return ib_umem_get(device, addr, size, access);
#endif
}

/*
 * IPv6 can no longer be a module in 7.2 and ipv6_stub is gone: route
 * through ip6_dst_lookup_flow() directly there. Before, through the
 * stub, which works whether IPv6 is built in, a module or absent.
 */
#if SROCE_KERNEL_AT_LEAST(7, 2)
static inline struct dst_entry *sroce_ip6_route(struct net *net,
						struct flowi6 *fl6)
{
	return ip6_dst_lookup_flow(net, NULL, fl6, NULL);
}
#else
#include <net/ipv6_stubs.h>

static inline struct dst_entry *sroce_ip6_route(struct net *net,
						struct flowi6 *fl6)
{
	return ipv6_stub->ipv6_dst_lookup_flow(net, NULL, fl6, NULL);
}
#endif

/*
 * The UDP tunnel helpers take the struct sock in 7.2, the struct socket
 * before; sroce keeps the socket udp_sock_create() gave it.
 */
static inline void sroce_udp_tunnel_setup(struct net *net, struct socket *sock,
					  struct udp_tunnel_sock_cfg *cfg)
{
#if SROCE_KERNEL_AT_LEAST(7, 2)
	setup_udp_tunnel_sock(net, sock->sk, cfg);
#else
	setup_udp_tunnel_sock(net, sock, cfg);
#endif
}

static inline void sroce_udp_tunnel_release(struct socket *sock)
{
#if SROCE_KERNEL_AT_LEAST(7, 2)
	udp_tunnel_sock_release(sock->sk);
#else
	udp_tunnel_sock_release(sock);
#endif
}

/* from_timer() was renamed timer_container_of() in 6.16. */
#ifndef timer_container_of
#define timer_container_of(var, callback_timer, timer_fieldname) \
	from_timer(var, callback_timer, timer_fieldname)
#endif

/*
 * ODP page state. Up to 6.12 ib_umem_odp keeps, per page_shift unit, a
 * DMA address with access bits in dma_list (for a device without DMA the
 * kernel address). 7.2 keeps HMM PFNs with HMM_PFN_VALID/WRITE in
 * map.pfn_list, one per PAGE_SIZE, but unmaps one entry per page_shift
 * unit: sroce keeps ODP MRs at PAGE_SHIFT there (no IB_ACCESS_HUGETLB),
 * so that an unmapped page can never look valid. @idx is a page_shift
 * unit, @byte an offset from ib_umem_start(). sroce_odp_unit_mapped()
 * is for the map path alone, under umem_mutex once the notifier sequence
 * check passed: on 7.2 hmm_range_fault() writes map.pfn_list before that
 * check, so a copy may not trust it (odp.c keeps what copies may use).
 */
#if SROCE_KERNEL_AT_LEAST(7, 2)
static inline int sroce_odp_umem_access(int access)
{
	return access & ~IB_ACCESS_HUGETLB;
}

static inline u64 sroce_odp_access_mask(bool write)
{
	return write ? HMM_PFN_WRITE : 0;
}

static inline bool sroce_odp_unit_mapped(struct ib_umem_odp *odp, size_t idx,
					 bool write)
{
	unsigned long need = HMM_PFN_VALID | (write ? HMM_PFN_WRITE : 0);

	return (READ_ONCE(odp->map.pfn_list[idx]) & need) == need;
}

static inline void *sroce_odp_byte_kva(struct ib_umem_odp *odp, u64 byte)
{
	unsigned long pfn = READ_ONCE(odp->map.pfn_list[byte >> PAGE_SHIFT]);

	return page_address(hmm_pfn_to_page(pfn)) + offset_in_page(byte);
}
#else
static inline int sroce_odp_umem_access(int access)
{
	return access;
}

static inline u64 sroce_odp_access_mask(bool write)
{
	return ODP_READ_ALLOWED_BIT | (write ? ODP_WRITE_ALLOWED_BIT : 0);
}

static inline bool sroce_odp_unit_mapped(struct ib_umem_odp *odp, size_t idx,
					 bool write)
{
	u64 bit = write ? ODP_WRITE_ALLOWED_BIT : ODP_READ_ALLOWED_BIT;

	return READ_ONCE(odp->dma_list[idx]) & bit;
}

static inline void *sroce_odp_byte_kva(struct ib_umem_odp *odp, u64 byte)
{
	dma_addr_t dma = READ_ONCE(odp->dma_list[byte >> odp->page_shift]);

	return (void *)(uintptr_t)(dma & ODP_DMA_ADDR_MASK) +
	       (byte & (BIT_ULL(odp->page_shift) - 1));
}
#endif

#endif /* SROCE_COMPAT_H */
