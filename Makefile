# sroce: top-level build. Everything is driven from here; see README.md.
#
#   make [KERNEL=6.1|6.12|debug|host]   module for that kernel + provider
#                                        (and for trixie's, sid's rdma-core)
#   make deps                            install Debian packages (idempotent)
#   make check | check-full | demo | bench | crc-bench | lint | install | deb | clean

KERNEL ?= 6.1
BUILD ?= $(CURDIR)/build
SROCE_CACHE ?= $(HOME)/.cache/sroce
export SROCE_CACHE

MODDIR := $(BUILD)/module-$(KERNEL)
PROVDIR := $(BUILD)/userspace
MODULE_SOURCES := Kbuild drivers include tests/kunit tests/kverbs

# Kernel build dirs come from tools/sroce-kernel, which fetches (6.1, 6.12) or
# builds (debug) the kernel first; `host` is the running kernel's headers.
HOST_KBUILD_DIR = /lib/modules/$(shell uname -r)/build

.PHONY: all deps module provider verify ksmbd-tools check check-full demo bench bench-storage crc-bench lint install deb clean

all: module provider verify

deps:
	tools/install-deps

# Out-of-tree builds write objects beside their sources, so each kernel gets
# its own copy of the sources: builds for two kernels never share objects.
# A module built for another kernel (the debug kernel rebuilt with another
# config lives in another directory) is thrown away: its objects would not
# match the new kernel's structures. $(MODDIR)/.kernel names the one it is for.
module:
	+@kdir="$$(tools/sroce-kernel build $(KERNEL))" && \
	  if [ "$$(cat $(MODDIR)/.kernel 2>/dev/null)" != "$$kdir" ]; then rm -rf $(MODDIR); fi && \
	  mkdir -p $(MODDIR) && cp -a --parents $(MODULE_SOURCES) $(MODDIR)/ && \
	  echo "make -C $$kdir M=$(MODDIR) modules" && \
	  $(MAKE) -C "$$kdir" M=$(MODDIR) modules && \
	  echo "$$kdir" >$(MODDIR)/.kernel

