/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Address handles: a resolved RoCEv2 path (struct sroce_av) for UD sends
 * and for rdma_cm. Every AH gets an ah_num that send WQEs name. The
 * numbers are per device, so any user can write any number into its own
 * SQ ring: a number resolves only for a QP of the AH's PD.
 */
#ifndef SROCE_AH_H
#define SROCE_AH_H

#include <rdma/ib_verbs.h>
#include "net.h"

/*
 * The path of an AH lives in its own allocation, freed after an RCU grace
 * period: the requester resolves a send WQE's ah_num under RCU, and a
 * (possibly misbehaving) user may destroy the AH while WQEs naming it are
 * still queued.
 */
struct sroce_ah_path {
	struct sroce_av av;	/* immutable; route cache not initialised */
	struct ib_pd *pd;	/* the AH's; outlives the AH */
	struct rcu_head rcu;
};

struct sroce_ah {
	struct ib_ah ibah;
	struct sroce_ah_path *path;
	u32 ah_num;		/* key in sdev->ah_xa, never 0 */
	struct sroce_user *user;	/* charged to (limits.h); NULL: kernel */
};

static inline struct sroce_ah *to_sah(struct ib_ah *ibah)
{
	return container_of(ibah, struct sroce_ah, ibah);
}

int sroce_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init_attr,
		    struct ib_udata *udata);
int sroce_query_ah(struct ib_ah *ibah, struct rdma_ah_attr *ah_attr);
int sroce_destroy_ah(struct ib_ah *ibah, u32 flags);

/*
 * Copy the path of @ah_num into @av (zeroed by the caller); -ENOENT when no
 * such AH exists in @pd (the sending QP's). Any context.
 */
int sroce_ah_path(struct sroce_dev *sdev, struct ib_pd *pd, u32 ah_num,
		  struct sroce_av *av);

void sroce_ah_table_init(struct sroce_dev *sdev);
void sroce_ah_table_fini(struct sroce_dev *sdev);

#endif /* SROCE_AH_H */
