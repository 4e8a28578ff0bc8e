/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Queue pairs: the object, its send and receive queues, and the state of
 * the requester (req.c) and completer (comp.c). The responder's state is
 * struct sroce_resp_state (resp.h), embedded here as qp->resp.
 */
#ifndef SROCE_QP_H
#define SROCE_QP_H

#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/rcupdate.h>
#include <linux/refcount.h>
#include <linux/completion.h>
#include <linux/spinlock.h>
#include <linux/timer.h>
#include <linux/workqueue.h>
#include <rdma/ib_verbs.h>

#include "sroce.h"
#include "cc.h"
#include "net.h"
#include "queue.h"
#include "resp.h"

struct sroce_cq;
struct sroce_srq;

/*
 * Kernel copy of a receive WQE, validated: num_sge <= the QP's max_recv_sge
 * and length is the sum of the SGE lengths (at most 2^31).
 */
struct sroce_rwqe {
	u64 wr_id;
	u32 index;		/* RQ counter value of this WQE (for pop) */
	u32 num_sge;
	u32 length;
	struct sroce_sge sge[SROCE_MAX_SGE];
};

/*
 * Kernel shadow of a send WQE: copied out of the SQ ring once and validated
 * (opcode allowed for the QP type, num_sge, inline_len, lkeys, length), so
 * retransmissions never read user-writable memory again.
 */
struct sroce_swqe {
	u64 wr_id;
	u8 opcode;		/* enum ib_wr_opcode */
	u8 state;		/* enum sroce_swqe_state */
	u8 status;		/* enum ib_wc_status to complete with */
	u8 flags;		/* SROCE_SWQE_F_* */
	u32 send_flags;		/* IB_SEND_* */
	u32 num_sge;		/* SGEs in data[]; 0 for inline */
	u32 length;		/* message payload bytes */
	union {
		__be32 imm_data;
		u32 invalidate_rkey;
	} ex;
	u32 rkey;
	u64 remote_addr;
	u64 compare_add;
	u64 swap;
	union {
		struct {	/* UD */
			u32 ah_num;
			u32 remote_qpn;
			u32 remote_qkey;
		};
		struct {	/* BIND_MW; remote_addr, compare_add: range */
			u32 mw_rkey;
			u32 mr_lkey;
		};
		u32 xrc_srqn;	/* XRC: the XRCETH's SRQ number */
	};
	u32 access;		/* REG_MR, BIND_MW: IB_ACCESS_* granted */
	/* ODP faults retried in a row, no packet built since (req.c) */
	u16 fault_retries;
	/* PSNs of the first and last request packet, set when started */
	u32 first_psn;
	u32 last_psn;
	/* num_sge struct sroce_sge, or length bytes of inline data */
	u8 data[] __aligned(8);
};

#define SROCE_SWQE_F_INLINE	BIT(0)
#define SROCE_SWQE_F_RD_ATOMIC	BIT(1)	/* READ or atomic: has responses */
#define SROCE_SWQE_F_LOCAL	BIT(2)	/* REG_MR, BIND_MW, LOCAL_INV: no packets */

enum sroce_swqe_state {
	SROCE_SWQE_QUEUED,	/* validated, not started */
	SROCE_SWQE_STARTED,	/* some packets sent */
	SROCE_SWQE_SENT,	/* every request packet sent */
	SROCE_SWQE_DONE,	/* acknowledged, waiting to retire in order */
};

static inline struct sroce_sge *sroce_swqe_sgl(struct sroce_swqe *wqe)
{
	return (struct sroce_sge *)wqe->data;
}

