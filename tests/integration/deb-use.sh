#!/bin/bash
# sroce-test: kernels=6.1 full-kernels=6.1 pairs=sroce:sroce root=overlay needs=deb timeout=300
# SPDX-License-Identifier: GPL-2.0
#
# The packages of `make deb`, cheaply, for make check (deb-install.sh, in
# check-full, is the whole install with DKMS building sroce.ko in the guest,
# 10 minutes and more under TCG). In each guest, whose root is an overlay the
# test may write (--overlay-root), with the tree's sroce.ko loaded and its
# device up, and no RDMAV_DRIVERS:
# - before the install, libibverbs finds no provider for the device (so
#   nothing else on the root can stand in for the package's);
# - dpkg -i the three .debs, with the guest kernel's headers hidden, so
#   DKMS registers the sources (dkms add, which reads dkms.conf) and skips
#   the build, as it does on a host without headers; the sources it would
#   build are the very files the loaded sroce.ko was built from;
# - Documentation/examples/verbs-test.sh, README's example of a user's
#   test, runs between the guests as the installed sroce-vm runs it, and
#   the dynamic linker shows that libibverbs loaded the installed provider;
# - dpkg --purge: nothing is left, and libibverbs finds no provider again.
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"
# shellcheck source=tests/integration/deb-lib.sh
. "$SROCE_TOP/tests/integration/deb-lib.sh"

require_pair
require_cmd dpkg dkms ibv_devices ibv_rc_pingpong ss
deb_setup
kver=$(uname -r)

deb_provider_lists "$SROCE_DEV" &&
	fail "libibverbs finds a provider for $SROCE_DEV before the install: $(cat "$SROCE_OUT/ibv_devices.txt")"

# Hide the headers (the link is in the guest's writable modules overlay);
# put them back however the test ends.
headers=/lib/modules/$kver/build
[[ -L $headers ]] || fail "no $headers link"
deb_undo ln -sfn "$(readlink "$headers")" "$headers"
rm "$headers"

deb_install
grep -q "Module build for kernel $kver was skipped since the" "$SROCE_OUT/dpkg-install.txt" ||
	{ cat "$SROCE_OUT/dpkg-install.txt"; fail "DKMS did not skip the build for want of headers"; }
dkms status sroce >"$SROCE_OUT/dkms-status.txt"
[[ $(cat "$SROCE_OUT/dkms-status.txt") == "sroce/$DEB_VERSION: added" ]] ||
	fail "DKMS has not added sroce $DEB_VERSION: $(cat "$SROCE_OUT/dkms-status.txt")"
for d in Kbuild drivers include; do
	diff -r "$SROCE_TOP/$d" "/usr/src/sroce-$DEB_VERSION/$d" >>"$SROCE_OUT/sources.diff" 2>&1 ||
		{ cat "$SROCE_OUT/sources.diff"; fail "/usr/src/sroce-$DEB_VERSION/$d differs from the tree's"; }
done
deb_provider_lists "$SROCE_DEV" ||
	fail "libibverbs finds no provider for $SROCE_DEV after the install: $(cat "$SROCE_OUT/ibv_devices.txt")"

deb_user_test
barrier used 300

deb_purge
deb_provider_lists "$SROCE_DEV" &&
	fail "libibverbs still finds a provider for $SROCE_DEV after the purge"
log "installed, used and purged"
