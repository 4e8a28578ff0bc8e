// SPDX-License-Identifier: GPL-2.0
/*
 * A local user asking for verbs contexts in ways a driver could refuse.
 * Each of PROCS processes opens DEV's uverbs file and issues one ioctl
 * UVERBS_METHOD_GET_CONTEXT, half of them with an 8-byte driver request
 * (sroce defines none), half with the driver response pointing at a page
 * the process cannot write. ib_core frees a context whose driver refused
 * this method without dropping the task reference its restrack entry took
 * (sroce_alloc_ucontext() in drivers/sroce/verbs.c), so every refusal
 * leaks that process's task_struct: sroce must make the context in both
 * cases, and write its response (the ABI version sysfs shows) where it can.
 * tests/integration/hostile-context.sh counts the kernel's task_structs
 * around the run.
 *
 * Usage: sroce-hostile-context DEV PROCS
 */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/rdma_user_ioctl.h>

#include "common.h"

/* sroce's context response (include/uapi/rdma/sroce-abi.h) */
struct context_resp {
	uint32_t abi_version;
	uint32_t max_inline_data;
};

enum variant { WITH_REQUEST, UNWRITABLE_RESPONSE, VARIANTS };

static const char *const variant_name[VARIANTS] = {
	[WITH_REQUEST] = "request payload",
	[UNWRITABLE_RESPONSE] = "unwritable response",
};

/* What a child reports in its exit status (below 64: an errno). */
enum { CHILD_OK = 0, CHILD_BAD_RESPONSE = 100, CHILD_SETUP = 101 };

static char uverbs[64];
static unsigned int abi_version;

static unsigned int read_uint(const char *path)
{
	unsigned int v;
	FILE *f = fopen(path, "r");

	if (!f || fscanf(f, "%u", &v) != 1)
		fatal("cannot read a number from %s", path);
	fclose(f);
	return v;
}

/* DEV's /dev/infiniband/uverbsN, from the class's ibdev attributes. */
static void find_uverbs(const char *dev)
{
	glob_t g;
	size_t i;

	if (glob("/sys/class/infiniband_verbs/uverbs*/ibdev", 0, NULL, &g))
		fatal("no uverbs devices");
	for (i = 0; i < g.gl_pathc; i++) {
		char name[64] = "";
		FILE *f = fopen(g.gl_pathv[i], "r");

		if (!f)
			continue;
		if (fscanf(f, "%63s", name) == 1 && !strcmp(name, dev)) {
			const char *n = strstr(g.gl_pathv[i], "uverbs");

			snprintf(uverbs, sizeof(uverbs), "/dev/infiniband/%.*s",
				 (int)strcspn(n, "/"), n);
		}
		fclose(f);
	}
	globfree(&g);
	if (!uverbs[0])
		fatal("no uverbs device for %s", dev);
}

/* One GET_CONTEXT: 0 or the errno it failed with. */
static int get_context(int fd, uint64_t request, size_t request_len,
		       void *resp, size_t resp_len)
{
	struct {
		struct ib_uverbs_ioctl_hdr hdr;
		struct ib_uverbs_attr attrs[2];
	} cmd;

	memset(&cmd, 0, sizeof(cmd));
	cmd.hdr.length = sizeof(cmd);
	cmd.hdr.object_id = UVERBS_OBJECT_DEVICE;
	cmd.hdr.method_id = UVERBS_METHOD_GET_CONTEXT;
	cmd.hdr.num_attrs = 2;
	cmd.hdr.driver_id = RDMA_DRIVER_UNKNOWN;	/* sroce's */
	/* up to 8 bytes travel inline, in the attribute itself */
	cmd.attrs[0].attr_id = UVERBS_ATTR_UHW_IN;
	cmd.attrs[0].len = request_len;
	cmd.attrs[0].data = request;
	cmd.attrs[1].attr_id = UVERBS_ATTR_UHW_OUT;
	cmd.attrs[1].len = resp_len;
	cmd.attrs[1].data = (uintptr_t)resp;
	return ioctl(fd, RDMA_VERBS_IOCTL, &cmd) ? errno : 0;
}

static int child(enum variant v)
{
	struct context_resp resp = { 0 };
	void *page;
	int fd, err;

	fd = open(uverbs, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return CHILD_SETUP;
	if (v == WITH_REQUEST) {
		err = get_context(fd, UINT64_MAX, sizeof(uint64_t), &resp,
				  sizeof(resp));
		if (!err && resp.abi_version != abi_version)
			return CHILD_BAD_RESPONSE;
		return err;
	}
	page = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED)
		return CHILD_SETUP;
	return get_context(fd, 0, 0, page, sizeof(resp));
}

int main(int argc, char **argv)
{
	unsigned int made[VARIANTS] = { 0 }, procs, i, failures = 0;
	char path[128];
	int v;

	if (argc != 3)
		fatal("usage: sroce-hostile-context DEV PROCS");
	procs = strtoul(argv[2], NULL, 0);
	find_uverbs(argv[1]);
	snprintf(path, sizeof(path),
		 "/sys/class/infiniband/%s/sroce_abi_version", argv[1]);
	abi_version = read_uint(path);

	for (i = 0; i < procs; i++) {
		enum variant var = i % VARIANTS;
		int status;
		pid_t pid = fork();

		if (pid < 0)
			die("fork");
		if (!pid)
			_exit(child(var));
		if (waitpid(pid, &status, 0) != pid)
			die("waitpid");
		if (!WIFEXITED(status))
			fatal("child %u: killed by signal %d", i, WTERMSIG(status));
		switch (WEXITSTATUS(status)) {
		case CHILD_OK:
			made[var]++;
			break;
		case CHILD_BAD_RESPONSE:
			fatal("%s: response holds no ABI version %u",
			      variant_name[var], abi_version);
		case CHILD_SETUP:
			fatal("child %u could not open %s or map a page", i,
			      uverbs);
		default:
			if (!failures++)
				printf("%s: refused (%s)\n", variant_name[var],
				       strerror(WEXITSTATUS(status)));
		}
	}
	for (v = 0; v < VARIANTS; v++)
		printf("%s: %u of %u contexts made\n", variant_name[v], made[v],
		       procs / VARIANTS + (v < (int)(procs % VARIANTS)));
	printf("%u refused\n", failures);
	return failures ? 1 : 0;
}