/* Attributes set by modify_qp, read by the data path with READ_ONCE(). */
struct sroce_qp_attrs {
	u32 dest_qpn;
	u32 qkey;
	u32 mtu;		/* path MTU in bytes */
	enum ib_mtu path_mtu;
	int access_flags;	/* IB_ACCESS_REMOTE_* accepted by the responder */
	u16 pkey_index;
	u8 timeout;		/* local ACK timeout: 4.096 us << timeout */
	u8 retry_cnt;
	u8 rnr_retry;		/* 7: infinite */
	u8 min_rnr_timer;	/* sent in our RNR NAKs */
	u8 max_rd_atomic;	/* READ/atomic requests we may have in flight */
	u8 max_dest_rd_atomic;	/* responder resources */
	u32 sq_psn;
	u32 rq_psn;
	u8 sq_draining;		/* SQD: WQEs started before it still run */
	u8 sqd_notify;		/* IB_EVENT_SQ_DRAINED wanted when drained */
};

/*
 * Send queue. The ring's slots [tail, fetched) have validated shadows in
 * @shadow (one slot of shadow_stride bytes per ring slot); [fetched,
 * producer) are posted but not yet copied.
 */
struct sroce_sq {
	struct sroce_queue queue;
	void *shadow;
	u32 shadow_stride;
	u32 max_sge;
	u32 max_inline;
	u32 fetched;
	u32 tail;		/* oldest WQE not retired: published consumer */
	/* kernel QPs: producer side of post_send, under qp->sq_post_lock */
	u32 kproducer;
};

struct sroce_rq {
	struct sroce_queue queue;
	u32 max_sge;
	u32 consumer;		/* private copy; under qp->rq_lock */
	/* kernel QPs: producer side of post_recv, under qp->rq_post_lock */
	u32 kproducer;
	/*
	 * QPs with an SRQ (no ring of their own) and XRC target QPs, under
	 * qp->rq_lock: a WQE taken from the SRQ and not completed yet
	 * (srq.h), and whether the error state's last-WQE-reached event was
	 * raised. An XRC target QP holds a reference on the SRQ it took it
	 * from in @xsrq while it holds the WQE (NULL otherwise).
	 */
	bool srq_held;
	bool last_wqe_done;
	u64 srq_wr_id;
	struct sroce_srq *xsrq;
};

/*
 * Request packets of a QP still owned by the IP stack or the NIC driver.
 * Each charges one credit, returned by its skb destructor when the driver
 * frees it; the requester stops above a high mark and is woken (through
 * req.work) below a low mark, so a slow NIC or qdisc never makes the
 * requester queue more than it can drain (a local drop costs a timeout).
 * It outlives the QP while packets are in flight.
 */
struct sroce_tx_acct {
	refcount_t ref;			/* the QP's, plus one per packet */
	atomic_t inflight;
	unsigned long flags;		/* SROCE_TX_WAITING */
	struct sroce_qp __rcu *qp;	/* NULL once destroy_qp began */
};

/* Requester: where the transmitter is in the SQ. Under qp->sq_lock. */
struct sroce_req {
	u32 cur;		/* SQ counter of the WQE to send next */
	u32 offset;		/* its payload bytes already sent */
	u32 psn;		/* PSN of the next request packet */
	u32 psn_max;		/* one past the last PSN sent, or a started
				 * READ's or atomic's last response PSN
				 */
	u32 psn_sent;		/* one past the last PSN ever transmitted */
	u32 noack;		/* packets sent since the last AckReq */
	u32 rd_atomic;		/* READ/atomic WQEs in flight */
	bool draining;		/* SROCE_RING_FLAG_SQ_DRAINING as last set */
	/* bits of run_flags: atomic, not under the lock */
	unsigned long run_flags;
	struct work_struct work;	/* runs the requester from process ctx */
	struct sroce_tx_acct *tx;	/* immutable */
};

#define SROCE_CWND_MAX	256
#define SROCE_CWND_MIN	16

