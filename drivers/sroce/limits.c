// SPDX-License-Identifier: GPL-2.0
/*
 * Per-device and per-user object limits (limits.h). Each is a module
 * parameter so that an administrator can lower what one device offers its
 * users (and tests can reach a limit quickly); the defaults of the object
 * limits are the transport's design limits (sroce.h), which no parameter
 * may exceed. Devices copy the parameters when they are added.
 */
#include <linux/kernel.h>
#include <linux/moduleparam.h>
#include <linux/slab.h>

#include "sroce.h"

struct sroce_limit_param {
	unsigned int value;
	unsigned int min;
	unsigned int max;
};

static struct sroce_limit_param sroce_limit_params[SROCE_OBJ_TYPES] = {
	[SROCE_OBJ_PD] = { SROCE_MAX_PD, 1, SROCE_MAX_PD },
	[SROCE_OBJ_CQ] = { SROCE_MAX_CQ, 1, SROCE_MAX_CQ },
	[SROCE_OBJ_QP] = { SROCE_MAX_QP, 1, SROCE_MAX_QP },
	[SROCE_OBJ_SRQ] = { SROCE_MAX_SRQ, 1, SROCE_MAX_SRQ },
	[SROCE_OBJ_MR] = { SROCE_MAX_MR, 1, SROCE_MAX_MR },
	[SROCE_OBJ_MW] = { SROCE_MAX_MW, 1, SROCE_MAX_MW },
	[SROCE_OBJ_AH] = { SROCE_MAX_AH, 1, SROCE_MAX_AH },
};

/*
 * Percent of each limit one uid may hold: half by default, so that one
 * user cannot lock every other out; 100 lets a single user (an HPC node)
 * take all but the kernel's reserve.
 */
static struct sroce_limit_param sroce_user_share = { 50, 1, 100 };
/*
 * Percent of each limit (rounded up) that users cannot take, so that
 * kernel consumers (the CM's AHs for every rdma_cm connection, NVMe-oF,
 * NFS/RDMA, iSER) can still create objects on a device users filled.
 */
static struct sroce_limit_param sroce_kernel_reserve = { 10, 0, 90 };

/* Only at load time (the parameters are read-only in sysfs). */
static int sroce_limit_set(const char *val, const struct kernel_param *kp)
{
	struct sroce_limit_param *param = kp->arg;
	unsigned int v;
	int err;

	err = kstrtouint(val, 0, &v);
	if (err)
		return err;
	if (v < param->min || v > param->max)
		return -ERANGE;
	param->value = v;
	return 0;
}

static int sroce_limit_get(char *buf, const struct kernel_param *kp)
{
	const struct sroce_limit_param *param = kp->arg;

	return sysfs_emit(buf, "%u\n", param->value);
}

static const struct kernel_param_ops sroce_limit_ops = {
	.set = sroce_limit_set,
	.get = sroce_limit_get,
};

/* Each defaults to the most a device can hold, which is also its ceiling. */
module_param_cb(max_pd, &sroce_limit_ops, &sroce_limit_params[SROCE_OBJ_PD],
		0444);
MODULE_PARM_DESC(max_pd, "protection domains one device may hold");
module_param_cb(max_cq, &sroce_limit_ops, &sroce_limit_params[SROCE_OBJ_CQ],
		0444);
MODULE_PARM_DESC(max_cq, "completion queues one device may hold");
module_param_cb(max_qp, &sroce_limit_ops, &sroce_limit_params[SROCE_OBJ_QP],
		0444);
MODULE_PARM_DESC(max_qp, "queue pairs one device may hold");
module_param_cb(max_srq, &sroce_limit_ops, &sroce_limit_params[SROCE_OBJ_SRQ],
		0444);
MODULE_PARM_DESC(max_srq, "shared receive queues one device may hold");
module_param_cb(max_mr, &sroce_limit_ops, &sroce_limit_params[SROCE_OBJ_MR],
		0444);
MODULE_PARM_DESC(max_mr, "memory regions one device may hold");
module_param_cb(max_mw, &sroce_limit_ops, &sroce_limit_params[SROCE_OBJ_MW],
		0444);
MODULE_PARM_DESC(max_mw, "memory windows one device may hold");
module_param_cb(max_ah, &sroce_limit_ops, &sroce_limit_params[SROCE_OBJ_AH],
		0444);
