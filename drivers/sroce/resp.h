/* SPDX-License-Identifier: GPL-2.0 */
/*
 * sroce responder: the receive side of a reliable (RC) or unreliable (UC/UD)
 * QP. It checks PSNs, places SEND and RDMA WRITE payloads, serves RDMA READ
 * and atomic requests, replays them for duplicates and generates ACKs/NAKs.
 */
#ifndef SROCE_RESP_H
#define SROCE_RESP_H

#include <linux/spinlock.h>
#include <linux/types.h>

struct ib_qp_attr;
struct sk_buff;
struct sroce_mr;
struct sroce_qp;

enum sroce_resp_res_type {
	SROCE_RES_NONE,
	SROCE_RES_READ,
	SROCE_RES_ATOMIC,
};

/*
 * One responder resource (IBTA 9.7.5.1.3): what is needed to answer a
 * duplicate RDMA READ or atomic request without executing it again. READ
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

/*
 * Progress of the message being received. A multi-packet SEND keeps the
 * receive WQE it fills; a multi-packet RDMA WRITE keeps its MR reference.
 */
enum sroce_resp_msg {
	SROCE_RESP_MSG_NONE,
	SROCE_RESP_MSG_SEND,
	SROCE_RESP_MSG_WRITE,
};

struct sroce_resp_stats {
	u64 dup_requests;
	u64 seq_naks;
	u64 rnr_naks;
	u64 access_naks;
	u64 invalid_naks;
	u64 dropped;
};

/*
 * Responder state, embedded in struct sroce_qp as qp->resp.
 *
 * Locking: every field is protected by @lock. The responder runs in softirq
 * (packet receive) and takes it with spin_lock(); process context (modify,
 * destroy, query) takes it with spin_lock_bh(). The lock is never held
 * while transmitting: replies are built under it and sent after it is
 * released, so a looped-back packet can never need it recursively. It
 * nests inside nothing and nothing else is taken under it except the MR
 * lookup (RCU) and the receive queue's consumer lock (T-req's, innermost).
 */
struct sroce_resp_state {
	spinlock_t lock;

	u32 epsn;		/* next expected request PSN (rq_psn) */
	u32 msn;		/* messages completed, 24 bits */
	bool seq_nak_sent;	/* one PSN sequence error NAK until recovered */
	unsigned int unacked;	/* packets received since the last ACK */

	/* message in progress (enum sroce_resp_msg) */
	u8 msg;
	u32 msg_offset;		/* payload bytes placed so far */
	bool have_wqe;		/* @wqe_id/@wqe is a consumed receive WQE */
	u64 wqe_id;
	void *wqe;		/* kernel copy of the receive WQE (T-req's format) */

	/* RDMA WRITE in progress */
	struct sroce_mr *write_mr;	/* referenced */
	u64 write_va;
	u32 write_resid;

	/* responder resources ring, max_dest_rd_atomic entries */
	struct sroce_resp_res *res;
	unsigned int num_res;
	unsigned int res_head;	/* next entry to overwrite */

	struct sroce_resp_stats stats;
};

/* Lifecycle, called by qp.c. */
void sroce_resp_init(struct sroce_qp *qp);
/*
 * Apply the responder's part of a modify_qp (rq_psn, max_dest_rd_atomic,
 * move to RESET). Process context, no spinlock held: may allocate.
 */
int sroce_resp_modify(struct sroce_qp *qp, const struct ib_qp_attr *attr,
		      int mask);
void sroce_resp_cleanup(struct sroce_qp *qp);

/* A request packet for @qp (from rx.c). Consumes @skb. Softirq context. */
void sroce_resp_rcv(struct sroce_qp *qp, struct sk_buff *skb);

#endif /* SROCE_RESP_H */
