// SPDX-License-Identifier: GPL-2.0
/*
 * sroce-ud: a data check of UD QPs between two hosts, which
 * ibv_ud_pingpong (rdma-core 44) does not do: it neither checks payloads
 * nor the GRH.
 *
 *   sroce-ud -d DEV -g GIDX [-p PORT] [-n MSGS] [-w BADQKEY] [-l MAXLOST] [-r]       (server)
 *   sroce-ud -d DEV -g GIDX [-p PORT] [-n MSGS] [-w BADQKEY] [-l MAXLOST] [-r] PEER  (client)
 *
 * The two sides exchange QPN, Q_Key and GID over TCP, then each side in
 * turn (client first) sends MSGS messages of pseudo-random sizes (0 bytes
 * up to the port's active MTU), every second one with immediate data, in
 * windows no larger than what the receiver posted. The receiver matches
 * every completion to the oldest expected message it is (the ones it
 * skipped count as lost; more than MAXLOST, default 0, is a mismatch, and
 * the caller compares the number with what the devices counted as
 * dropped) and checks it: status, opcode, byte_len (40 + payload),
 * IBV_WC_GRH, src_qp, immediate data, the payload bytes, that the GRH area
 * was written as RoCEv2 does it (IPv4: the IPv4 header in its last 20
 * bytes, with the sender's and receiver's addresses and UDP as protocol;
 * IPv6: the IPv6 header with both GIDs) and that the 8 bytes after the
 * payload were left alone. With -w, each sender first sends BADQKEY messages with a wrong
 * Q_Key, which the receiver must never see (the next message it receives
 * has to be the first good one).
 *
 * With -r a sender overwrites each message's buffer as soon as its send
 * completion arrives, as an application reusing its buffers may: the
 * completion must mean that nothing still to be sent reads the buffer.
 *
 * Prints one summary line per direction, with the number lost, and exits
 * non-zero on any mismatch.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>

#include <infiniband/verbs.h>

#define GRH_LEN 40
#define WINDOW 32
#define TAIL 8
#define TAIL_BYTE 0xee
#define QKEY 0x1234567u
#define TIMEOUT_MS 20000

struct peer_info {
	uint32_t qpn;
	uint32_t qkey;
	uint8_t gid[16];
};

static struct {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_ah *ah;
	struct ibv_mr *mr;
	uint8_t *buf;
	size_t slot;		/* GRH_LEN + mtu + TAIL */
	uint32_t mtu;
	union ibv_gid gid;
	struct peer_info peer;
	int sock;
	unsigned int errors;
} g;

static void die(const char *what)
{
	fprintf(stderr, "sroce-ud: %s: %s\n", what, strerror(errno));
	exit(2);
}

static void mismatch(unsigned int n, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void mismatch(unsigned int n, const char *fmt, ...)
{
	va_list ap;

	if (g.errors++ < 20) {
		fprintf(stderr, "MISMATCH message %u: ", n);
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
		fputc('\n', stderr);
	}
}

/* Message n of direction dir: its size and its bytes, from a seed. */
static uint32_t msg_len(int dir, unsigned int n)
{
	uint32_t x = (n + 1) * 2654435761u ^ (dir ? 0x9e3779b9u : 0);

	if (n == 0)
		return 0;
	if (n == 1)
		return g.mtu;
	if (n == 2)
		return 1;
	return x % (g.mtu + 1);
}

static uint8_t msg_byte(int dir, unsigned int n, uint32_t i)
{
	return (uint8_t)((n * 131 + i * 7 + dir * 29 + (i >> 8)) ^ 0x5a);
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

static void sync_peer(void)
{
	uint8_t c = 1;

	xfer(&c, 1, true);
	xfer(&c, 1, false);
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

static void setup(const char *dev, int gidx)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_port_attr port;
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = WINDOW, .max_recv_wr = WINDOW,
			 .max_send_sge = 1, .max_recv_sge = 2 },
	};
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				    .qkey = QKEY };
	int i;

	if (!list)
		die("ibv_get_device_list");
	for (i = 0; list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), dev))
			break;
	if (!list[i]) {
		fprintf(stderr, "sroce-ud: no device %s\n", dev);
		exit(2);
	}
	g.ctx = ibv_open_device(list[i]);
	if (!g.ctx)
		die("ibv_open_device");
	if (ibv_query_port(g.ctx, 1, &port))
		die("ibv_query_port");
	g.mtu = 128u << port.active_mtu;
	if (ibv_query_gid(g.ctx, 1, gidx, &g.gid))
		die("ibv_query_gid");
	g.pd = ibv_alloc_pd(g.ctx);
	g.cq = ibv_create_cq(g.ctx, 2 * WINDOW, NULL, NULL, 0);
	if (!g.pd || !g.cq)
		die("pd/cq");
	init.send_cq = g.cq;
	init.recv_cq = g.cq;
	g.qp = ibv_create_qp(g.pd, &init);
	if (!g.qp)
		die("ibv_create_qp");
	if (ibv_modify_qp(g.qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_QKEY))
		die("modify INIT");
	attr.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(g.qp, &attr, IBV_QP_STATE))
		die("modify RTR");
	attr.qp_state = IBV_QPS_RTS;
	attr.sq_psn = 0;
	if (ibv_modify_qp(g.qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN))
		die("modify RTS");
	/* WINDOW receive slots, then WINDOW send slots */
	g.slot = GRH_LEN + g.mtu + TAIL;
	g.buf = aligned_alloc(4096, (2 * WINDOW * g.slot + 4095) & ~4095ul);
	if (!g.buf)
		die("malloc");
	g.mr = ibv_reg_mr(g.pd, g.buf, 2 * WINDOW * g.slot,
			  IBV_ACCESS_LOCAL_WRITE);
	if (!g.mr)
		die("ibv_reg_mr");
	ibv_free_device_list(list);
}

