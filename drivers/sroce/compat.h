/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Every difference between the kernels sroce builds for (Debian 12's 6.1
 * and 6.12 series) lives here, so the rest of the driver is written once
 * against the newer API.
 */
#ifndef SROCE_COMPAT_H
#define SROCE_COMPAT_H

#include <linux/bits.h>
#include <linux/export.h>
#include <linux/mm.h>
#include <linux/version.h>
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

#endif /* SROCE_COMPAT_H */
