// SPDX-License-Identifier: GPL-2.0
/* Helpers shared by sroce's verbs checkers: see common.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

unsigned int checks, failures;

void die(const char *what)
{
	fprintf(stderr, "FAIL: %s: %s: %s\n", program_invocation_short_name,
		what, strerror(errno));
	exit(2);
}

void fatal(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "FAIL: %s: ", program_invocation_short_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

long now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

long long sysfs_number(const char *path)
{
	long long v = -1;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

long long port_counter(const char *dev, const char *name)
{
	char path[256];

	snprintf(path, sizeof(path),
		 "/sys/class/infiniband/%s/ports/1/hw_counters/%s", dev, name);
	return sysfs_number(path);
}

struct ibv_context *open_device(const char *name)
{
	struct ibv_context *ctx = NULL;
	struct ibv_device **list;
	int n, i;

	list = ibv_get_device_list(&n);
	if (!list)
		die("ibv_get_device_list");
	for (i = 0; i < n && !ctx; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	if (!ctx)
		fatal("cannot open device %s", name);
	return ctx;
}

union ibv_gid query_gid(struct ibv_context *ctx, int gidx)
{
	union ibv_gid gid;

	if (ibv_query_gid(ctx, 1, gidx, &gid))
		die("ibv_query_gid");
	return gid;
}

struct ibv_qp *create_qp_sge(struct ibv_pd *pd, enum ibv_qp_type type,
			     struct ibv_cq *cq, struct ibv_srq *srq,
			     uint32_t send_wr, uint32_t recv_wr,
			     uint32_t send_sge, int access)
{
	struct ibv_qp_init_attr init = {
		.send_cq = cq, .recv_cq = cq, .srq = srq, .qp_type = type,
		.cap = { .max_send_wr = send_wr,
			 .max_recv_wr = srq ? 0 : recv_wr,
			 .max_send_sge = send_sge, .max_recv_sge = 1 },
	};
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qp_access_flags = access };
	struct ibv_qp *qp = ibv_create_qp(pd, &init);

	if (!qp)
		die("ibv_create_qp");
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		die("modify INIT");
	return qp;
}

struct ibv_qp *create_qp(struct ibv_pd *pd, enum ibv_qp_type type,
			 struct ibv_cq *cq, struct ibv_srq *srq,
			 uint32_t send_wr, uint32_t recv_wr, int access)
{
	return create_qp_sge(pd, type, cq, srq, send_wr, recv_wr, 1, access);
}

void connect_qp(struct ibv_qp *qp, const struct qp_path *p)
{
	bool rc = qp->qp_type == IBV_QPT_RC;
	uint8_t depth = p->rd_atomic ? p->rd_atomic : 1;
	uint8_t retry = p->retry ? p->retry : 7;
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR,
		.path_mtu = p->mtu ? p->mtu : IBV_MTU_1024,
		.dest_qp_num = p->dqpn, .rq_psn = p->rq_psn,
		.max_dest_rd_atomic = depth, .min_rnr_timer = 1,
		.ah_attr = { .is_global = 1, .port_num = 1,
			     .grh = { .dgid = p->dgid,
				      .sgid_index = p->sgid_index,
				      .hop_limit = 64 } },
	};
	int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
		   IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;

	if (ibv_modify_qp(qp, &a, mask | (rc ? IBV_QP_MAX_DEST_RD_ATOMIC |
					  IBV_QP_MIN_RNR_TIMER : 0)))
		die("modify RTR");
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = p->sq_psn;
	a.timeout = 14;
	a.retry_cnt = retry;
	a.rnr_retry = retry;
	a.max_rd_atomic = depth;
	mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	if (ibv_modify_qp(qp, &a, mask | (rc ? IBV_QP_TIMEOUT |
					  IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
					  IBV_QP_MAX_QP_RD_ATOMIC : 0)))
		die("modify RTS");
}

void connect_loopback(struct ibv_context *ctx, struct ibv_qp *a,
		      struct ibv_qp *b, int gidx)
{
	struct qp_path path = { .sgid_index = gidx,
				.dgid = query_gid(ctx, gidx) };

	path.dqpn = b->qp_num;
	connect_qp(a, &path);
	path.dqpn = a->qp_num;
	connect_qp(b, &path);
}

void *map_anon(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		die("mmap");
	return p;
}

enum ibv_qp_state qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr attr;

	if (ibv_query_qp(qp, &attr, IBV_QP_STATE, &init))
		die("ibv_query_qp");
	return attr.qp_state;
}

/*
 * The listening socket: IPv6 taking IPv4 too (v4-mapped), so that a peer
 * on an IPv6-only link can connect; IPv4 only where IPv6 is off.
 */
