// SPDX-License-Identifier: GPL-2.0
/*
 * sroce-limits: what one device lets its users hold, for
 * tests/integration/limits.sh.
 *
 *   sroce-limits count DEV GID_INDEX
 *	For each object type (pd cq qp srq mr mw ah): create objects until
 *	the device refuses one, check that it refused with ENOMEM, that
 *	another process of the same user is refused too while they are
 *	held, that freeing one lets one more be created and no more, and
 *	free them all. Prints
 *	"<type>: <n> created" (the script compares n with what one user may
 *	hold, limits.sh) and "max_<type> <m>" as ibv_query_device reports
 *	it.
 *
 *   sroce-limits take DEV GID_INDEX TYPES
 *   sroce-limits hold DEV GID_INDEX TYPES
 *	For each type of TYPES (comma-separated, or "all"), in the order
 *	above: create objects until the device refuses one, check that it
 *	refused with ENOMEM and print "<type>: <n> created", keeping all of
 *	them (the script compares n with what this user may still take).
 *	take then frees them; hold prints "holding" and keeps them until it
 *	is killed, so that other users can be tried meanwhile.
 *
 *   sroce-limits memlock DEV
 *	Run with RLIMIT_MEMLOCK at 256 KiB and without CAP_IPC_LOCK: an MR
 *	of 64 KiB registers, one of 1 MiB is refused with ENOMEM, and once
 *	the first is gone a second one of 192 KiB fits.
 *
 *   sroce-limits memcg DEV CGROUP_DIR
 *	Run inside the memory cgroup CGROUP_DIR: a CQ's ring must raise the
 *	cgroup's memory.current by at least its size, and creating CQs in
 *	a cgroup limited to 24 MiB above what it used must end in ENOMEM
 *	(not in the OOM killer) before 16 of 4 MiB exist.
 *
 * The last line is "<checks> checks, <failures> failures"; exit status 1 if
 * any check failed, 2 if the setup failed.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

/* far more than any limit the test sets, so a missing limit shows */
#define MAX_OBJS	4096

enum obj_type { PD, CQ, QP, SRQ, MR, MW, AH, TYPES };

static const char *const type_name[TYPES] = {
	"pd", "cq", "qp", "srq", "mr", "mw", "ah"
};

/* what objects of every type are created with */
struct world {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	void *buf;
	union ibv_gid gid;
	int gid_index;
};

static void *create(struct world *w, enum obj_type t)
{
	struct ibv_qp_init_attr qa = {
		.send_cq = w->cq, .recv_cq = w->cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_srq_init_attr sa = {
		.attr = { .max_wr = 1, .max_sge = 1 },
	};
	struct ibv_ah_attr aa = {
		.is_global = 1, .port_num = 1,
		.grh = { .dgid = w->gid, .sgid_index = w->gid_index,
			 .hop_limit = 64 },
	};

	switch (t) {
	case PD: return ibv_alloc_pd(w->ctx);
	case CQ: return ibv_create_cq(w->ctx, 1, NULL, NULL, 0);
	case QP: return ibv_create_qp(w->pd, &qa);
	case SRQ: return ibv_create_srq(w->pd, &sa);
	case MR: return ibv_reg_mr(w->pd, w->buf, 4096, IBV_ACCESS_LOCAL_WRITE);
	case MW: return ibv_alloc_mw(w->pd, IBV_MW_TYPE_2);
	case AH: return ibv_create_ah(w->pd, &aa);
	default: return NULL;
	}
}

static int destroy(enum obj_type t, void *obj)
{
	switch (t) {
	case PD: return ibv_dealloc_pd(obj);
	case CQ: return ibv_destroy_cq(obj);
	case QP: return ibv_destroy_qp(obj);
	case SRQ: return ibv_destroy_srq(obj);
	case MR: return ibv_dereg_mr(obj);
	case MW: return ibv_dealloc_mw(obj);
	case AH: return ibv_destroy_ah(obj);
	default: return EINVAL;
	}
}

static void world_open(struct world *w, const char *dev, int gid_index)
{
	w->ctx = open_device(dev);
	w->gid_index = gid_index;
	w->gid = query_gid(w->ctx, gid_index);
	w->pd = ibv_alloc_pd(w->ctx);
	w->cq = ibv_create_cq(w->ctx, 1, NULL, NULL, 0);
	if (!w->pd || !w->cq)
		die("the PD and CQ the objects are created with");
	if (posix_memalign(&w->buf, 4096, 4096))
		fatal("no memory");
}

static void world_close(struct world *w)
{
	ibv_destroy_cq(w->cq);
	ibv_dealloc_pd(w->pd);
	ibv_close_device(w->ctx);
	free(w->buf);
}

/* A process of its own tries one object of @t: must be refused, ENOMEM. */
static void check_other_process_refused(const char *dev, int gid_index,
					enum obj_type t)
{
	pid_t pid = fork();
	int status;

	if (pid < 0)
		die("fork");
	if (!pid) {
		struct world w;
		void *obj;

		/* its own PD and CQ: the world of the type before @t */
		world_open(&w, dev, gid_index);
		obj = create(&w, t);
		_exit(obj ? 3 : errno == ENOMEM ? 0 : 4);
	}
	if (waitpid(pid, &status, 0) != pid)
		die("waitpid");
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "%s: another process at the limit: %s", type_name[t],
	      WIFEXITED(status) && WEXITSTATUS(status) == 3 ? "created one" :
	      "not refused with ENOMEM");
}

