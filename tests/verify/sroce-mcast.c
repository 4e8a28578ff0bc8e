// SPDX-License-Identifier: GPL-2.0
/*
 * sroce-mcast: a check of UD multicast between two hosts.
 *
 *   sroce-mcast -d DEV -g GIDX -m GROUP [-p PORT] [-n MSGS] [-j] [-L]   (receiver)
 *   sroce-mcast -d DEV -g GIDX -m GROUP [-p PORT] [-n MSGS] PEER        (sender)
 *
 * GROUP is an IPv4 (224.0.0.0/4, used as its IPv4-mapped MGID) or IPv6
 * (ff00::/8) multicast address; GIDX the local RoCEv2 GID of the same
 * family. The receiver attaches three UD QPs to the group: R1 and R2 with
 * the Q_Key the sender uses, R3 with another one. Then, each phase started
 * over TCP:
 *
 *   1. the sender sends MSGS messages to the group (DQPN 0xFFFFFF): R1 and
 *      R2 each get every one of them, R3 none;
 *   2. R2 and R3 detached: MSGS more messages, R1 gets them, R2 and R3
 *      nothing;
 *   3. R1 detached (the group is empty): 20 more messages reach nobody.
 *
 * Every completion is checked: status, opcode, byte_len (40 + payload),
 * IBV_WC_GRH, src_qp (the sender's QPN), immediate data (the message
 * number), the payload bytes, the destination address in the GRH area (the
 * group), the 8 bytes after the payload untouched; messages arrive in
 * order, each at most once; R1 and R2 must have got the same ones. Every
 * datagram R1 lacks must be accounted for: when both hosts have sroce's
 * counters, the number lost in a phase equals the sender's tx_errors (a
 * refused enqueue; the sender reports it after each phase) plus the
 * receiver's receive drop counters, exactly. With a device without them
 * (rdma_rxe) on either side a loss cannot be accounted for, and up to 2%
 * per phase may be missing.
 *
 * Before phase 1 the receiver checks the verbs' errors: attaching a
 * unicast GID fails with EINVAL, attaching twice succeeds (one detach
 * undoes it), detaching a QP that is not attached or from a group that
 * does not exist fails with EINVAL; with -L also the advertised limits
 * max_mcast_qp_attach and max_mcast_grp (one more attach fails with
 * ENOMEM), destroying an attached QP fails with EBUSY, and a process
 * exiting with a QP attached to 500 groups leaves them all. When the device has sroce's port counters, rx_mcast_packets,
 * rx_mcast_deliveries, rx_drop_qkey and rx_drop_no_qp must move by exactly
 * what each phase implies, and the host must be a member of the group on
 * the device's netdev (/proc/net/igmp or igmp6, where the kernel has them)
 * from the first attach to the last detach only (or destroy). -j joins the
 * group with a UDP socket first (what rdma_cm does for IPv4 RoCEv2
 * groups), for devices that do not join the IP group themselves (rdma_rxe
 * only adds the MAC filter).
 *
 * Prints one summary line and exits non-zero on any mismatch.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <infiniband/verbs.h>

#define GRH_LEN 40
#define MAX_LEN 1024
#define TAIL 8
#define TAIL_BYTE 0xee
#define SLOT (GRH_LEN + MAX_LEN + TAIL)
#define QKEY 0x11223344u
#define PHASE3_MSGS 20
#define MCAST_QPN 0xffffffu
#define NRQ 3
#define TIMEOUT_MS 20000
#define QUIET_MS 2000

struct rq {
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;
	unsigned int slots;
	unsigned int got;	/* completions this phase */
	int last;		/* last message number seen */
};

static struct {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	union ibv_gid gid;
	union ibv_gid mgid;
	bool v4;
	char ifname[IF_NAMESIZE];
	int sock;
	unsigned int errors;
	unsigned int msgs;
	uint32_t sender_qpn;
	const char *dev;
	int gidx;
	char counters[256];
	bool have_counters;
} g;

static void die(const char *what)
{
	fprintf(stderr, "sroce-mcast: %s: %s\n", what, strerror(errno));
	exit(2);
}

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void fail(const char *fmt, ...)
{
	va_list ap;

	if (g.errors++ < 30) {
		fprintf(stderr, "MISMATCH: ");
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
		fputc('\n', stderr);
	}
}

static uint32_t msg_len(unsigned int n)
{
	if (n % 50 == 0)
		return 0;
	return (n * 2654435761u >> 7) % (MAX_LEN + 1);
}