static int sc_listen(const char *port, int *fd)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE }, *ai;
	int one = 1, zero = 0, err;

	hints.ai_family = AF_INET6;
	*fd = socket(AF_INET6, SOCK_STREAM, 0);
	if (*fd < 0) {
		hints.ai_family = AF_INET;
		*fd = socket(AF_INET, SOCK_STREAM, 0);
	}
	if (*fd < 0)
		die("socket");
	if (getaddrinfo(NULL, port, &hints, &ai))
		fatal("getaddrinfo *:%s", port);
	setsockopt(*fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (hints.ai_family == AF_INET6)
		setsockopt(*fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	err = bind(*fd, ai->ai_addr, ai->ai_addrlen) || listen(*fd, 1);
	freeaddrinfo(ai);
	return err;
}

int side_channel(const char *host, const char *port, int timeout_ms)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC,
				  .ai_socktype = SOCK_STREAM }, *ai;
	long end = now_ms() + timeout_ms;
	int fd, sock;

	if (!host) {
		struct pollfd pfd = { .events = POLLIN };

		if (sc_listen(port, &fd))
			die("bind/listen");
		pfd.fd = fd;
		if (poll(&pfd, 1, timeout_ms) != 1)
			fatal("no connection on port %s in %d ms", port,
			      timeout_ms);
		sock = accept(fd, NULL, NULL);
		if (sock < 0)
			die("accept");
		close(fd);
		return sock;
	}
	if (getaddrinfo(host, port, &hints, &ai))
		fatal("getaddrinfo %s:%s", host, port);
	fd = socket(ai->ai_family, ai->ai_socktype, 0);
	if (fd < 0)
		die("socket");
	while (connect(fd, ai->ai_addr, ai->ai_addrlen)) {
		if (now_ms() > end)
			die("connect");
		usleep(100000);
	}
	freeaddrinfo(ai);
	return fd;
}

static void sc_xfer(int fd, void *p, size_t len, bool out)
{
	size_t done = 0;
	ssize_t n;

	while (done < len) {
		n = out ? write(fd, (char *)p + done, len - done) :
			  read(fd, (char *)p + done, len - done);
		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			fatal("side channel closed");
		}
		done += n;
	}
}

void sc_send(int fd, const void *p, size_t len)
{
	sc_xfer(fd, (void *)p, len, true);
}

void sc_recv(int fd, void *p, size_t len)
{
	sc_xfer(fd, p, len, false);
}

int poll_cq(struct ibv_cq *cq, struct ibv_wc *wc, long timeout_ms)
{
	long end = now_ms() + timeout_ms;
	int n;

	while (!(n = ibv_poll_cq(cq, 1, wc)))
		if (now_ms() > end)
			return 0;
	if (n < 0)
		die("ibv_poll_cq");
	return 1;
}

void post_recv_buf(struct ibv_qp *qp, void *addr, uint32_t len, uint32_t lkey)
{
	struct ibv_sge sge = { .addr = (uintptr_t)addr, .length = len,
			       .lkey = lkey };
	struct ibv_recv_wr wr = { .wr_id = 2, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;

	if (ibv_post_recv(qp, &wr, &bad))
		die("ibv_post_recv");
}