/* Completer: acknowledgment and timer state. Under qp->sq_lock. */
struct sroce_comp {
	u32 psn;		/* oldest unacknowledged request PSN */
	u8 retry_left;
	u8 rnr_left;
	bool rnr_wait;		/* stopped until the RNR timer fires */
	bool read_retried;	/* a READ response gap was already re-asked */
	u8 backoff;		/* timeouts in a row: the timer doubles */
	/*
	 * Request PSNs allowed in flight, SROCE_CWND_MIN..SROCE_CWND_MAX:
	 * grows by what is acknowledged (one per window above cc.ssthresh),
	 * halves on a sequence NAK or a timeout, shrinks on a CNP (cc.c).
	 * Go-back-N resends everything in flight after a loss, so on a
	 * lossy path a full window would resend hundreds of packets per
	 * lost one (and overflow a qdisc that orphans skbs, such as
	 * netem, which the transmit credits cannot see).
	 */
	u32 cwnd;
	unsigned long timeout_jiffies;
	/*
	 * Round trip estimate in jiffies (RFC 6298 style, one probe at a
	 * time, never from a retransmitted PSN): srtt8 = 8 * SRTT, rttvar4 =
	 * 4 * RTTVAR. On a slow host it raises the retransmit timeout above
	 * the QP's, which stays the minimum.
	 */
	u32 srtt8;
	u32 rttvar4;
	/*
	 * The retransmit timer expired once and was re-armed for a tick
	 * before resending: the timer softirq runs before the receive
	 * softirq, so after a stall of the CPU (or of a guest's vCPU) the
	 * timer fires with the acknowledgments already received but not yet
	 * processed. Progress in that tick clears it.
	 */
	bool timeout_suspect;
	/*
	 * A READ response older than comp.psn arrived since the last
	 * progress (cleared by it): such responses postpone the timeout
	 * until stale_until, no further (comp.c).
	 */
	bool stale_armed;
	unsigned long stale_until;
	bool rtt_probe;		/* timing the acknowledgment of rtt_psn */
	struct sroce_cc cc;	/* the window's reaction to CNPs (cc.c) */
	u32 rtt_psn;
	unsigned long rtt_start;
	struct timer_list retrans_timer;
	struct timer_list rnr_timer;
	/*
	 * A request packet could not be allocated: the requester runs again
	 * when this fires (any QP type; the retransmit timer runs only
	 * while packets are outstanding, and not at all for UD and UC).
	 */
	struct timer_list alloc_retry_timer;
};

/* A QP's path (struct sroce_qp.path): its route cache is initialised. */
struct sroce_qp_path {
	struct sroce_av av;
	struct rcu_head rcu;
};

struct sroce_qp {
	struct ib_qp ibqp;
	struct sroce_dev *sdev;
	bool is_user;
	bool sig_all;
	/*
	 * Charged to (limits.h): the creator's context's user, or for an XRC
	 * target QP, which ib_core creates without udata, its XRC domain's;
	 * NULL: the kernel.
	 */
	struct sroce_user *user;

	/*
	 * Lifetime: the QP xarray holds the initial reference; packet
	 * receive takes one with sroce_qp_get() (under RCU). destroy_qp
	 * removes the QPN, waits an RCU grace period and then for the last
	 * reference before tearing down (ib_core frees the struct).
	 */
	refcount_t ref;
	struct completion released;

	/* Serialises modify_qp, query_qp and destroy_qp. Process context. */
	struct mutex mutex;

	/*
	 * state: written under @mutex (modify_qp) or from the data path
	 * (error), always with @sq_lock held; read anywhere with
	 * sroce_qp_state().
	 */
	enum ib_qp_state state;
	struct sroce_qp_attrs attr;	/* under @mutex, see struct */
	/*
	 * The path to the peer (RC/UC) and of every reply: never NULL.
	 * modify_qp builds a new one and publishes it under @mutex; the
	 * old one is freed after an RCU grace period. Transmit and receive
	 * read it with sroce_qp_av() under rcu_read_lock(), never in place.
	 */
	struct sroce_qp_path __rcu *path;

