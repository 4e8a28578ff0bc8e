/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What sroce's verbs checkers share: failure counting, opening a device,
 * RC/UC QP setup and connection, a TCP side channel to exchange QP numbers,
 * GIDs and keys, and polling a CQ with a timeout. Setup errors end the
 * program (status 2) through die() and fatal(); a failed data check is
 * counted by CHECK() and the program goes on.
 */
#ifndef SROCE_VERIFY_COMMON_H
#define SROCE_VERIFY_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <infiniband/verbs.h>

/* checks made and failed so far, for the program's last line */
extern unsigned int checks, failures;

#define CHECK(cond, ...)                                           \
	do {                                                       \
		checks++;                                          \
		if (!(cond)) {                                     \
			failures++;                                \
			fprintf(stderr, "FAIL: " __VA_ARGS__);     \
			fputc('\n', stderr);                       \
		}                                                  \
	} while (0)

/* "FAIL: <program>: what: strerror(errno)", exit 2 */
void die(const char *what) __attribute__((noreturn));
/* "FAIL: <program>: <message>", exit 2 */
void fatal(const char *fmt, ...)
	__attribute__((noreturn, format(printf, 1, 2)));

long now_ms(void);

/* A number in a sysfs file, or -1 where there is no such file. */
long long sysfs_number(const char *path);
/* Counter @name of port 1 of device @dev (hw_counters), or -1 if none. */
long long port_counter(const char *dev, const char *name);

/* The device called @name; dies if there is none. */
struct ibv_context *open_device(const char *name);
union ibv_gid query_gid(struct ibv_context *ctx, int gidx);

/*
 * An RC or UC QP on @cq (send and receive) taking its receive WQEs from
 * @srq if not NULL, one SGE per WQE, moved to INIT with @access (remote
 * access flags the peer may use).
 */
struct ibv_qp *create_qp(struct ibv_pd *pd, enum ibv_qp_type type,
			 struct ibv_cq *cq, struct ibv_srq *srq,
			 uint32_t send_wr, uint32_t recv_wr, int access);
/* The same with @send_sge SGEs per send WQE. */
struct ibv_qp *create_qp_sge(struct ibv_pd *pd, enum ibv_qp_type type,
			     struct ibv_cq *cq, struct ibv_srq *srq,
			     uint32_t send_wr, uint32_t recv_wr,
			     uint32_t send_sge, int access);

/* Where a QP sends to; zero fields take the defaults given. */
struct qp_path {
	uint32_t dqpn;
	uint32_t rq_psn, sq_psn;
	union ibv_gid dgid;
	int sgid_index;
	enum ibv_mtu mtu;	/* 0: IBV_MTU_1024 */
	uint8_t rd_atomic;	/* RC, both directions; 0: 1 */
	uint8_t retry;		/* RC retry_cnt and rnr_retry; 0: 7 */
};

/*
 * Connect @a and @b, two RC or UC QPs of @ctx, to each other through the
 * device's own GID @gidx (the packets loop through lo), default path.
 */
void connect_loopback(struct ibv_context *ctx, struct ibv_qp *a,
		      struct ibv_qp *b, int gidx);
/* @len bytes of fresh anonymous memory, read-write; dies on failure. */
void *map_anon(size_t len);
/* The QP's current state; dies if it cannot be queried. */
enum ibv_qp_state qp_state(struct ibv_qp *qp);

/* INIT -> RTR -> RTS, with the attributes the QP's type takes. */
void connect_qp(struct ibv_qp *qp, const struct qp_path *path);

/*
 * The TCP side channel: with @host NULL, listen on @port (IPv6 and IPv4)
 * and accept one connection within @timeout_ms; else connect to @host (an
 * IPv4 or IPv6 address), retrying for @timeout_ms while the peer is not
 * listening yet. Returns the socket.
 */
int side_channel(const char *host, const char *port, int timeout_ms);
/* Send or receive exactly @len bytes; fatal if the peer is gone. */
void sc_send(int fd, const void *p, size_t len);
void sc_recv(int fd, void *p, size_t len);

/* Post one receive WQE of [addr, addr + len) with @lkey; dies on error. */
void post_recv_buf(struct ibv_qp *qp, void *addr, uint32_t len, uint32_t lkey);

/*
 * The next completion of @cq within @timeout_ms: 1, or 0 on timeout. Dies
 * if polling fails.
 */
int poll_cq(struct ibv_cq *cq, struct ibv_wc *wc, long timeout_ms);

#endif