static void count_type(struct world *w, const char *dev, enum obj_type t)
{
	static void *objs[MAX_OBJS];
	int n = 0, err;
	void *extra;

	while (n < MAX_OBJS && (objs[n] = create(w, t)))
		n++;
	err = errno;
	printf("%s: %d created\n", type_name[t], n);
	CHECK(n < MAX_OBJS, "%s: %d created without reaching a limit",
	      type_name[t], n);
	CHECK(n == MAX_OBJS || err == ENOMEM, "%s: refused with %s, not ENOMEM",
	      type_name[t], strerror(err));

	/* the PD and CQ the other process needs are objects too */
	if (n > 0 && n < MAX_OBJS && t != PD && t != CQ)
		check_other_process_refused(dev, w->gid_index, t);

	if (n > 0 && n < MAX_OBJS) {
		CHECK(!destroy(t, objs[--n]), "%s: destroy", type_name[t]);
		objs[n] = create(w, t);
		CHECK(objs[n], "%s: none created after one was freed: %s",
		      type_name[t], strerror(errno));
		if (objs[n])
			n++;
		extra = create(w, t);
		CHECK(!extra && errno == ENOMEM,
		      "%s: one more than the limit %s", type_name[t],
		      extra ? "was created" : "failed, but not with ENOMEM");
		if (extra)
			destroy(t, extra);
	}
	while (n > 0)
		CHECK(!destroy(t, objs[--n]), "%s: destroy", type_name[t]);
}

/*
 * Create objects of each type in @types ("all" or a list like "pd,ah") until
 * the device refuses one; print how many. With @hold, keep them until
 * killed.
 */
static int take(const char *dev, int gid_index, const char *types, bool hold)
{
	static void *objs[TYPES][MAX_OBJS];
	int n[TYPES] = {}, t;
	struct world w;
	char list[64];

	world_open(&w, dev, gid_index);
	snprintf(list, sizeof(list), ",%s,", types);
	for (t = 0; t < TYPES; t++) {
		char item[8];

		snprintf(item, sizeof(item), ",%s,", type_name[t]);
		if (strcmp(types, "all") && !strstr(list, item))
			continue;
		while (n[t] < MAX_OBJS && (objs[t][n[t]] = create(&w, t)))
			n[t]++;
		CHECK(n[t] < MAX_OBJS && errno == ENOMEM,
		      "%s: after %d, refused with %s, not ENOMEM", type_name[t],
		      n[t], n[t] < MAX_OBJS ? strerror(errno) : "nothing");
		printf("%s: %d created\n", type_name[t], n[t]);
	}
	if (hold) {
		printf("holding\n");
		for (;;)
			pause();
	}
	for (t = TYPES - 1; t >= 0; t--)
		while (n[t] > 0)
			CHECK(!destroy(t, objs[t][--n[t]]), "%s: destroy",
			      type_name[t]);
	world_close(&w);
	return 0;
}

static int count(const char *dev, int gid_index)
{
	struct ibv_device_attr da;
	struct world w;
	int t;

	world_open(&w, dev, gid_index);
	if (ibv_query_device(w.ctx, &da))
		die("ibv_query_device");
	printf("max_pd %d\nmax_cq %d\nmax_qp %d\nmax_srq %d\nmax_mr %d\n"
	       "max_mw %d\nmax_ah %d\n", da.max_pd, da.max_cq, da.max_qp,
	       da.max_srq, da.max_mr, da.max_mw, da.max_ah);
	fflush(stdout);
	for (t = 0; t < TYPES; t++)
		count_type(&w, dev, t);
	world_close(&w);
	return 0;
}

static long long read_memory_current(const char *cgroup)
{
	char path[512];
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/memory.current", cgroup);
	f = fopen(path, "r");
	if (!f || fscanf(f, "%lld", &v) != 1)
		die(path);
	fclose(f);
	return v;
}

/* @v: bytes, or "max" */
static void write_memory_max(const char *cgroup, const char *v)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/memory.max", cgroup);
	f = fopen(path, "w");
	if (!f || fprintf(f, "%s\n", v) < 0 || fclose(f))
		die(path);
}

