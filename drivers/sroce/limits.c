// SPDX-License-Identifier: GPL-2.0
/*
 * Per-device object limits (limits.h). Each is a module parameter so that
 * an administrator can lower what one device offers its users (and tests
 * can reach a limit quickly); the defaults are the transport's design
 * limits (sroce.h), which no parameter may exceed. Devices copy the
 * parameters when they are added.
 */
#include <linux/kernel.h>
#include <linux/moduleparam.h>

#include "sroce.h"

struct sroce_limit_param {
	unsigned int value;
	unsigned int design_max;
};

static struct sroce_limit_param sroce_limit_params[SROCE_OBJ_TYPES] = {
	[SROCE_OBJ_PD] = { SROCE_MAX_PD, SROCE_MAX_PD },
	[SROCE_OBJ_CQ] = { SROCE_MAX_CQ, SROCE_MAX_CQ },
	[SROCE_OBJ_QP] = { SROCE_MAX_QP, SROCE_MAX_QP },
	[SROCE_OBJ_SRQ] = { SROCE_MAX_SRQ, SROCE_MAX_SRQ },
	[SROCE_OBJ_MR] = { SROCE_MAX_MR, SROCE_MAX_MR },
	[SROCE_OBJ_MW] = { SROCE_MAX_MW, SROCE_MAX_MW },
	[SROCE_OBJ_AH] = { SROCE_MAX_AH, SROCE_MAX_AH },
};

/* Only at load time (the parameters are read-only in sysfs). */
static int sroce_limit_set(const char *val, const struct kernel_param *kp)
{
	struct sroce_limit_param *param = kp->arg;
	unsigned int v;
	int err;

	err = kstrtouint(val, 0, &v);
	if (err)
		return err;
	if (!v || v > param->design_max)
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

void sroce_limits_init(struct sroce_limits *limits)
{
	int type;

	for (type = 0; type < SROCE_OBJ_TYPES; type++) {
		limits->max[type] = sroce_limit_params[type].value;
		atomic_set(&limits->used[type], 0);
	}
}

/* ib_core destroyed every object before the device is deallocated. */
void sroce_limits_cleanup(struct sroce_limits *limits)
{
	int type;

	for (type = 0; type < SROCE_OBJ_TYPES; type++)
		WARN_ONCE(atomic_read(&limits->used[type]),
			  "sroce: %d objects of type %d left at device release\n",
			  atomic_read(&limits->used[type]), type);
}
