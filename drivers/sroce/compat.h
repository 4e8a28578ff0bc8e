/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Every difference between the kernels sroce builds for (Debian 12's 6.1
 * and 6.12 series) lives here, so the rest of the driver is written once
 * against the newer API.
 */
#ifndef SROCE_COMPAT_H
#define SROCE_COMPAT_H

#include <linux/export.h>
#include <linux/version.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>

/*
 * Functions the KUnit module (tests/kunit) tests without them being
 * static inline are exported into a namespace of their own, and only when
 * the kernel has KUnit at all.
 */
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
 *			    sroce_create_cq_arg_t *arg)
 * and get the udata with sroce_create_cq_udata(arg).
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 10, 0)
typedef struct uverbs_attr_bundle sroce_create_cq_arg_t;

static inline struct ib_udata *
sroce_create_cq_udata(sroce_create_cq_arg_t *attrs)
{
	return attrs ? &attrs->driver_udata : NULL;
}
#else
typedef struct ib_udata sroce_create_cq_arg_t;

static inline struct ib_udata *
sroce_create_cq_udata(sroce_create_cq_arg_t *udata)
{
	return udata;
}
#endif

#endif /* SROCE_COMPAT_H */
