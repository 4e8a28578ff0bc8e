/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Every difference between the kernels sroce builds for (Debian 12's 6.1
 * and 6.12 series) lives here, so the rest of the driver is written once
 * against the newer API.
 */
#ifndef SROCE_COMPAT_H
#define SROCE_COMPAT_H

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

#endif /* SROCE_COMPAT_H */