static uint8_t msg_byte(unsigned int n, uint32_t i)
{
	return (uint8_t)((n * 131 + i * 7 + (i >> 8)) ^ 0xa5);
}

static void xfer(void *p, size_t len, bool out)
{
	uint8_t *b = p;
	ssize_t r;

	while (len) {
		r = out ? write(g.sock, b, len) : read(g.sock, b, len);
		if (r <= 0)
			die(out ? "tcp write" : "tcp read");
		b += r;
		len -= r;
	}
}

static void send_u32(uint32_t v)
{
	v = htonl(v);
	xfer(&v, sizeof(v), true);
}

static uint32_t recv_u32(void)
{
	uint32_t v;

	xfer(&v, sizeof(v), false);
	return ntohl(v);
}

static int tcp_connect(const char *host, const char *port, bool server)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC,
				  .ai_socktype = SOCK_STREAM,
				  .ai_flags = server ? AI_PASSIVE : 0 };
	struct addrinfo *res, *t;
	int fd = -1, one = 1, lfd;

	if (getaddrinfo(host, port, &hints, &res))
		die("getaddrinfo");
	for (t = res; t; t = t->ai_next) {
		fd = socket(t->ai_family, t->ai_socktype, t->ai_protocol);
		if (fd < 0)
			continue;
		if (server) {
			setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one,
				   sizeof(one));
			if (!bind(fd, t->ai_addr, t->ai_addrlen) &&
			    !listen(fd, 1))
				break;
		} else if (!connect(fd, t->ai_addr, t->ai_addrlen)) {
			break;
		}
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0)
		die(server ? "listen" : "connect");
	if (!server)
		return fd;
	lfd = fd;
	fd = accept(lfd, NULL, NULL);
	close(lfd);
	if (fd < 0)
		die("accept");
	return fd;
}

static long now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* ---- device, QPs ---- */

static void open_dev(const char *dev, int gidx)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	char path[512];
	FILE *f;
	int i;

	if (!list)
		die("ibv_get_device_list");
	for (i = 0; list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), dev))
			break;
	if (!list[i]) {
		fprintf(stderr, "sroce-mcast: no device %s\n", dev);
		exit(2);
	}
	g.ctx = ibv_open_device(list[i]);
	if (!g.ctx)
		die("ibv_open_device");
	ibv_free_device_list(list);
	if (ibv_query_gid(g.ctx, 1, gidx, &g.gid))
		die("ibv_query_gid");
	g.pd = ibv_alloc_pd(g.ctx);
	if (!g.pd)
		die("ibv_alloc_pd");
	snprintf(path, sizeof(path),
		 "/sys/class/infiniband/%s/ports/1/gid_attrs/ndevs/%d", dev,
		 gidx);
	f = fopen(path, "r");
	if (!f || !fgets(g.ifname, sizeof(g.ifname), f))
		die(path);
	fclose(f);
	g.ifname[strcspn(g.ifname, "\n")] = 0;
	snprintf(g.counters, sizeof(g.counters),
		 "/sys/class/infiniband/%s/ports/1/hw_counters", dev);
	snprintf(path, sizeof(path), "%s/rx_mcast_packets", g.counters);
	g.have_counters = !access(path, R_OK);
}

static struct ibv_qp *make_qp(struct ibv_cq *cq, unsigned int rq, uint32_t qkey)
{
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_UD, .send_cq = cq, .recv_cq = cq,
		.cap = { .max_send_wr = 32, .max_recv_wr = rq ? rq : 1,
			 .max_send_sge = 1, .max_recv_sge = 2 },
	};
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				    .qkey = qkey };
	struct ibv_qp *qp = ibv_create_qp(g.pd, &init);

	if (!qp)
		die("ibv_create_qp");
	if (ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_QKEY))
		die("modify INIT");
	attr.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(qp, &attr, IBV_QP_STATE))
		die("modify RTR");
	attr.qp_state = IBV_QPS_RTS;
	attr.sq_psn = 0;
	if (ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN))
		die("modify RTS");
	return qp;
}

static void post_recv(struct rq *r, unsigned int n)
{
	uint8_t *p = r->buf + (size_t)n * SLOT;
	struct ibv_sge sge[2] = {
		{ .addr = (uintptr_t)p, .length = GRH_LEN, .lkey = r->mr->lkey },
		{ .addr = (uintptr_t)p + GRH_LEN, .length = MAX_LEN,
		  .lkey = r->mr->lkey },
	};
	struct ibv_recv_wr wr = { .wr_id = n, .sg_list = sge, .num_sge = 2 },
			   *bad;

	memset(p, 0xcc, SLOT);
	memset(p + GRH_LEN + MAX_LEN, TAIL_BYTE, TAIL);
	if (ibv_post_recv(r->qp, &wr, &bad))
		die("ibv_post_recv");
}

