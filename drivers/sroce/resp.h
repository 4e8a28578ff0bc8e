/* SPDX-License-Identifier: GPL-2.0 */
/*
 * sroce responder: the receive side of a QP. It checks PSNs, places SEND
 * and RDMA WRITE payloads, serves RDMA READ and atomic requests, replays
 * them for duplicates and generates ACKs/NAKs (IBTA Vol. 1 chapter 9).
 */
#ifndef SROCE_RESP_H
#define SROCE_RESP_H

#include <linux/atomic.h>
#include <linux/list.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/workqueue.h>

struct ib_qp_attr;
struct sk_buff;
struct sroce_comp_notify;
struct sroce_dev;
struct sroce_qp;
struct sroce_rwqe;
struct sroce_srq;

enum sroce_resp_res_type {
	SROCE_RES_NONE,
	SROCE_RES_READ,
	SROCE_RES_ATOMIC,
	SROCE_RES_PLACEMENT,	/* ATOMIC WRITE or FLUSH: nothing to keep */
};

/*
 * One responder resource (IBTA 9.7.5.1.3): what is needed to answer a
 * duplicate RDMA READ, atomic, ATOMIC WRITE or FLUSH request without
 * executing it again. READ
 * replays look the rkey up again, so no MR reference is held here.
 */
struct sroce_resp_res {
	u8 type;		/* enum sroce_resp_res_type */
	u32 first_psn;		/* PSN of the request */
	u32 last_psn;		/* READ: PSN of the last response packet */
	union {
		struct {
			u64 va;
			u32 rkey;
			u32 length;
		} read;
		struct {
			u64 orig;	/* value returned in AtomicAckETH */
		} atomic;
	};
};

/* The message being received, by kind. */
enum sroce_resp_msg {
	SROCE_RESP_MSG_NONE,
	SROCE_RESP_MSG_SEND,
	SROCE_RESP_MSG_WRITE,
};

/*
 * Responder state, embedded in struct sroce_qp as qp->resp.
 *
 * Locking: @lock protects the fields from @epsn to @res_head. It is taken with
 * spin_lock_irqsave() (like the QP's other locks) from packet receive
 * (softirq) and from sroce_resp_modify() (process context). Lock order:
 * qp->mutex > resp.lock > qp->sq_lock > qp->rq_lock > CQ lock. No packet
 * is transmitted and no completion handler runs under it: replies are
 * described under the lock and sent after it is released.
 *
 * Replies are sent from softirq right away, except READ responses beyond
 * a burst and anything behind them: those wait in @tx_queue, in order, for
 * @tx_work, which sends them from process context at the pace the
 * transmit queue takes them. @tx_lock (irqsave, innermost, never held
 * while transmitting) protects @tx_queue, @tx_len and @tx_busy; while @tx_busy,
 * @tx_work is queued or running and holds a reference on the QP.
 */
struct sroce_resp_state {
	spinlock_t lock;	/* protects @epsn .. @res_head */

	u32 epsn;		/* next expected request PSN (rq_psn) */
	u32 msn;		/* messages completed, 24 bits */
	/*
	 * Connection generation: each RESET adds one. A reply carries the
	 * value it was described under, and @tx_work sends a queued one only
	 * while they match (it reads @gen with READ_ONCE).
	 */
	u32 gen;
	/*
	 * A PSN sequence error or RNR NAK is outstanding for @epsn: later
	 * requests are dropped silently until the requester resends @epsn.
	 */
	bool nak_pending;
	bool failed;		/* fatal error: nothing more is processed */
	bool uc_drop;		/* UC: drop packets up to the next FIRST/ONLY */
	u32 unacked;		/* requests accepted since the last ACK */

	u8 msg;			/* enum sroce_resp_msg: message in progress */
	/* SEND in progress: @wqe is a valid copy of the posted receive */
	bool have_wqe;
	u32 msg_offset;		/* payload bytes placed so far */
	struct sroce_rwqe *wqe;	/* allocated by sroce_resp_init() */

	/*
	 * RDMA WRITE in progress. The rkey is looked up again for every
	 * packet: no MR reference outlives a packet, so dereg_mr never waits
	 * for a message the peer may never finish.
	 */
	u32 write_rkey;
	u64 write_va;		/* where the next payload goes */
	u32 write_resid;	/* bytes still expected */
	u32 write_len;		/* RETH DMA length */

	/*
	 * What the packet being handled owes consumers (receive CQ handler,
	 * SRQ limit event, the error state): sroce_resp_rcv()'s record, set
	 * while it holds @lock and delivered once it dropped it, so no
	 * consumer callback runs under @lock.
	 */
	struct sroce_comp_notify *owed;
	/*
	 * XRC target QPs: the XRC SRQ of the packet being handled, of the
	 * QP's domain, referenced by sroce_resp_rcv() for the packet; NULL
	 * when its XRCETH names none. Its PD grants every access the
	 * request makes, and a message takes its receive WQE from it.
	 */
	struct sroce_srq *xrc_srq;

	/* responder resources ring, max_dest_rd_atomic entries */
	struct sroce_resp_res *res;
	unsigned int num_res;
	unsigned int res_head;	/* next entry to overwrite */
	/*
	 * Resources whose answer has not all been handed to the stack yet:
	 * raised under @lock, lowered wherever an answer leaves or is
	 * dropped (resp_tx.c, resp_reply_retire()).
	 */
	atomic_t res_busy;

