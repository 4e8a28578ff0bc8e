#!/bin/bash
# sroce-test: kernels=6.1 full-kernels=6.1,6.12 pairs=sroce:sroce devices=none module=none root=overlay needs=deb timeout=1800 full-only
# SPDX-License-Identifier: GPL-2.0
#
# The packages of `make deb` as a user installs them: in each guest (whose
# root is an overlay the test may write, see --overlay-root) dpkg -i the
# three .debs, DKMS builds sroce.ko against the guest kernel's headers,
# `rdma link add` loads it and brings the device up, and README's example
# test (Documentation/examples/verbs-test.sh, ibv_rc_pingpong -c) runs
# between the guests with nothing but the installed files: no
# RDMAV_DRIVERS, no module from the tree (deb-lib.sh has what this shares
# with deb-use.sh, its cheap sibling in make check). Then purge: the module
# is unloaded and nothing of sroce is left on disk or in dpkg and DKMS.
# Not on the debug kernel, even in check-full: its "headers" are a build
# tree that refers to the kernel source in the host's cache, which guests
# do not see, and what it would add (KASAN etc. on sroce.ko) its other
# tests already check. DKMS alone takes 8 (6.1) to 11 (6.12) minutes under TCG.
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"
# shellcheck source=tests/integration/deb-lib.sh
. "$SROCE_TOP/tests/integration/deb-lib.sh"

require_pair
require_cmd dpkg dkms rdma ibv_devices ibv_rc_pingpong ss
deb_setup
kver=$(uname -r)
[[ -f /lib/modules/$kver/build/Makefile ]] || fail "no headers for $kver in /lib/modules/$kver/build"
lsmod | grep -q '^sroce ' && fail "sroce is loaded before the install"

log "DKMS builds sroce.ko for $kver"
deb_install
dkms status sroce | tee "$SROCE_OUT/dkms-status.txt"
grep -q "sroce/$DEB_VERSION, $kver, x86_64: installed" "$SROCE_OUT/dkms-status.txt" ||
	fail "DKMS did not install sroce $DEB_VERSION for $kver"
modfile=$(modinfo -n sroce)
[[ $modfile == */updates/dkms/sroce.ko* ]] || fail "modprobe would load $modfile, not DKMS's"

# No modprobe: `rdma link add` loads the module through its alias, as
# README's "Install on a host" says.
rdma link add "$SROCE_DEV" type sroce netdev "$SROCE_NETDEV" || fail "rdma link add failed"
lsmod | grep -q '^sroce ' || fail "rdma link add did not load sroce"
wait_for 60 grep -q ACTIVE "/sys/class/infiniband/$SROCE_DEV/ports/1/state" ||
	fail "$SROCE_DEV is not ACTIVE"
ibv_devinfo -d "$SROCE_DEV" >"$SROCE_OUT/devinfo.txt" || fail "ibv_devinfo -d $SROCE_DEV failed"
deb_provider_lists "$SROCE_DEV" ||
	fail "libibverbs finds no provider for $SROCE_DEV: $(cat "$SROCE_OUT/ibv_devices.txt")"

deb_user_test
barrier used 600

rdma link delete "$SROCE_DEV"
modprobe -r sroce
deb_purge
lsmod | grep -q '^sroce ' && fail "sroce is still loaded"
modinfo -n sroce >/dev/null 2>&1 && fail "modprobe still finds a sroce module: $(modinfo -n sroce)"
log "installed, used and purged"