static void make_rq(struct rq *r, unsigned int slots, uint32_t qkey)
{
	unsigned int i;

	r->slots = slots;
	r->cq = ibv_create_cq(g.ctx, slots + 32, NULL, NULL, 0);
	if (!r->cq)
		die("ibv_create_cq");
	r->qp = make_qp(r->cq, slots, qkey);
	r->buf = aligned_alloc(4096, ((size_t)slots * SLOT + 4095) & ~4095ul);
	if (!r->buf)
		die("malloc");
	r->mr = ibv_reg_mr(g.pd, r->buf, (size_t)slots * SLOT,
			   IBV_ACCESS_LOCAL_WRITE);
	if (!r->mr)
		die("ibv_reg_mr");
	for (i = 0; i < slots; i++)
		post_recv(r, i);
	r->last = -1;
}

/* ---- counters and membership ---- */

static long long counter(const char *name)
{
	char path[512];
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", g.counters, name);
	f = fopen(path, "r");
	if (!f || fscanf(f, "%lld", &v) != 1)
		die(path);
	fclose(f);
	return v;
}

enum { C_PKTS, C_DELIV, C_QKEY, C_NOQP, C_NUM };
static const char *const cnames[C_NUM] = {
	"rx_mcast_packets", "rx_mcast_deliveries", "rx_drop_qkey",
	"rx_drop_no_qp",
};

/* the receive drops that are not expected in a phase (as rx_drop_qkey is) */
static const char *const drop_names[] = {
	"rx_icrc_errors", "rx_malformed", "rx_drop_qp_type",
	"rx_drop_qp_state", "rx_drop_pkey", "rx_drop_address",
	"rp_cnp_ignored", "resp_dropped",
};

static long long rx_drops(void)
{
	long long sum = 0;
	size_t i;

	for (i = 0; i < sizeof(drop_names) / sizeof(drop_names[0]); i++)
		sum += counter(drop_names[i]);
	return sum;
}

static void snap(long long *c)
{
	int i;

	for (i = 0; g.have_counters && i < C_NUM; i++)
		c[i] = counter(cnames[i]);
}

static void expect_deltas(int phase, const long long *before,
			  const long long *want)
{
	long long now[C_NUM];
	int i;

	if (!g.have_counters)
		return;
	snap(now);
	for (i = 0; i < C_NUM; i++)
		if (now[i] - before[i] != want[i])
			fail("phase %d: %s moved by %lld, expected %lld", phase,
			     cnames[i], now[i] - before[i], want[i]);
}

/* Is this host a member of the group on our netdev (/proc/net/igmp*)? */
static bool member_of(const union ibv_gid *mgid)
{
	char line[512], dev[IF_NAMESIZE + 1] = "", want[40];
	bool found = false;
	FILE *f;
	int i;

	if (g.v4) {
		uint32_t a;

		memcpy(&a, mgid->raw + 12, 4);
		snprintf(want, sizeof(want), "%08X", a);
		f = fopen("/proc/net/igmp", "r");
	} else {
		for (i = 0; i < 16; i++)
			sprintf(want + 2 * i, "%02x", mgid->raw[i]);
		f = fopen("/proc/net/igmp6", "r");
	}
	if (!f)
		die("/proc/net/igmp");
	while (fgets(line, sizeof(line), f)) {
		char a[64], b[64];

		if (g.v4) {
			/* "N\tDEV\t:  ..." starts a device; groups follow */
			if (line[0] != '\t' && sscanf(line, "%*d %16s", dev) == 1)
				continue;
			if (sscanf(line, " %63s", a) == 1 && !strcmp(a, want) &&
			    !strcmp(dev, g.ifname))
				found = true;
		} else if (sscanf(line, "%*d %63s %63s", b, a) == 2 &&
			   !strcmp(a, want) && !strcmp(b, g.ifname)) {
			found = true;
		}
	}
	fclose(f);
	return found;
}

/* ---- receiver ---- */

static bool is_member_ok(bool want, const char *when)
{
	if (member_of(&g.mgid) != want) {
		fail("host %s a member of the group on %s %s", want ? "not" : "still",
		     g.ifname, when);
		return false;
	}
	return true;
}