	/*
	 * Lock order (outermost first):
	 *   mutex > resp.lock > sq_lock > rq_lock > CQ lock
	 *   sq_post_lock, rq_post_lock: alone (kernel QPs' producers)
	 * Every spinlock here is taken with irqsave: kernel consumers post
	 * from any context. None is held while transmitting or while calling
	 * a completion/event handler (sroce_cq_post_locked + notify).
	 *
	 * sq_lock protects sq (but its queue's shared producer), req, comp
	 * and the shadows.
	 */
	spinlock_t sq_lock;
	struct sroce_sq sq;
	struct sroce_req req;
	struct sroce_comp comp;
	spinlock_t sq_post_lock;	/* sq.kproducer */

	/* rq_lock protects rq.consumer: responder pops, flushes. */
	spinlock_t rq_lock;
	struct sroce_rq rq;
	spinlock_t rq_post_lock;	/* rq.kproducer */
	struct sroce_srq *srq;		/* immutable; NULL: own RQ ring */
	/*
	 * XRC target QPs: their domain (immutable; ib_core holds it while
	 * the QP lives). They have no RQ: each request names an XRC SRQ.
	 */
	struct ib_xrcd *xrcd;

	struct sroce_resp_state resp;

	/* Multicast groups attached (UD); under sdev->mcast.lock. */
	unsigned int mcast_num;

	/*
	 * Type 2 memory windows bound through this QP (struct sroce_mw's
	 * qp_entry), so that destroy frees them without walking every key.
	 * A window joins at its bind and leaves when unbound (invalidation,
	 * dealloc, this QP's destruction) with its own lock held: mw_lock
	 * nests inside every window's lock and nothing nests inside it.
	 */
	spinlock_t mw_lock;
	struct list_head mw_list;
};

static inline struct sroce_qp *to_sqp(struct ib_qp *ibqp)
{
	return container_of(ibqp, struct sroce_qp, ibqp);
}

/* The QP's current path; under rcu_read_lock() (not to be kept). */
static inline struct sroce_av *sroce_qp_av(const struct sroce_qp *qp)
{
	return &rcu_dereference(qp->path)->av;
}

/* Transmit @skb (built for sroce_qp_av()) on the QP's current path. */
int sroce_qp_xmit(struct sroce_qp *qp, struct sk_buff *skb);

/*
 * The netdev is going away: drop the routes every QP caches (their
 * dst->ops live in its namespace). After sroce_net_close(), which stops
 * transmit from using the caches. Process context.
 */
void sroce_qp_release_routes(struct sroce_dev *sdev);

static inline bool sroce_qp_is_xrc_tgt(const struct sroce_qp *qp)
{
	return qp->ibqp.qp_type == IB_QPT_XRC_TGT;
}

/* RC and the XRC send QP: the reliable connected requester. */
static inline bool sroce_qp_is_rc(const struct sroce_qp *qp)
{
	return qp->ibqp.qp_type == IB_QPT_RC ||
	       qp->ibqp.qp_type == IB_QPT_XRC_INI;
}

static inline enum ib_qp_state sroce_qp_state(const struct sroce_qp *qp)
{
	return READ_ONCE(qp->state);
}

static inline u32 sroce_qp_mtu(const struct sroce_qp *qp)
{
	return READ_ONCE(qp->attr.mtu);
}

/*
 * Find the QP with this QPN and take a reference, or NULL. Any context.
 * QPN 1 is the GSI QP (ib_mad's, for the CM); QPN 0 never resolves (RoCE
 * has no SMI). Other QPNs are allocated cyclically from 16.
 */
struct sroce_qp *sroce_qp_get(struct sroce_dev *sdev, u32 qpn);
void sroce_qp_put(struct sroce_qp *qp);

/*
 * The ib_qp of a QPN without taking a reference, for kernel consumers'
 * struct ib_wc (they destroy a QP only after reaping its completions).
 */
