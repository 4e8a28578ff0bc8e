/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause) */
/*
 * sroce: the one contract between the kernel driver and the user-space
 * provider. It carries the driver-private udata payloads of uverbs commands
 * and the layout of the rings the provider maps.
 *
 * Rings
 * -----
 * Every ring (SQ, RQ, SRQ, CQ) is one mapping of mmap_len bytes: a
 * struct sroce_ring_ctrl, then num_entries slots of stride bytes each,
 * starting at SROCE_RING_SLOTS_OFFSET. num_entries is a power of two.
 * producer and consumer are free-running 32-bit counters; a slot's index
 * is counter & (num_entries - 1); the ring is full when
 * producer - consumer == num_entries.
 *
 * Each side writes only its own counter. A producer fills a slot, then
 * publishes it with a store-release of producer; a consumer reads producer
 * with a load-acquire before reading slots, and returns slots with a
 * store-release of consumer.
 *
 *   SQ:  user produces WQEs; the kernel consumes. A slot stays the kernel's
 *        until its WQE has completed (retransmission may read it again), so
 *        the kernel advances consumer only when it retires WQEs. After
 *        producing, the provider rings the doorbell: a uverbs POST_SEND
 *        command with wr_count == 0.
 *   RQ/SRQ: user produces; the kernel consumes as messages arrive. No
 *        doorbell, but in the error state (see flags below).
 *   CQ:  the kernel produces CQEs; user consumes.
 *
 * The kernel never trusts user-written memory: it reads a user counter
 * once, checks it against its own private copy, copies a slot before
 * validating it, and bounds every length and count it finds there.
 *
 * flags is the kernel's and only written by it (it never reads it back).
 * A QP's RQ ring has SROCE_RING_FLAG_QP_ERR set from the moment the
 * kernel moves the QP to the error state, by modify_qp or on its own,
 * until the QP is reset. Receive WQEs of a QP in error complete with
 * IBV_WC_WR_FLUSH_ERR: the kernel flushes those published before it set
 * the flag; a WQE published later is flushed on the QP's next doorbell
 * (in the error state it flushes both queues). So the provider, after the
 * store-release of producer, issues a full memory barrier, reads flags
 * and rings the doorbell if the flag is set; the kernel sets the flag,
 * issues a full barrier and only then reads producer to flush. One side
 * at least sees the other's store: no WQE is left behind. Kernels before
 * the flag left the word zero (it was reserved, and rings start zeroed).
 *
 * A QP's SQ ring has SROCE_RING_FLAG_SQ_DRAINING set while the kernel's
 * requester is sure to read producer again: it is sending from the ring,
 * or waiting for an event (an ACK, freed transmit credits, a timer) that
 * runs it again. A post may then skip the doorbell. The provider, after
 * the store-release of producer, issues a full memory barrier and reads
 * flags; it rings the doorbell unless the flag is set. The kernel, once
 * it has sent every WQE it took, clears the flag, issues a full barrier
 * and reads producer again, going on if it moved; it also clears the
 * flag before the error state's flush reads producer. Either the provider
 * sees the flag clear and rings, or the kernel sees the WQE: no post is
 * left waiting. Kernels before the flag never set it: every post rings.
 */
#ifndef SROCE_ABI_USER_H
#define SROCE_ABI_USER_H

#include <linux/types.h>

/* uverbs ABI version: ib_device_ops.uverbs_abi_ver and provider match. */
#define SROCE_ABI_VERSION 1

/*
 * A read-only sysfs attribute of every sroce ib_device
 * (/sys/class/infiniband/<dev>/sroce_abi_version) holding SROCE_ABI_VERSION
 * in decimal; the provider matches devices by it, whatever they are named.
 */
#define SROCE_SYSFS_ABI_ATTR "sroce_abi_version"

/* Devices are named by the user; this is only the default prefix. */
#define SROCE_DEVICE_NAME_PREFIX "sroce"

struct sroce_ring_ctrl {
	__u32 producer;
	__u32 reserved0[15];	/* producer and consumer on own cache lines */
	__u32 consumer;
	__u32 flags;		/* SROCE_RING_FLAG_* bits, set by the kernel */
	__u32 reserved1[14];
};

/* The RQ ring's QP is in the error state (see above). */
#define SROCE_RING_FLAG_QP_ERR	0x1
/* The SQ ring's requester reads producer again without a doorbell. */
#define SROCE_RING_FLAG_SQ_DRAINING	0x2

#define SROCE_RING_SLOTS_OFFSET 128

struct sroce_sge {
	__aligned_u64 addr;
	__u32 length;
	__u32 lkey;
};

/*
 * Send WQE: a 64-byte header, then either num_sge struct sroce_sge or, with
 * IBV_SEND_INLINE, inline_len bytes of data. opcode is an
 * enum ib_uverbs_wr_opcode (== enum ibv_wr_opcode); send_flags are
 * enum ib_uverbs_send_flags (== enum ibv_send_flags) bits. remote_srqn is
 * the SRQ number an XRC send QP's message is for (the XRCETH); other QP
 * types leave it 0 (it was a reserved word before XRC: same layout).
 */