static void check_wc(struct rq *r, int idx, const struct ibv_wc *wc)
{
	uint8_t *p = r->buf + wc->wr_id * SLOT;
	unsigned int n = ntohl(wc->imm_data) & 0xfffff, i;
	uint32_t len;

	if (wc->status != IBV_WC_SUCCESS) {
		fail("R%d: status %s", idx, ibv_wc_status_str(wc->status));
		return;
	}
	if (wc->opcode != IBV_WC_RECV || !(wc->wc_flags & IBV_WC_WITH_IMM) ||
	    (ntohl(wc->imm_data) & 0xfff00000u) != 0xabc00000u) {
		fail("R%d: opcode %d flags %#x imm %#x", idx, wc->opcode,
		     wc->wc_flags, ntohl(wc->imm_data));
		return;
	}
	if ((int)n <= r->last)
		fail("R%d: message %u after %d (duplicate or reordered)", idx, n,
		     r->last);
	r->last = n;
	r->got++;
	len = msg_len(n);
	if (!(wc->wc_flags & IBV_WC_GRH))
		fail("R%d: message %u without IBV_WC_GRH", idx, n);
	if (wc->src_qp != g.sender_qpn)
		fail("R%d: message %u src_qp %#x, expected %#x", idx, n,
		     wc->src_qp, g.sender_qpn);
	if (wc->byte_len != GRH_LEN + len)
		fail("R%d: message %u byte_len %u, expected %u", idx, n,
		     wc->byte_len, GRH_LEN + len);
	if (g.v4 ? memcmp(p + 36, g.mgid.raw + 12, 4) :
		   memcmp(p + 24, g.mgid.raw, 16))
		fail("R%d: message %u: the GRH area's destination is not the group",
		     idx, n);
	for (i = 0; i < len; i++)
		if (p[GRH_LEN + i] != msg_byte(n, i)) {
			fail("R%d: message %u byte %u is %#x, expected %#x", idx,
			     n, i, p[GRH_LEN + i], msg_byte(n, i));
			break;
		}
	for (i = 0; i < TAIL; i++)
		if (p[GRH_LEN + MAX_LEN + i] != TAIL_BYTE) {
			fail("R%d: message %u: written past its buffer", idx, n);
			break;
		}
}

/*
 * Poll every RQ until the sender said it is done and nothing arrived for
 * QUIET_MS, or @expect completions are on each of the first @full RQs.
 */
static void drain(struct rq *rq, unsigned int full, unsigned int expect)
{
	long start = now_ms(), last = start;
	struct ibv_wc wc;
	int i, n, done;

	for (;;) {
		for (i = 0; i < NRQ; i++) {
			while ((n = ibv_poll_cq(rq[i].cq, 1, &wc)) > 0) {
				check_wc(&rq[i], i + 1, &wc);
				last = now_ms();
			}
			if (n < 0)
				die("ibv_poll_cq");
		}
		for (done = 0, i = 0; i < (int)full; i++)
			done += rq[i].got >= expect;
		if (full && done == (int)full) {
			/* give late extras (wrong ones) a moment */
			usleep(200 * 1000);
			for (i = 0; i < NRQ; i++)
				while (ibv_poll_cq(rq[i].cq, 1, &wc) > 0)
					check_wc(&rq[i], i + 1, &wc);
			return;
		}
		if (now_ms() - last > QUIET_MS || now_ms() - start > TIMEOUT_MS)
			return;
		usleep(1000);
	}
}

static void mgid_of(const char *group)
{
	struct in_addr a4;

	if (inet_pton(AF_INET, group, &a4) == 1) {
		memset(g.mgid.raw, 0, 10);
		g.mgid.raw[10] = g.mgid.raw[11] = 0xff;
		memcpy(g.mgid.raw + 12, &a4, 4);
		g.v4 = true;
	} else if (inet_pton(AF_INET6, group, g.mgid.raw) != 1) {
		fprintf(stderr, "sroce-mcast: bad group %s\n", group);
		exit(2);
	}
}