static void exchange(int gidx)
{
	struct peer_info me = { .qpn = htonl(g.qp->qp_num),
				.qkey = htonl(QKEY) };
	struct ibv_ah_attr ah = { .is_global = 1, .port_num = 1 };

	memcpy(me.gid, g.gid.raw, 16);
	xfer(&me, sizeof(me), true);
	xfer(&g.peer, sizeof(g.peer), false);
	g.peer.qpn = ntohl(g.peer.qpn);
	g.peer.qkey = ntohl(g.peer.qkey);
	memcpy(ah.grh.dgid.raw, g.peer.gid, 16);
	ah.grh.sgid_index = gidx;
	ah.grh.hop_limit = 64;
	g.ah = ibv_create_ah(g.pd, &ah);
	if (!g.ah)
		die("ibv_create_ah");
}

static int poll_one(struct ibv_wc *wc)
{
	struct timespec t0, t;
	int n;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		n = ibv_poll_cq(g.cq, 1, wc);
		if (n < 0)
			die("ibv_poll_cq");
		if (n)
			return 0;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000 +
		    (t.tv_nsec - t0.tv_nsec) / 1000000 > TIMEOUT_MS)
			return -1;
	}
}

static void post_send(int dir, unsigned int n, uint32_t qkey, bool imm)
{
	uint8_t *p = g.buf + (WINDOW + n % WINDOW) * g.slot;
	uint32_t len = msg_len(dir, n), i;
	struct ibv_sge sge = { .addr = (uintptr_t)p, .length = len,
			       .lkey = g.mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = n, .sg_list = &sge, .num_sge = 1,
		.opcode = imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
		.imm_data = htonl(0xabc00000u + n),
		.wr.ud = { .ah = g.ah, .remote_qpn = g.peer.qpn,
			   .remote_qkey = qkey },
	}, *bad;

	for (i = 0; i < len; i++)
		p[i] = msg_byte(dir, n, i);
	if (ibv_post_send(g.qp, &wr, &bad))
		die("ibv_post_send");
}

static bool reuse;	/* -r */

static void wait_sends(unsigned int count)
{
	struct ibv_wc wc;

	while (count--) {
		if (poll_one(&wc)) {
			fprintf(stderr, "sroce-ud: send completion timeout\n");
			exit(1);
		}
		if (wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_SEND)
			mismatch(wc.wr_id, "send completion status %s opcode %d",
				 ibv_wc_status_str(wc.status), wc.opcode);
		if (reuse)
			memset(g.buf + (WINDOW + wc.wr_id % WINDOW) * g.slot,
			       0x5a, g.slot);
	}
}

/* Two SGEs per receive: the GRH area and the payload + tail. */
static void post_recv(uint64_t n)
{
	uint8_t *p = g.buf + (n % WINDOW) * g.slot;
	struct ibv_sge sge[2] = {
		{ .addr = (uintptr_t)p, .length = GRH_LEN, .lkey = g.mr->lkey },
		{ .addr = (uintptr_t)p + GRH_LEN, .length = g.mtu,
		  .lkey = g.mr->lkey },
	};
	struct ibv_recv_wr wr = { .wr_id = n, .sg_list = sge, .num_sge = 2 },
			   *bad;

	memset(p, 0xcc, g.slot);
	memset(p + GRH_LEN + g.mtu, TAIL_BYTE, TAIL);
	if (ibv_post_recv(g.qp, &wr, &bad))
		die("ibv_post_recv");
}

static bool gid_is_v4(const uint8_t *gid)
{
	static const uint8_t pfx[12] = { [10] = 0xff, [11] = 0xff };

	return !memcmp(gid, pfx, 12);
}