struct ib_qp *sroce_qp_lookup_ib(struct sroce_dev *sdev, u32 qpn);

/*
 * Move @qp to the error state: stop the requester, flush every SQ and RQ
 * WQE with IB_WC_WR_FLUSH_ERR and stop timers. Any context; must not be
 * called with sq_lock or rq_lock held (resp.lock may be held).
 */
void sroce_qp_error(struct sroce_qp *qp);

/*
 * An XRC SRQ is being destroyed (unpublished and dead already): every XRC
 * target QP drops the WQE it holds from it, without a completion (its CQ
 * may go next). Process context.
 */
void sroce_qp_srq_destroyed(struct sroce_dev *sdev, struct sroce_srq *srq);

/* Raise an asynchronous QP event (COMM_EST, QP_FATAL, ...). Any context. */
void sroce_qp_event(struct sroce_qp *qp, enum ib_event_type type);

/*
 * Receive queue, for the responder (call with resp.lock held). Handlers
 * and events they owe are recorded in @n, for sroce_comp_notify() once
 * resp.lock is dropped.
 *
 * sroce_rq_peek() copies the oldest posted receive WQE into @wqe and
 * validates it without consuming it (with an SRQ: takes it from the SRQ,
 * or leaves @wqe as it is while the QP still holds one it took, see
 * srq.h; an XRC target QP takes from qp->resp.xrc_srq, the packet's):
 * 0, -EAGAIN when the RQ is empty (RNR)
 * or -EIO when user space corrupted the ring (the QP is moved to the error
 * state by the caller). The WQE stays posted until
 * sroce_rq_complete() consumes it and posts its completion in one step
 * under rq_lock, so a concurrent flush can neither lose it nor reorder
 * completions: it returns false when the WQE was flushed meanwhile (the
 * CQE is then not posted).
 */
int sroce_rq_peek(struct sroce_qp *qp, struct sroce_rwqe *wqe,
		  struct sroce_comp_notify *n);
/*
 * What a QP's RQ and an SRQ share (qp.c). sroce_rwqe_copy() copies the
 * posted receive WQE at ring counter @index of @rq into @wqe and
 * validates it: 0 or -EIO (user space corrupted it); the caller holds the
 * consumer side's lock and checked that the WQE is posted.
 * sroce_rq_post_kernel() writes a kernel consumer's chain of receive WRs
 * into @rq's ring and publishes them, under the lock of rq->kproducer:
 * 0, or -EINVAL (too many SGEs) or -ENOMEM (ring full) for *bad_wr, the
 * first WR not posted.
 */
int sroce_rwqe_copy(const struct sroce_rq *rq, u32 index,
		    struct sroce_rwqe *wqe);
int sroce_rq_post_kernel(struct sroce_rq *rq, const struct ib_recv_wr *wr,
			 const struct ib_recv_wr **bad_wr);
bool sroce_rq_complete(struct sroce_qp *qp, const struct sroce_rwqe *wqe,
		       const struct sroce_cqe *cqe, bool solicited,
		       struct sroce_comp_notify *n);

/*
 * Requester and completer (req.c, comp.c). sroce_req_run() sends what the
 * SQ, the window and the QP state allow; any context, no QP lock held.
 * sroce_comp_rcv() handles an ACK, NAK, READ response or atomic ACK for
 * @qp; softirq context; consumes @skb; the caller keeps its QP reference.
 */
void sroce_req_run(struct sroce_qp *qp);
void sroce_comp_rcv(struct sroce_qp *qp, struct sk_buff *skb);

/* Per-device object tables (qp.c, mr.c, ah.c), from main.c's hooks. */
int sroce_transport_dev_init(struct sroce_dev *sdev);
void sroce_transport_dev_cleanup(struct sroce_dev *sdev);

/* ---- internal to qp.c, req.c and comp.c ---- */