/* Join the group on our netdev with a socket, as rdma_cm does for IPv4. */
static int join_ip_group(void)
{
	unsigned int ifindex = if_nametoindex(g.ifname);
	int fd;

	fd = socket(g.v4 ? AF_INET : AF_INET6, SOCK_DGRAM, 0);
	if (fd < 0 || !ifindex)
		die("socket");
	if (g.v4) {
		struct ip_mreqn m = { .imr_ifindex = ifindex };

		memcpy(&m.imr_multiaddr, g.mgid.raw + 12, 4);
		if (setsockopt(fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &m, sizeof(m)))
			die("IP_ADD_MEMBERSHIP");
	} else {
		struct ipv6_mreq m = { .ipv6mr_interface = ifindex };

		memcpy(&m.ipv6mr_multiaddr, g.mgid.raw, 16);
		if (setsockopt(fd, IPPROTO_IPV6, IPV6_ADD_MEMBERSHIP, &m,
			       sizeof(m)))
			die("IPV6_ADD_MEMBERSHIP");
	}
	return fd;
}

/* @what must fail with errno @err. */
static void expect_err(int ret, int err, const char *what)
{
	if (!ret)
		fail("%s succeeded", what);
	else if (ret != err && errno != err)
		fail("%s: %s, expected %s", what, strerror(ret > 0 ? ret : errno),
		     strerror(err));
}

static union ibv_gid other_group(unsigned int i)
{
	union ibv_gid x = g.mgid;

	/* same family, another group: vary the low bytes */
	x.raw[14] ^= (uint8_t)(1 + (i >> 8));
	x.raw[15] ^= (uint8_t)i;
	return x;
}

static void check_limits(bool check_member)
{
	struct ibv_device_attr da;
	struct ibv_cq *cq;
	struct ibv_qp **qps, *qp;
	union ibv_gid x;
	unsigned int i, nq, ng;
	int ret, status;
	pid_t pid;

	if (ibv_query_device(g.ctx, &da))
		die("ibv_query_device");
	nq = da.max_mcast_qp_attach;
	ng = da.max_mcast_grp;
	printf("receiver: limits max_mcast_grp %u max_mcast_qp_attach %u max_total_mcast_qp_attach %u\n",
	       ng, nq, da.max_total_mcast_qp_attach);
	if (!nq || !ng || nq > 4096 || ng > 65536) {
		fail("implausible multicast limits");
		return;
	}
	cq = ibv_create_cq(g.ctx, 4, NULL, NULL, 0);
	qps = calloc(nq + 1, sizeof(*qps));
	if (!cq || !qps)
		die("limits: cq");
	x = other_group(0);
	for (i = 0; i <= nq; i++) {
		qps[i] = make_qp(cq, 0, QKEY);
		ret = ibv_attach_mcast(qps[i], &x, 0);
		if (i < nq && ret)
			fail("attach of QP %u of %u to one group: %s", i + 1, nq,
			     strerror(ret));
		if (i == nq)
			expect_err(ret, ENOMEM, "attach past max_mcast_qp_attach");
	}
	/* ib_core refuses to destroy an attached QP (EBUSY) */
	for (i = 0; i < nq / 2; i++)
		if (ibv_detach_mcast(qps[i], &x, 0))
			fail("detach of QP %u from the full group", i + 1);
	expect_err(ibv_destroy_qp(qps[nq - 1]), EBUSY,
		   "destroy of an attached QP");
	for (i = nq / 2; i < nq; i++)
		if (ibv_detach_mcast(qps[i], &x, 0))
			fail("detach of QP %u from the full group", i + 1);
	for (i = 0; i <= nq; i++)
		if (ibv_destroy_qp(qps[i]))
			die("ibv_destroy_qp");
	if (check_member && member_of(&x))
		fail("still a member of a group after its last detach");
	free(qps);
	ibv_destroy_cq(cq);

	/*
	 * Groups, in a child process with its own context that exits with
	 * its QP still attached to half of them: the context's cleanup
	 * detaches and destroys it. The test's own group exists already.
	 */
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		die("fork");
	if (!pid) {
		g.errors = 0;
		open_dev(g.dev, g.gidx);
		cq = ibv_create_cq(g.ctx, 4, NULL, NULL, 0);
		if (!cq)
			die("limits: cq");
		qp = make_qp(cq, 0, QKEY);
		for (i = 0; i < ng; i++) {
			x = other_group(i + 1);
			ret = ibv_attach_mcast(qp, &x, 0);
			if (i < ng - 1 && ret) {
				fail("attach to group %u of %u: %s", i + 2, ng,
				     strerror(ret));
				break;
			}
			if (i == ng - 1)
				expect_err(ret, ENOMEM,
					   "attach past max_mcast_grp");
		}
		for (i = 0; i < (ng - 1) / 2; i++) {
			x = other_group(i + 1);
			if (ibv_detach_mcast(qp, &x, 0)) {
				fail("detach from group %u", i + 2);
				break;
			}
		}
		_exit(g.errors ? 1 : 0);
	}
	if (waitpid(pid, &status, 0) != pid)
		die("waitpid");
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		fail("the max_mcast_grp check (child process) failed");
	x = other_group(ng - 1);
	if (check_member && member_of(&x))
		fail("still a member of a group whose QP's process exited");
}