static void check_grh(unsigned int n, const uint8_t *grh)
{
	const uint8_t *src = g.peer.gid, *dst = g.gid.raw;
	const uint8_t *ip = grh + 20;
	unsigned int i;

	if (gid_is_v4(dst)) {
		/* as rxe: 20 zero bytes, then the IPv4 header */
		for (i = 0; i < 20; i++)
			if (grh[i]) {
				mismatch(n, "GRH area byte %u is 0x%02x, not 0",
					 i, grh[i]);
				break;
			}
		if (ip[0] != 0x45)
			mismatch(n, "GRH area: IPv4 version/IHL 0x%02x", ip[0]);
		if (ip[9] != IPPROTO_UDP)
			mismatch(n, "GRH area: IPv4 protocol %u", ip[9]);
		if (memcmp(ip + 12, src + 12, 4) || memcmp(ip + 16, dst + 12, 4))
			mismatch(n, "GRH area: IPv4 addresses %u.%u.%u.%u > %u.%u.%u.%u",
				 ip[12], ip[13], ip[14], ip[15],
				 ip[16], ip[17], ip[18], ip[19]);
	} else {
		if ((grh[0] >> 4) != 6)
			mismatch(n, "GRH: IP version %u", grh[0] >> 4);
		if (grh[6] != IPPROTO_UDP)
			mismatch(n, "GRH: next header %u", grh[6]);
		if (memcmp(grh + 8, src, 16) || memcmp(grh + 24, dst, 16))
			mismatch(n, "GRH: source/destination GID differ");
	}
}

/* Is the completed receive message n of direction dir (length, immediate, bytes)? */
static bool is_msg(int dir, unsigned int n, const struct ibv_wc *wc)
{
	const uint8_t *p = g.buf + (wc->wr_id % WINDOW) * g.slot + GRH_LEN;
	uint32_t len = msg_len(dir, n), i;
	bool imm = n & 1;

	if (wc->status != IBV_WC_SUCCESS || wc->byte_len != GRH_LEN + len)
		return false;
	if (imm != !!(wc->wc_flags & IBV_WC_WITH_IMM) ||
	    (imm && ntohl(wc->imm_data) != 0xabc00000u + n))
		return false;
	for (i = 0; i < len; i++)
		if (p[i] != msg_byte(dir, n, i))
			return false;
	return true;
}

/* Every check of a receive that is message n. */
static void check_recv(int dir, unsigned int n, const struct ibv_wc *wc)
{
	const uint8_t *p = g.buf + (wc->wr_id % WINDOW) * g.slot;
	uint32_t len = msg_len(dir, n), i;
	bool imm = n & 1;

	if (wc->status != IBV_WC_SUCCESS) {
		mismatch(n, "status %s", ibv_wc_status_str(wc->status));
		return;
	}
	if (wc->opcode != IBV_WC_RECV)
		mismatch(n, "opcode %d", wc->opcode);
	if (wc->byte_len != GRH_LEN + len)
		mismatch(n, "byte_len %u, expected %u", wc->byte_len,
			 GRH_LEN + len);
	if (!(wc->wc_flags & IBV_WC_GRH))
		mismatch(n, "no IBV_WC_GRH");
	if (wc->src_qp != g.peer.qpn)
		mismatch(n, "src_qp 0x%x, expected 0x%x", wc->src_qp,
			 g.peer.qpn);
	if (imm != !!(wc->wc_flags & IBV_WC_WITH_IMM) ||
	    (imm && ntohl(wc->imm_data) != 0xabc00000u + n))
		mismatch(n, "immediate data (flags 0x%x, 0x%x)", wc->wc_flags,
			 ntohl(wc->imm_data));
	check_grh(n, p);
	for (i = 0; i < len && i < wc->byte_len - GRH_LEN; i++)
		if (p[GRH_LEN + i] != msg_byte(dir, n, i)) {
			mismatch(n, "payload byte %u: 0x%02x, expected 0x%02x",
				 i, p[GRH_LEN + i], msg_byte(dir, n, i));
			break;
		}
	for (i = len; i < g.mtu + TAIL; i++)
		if (p[GRH_LEN + i] != (i < g.mtu ? 0xcc : TAIL_BYTE)) {
			mismatch(n, "byte %u after the payload was written", i);
			break;
		}
}

/* Receives posted and completed on this side (FIFO: slot = wr_id % WINDOW). */
static uint64_t posted, consumed;

static void refill(void)
{
	while (posted - consumed < WINDOW)
		post_recv(posted++);
}

/* Has the peer written its "all sent" byte? */
static bool peer_done(void)
{
	struct pollfd pfd = { .fd = g.sock, .events = POLLIN };
	uint8_t c;

	if (poll(&pfd, 1, 0) <= 0)
		return false;
	xfer(&c, 1, false);
	return true;
}