#define BIG_CQE		65535
#define MIB		(1024LL * 1024)

static int memcg(const char *dev, const char *cgroup)
{
	struct ibv_context *ctx = open_device(dev);
	struct ibv_cq *cqs[16];
	long long before, after;
	char limit[32];
	int n = 0, err;

	/* the first CQ of a kind maps code and libraries: not counted */
	cqs[0] = ibv_create_cq(ctx, 1, NULL, NULL, 0);
	if (!cqs[0])
		die("ibv_create_cq");
	ibv_destroy_cq(cqs[0]);

	before = read_memory_current(cgroup);
	cqs[0] = ibv_create_cq(ctx, BIG_CQE, NULL, NULL, 0);
	if (!cqs[0])
		die("ibv_create_cq of 65535 entries");
	after = read_memory_current(cgroup);
	printf("a CQ of %d entries: memory.current %lld -> %lld (+%lld KiB)\n",
	       BIG_CQE, before, after, (after - before) / 1024);
	/* 65536 CQEs of at least 32 bytes */
	CHECK(after - before >= 2 * MIB,
	      "the CQ's ring was not charged to the cgroup (+%lld KiB)",
	      (after - before) / 1024);
	ibv_destroy_cq(cqs[0]);

	snprintf(limit, sizeof(limit), "%lld",
		 read_memory_current(cgroup) + 24 * MIB);
	write_memory_max(cgroup, limit);
	while (n < 16 && (cqs[n] = ibv_create_cq(ctx, BIG_CQE, NULL, NULL, 0)))
		n++;
	err = errno;
	printf("under memory.max 24 MiB above use: %d CQs, then %s\n", n,
	       n < 16 ? strerror(err) : "no failure");
	CHECK(n < 16, "16 CQs of 65535 entries created under a 24 MiB limit");
	CHECK(n == 16 || err == ENOMEM, "refused with %s, not ENOMEM",
	      strerror(err));
	while (n > 0)
		ibv_destroy_cq(cqs[--n]);
	write_memory_max(cgroup, "max");

	/* with the memory back, a CQ as large as before is created again */
	cqs[0] = ibv_create_cq(ctx, BIG_CQE, NULL, NULL, 0);
	CHECK(cqs[0], "no CQ of 65535 entries after the others were freed");
	if (cqs[0])
		ibv_destroy_cq(cqs[0]);
	ibv_close_device(ctx);
	return 0;
}

static struct ibv_mr *reg(struct ibv_pd *pd, size_t len)
{
	void *buf = NULL;

	if (posix_memalign(&buf, 4096, len))
		fatal("no memory");
	memset(buf, 1, len);	/* present, as a real buffer would be */
	return ibv_reg_mr(pd, buf, len, IBV_ACCESS_LOCAL_WRITE);
}

static int memlock(const char *dev)
{
	struct ibv_context *ctx = open_device(dev);
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_mr *small, *big;

	if (!pd)
		die("ibv_alloc_pd");
	small = reg(pd, 64 * 1024);
	CHECK(small, "an MR of 64 KiB under a 256 KiB memlock limit: %s",
	      strerror(errno));
	big = reg(pd, 1024 * 1024);
	CHECK(!big && errno == ENOMEM,
	      "an MR of 1 MiB under a 256 KiB memlock limit: %s",
	      big ? "registered" : strerror(errno));
	printf("memlock 256 KiB: MR of 64 KiB %s, of 1 MiB %s\n",
	       small ? "registered" : "refused",
	       big ? "registered" : strerror(errno));
	if (big)
		ibv_dereg_mr(big);
	if (small)
		ibv_dereg_mr(small);
	small = reg(pd, 192 * 1024);
	CHECK(small, "an MR of 192 KiB once the first was gone: %s",
	      strerror(errno));
	if (small)
		ibv_dereg_mr(small);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 4 && !strcmp(argv[1], "count"))
		count(argv[2], atoi(argv[3]));
	else if (argc == 5 && !strcmp(argv[1], "take"))
		take(argv[2], atoi(argv[3]), argv[4], false);
	else if (argc == 5 && !strcmp(argv[1], "hold"))
		take(argv[2], atoi(argv[3]), argv[4], true);
	else if (argc == 4 && !strcmp(argv[1], "memcg"))
		memcg(argv[2], argv[3]);
	else if (argc == 3 && !strcmp(argv[1], "memlock"))
		memlock(argv[2]);
	else
		fatal("usage: sroce-limits count DEV GID_INDEX | take|hold DEV GID_INDEX TYPES | memlock DEV | memcg DEV CGROUP_DIR");
	printf("%u checks, %u failures\n", checks, failures);
	return failures ? 1 : 0;
}