static inline struct sroce_swqe *sroce_sq_shadow(struct sroce_qp *qp, u32 idx)
{
	return qp->sq.shadow +
	       (size_t)(idx & (qp->sq.queue.num_entries - 1)) *
	       qp->sq.shadow_stride;
}

/*
 * Completion bookkeeping of one pass: CQs whose handler is owed, called
 * by sroce_comp_notify() once the caller dropped its locks.
 */
struct sroce_comp_notify {
	bool send_cq;
	bool recv_cq;
	/* XRC target QPs: recv_cq is this SRQ's CQ; a reference is held */
	struct sroce_srq *recv_srq;
	bool enter_error;	/* move the QP to the error state first */
	bool flush_rq;		/* the QP entered the error state */
	bool qp_fatal;		/* IB_EVENT_QP_FATAL */
	bool sq_drained;	/* IB_EVENT_SQ_DRAINED */
	bool last_wqe;		/* IB_EVENT_QP_LAST_WQE_REACHED (SRQ) */
	/* IB_EVENT_SRQ_LIMIT_REACHED on this SRQ (the QP's or the packet's) */
	struct sroce_srq *srq_limit;
};

/* Flush the RQ if needed, call handlers, raise events; no QP lock held. */
void sroce_comp_notify(struct sroce_qp *qp, struct sroce_comp_notify *n);
/* Post a send-side completion for @wqe (sq_lock held); -ENOSPC: overrun. */
int sroce_comp_post(struct sroce_qp *qp, struct sroce_swqe *wqe,
		    enum ib_wc_status status, struct sroce_comp_notify *n);
/* SQD: report the drain once nothing started is left (sq_lock held). */
void sroce_comp_check_drained(struct sroce_qp *qp, struct sroce_comp_notify *n);
/* Retire DONE WQEs in order from the SQ tail (sq_lock held). */
void sroce_comp_retire(struct sroce_qp *qp, struct sroce_comp_notify *n);
/* Enter the error state and flush the SQ (sq_lock held). */
void sroce_qp_error_locked(struct sroce_qp *qp, struct sroce_comp_notify *n);
/* Flush the RQ (no QP lock held but possibly resp.lock). */
void sroce_rq_flush(struct sroce_qp *qp, struct sroce_comp_notify *n);
/* Copy newly posted WQEs into the shadow (sq_lock held). */
int sroce_sq_fetch(struct sroce_qp *qp);
/* Publish whether a post may skip the doorbell (sq_lock held). */
void sroce_sq_set_draining(struct sroce_qp *qp, bool draining);
/* Restart transmission at @psn (sq_lock held). */
void sroce_req_go_back(struct sroce_qp *qp, u32 psn);
/* Count a requester recovery (enum sroce_rx_stat SROCE_REQ_*). */
void sroce_req_count(struct sroce_qp *qp, enum sroce_rx_stat stat);
/* Stop and arm the completer's timers (sq_lock held). */
void sroce_comp_arm_retrans(struct sroce_qp *qp);
void sroce_comp_arm_alloc_retry(struct sroce_qp *qp);
void sroce_comp_timers_init(struct sroce_qp *qp);
void sroce_comp_timers_stop(struct sroce_qp *qp, bool final);
void sroce_comp_reset(struct sroce_qp *qp);
int sroce_req_init(struct sroce_qp *qp);
void sroce_req_cleanup(struct sroce_qp *qp);
void sroce_req_detach(struct sroce_qp *qp);

/* post_send (kernel QPs, or the doorbell of user QPs), post_recv. */
int sroce_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		    const struct ib_send_wr **bad_wr);
int sroce_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		    const struct ib_recv_wr **bad_wr);

/*
 * Every verb of the transport objects (QP, CQ, MR, AH) and the driver
 * object sizes: the device core adds them with ib_set_device_ops().
 */
extern const struct ib_device_ops sroce_transport_ops;

#endif /* SROCE_QP_H */