/* the sender's report when it has no tx_errors counter */
#define NOT_COUNTED UINT32_MAX

/*
 * Phase @phase delivered @got of @n messages to R1: are the missing ones
 * accounted for by the sender's @tx_drops and the receive drops since
 * @drops0? Returns the number lost.
 */
static unsigned int check_loss(int phase, unsigned int n, unsigned int got,
			       uint32_t tx_drops, long long drops0)
{
	unsigned int lost = got < n ? n - got : 0;
	long long rx;

	if (tx_drops == NOT_COUNTED || !g.have_counters) {
		if (lost > n / 50)
			fail("phase %d: %u of %u lost (at most %u without counters)",
			     phase, lost, n, n / 50);
		return lost;
	}
	rx = rx_drops() - drops0;
	if (lost != tx_drops + rx)
		fail("phase %d: %u of %u lost, but the sender counted %u tx_errors and the receiver %lld receive drops",
		     phase, lost, n, tx_drops, rx);
	return lost;
}

static void run_receiver(bool join, bool limits)
{
	unsigned int n = g.msgs, i, expect_got, lost = 0;
	long long c0[C_NUM] = { 0 }, want[C_NUM], d0 = 0;
	uint32_t tx_drops = NOT_COUNTED;
	struct rq rq[NRQ] = { 0 };
	struct ibv_cq *xcq;
	struct ibv_qp *stray;
	union ibv_gid uni = g.gid, x;
	int jfd = -1, ret;
	/* kernels without CONFIG_IP_MULTICAST (our debug one) lack the file */
	bool check_member = !join && g.have_counters &&
			    !access(g.v4 ? "/proc/net/igmp" : "/proc/net/igmp6",
				    R_OK);

	make_rq(&rq[0], 2 * n + PHASE3_MSGS, QKEY);
	make_rq(&rq[1], 2 * n + PHASE3_MSGS, QKEY);
	make_rq(&rq[2], 2 * n + PHASE3_MSGS, QKEY ^ 0x10000);
	xcq = ibv_create_cq(g.ctx, 4, NULL, NULL, 0);
	if (!xcq)
		die("ibv_create_cq");
	stray = make_qp(xcq, 0, QKEY);
	if (join)
		jfd = join_ip_group();
	if (check_member)
		is_member_ok(false, "before any attach");

	/* errors first */
	expect_err(ibv_attach_mcast(rq[0].qp, &uni, 0), EINVAL,
		   "attach to a unicast GID");
	for (i = 0; i < NRQ; i++) {
		ret = ibv_attach_mcast(rq[i].qp, &g.mgid, 0);
		if (ret)
			fail("attach R%u: %s", i + 1, strerror(ret));
	}
	ret = ibv_attach_mcast(rq[0].qp, &g.mgid, 0);
	if (ret)
		fail("second attach of R1: %s", strerror(ret));
	expect_err(ibv_detach_mcast(stray, &g.mgid, 0), EINVAL,
		   "detach of a QP that is not attached");
	x = other_group(0x77);
	expect_err(ibv_detach_mcast(rq[0].qp, &x, 0), EINVAL,
		   "detach from a group that does not exist");
	if (limits)
		check_limits(check_member);
	if (check_member)
		is_member_ok(true, "with QPs attached");

	g.sender_qpn = recv_u32();

	/* phase 1: R1 and R2 get everything, R3 (wrong Q_Key) nothing */
	snap(c0);
	if (g.have_counters)
		d0 = rx_drops();
	send_u32(1);
	(void)recv_u32();	/* sent */
	tx_drops = recv_u32();
	drain(rq, 2, n);
	expect_got = rq[0].got;
	printf("receiver: phase 1: R1 %u, R2 %u, R3 %u of %u messages\n",
	       rq[0].got, rq[1].got, rq[2].got, n);
	if (rq[1].got != rq[0].got)
		fail("phase 1: R1 got %u, R2 %u of %u (they must get the same)",
		     rq[0].got, rq[1].got, n);
	lost += check_loss(1, n, rq[0].got, tx_drops, d0);
	if (rq[2].got)
		fail("phase 1: R3 (wrong Q_Key) got %u messages", rq[2].got);
	want[C_PKTS] = expect_got;
	want[C_DELIV] = 2 * expect_got;
	want[C_QKEY] = expect_got;
	want[C_NOQP] = 0;
	expect_deltas(1, c0, want);

	/* phase 2: R2 and R3 detached, R1 alone */
	for (i = 1; i < NRQ; i++)
		if (ibv_detach_mcast(rq[i].qp, &g.mgid, 0))
			fail("detach R%u: %s", i + 1, strerror(errno));
	for (i = 0; i < NRQ; i++)
		rq[i].got = 0;
	snap(c0);
	if (g.have_counters)
		d0 = rx_drops();
	send_u32(2);
	(void)recv_u32();
	tx_drops = recv_u32();
	drain(rq, 1, n);
	printf("receiver: phase 2: R1 %u, R2 %u, R3 %u of %u messages\n",
	       rq[0].got, rq[1].got, rq[2].got, n);
	lost += check_loss(2, n, rq[0].got, tx_drops, d0);
	if (rq[1].got || rq[2].got)
		fail("phase 2: detached QPs got messages: R2 %u, R3 %u",
		     rq[1].got, rq[2].got);
	want[C_PKTS] = rq[0].got;
	want[C_DELIV] = rq[0].got;
	want[C_QKEY] = 0;
	expect_deltas(2, c0, want);

	/* phase 3: the last QP detached: nothing arrives anywhere */
	if (ibv_detach_mcast(rq[0].qp, &g.mgid, 0))
		fail("detach R1: %s", strerror(errno));
	expect_err(ibv_detach_mcast(rq[0].qp, &g.mgid, 0), EINVAL,
		   "second detach of R1 (attached twice, detached once)");
	if (check_member)
		is_member_ok(false, "after the last detach");
	for (i = 0; i < NRQ; i++)
		rq[i].got = 0;
	snap(c0);
	send_u32(3);
	(void)recv_u32();
	(void)recv_u32();	/* nothing arrives, nothing to account for */
	drain(rq, 0, 0);
	printf("receiver: phase 3: R1 %u, R2 %u, R3 %u of %u messages\n",
	       rq[0].got, rq[1].got, rq[2].got, PHASE3_MSGS);
	if (rq[0].got || rq[1].got || rq[2].got)
		fail("phase 3: messages after the last detach");
	memset(want, 0, sizeof(want));
	expect_deltas(3, c0, want);
	send_u32(0);

	if (jfd >= 0)
		close(jfd);
	ibv_destroy_qp(stray);
	ibv_destroy_cq(xcq);
	for (i = 0; i < NRQ; i++) {
		ibv_destroy_qp(rq[i].qp);
		ibv_destroy_cq(rq[i].cq);
		ibv_dereg_mr(rq[i].mr);
		free(rq[i].buf);
	}
	printf("receiver: %s group, 2 x %u messages, %u lost (%s), counters %s, membership %s, %u mismatches: %s\n",
	       g.v4 ? "IPv4" : "IPv6", n, lost,
	       tx_drops != NOT_COUNTED && g.have_counters ?
	       "each accounted for by counters" : "2% allowed, not counted",
	       g.have_counters ? "checked" : "not available",
	       check_member ? "checked" : "not checked", g.errors,
	       g.errors ? "FAIL" : "PASS");
}

