/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Internal to the responder: the reply resp.c describes under the
 * responder lock and resp_tx.c sends once it is dropped, and what each
 * file uses of the other.
 */
#ifndef SROCE_RESP_TX_H
#define SROCE_RESP_TX_H

#include <linux/list.h>
#include <linux/types.h>

#include "resp.h"

struct sroce_qp;
struct work_struct;

enum resp_reply_kind {
	REPLY_NONE,
	REPLY_ACK,		/* ACKNOWLEDGE: ACK, RNR NAK or NAK */
	REPLY_ATOMIC_ACK,
	REPLY_READ,
};

/* What to send once the responder lock is released. */
struct resp_reply {
	u8 kind;		/* enum resp_reply_kind */
	u8 syndrome;		/* AETH syndrome of an ACKNOWLEDGE */
	bool fatal;		/* then move the QP to the error state */
	bool holds_res;		/* answers a new request: see resp_res_claim() */
	u32 gen;		/* resp.gen when it was described */
	u32 psn;
	u32 msn;
	u32 srqn;		/* XRC: the request's SRQ, whose PD READs use */
	u64 orig;		/* ATOMIC_ACK: the original value */
	/* READ: what is left to send, from PSN @psn */
	u32 rkey;
	u64 va;
	u32 len;
	bool started;		/* the FIRST response went out */
};

/* A reply waiting in resp.tx_queue. */
struct resp_tx {
	struct list_head node;
	struct resp_reply r;
};

/* resp.c: count a responder event; the syndrome of a plain ACK. */
void sroce_resp_count(struct sroce_qp *qp, enum sroce_rx_stat stat);
u8 sroce_resp_syn_ack(void);

/*
 * resp_tx.c: send @r, described under resp.lock, once the lock is dropped
 * (softirq; true when the reply queue's work item has it), and that work
 * item (resp.tx_work).
 */
bool sroce_resp_reply_send(struct sroce_qp *qp, struct resp_reply *r);
void sroce_resp_tx_work(struct work_struct *work);

#endif /* SROCE_RESP_TX_H */