struct sroce_send_wqe {
	__aligned_u64 wr_id;
	__u32 opcode;
	__u32 send_flags;
	__u32 num_sge;
	__u32 inline_len;
	union {
		__be32 imm_data;
		__u32 invalidate_rkey;
	} ex;
	__u32 remote_srqn;
	union {
		struct {
			__aligned_u64 remote_addr;
			__u32 rkey;
			__u32 reserved;
		} rdma;
		struct {
			__aligned_u64 remote_addr;
			__aligned_u64 compare_add;
			__aligned_u64 swap;
			__u32 rkey;
			__u32 reserved;
		} atomic;
		/* IBV_WR_ATOMIC_WRITE: no SGEs, not inline */
		struct {
			__aligned_u64 remote_addr;	/* 8-byte aligned */
			__u32 rkey;
			__u32 reserved;
			__u8 value[8];	/* stored at remote_addr as is */
		} atomic_write;
		/* IBV_WR_FLUSH (rdma-core 45 and later): no SGEs */
		struct {
			__aligned_u64 remote_addr;
			__aligned_u64 length;	/* at most 2^32 - 1 */
			__u32 rkey;
			__u8 type;	/* IBV_FLUSH_GLOBAL/PERSISTENT bits */
			__u8 level;	/* IBV_FLUSH_RANGE or IBV_FLUSH_MR */
			__u16 reserved;
		} flush;
		struct {
			__u32 ah_num;	/* from struct sroce_create_ah_resp */
			__u32 remote_qpn;
			__u32 remote_qkey;
			__u32 reserved;
		} ud;
		struct {
			__aligned_u64 addr;
			__aligned_u64 length;
			__u32 mr_lkey;
			__u32 mw_rkey;	/* rkey of the window being bound */
			__u32 rkey;	/* new rkey after the bind */
			__u32 access;	/* enum ib_uverbs_access_flags bits */
		} bind_mw;
	} wr;
};

#define SROCE_SEND_WQE_HDR_SIZE 64

/* Receive WQE (RQ and SRQ): a 16-byte header, then num_sge SGEs. */
struct sroce_recv_wqe {
	__aligned_u64 wr_id;
	__u32 num_sge;
	__u32 reserved;
};

#define SROCE_RECV_WQE_HDR_SIZE 16

/*
 * Completion. status is an enum ibv_wc_status value (numerically equal to
 * the kernel's enum ib_wc_status), opcode an enum ibv_wc_opcode value and
 * wc_flags enum ibv_wc_flags bits: the kernel translates into libibverbs'
 * encoding so the provider copies fields without mapping.
 */
struct sroce_cqe {
	__aligned_u64 wr_id;
	__u8 status;
	__u8 opcode;
	__u8 wc_flags;
	__u8 sl;	/* UD receives: SROCE_CQE_SL_* (see below) */
	__u32 vendor_err;
	__u32 byte_len;
	union {
		__be32 imm_data;
		__u32 invalidated_rkey;
	} ex;
	__u32 qp_num;
	__u32 src_qp;
	__u16 pkey_index;
	__u16 vlan;	/* UD receives: 0, or SROCE_CQE_VLAN_VALID | VLAN id */
	__u32 reserved1;
	/*
	 * Written only on CQs created with IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION
	 * (0 elsewhere), when the kernel posts the CQE: the device clock
	 * (CLOCK_MONOTONIC_RAW in ns; hca_core_clock 1000000 kHz) and the
	 * wall clock (CLOCK_REALTIME in ns). These were reserved words.
	 */
	__aligned_u64 timestamp;
	__aligned_u64 wallclock_ns;
	__u32 reserved2[2];
};

/*
 * RoCE packets carry no service level. The sl of a UD receive completion
 * reports the packet's type instead, as RoCE hardware does (IBTA A17.4.5.1
 * asks UD completions to tell IPv4 from IPv6; UCX reads it from sl to find
 * the destination address in the GRH): the RoCEv2 bit and the network
 * header type.
 */
#define SROCE_CQE_SL_ROCEV2	0x8
#define SROCE_CQE_SL_IPV6	0x1
#define SROCE_CQE_SL_IPV4	0x2

/*
 * A UD receive that came in on an 802.1Q VLAN device reports its VLAN id
 * in vlan: the connection manager picks the GID to answer from with it
 * (a GID of a VLAN device matches only that VLAN).
 */
#define SROCE_CQE_VLAN_VALID	0x8000

/* Description of one mapped ring in a create response. */
struct sroce_queue_info {
	__aligned_u64 mmap_key;	/* mmap offset on the uverbs command fd */
	__u32 mmap_len;
	__u32 num_entries;
	__u32 stride;		/* bytes per slot */
	__u32 reserved;
};

struct sroce_alloc_ucontext_resp {
	__u32 abi_version;
	__u32 max_inline_data;
};

struct sroce_alloc_pd_resp {
	__u32 pdn;
	__u32 reserved;
};

struct sroce_create_cq_resp {
	struct sroce_queue_info cq;
};

struct sroce_resize_cq_resp {
	struct sroce_queue_info cq;
};

struct sroce_create_qp_resp {
	struct sroce_queue_info sq;	/* mmap_len == 0: no SQ ring */
	struct sroce_queue_info rq;	/* mmap_len == 0: QP uses an SRQ */
};

struct sroce_create_srq_resp {
	struct sroce_queue_info rq;
	__u32 srq_num;
	__u32 reserved;
};

struct sroce_create_ah_resp {
	__u32 ah_num;
	__u32 reserved;
};

#endif /* SROCE_ABI_USER_H */