/* ---- sender ---- */

static void run_sender(int gidx)
{
	struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1 };
	struct ibv_cq *cq = ibv_create_cq(g.ctx, 64, NULL, NULL, 0);
	unsigned int n = 0, phase, count, i, inflight = 0;
	long long tx0 = 0, tx_drops = 0;
	struct ibv_mr *mr;
	struct ibv_qp *qp;
	struct ibv_ah *ah;
	struct ibv_wc wc;
	uint8_t *buf;
	long t0;
	int r;

	if (!cq)
		die("ibv_create_cq");
	qp = make_qp(cq, 0, QKEY);
	aa.grh.dgid = g.mgid;
	aa.grh.sgid_index = gidx;
	aa.grh.hop_limit = 8;
	ah = ibv_create_ah(g.pd, &aa);
	if (!ah)
		die("ibv_create_ah with the multicast DGID");
	buf = aligned_alloc(4096, 32 * MAX_LEN);
	mr = buf ? ibv_reg_mr(g.pd, buf, 32 * MAX_LEN, 0) : NULL;
	if (!mr)
		die("ibv_reg_mr");
	send_u32(qp->qp_num);
	while ((phase = recv_u32())) {
		count = phase == 3 ? PHASE3_MSGS : g.msgs;
		if (g.have_counters)
			tx0 = counter("tx_errors");
		for (i = 0; i < count; i++, n++) {
			uint8_t *p = buf + (n % 32) * MAX_LEN;
			uint32_t len = msg_len(n), j;
			struct ibv_sge sge = { .addr = (uintptr_t)p,
					       .length = len,
					       .lkey = mr->lkey };
			struct ibv_send_wr wr = {
				.wr_id = n, .sg_list = &sge, .num_sge = 1,
				.opcode = IBV_WR_SEND_WITH_IMM,
				.send_flags = IBV_SEND_SIGNALED,
				.imm_data = htonl(0xabc00000u + n),
				.wr.ud = { .ah = ah, .remote_qpn = MCAST_QPN,
					   .remote_qkey = QKEY },
			}, *bad;

			while (inflight >= 16) {
				t0 = now_ms();
				while (!(r = ibv_poll_cq(cq, 1, &wc)))
					if (now_ms() - t0 > TIMEOUT_MS) {
						fprintf(stderr, "sroce-mcast: send completion timeout\n");
						exit(1);
					}
				if (r < 0)
					die("ibv_poll_cq");
				if (wc.status != IBV_WC_SUCCESS)
					fail("send %u: %s", (unsigned int)wc.wr_id,
					     ibv_wc_status_str(wc.status));
				inflight--;
			}
			for (j = 0; j < len; j++)
				p[j] = msg_byte(n, j);
			if (ibv_post_send(qp, &wr, &bad))
				die("ibv_post_send");
			inflight++;
			/* the guests' link drops bursts: pace a little */
			if (i % 8 == 7)
				usleep(2000);
		}
		while (inflight) {
			t0 = now_ms();
			while (!(r = ibv_poll_cq(cq, 1, &wc)))
				if (now_ms() - t0 > TIMEOUT_MS) {
					fprintf(stderr, "sroce-mcast: send completion timeout\n");
					exit(1);
				}
			if (r < 0)
				die("ibv_poll_cq");
			if (wc.status != IBV_WC_SUCCESS)
				fail("send %u: %s", (unsigned int)wc.wr_id,
				     ibv_wc_status_str(wc.status));
			inflight--;
		}
		send_u32(count);
		if (g.have_counters) {
			tx0 = counter("tx_errors") - tx0;
			tx_drops += tx0;
			send_u32(tx0);
		} else {
			send_u32(NOT_COUNTED);
		}
	}
	ibv_destroy_ah(ah);
	ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
	ibv_dereg_mr(mr);
	free(buf);
	if (g.have_counters)
		printf("sender: %lld refused at send (tx_errors)\n", tx_drops);
	printf("sender: %u messages to the %s group, tx_errors %s, %u errors: %s\n",
	       n, g.v4 ? "IPv4" : "IPv6",
	       g.have_counters ? "reported" : "not available", g.errors,
	       g.errors ? "FAIL" : "PASS");
}

