/* SPDX-License-Identifier: GPL-2.0 */
/*
 * 24-bit packet sequence numbers (IBTA 9.7.1). PSNs wrap from 0xffffff to 0;
 * a PSN a is before b when the 24-bit two's complement difference a - b is
 * negative, so half of the PSN space lies before any PSN and half after it.
 * A difference of exactly 0x800000 counts as "before" (the sign bit is set).
 */
#ifndef SROCE_PSN_H
#define SROCE_PSN_H

#include <linux/types.h>

#define SROCE_PSN_BITS	24
#define SROCE_PSN_MASK	0xffffffU

static inline u32 sroce_psn_add(u32 psn, u32 n)
{
	return (psn + n) & SROCE_PSN_MASK;
}

static inline u32 sroce_psn_next(u32 psn)
{
	return sroce_psn_add(psn, 1);
}

/* The signed distance from b to a, in [-0x800000, 0x7fffff]. */
static inline s32 sroce_psn_diff(u32 a, u32 b)
{
	return (s32)((a - b) << (32 - SROCE_PSN_BITS)) >> (32 - SROCE_PSN_BITS);
}

static inline bool sroce_psn_before(u32 a, u32 b)
{
	return sroce_psn_diff(a, b) < 0;
}

static inline bool sroce_psn_before_eq(u32 a, u32 b)
{
	return sroce_psn_diff(a, b) <= 0;
}

static inline bool sroce_psn_after(u32 a, u32 b)
{
	return sroce_psn_diff(a, b) > 0;
}

static inline bool sroce_psn_after_eq(u32 a, u32 b)
{
	return sroce_psn_diff(a, b) >= 0;
}

/* Is psn in the window [first, first + len)? len may be up to 2^23. */
static inline bool sroce_psn_in_window(u32 psn, u32 first, u32 len)
{
	return ((psn - first) & SROCE_PSN_MASK) < len;
}

/*
 * The most PSNs a requester may have outstanding, [comp.psn, req.psn_max):
 * less than half the PSN space, so that each of them and one past the last
 * are after comp.psn, and a stale ACK or NAK (before comp.psn) is never
 * among them.
 */
#define SROCE_PSN_OUTSTANDING_MAX	((1U << (SROCE_PSN_BITS - 1)) - 1)

/*
 * With [first, next) outstanding, may n more PSNs from next be? (next is
 * not before first.)
 */
static inline bool sroce_psn_room(u32 first, u32 next, u32 n)
{
	u32 used = (next - first) & SROCE_PSN_MASK;

	return used <= SROCE_PSN_OUTSTANDING_MAX &&
	       n <= SROCE_PSN_OUTSTANDING_MAX - used;
}

#endif /* SROCE_PSN_H */
