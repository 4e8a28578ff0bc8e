/* SPDX-License-Identifier: GPL-2.0 */
/*
 * How many objects of each kind one device may hold at once, and how many
 * of them one user may: the limits query_device reports, counted on every
 * create and destroy (limits.c).
 *
 * A user is a uid: the real uid of the process that opened the verbs
 * context an object was created through. Objects created without one
 * (kernel consumers: the MAD layer, the CM, ULPs) are the kernel's. Users
 * together may fill a device only up to user_pool, which leaves a reserve
 * that only the kernel can take; one user may hold at most user_max of a
 * kind, which leaves the rest of the pool to others.
 */
#ifndef SROCE_LIMITS_H
#define SROCE_LIMITS_H

#include <linux/atomic.h>
#include <linux/err.h>
#include <linux/refcount.h>
#include <linux/types.h>
#include <linux/uidgid.h>
#include <linux/xarray.h>

enum sroce_obj_type {
	SROCE_OBJ_PD,		/* and XRC domains */
	SROCE_OBJ_CQ,
	SROCE_OBJ_QP,
	SROCE_OBJ_SRQ,
	SROCE_OBJ_MR,		/* every kind of MR: DMA, user, fast-register */
	SROCE_OBJ_MW,
	SROCE_OBJ_AH,
	SROCE_OBJ_TYPES
};

/* One uid's share of one device; in sroce_limits.users while it exists. */
struct sroce_user {
	kuid_t uid;			/* immutable; the key */
	/*
	 * One per verbs context of the uid and one per object charged to it
	 * (an XRC domain can outlive the context that created it). Drops to
	 * zero only under the users xarray's lock, which then erases it, so
	 * an entry found under that lock is alive.
	 */
	refcount_t ref;
	atomic_t used[SROCE_OBJ_TYPES];	/* objects charged to the uid */
};

struct sroce_limits {
	/*
	 * From the module parameters when the device was added; immutable.
	 * max: everyone's; user_pool: all users' together (max less the
	 * kernel's reserve); user_max: one user's.
	 */
	u32 max[SROCE_OBJ_TYPES];
	u32 user_pool[SROCE_OBJ_TYPES];
	u32 user_max[SROCE_OBJ_TYPES];
	/* Objects that exist, the kernel's and the users'. */
	atomic_t used[SROCE_OBJ_TYPES];
	/* struct sroce_user by uid; locks itself (IRQ-safe lock). */
	struct xarray users;
};

void sroce_limits_init(struct sroce_limits *limits);
void sroce_limits_cleanup(struct sroce_limits *limits);

void sroce_user_put(struct sroce_limits *limits, struct sroce_user *user);

/*
 * One more in @used unless that makes more than @max. Exact: a failed
 * take never raises the count, not even for an instant, so a user
 * hammering at the pool's edge cannot make a kernel charge fail.
 */
static inline bool sroce_count_take(atomic_t *used, u32 max)
{
	int old = atomic_read(used);

	do {
		if (old >= (int)max)
			return false;
	} while (!atomic_try_cmpxchg(used, &old, old + 1));
	return true;
}

/*
 * Take one object of @type for @user (NULL: the kernel; an error: the
 * user's entry could not be made, see sroce_udata_user()) from the
 * device's allowance: -ENOMEM, as for any exhausted resource, once the
 * user holds user_max of them, once users hold user_pool, or once max
 * exist.
 */
static inline int sroce_obj_charge(struct sroce_limits *limits,
				   struct sroce_user *user,
				   enum sroce_obj_type type)
{
	if (IS_ERR(user))
		return PTR_ERR(user);
	if (!user)
		return sroce_count_take(&limits->used[type],
					limits->max[type]) ? 0 : -ENOMEM;
	if (!sroce_count_take(&user->used[type], limits->user_max[type]))
		return -ENOMEM;
	if (!sroce_count_take(&limits->used[type], limits->user_pool[type])) {
		atomic_dec(&user->used[type]);
		return -ENOMEM;
	}
	refcount_inc(&user->ref);
	return 0;
}

/* @user: what the object was charged to. */
static inline void sroce_obj_uncharge(struct sroce_limits *limits,
				      struct sroce_user *user,
				      enum sroce_obj_type type)
{
	atomic_dec(&limits->used[type]);
	if (user) {
		atomic_dec(&user->used[type]);
		sroce_user_put(limits, user);
	}
}

#endif /* SROCE_LIMITS_H */