# libsroce-rdmav34.so for the system's rdma-core and, in rdma-core-N/, the
# provider for each other release's rdma-core N, built against that
# release's libibverbs fetched by tools/sroce-libibverbs (RELEASES= : none).
RELEASES ?= trixie sid
provider:
	+@roots=""; for r in $(RELEASES); do \
	  root=$$(tools/sroce-libibverbs path $$r) || exit 1; roots="$$roots;$$root"; \
	done && roots=$${roots#;} && \
	  echo "cmake -S userspace -B $(PROVDIR) -DSROCE_IBVERBS_ROOTS=$$roots" && \
	  cmake -S userspace -B $(PROVDIR) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	    "-DSROCE_IBVERBS_ROOTS=$$roots" && \
	  cmake --build $(PROVDIR) --parallel 2

# The end-to-end data checker run by tests/integration/verify.sh.
VERIFY := $(BUILD)/sroce-verify
# ... the UD data checker run by tests/integration/ud.sh and the SRQ event
# checker run by tests/integration/srq.sh.
UDCHECK := $(BUILD)/sroce-ud
SRQCHECK := $(BUILD)/sroce-srq
# ... the UD multicast checker run by tests/integration/mcast.sh and the
# memory window checker run by tests/integration/mw.sh.
MCASTCHECK := $(BUILD)/sroce-mcast
# ... the ATOMIC WRITE / FLUSH checker of tests/integration/atomic-write-flush.sh.
FLUSHCHECK := $(BUILD)/sroce-flush
MWCHECK := $(BUILD)/sroce-mw
# ... the per-message UC and SRQ checker of tests/integration/uc.sh and srq.sh.
MSGCHECK := $(BUILD)/sroce-msg
verify: $(VERIFY) $(UDCHECK) $(SRQCHECK) $(MCASTCHECK) $(FLUSHCHECK) $(MWCHECK) \
	$(MSGCHECK)

# ... the one-operation checker of tests/integration/drop.sh.
DROPCHECK := $(BUILD)/sroce-drop
verify: $(DROPCHECK)
# ... the ring scribbler of tests/integration/hostile-rings.sh.
HOSTILECHECK := $(BUILD)/sroce-hostile-rings
verify: $(HOSTILECHECK)
# ... the context requester of tests/integration/hostile-context.sh.
HOSTILECTXCHECK := $(BUILD)/sroce-hostile-context
verify: $(HOSTILECTXCHECK)
# ... the AH-of-another-PD checker of tests/integration/ah-pd.sh.
AHPDCHECK := $(BUILD)/sroce-ahpd
verify: $(AHPDCHECK)
# ... the QP holder of tests/integration/netns-route.sh.
HOLDCHECK := $(BUILD)/sroce-hold
verify: $(HOLDCHECK)
# ... the path-change checker of tests/integration/path-modify.sh.
PATHMODCHECK := $(BUILD)/sroce-pathmod
verify: $(PATHMODCHECK)
# ... the object and memory limit checker of tests/integration/limits.sh.
LIMITSCHECK := $(BUILD)/sroce-limits
verify: $(LIMITSCHECK)
# ... the responder-resources checker of tests/integration/rd-limit.sh.
RDLIMITCHECK := $(BUILD)/sroce-rd-limit
verify: $(RDLIMITCHECK)
# ... the systematic allocation-failure checker of tests/integration/fault-create.sh.
FAULTCHECK := $(BUILD)/sroce-fault-create
verify: $(FAULTCHECK)
# ... the READ victim of tests/integration/reply-flood.sh.
READFLOODCHECK := $(BUILD)/sroce-read-flood
verify: $(READFLOODCHECK)
# ... the QPs in every state of tests/integration/peer-fuzz.sh.
QPSTATESCHECK := $(BUILD)/sroce-qp-states
verify: $(QPSTATESCHECK)

# ... the XRC checker of tests/integration/xrc.sh.
XRCCHECK := $(BUILD)/sroce-xrc
verify: $(XRCCHECK)
# ... the on-demand paging checker of tests/integration/odp.sh.
ODPCHECK := $(BUILD)/sroce-odp
verify: $(ODPCHECK)
# ... the rereg-racing-SENDs checker of tests/integration/rereg-race.sh.
REREGCHECK := $(BUILD)/sroce-rereg-race
verify: $(REREGCHECK)
# ... the posts racing the end of a drain of tests/integration/doorbell.sh.
DOORBELLCHECK := $(BUILD)/sroce-doorbell
verify: $(DOORBELLCHECK)
# ... the 2 GiB WRITE of tests/integration/big-write.sh.
BIGWRITECHECK := $(BUILD)/sroce-bigwrite
verify: $(BIGWRITECHECK)

# ... sroce-flush again, against Debian 13's libibverbs headers, which have
# ibv_wr_flush() (rdma-core 45 and later): there it posts FLUSH too
# (atomic-write-flush.sh on trixie's root). Linked to this host's
# libibverbs: every symbol it names exists there too.
FLUSHCHECK_WR := $(BUILD)/sroce-flush-wr-flush
verify: $(FLUSHCHECK_WR)
$(FLUSHCHECK_WR): tests/verify/sroce-flush.c
	@mkdir -p $(BUILD)
	+@root=$$(tools/sroce-libibverbs path trixie) && \
	  echo "$(CC) -isystem $$root/usr/include -DSROCE_WR_FLUSH -o $@ $<" && \
	  $(CC) -O2 -g -Wall -Wextra -Wno-unused-parameter -isystem "$$root/usr/include" \
	    -DSROCE_WR_FLUSH -o $@ $< -libverbs -lrdmacm

# ... Debian 13's ksmbd daemon for tests/integration/smb-direct.sh: Debian
# 12's does not work with its own kernel's ksmbd (tools/sroce-ksmbd-tools).
# A copy, not a link: the guests see the build directory, not the cache.
verify: ksmbd-tools
ksmbd-tools:
	@mkdir -p $(BUILD)
	+@root=$$(tools/sroce-ksmbd-tools path) && \
	  if ! cmp -s "$$root/version" $(BUILD)/ksmbd-tools/version; then \
	    rm -rf $(BUILD)/ksmbd-tools && cp -a "$$root" $(BUILD)/ksmbd-tools; fi

# ... the MPI program of tests/integration/mpi.sh (Open MPI's mpicc).
MPICHECK := $(BUILD)/sroce-mpi
verify: $(MPICHECK)

$(MPICHECK): tests/verify/sroce-mpi.c
	@mkdir -p $(BUILD)
	mpicc -O2 -g -Wall -Wextra -o $@ $<

$(VERIFY) $(FLUSHCHECK) $(DROPCHECK): $(BUILD)/%: tests/verify/%.c
	@mkdir -p $(BUILD)
	$(CC) -O2 -g -Wall -Wextra -Wno-unused-parameter -o $@ $< -libverbs -lrdmacm

$(UDCHECK) $(MCASTCHECK): $(BUILD)/%: tests/verify/%.c
	@mkdir -p $(BUILD)
	$(CC) -O2 -g -Wall -Wextra -Wno-unused-parameter -o $@ $< -libverbs

# checkers on tests/verify/common.c, the helpers they share
VERIFY_COMMON := tests/verify/common.c tests/verify/common.h
$(SRQCHECK) $(MWCHECK) $(MSGCHECK) $(HOSTILECHECK) $(HOSTILECTXCHECK) $(AHPDCHECK) $(HOLDCHECK) \
	$(PATHMODCHECK) $(LIMITSCHECK) $(RDLIMITCHECK) $(QPSTATESCHECK) \
	$(FAULTCHECK) $(READFLOODCHECK) $(XRCCHECK) $(ODPCHECK) $(REREGCHECK) \
	$(BIGWRITECHECK) $(DOORBELLCHECK): $(BUILD)/%: tests/verify/%.c $(VERIFY_COMMON)
	@mkdir -p $(BUILD)
	$(CC) -O2 -g -Wall -Wextra -o $@ $< tests/verify/common.c -libverbs

# Seconds `make check` may take (0: no limit); .ci/run sets it.
CHECK_BUDGET ?= 0
# When (seconds since the epoch) the rotation's check-full slice must end
# (0: no limit); .ci/run sets it to 75 minutes after its own start.
CHECK_SLICE_END ?= 0

# make check's tests, then the check-full slice tests/rotation selects
# (Documentation/harness.md, "Rotation").
check: deps
	tests/run --budget $(CHECK_BUDGET) --rotation --slice-end $(CHECK_SLICE_END)

check-full: deps
	tests/run --full

demo: deps
	tools/sroce-demo

bench:
	tools/sroce-bench

bench-storage:
	tools/sroce-bench --storage

# Host-native ICRC microbenchmark: CRC-32 per byte on this CPU, one core
# (Documentation/performance.md, "ICRC"). Not part of `make check` or CI:
# it needs isa-l (`apt-get install libisal-dev`) and zlib (zlib1g-dev).
CRCBENCH := $(BUILD)/crc-bench
crc-bench: $(CRCBENCH)
	$(CRCBENCH)

$(CRCBENCH): tools/crc-bench/crc-bench.c
	@mkdir -p $(BUILD)
	$(CC) -O2 -g -Wall -Wextra -o $@ $< -lisal -lz

lint:
	tools/lint

install: provider
	$(MAKE) KERNEL=host module
	$(MAKE) -C $(HOST_KBUILD_DIR) M=$(BUILD)/module-host INSTALL_MOD_DIR=updates modules_install
	depmod -a
	cmake --install $(PROVDIR)

# sroce-dkms, sroce-provider and sroce-vm .debs in $(BUILD)/deb, checked by
# lintian (Documentation/packaging.md).
deb:
	SROCE_BUILD=$(BUILD) tools/sroce-deb

clean:
	rm -rf $(BUILD)