int main(int argc, char **argv)
{
	const char *dev = NULL, *port = "18790", *group = NULL;
	bool join = false, limits = false;
	int gidx = -1, c;

	g.msgs = 200;
	while ((c = getopt(argc, argv, "d:g:m:p:n:jL")) != -1) {
		switch (c) {
		case 'd': dev = optarg; break;
		case 'g': gidx = atoi(optarg); break;
		case 'm': group = optarg; break;
		case 'p': port = optarg; break;
		case 'n': g.msgs = strtoul(optarg, NULL, 0); break;
		case 'j': join = true; break;
		case 'L': limits = true; break;
		default: goto usage;
		}
	}
	if (!dev || gidx < 0 || !group || !g.msgs || g.msgs > 100000 ||
	    optind < argc - 1)
		goto usage;
	setvbuf(stdout, NULL, _IOLBF, 0);
	mgid_of(group);
	g.dev = dev;
	g.gidx = gidx;
	open_dev(dev, gidx);
	g.sock = tcp_connect(optind < argc ? argv[optind] : NULL, port,
			     optind == argc);
	if (optind == argc)
		run_receiver(join, limits);
	else
		run_sender(gidx);
	return g.errors ? 1 : 0;
usage:
	fprintf(stderr, "usage: %s -d DEV -g GIDX -m GROUP [-p PORT] [-n MSGS] [-j] [-L] [PEER]\n",
		argv[0]);
	return 2;
}
