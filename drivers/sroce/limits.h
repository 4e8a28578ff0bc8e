/* SPDX-License-Identifier: GPL-2.0 */
/*
 * How many objects of each kind one device may hold at once: the limits
 * query_device reports, counted on every create and destroy so that a
 * process cannot take more than was advertised (limits.c).
 */
#ifndef SROCE_LIMITS_H
#define SROCE_LIMITS_H

#include <linux/atomic.h>
#include <linux/types.h>

enum sroce_obj_type {
	SROCE_OBJ_PD,
	SROCE_OBJ_CQ,
	SROCE_OBJ_QP,
	SROCE_OBJ_SRQ,
	SROCE_OBJ_MR,		/* every kind of MR: DMA, user, fast-register */
	SROCE_OBJ_MW,
	SROCE_OBJ_AH,
	SROCE_OBJ_TYPES
};

struct sroce_limits {
	/* The module parameters when the device was added; immutable. */
	u32 max[SROCE_OBJ_TYPES];
	/* Objects that exist: charged on create, uncharged on destroy. */
	atomic_t used[SROCE_OBJ_TYPES];
};

void sroce_limits_init(struct sroce_limits *limits);
void sroce_limits_cleanup(struct sroce_limits *limits);

/*
 * Take one object of @type from the device's allowance: -ENOMEM, as for
 * any exhausted resource, once max of them exist. A failed charge may
 * have raised the count for an instant: a concurrent charge of the last
 * free object can fail too, which is as if it had come a moment later.
 */
static inline int sroce_obj_charge(struct sroce_limits *limits,
				   enum sroce_obj_type type)
{
	if (atomic_inc_return(&limits->used[type]) <= limits->max[type])
		return 0;
	atomic_dec(&limits->used[type]);
	return -ENOMEM;
}

static inline void sroce_obj_uncharge(struct sroce_limits *limits,
				      enum sroce_obj_type type)
{
	atomic_dec(&limits->used[type]);
}

#endif /* SROCE_LIMITS_H */