MODULE_PARM_DESC(max_ah, "address handles one device may hold");
module_param_cb(user_share, &sroce_limit_ops, &sroce_user_share, 0444);
MODULE_PARM_DESC(user_share,
		 "percent of each max_* one uid may hold (default 50)");
module_param_cb(kernel_reserve, &sroce_limit_ops, &sroce_kernel_reserve,
		0444);
MODULE_PARM_DESC(kernel_reserve,
		 "percent of each max_* kept for kernel consumers (default 10)");

void sroce_limits_init(struct sroce_limits *limits)
{
	u32 max, reserve;
	int type;

	for (type = 0; type < SROCE_OBJ_TYPES; type++) {
		max = sroce_limit_params[type].value;
		reserve = DIV_ROUND_UP(max * sroce_kernel_reserve.value, 100);
		limits->max[type] = max;
		limits->user_pool[type] = max - reserve;
		limits->user_max[type] =
			max_t(u32, max * sroce_user_share.value / 100, 1);
		atomic_set(&limits->used[type], 0);
	}
	xa_init_flags(&limits->users, XA_FLAGS_LOCK_IRQ);
}

/* ib_core destroyed every object and context before the device is freed. */
void sroce_limits_cleanup(struct sroce_limits *limits)
{
	int type;

	for (type = 0; type < SROCE_OBJ_TYPES; type++)
		WARN_ONCE(atomic_read(&limits->used[type]),
			  "sroce: %d objects of type %d left at device release\n",
			  atomic_read(&limits->used[type]), type);
	WARN_ONCE(!xa_empty(&limits->users),
		  "sroce: per-user counts left at device release\n");
	xa_destroy(&limits->users);
}

/*
 * The entry of @uid, made if it has none (process context). The entry's
 * reference is the caller's.
 */
static struct sroce_user *sroce_user_get(struct sroce_limits *limits,
					 kuid_t uid)
{
	unsigned long key = __kuid_val(uid);
	struct sroce_user *user, *new;
	int err = 0;

	new = kzalloc(sizeof(*new), GFP_KERNEL_ACCOUNT);
	if (!new)
		return ERR_PTR(-ENOMEM);
	new->uid = uid;
	refcount_set(&new->ref, 1);

	xa_lock_irq(&limits->users);
	do {
		/* alive: see sroce_user.ref */
		user = xa_load(&limits->users, key);
		if (user) {
			refcount_inc(&user->ref);
			break;
		}
		/* may drop the lock to allocate; -EBUSY if one came meanwhile */
		err = __xa_insert(&limits->users, key, new, GFP_KERNEL);
		if (!err)
			swap(user, new);
	} while (err == -EBUSY);
	xa_unlock_irq(&limits->users);
	kfree(new);
	return user ?: ERR_PTR(err);
}

/*
 * Who an object created with @udata is charged to: the entry of the uid
 * that opened the verbs context the command came through, made at that
 * context's first charge (sroce_alloc_ucontext() must not fail, see
 * there), or an error if it cannot be made; NULL (the kernel) without
 * udata. The context keeps the entry's reference until it is freed.
 */
struct sroce_user *sroce_udata_user(struct ib_udata *udata)
{
	struct sroce_ucontext *uctx;
	struct sroce_limits *limits;
	struct sroce_user *user, *raced;

	if (!udata)
		return NULL;
	uctx = rdma_udata_to_drv_context(udata, struct sroce_ucontext, ibuc);
	/* pairs with the cmpxchg() below: the entry is seen initialised */
	user = smp_load_acquire(&uctx->user);
	if (user)
		return user;
	limits = &to_sdev(uctx->ibuc.device)->limits;
	user = sroce_user_get(limits, uctx->uid);
	if (IS_ERR(user))
		return user;
	/* two first commands of one context at once: one entry stays */
	raced = cmpxchg(&uctx->user, NULL, user);
	if (!raced)
		return user;
	sroce_user_put(limits, user);
	return raced;
}

/* May be called from any context; frees the entry with its last reference. */
void sroce_user_put(struct sroce_limits *limits, struct sroce_user *user)
{
	unsigned long flags;

	if (!refcount_dec_and_lock_irqsave(&user->ref, &limits->users.xa_lock,
					   &flags))
		return;
	__xa_erase(&limits->users, __kuid_val(user->uid));
	xa_unlock_irqrestore(&limits->users, flags);
	kfree(user);
}
