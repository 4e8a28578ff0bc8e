/* SPDX-License-Identifier: GPL-2.0 */
/*
 * RoCEv2 congestion control (IBTA Annex A17.9), all three roles, on while
 * the module parameter "ecn" is 1 (the default):
 *
 * - Request packets leave ECN-capable (ECT(0)), unless the path's traffic
 *   class already chose its ECN bits. A queue on the path that builds up
 *   then marks them CE instead of dropping them.
 * - Notification point: a request that arrives marked CE is answered with
 *   a CNP to the QP that sent it: the first of every SROCE_CC_CNP_MARKS
 *   marks a QP receives, and no more than one per QP every
 *   SROCE_CC_CNP_INTERVAL_NS (DCQCN's spacing), so CNPs never cost more
 *   than the ACKs do.
 * - Reaction point: a CNP cuts the QP's window (struct sroce_comp.cwnd) by
 *   alpha / 2, at most once per round trip (not again before what was in
 *   flight at the cut is acknowledged). alpha estimates how persistently
 *   the path marks, as DCQCN's and DCTCP's do, per round trip (a window
 *   acknowledged): it moves by g = 1/16 towards 1 after a round with a CNP
 *   and towards 0 after one without. After a cut the window grows by one
 *   packet per window acknowledged, and doubles per round trip again after
 *   SROCE_CC_CALM_ROUNDS rounds without a CNP.
 *
 * sroce paces with a window, not a rate: the window is what go-back-N and
 * the loss reaction already use, and everything here is counted in round
 * trips, so it needs no timer and holds from a TCG guest's milliseconds to
 * a data centre's microseconds. READ responses are not ECN-capable: a
 * responder has no window to cut.
 */
#ifndef SROCE_CC_H
#define SROCE_CC_H

#include <linux/types.h>

struct sk_buff;
struct sroce_comp;
struct sroce_qp;

/*
 * Reaction point state of a QP, in struct sroce_comp: under qp->sq_lock.
 * A round ends when comp.psn reaches @round_psn.
 */
struct sroce_cc {
	u32 ssthresh;		/* above it the window grows additively */
	u32 ca_acked;		/* acknowledged toward the next +1 */
	u32 cut_psn;		/* with @cut_wait: no cut before this is acked */
	u32 round_psn;
	bool cut_wait;
	bool round_cnp;		/* a CNP arrived in this round */
	u8 calm_rounds;		/* rounds in a row without one */
	u16 alpha;		/* 0 .. SROCE_CC_ALPHA_ONE (1.0) */
};

#define SROCE_CC_ALPHA_ONE	1024

/* The traffic class to send a packet starting with @opcode with. */
u8 sroce_cc_tclass(u8 tclass, u8 opcode);

/*
 * Notification point: @skb, a request accepted for @qp (rx.c), may carry a
 * CE mark; answer it. Softirq context, under rcu_read_lock().
 */
void sroce_cc_request_rcv(struct sroce_qp *qp, const struct sk_buff *skb);

/* Reaction point: a CNP from @qp's peer arrived (checked by rx.c). */
void sroce_cc_cnp_rcv(struct sroce_qp *qp);

/*
 * The reaction itself, on a QP's completer state (under its sq_lock): a
 * CNP arrived while @next_psn is the next request PSN. True if it cut the
 * window.
 */
bool sroce_cc_cnp(struct sroce_comp *comp, u32 next_psn);

/*
 * Under sq_lock, comp->psn just moved: @acked request PSNs acknowledged,
 * @next_psn the next request PSN.
 */
void sroce_cc_grow(struct sroce_comp *comp, u32 acked, u32 next_psn);

/* Under sq_lock, or before the QP sends: a fresh window from comp->psn. */
void sroce_cc_reset(struct sroce_comp *comp);

#endif /* SROCE_CC_H */