/*
 * Receive messages [base, base + w): each completion is matched to the
 * oldest expected message it is; the ones it skipped count as lost (UD
 * may drop). Returns when all arrived, or 1 s after the sender said it
 * sent them all.
 */
static unsigned int recv_window(int dir, unsigned int base, unsigned int w,
				unsigned int *bytes)
{
	unsigned int next = base, end = base + w, n, lost = 0;
	struct timespec t;
	bool done = false;
	long deadline = 0;
	struct ibv_wc wc;
	int got;

	while (next < end) {
		got = ibv_poll_cq(g.cq, 1, &wc);
		if (got < 0)
			die("ibv_poll_cq");
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (!got) {
			if (!done && peer_done()) {
				done = true;
				deadline = t.tv_sec * 1000 + t.tv_nsec / 1000000 + 1000;
			}
			if (done && t.tv_sec * 1000 + t.tv_nsec / 1000000 > deadline)
				break;
			continue;
		}
		consumed++;
		for (n = next; n < end && !is_msg(dir, n, &wc); n++)
			;
		if (n == end) {
			/* matches nothing expected: report against next */
			check_recv(dir, next, &wc);
			mismatch(next, "received data is no expected message");
			next++;
			continue;
		}
		lost += n - next;
		check_recv(dir, n, &wc);
		*bytes += msg_len(dir, n);
		next = n + 1;
	}
	lost += end - next;
	if (!done)
		xfer(&wc, 1, false);	/* the sender's byte */
	return lost;
}

/* dir 0: client sends; 1: server sends. */
static void run_dir(int dir, bool sender, unsigned int msgs,
		    unsigned int badq, unsigned int max_lost)
{
	unsigned int base, k, w, i, bytes = 0, lost = 0;
	uint8_t c = 1;
	struct ibv_wc wc;

	if (badq) {
		/* receives posted and idle: wrong-Q_Key sends must vanish */
		if (!sender)
			refill();
		sync_peer();
		if (sender) {
			for (i = 0; i < badq; i++) {
				post_send(dir, 100000 + i, QKEY ^ 0x10000, false);
				wait_sends(1);
			}
		}
		sync_peer();
		if (!sender) {
			usleep(300000);
			if (ibv_poll_cq(g.cq, 1, &wc) != 0)
				mismatch(0, "a message with a wrong Q_Key was received (wr_id %" PRIu64 ")",
					 wc.wr_id);
		}
	}
	for (base = 0; base < msgs; base += WINDOW) {
		w = msgs - base < WINDOW ? msgs - base : WINDOW;
		if (!sender)
			refill();
		sync_peer();
		if (sender) {
			for (k = 0; k < w; k++)
				post_send(dir, base + k, g.peer.qkey,
					  (base + k) & 1);
			wait_sends(w);
			xfer(&c, 1, true);	/* all sent */
		} else {
			lost += recv_window(dir, base, w, &bytes);
		}
		sync_peer();
	}
	if (sender)
		return;
	if (lost > max_lost)
		mismatch(msgs, "%u of %u messages lost (at most %u allowed)",
			 lost, msgs, max_lost);
	printf("%s: received %u of %u UD messages (%u payload bytes, MTU %u), %u lost, %u wrong-Q_Key messages dropped, %u mismatches: %s\n",
	       dir ? "client" : "server", msgs - lost, msgs, bytes, g.mtu,
	       lost, badq, g.errors, g.errors ? "FAIL" : "PASS");
}

int main(int argc, char **argv)
{
	const char *dev = NULL, *port = "18700";
	unsigned int msgs = 200, badq = 0, max_lost = 0;
	int gidx = -1, c;
	bool server;

	while ((c = getopt(argc, argv, "d:g:p:n:w:l:r")) != -1) {
		switch (c) {
		case 'd': dev = optarg; break;
		case 'g': gidx = atoi(optarg); break;
		case 'p': port = optarg; break;
		case 'n': msgs = strtoul(optarg, NULL, 0); break;
		case 'w': badq = strtoul(optarg, NULL, 0); break;
		case 'l': max_lost = strtoul(optarg, NULL, 0); break;
		case 'r': reuse = true; break;
		default:
			fprintf(stderr, "usage: %s -d DEV -g GIDX [-p PORT] [-n MSGS] [-w BADQKEY] [-l MAXLOST] [-r] [PEER]\n",
				argv[0]);
			return 2;
		}
	}
	if (!dev || gidx < 0 || argc - optind > 1) {
		fprintf(stderr, "sroce-ud: -d and -g are required\n");
		return 2;
	}
	server = optind == argc;
	setup(dev, gidx);
	g.sock = tcp_connect(server ? NULL : argv[optind], port, server);
	exchange(gidx);
	run_dir(0, !server, msgs, badq, max_lost);
	run_dir(1, server, msgs, badq, max_lost);
	sync_peer();
	return g.errors ? 1 : 0;
}