	spinlock_t tx_lock;	/* protects @tx_queue .. @tx_busy */
	struct list_head tx_queue;
	unsigned int tx_len;	/* replies in @tx_queue */
	bool tx_busy;
	struct work_struct tx_work;

	/*
	 * CE-marked requests seen and when the last CNP left (cc.c):
	 * READ_ONCE/WRITE_ONCE, no lock.
	 */
	u32 ce_marks;
	u64 cnp_ns;
};

/*
 * Reliability counters of a device (struct sroce_dev.rx_stats): packets
 * rx.c drops before a QP sees them, what the responders did, what the
 * requesters recovered from (comp.c, req.c), and fast registrations and
 * invalidations (mr.c). Atomic; touched only off the fast path (drops,
 * duplicates, NAKs, retries, registrations). The port's hw_counters
 * (net.c) show them after its own. The last two are gauges, not counts
 * of events: what ODP MRs hold now (odp.c).
 */
enum sroce_rx_stat {
	SROCE_RX_NO_QP,		/* unknown QP, or a group not attached here */
	SROCE_RX_BAD_TRANSPORT,	/* opcode class differs from QP type */
	SROCE_RX_BAD_STATE,	/* QP state does not accept the packet */
	SROCE_RX_BAD_PKEY,
	SROCE_RX_BAD_QKEY,
	SROCE_RX_BAD_ADDR,	/* RC/UC source/destination not the QP's */
	SROCE_RP_CNP_IGNORED,	/* CNPs to no QP with a window, or forged */
	SROCE_RESP_DROPPED,	/* requests a responder discarded */
	SROCE_RESP_DUPLICATES,	/* duplicate requests (re-ACKed/replayed) */
	SROCE_RESP_SEQ_NAKS,	/* PSN sequence error NAKs sent */
	SROCE_RESP_RNR_NAKS,	/* RNR NAKs sent */
	SROCE_RESP_ERR_NAKS,	/* fatal NAKs: invalid request, access, op */
	SROCE_REQ_TIMEOUTS,	/* retransmit timer expiries that resent */
	SROCE_REQ_SEQ_NAKS,	/* PSN sequence error NAKs received */
	SROCE_REQ_RNR_NAKS,	/* RNR NAKs received */
	SROCE_REQ_RETRANSMITS,	/* request packets sent again */
	SROCE_RESP_OUT_OF_SEQ,	/* requests with a PSN past the expected one */
	SROCE_MR_FAST_REGS,	/* IB_WR_REG_MR that made an MR valid */
	SROCE_MR_LOCAL_INVS,	/* IB_WR_LOCAL_INV that invalidated an MR */
	SROCE_MR_REMOTE_INVS,	/* MRs invalidated by a SEND with Invalidate */
	SROCE_RX_MCAST_PACKETS,	/* packets to a group with QPs attached here */
	SROCE_RX_MCAST_DELIVERIES, /* their copies handed to attached QPs */
	SROCE_MW_BINDS,		/* memory window binds that succeeded */
	SROCE_MW_LOCAL_INVS,	/* IB_WR_LOCAL_INV that invalidated a window */
	SROCE_MW_REMOTE_INVS,	/* windows invalidated by a SEND with Invalidate */
	SROCE_REQ_ALLOC_FAILURES, /* request packets not allocated (retried) */
	SROCE_REQ_TIMEOUTS_AVERTED, /* expiries answered within a tick */
	SROCE_NP_ECN_MARKED,	/* requests that arrived marked CE */
	SROCE_NP_CNP_SENT,	/* CNPs sent for them */
	SROCE_RP_CNP_HANDLED,	/* CNPs accepted by a sending QP */
	SROCE_RP_WINDOW_CUTS,	/* windows cut for them */
	SROCE_ODP_PAGES,	/* pages ODP page lists cover (odp_max_mb) */
	SROCE_ODP_CHILDREN,	/* implicit ODP MRs' child umems */
	SROCE_RX_STATS_NUM
};

struct sroce_rx_stats {
	atomic64_t c[SROCE_RX_STATS_NUM];
};

/* Read the counters into @values[0 .. SROCE_RX_STATS_NUM - 1]. */
void sroce_rx_stats_read(struct sroce_dev *sdev, u64 *values);

/*
 * Lifecycle, called by qp.c. sroce_resp_init() at create (process
 * context, may sleep; 0 or -ENOMEM). sroce_resp_modify() applies the
 * responder's part of a modify_qp that ib_modify_qp_is_ok() accepted:
 * RESET clears the state, IB_QP_RQ_PSN sets the expected PSN,
 * IB_QP_MAX_DEST_RD_ATOMIC sizes the responder resources. Process context
 * without spinlocks held, may sleep; 0 or -ENOMEM (nothing changed then).
 * sroce_resp_reset_sync() once the QP is in RESET: the replies queued for
 * the old connection are gone when it returns (may sleep).
 * sroce_resp_cleanup() at destroy, after the last packet reference.
 */
int sroce_resp_init(struct sroce_qp *qp);
int sroce_resp_modify(struct sroce_qp *qp, const struct ib_qp_attr *attr,
		      int mask);
void sroce_resp_reset_sync(struct sroce_qp *qp);
void sroce_resp_cleanup(struct sroce_qp *qp);

/*
 * A request packet for @qp, already checked by rx.c against the QP's type,
 * state, P_Key and Q_Key. Softirq context; consumes @skb; the caller holds
 * a QP reference.
 */
void sroce_resp_rcv(struct sroce_qp *qp, struct sk_buff *skb);

#endif /* SROCE_RESP_H */
