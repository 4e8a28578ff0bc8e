#!/bin/bash
# sroce-test: kernels=6.1 full-kernels=6.1,6.12 pairs=sroce:sroce devices=none module=none root=overlay needs=deb timeout=1800 full-only
# SPDX-License-Identifier: GPL-2.0
#
# The packages of `make deb` as a user installs them: in each guest (whose
# root is an overlay the test may write, see --overlay-root) dpkg -i the
# three .debs, DKMS builds sroce.ko against the guest kernel's headers,
# `rdma link add` loads it and brings the device up, and ibv_rc_pingpong -c
# runs between the guests with nothing but the installed files: no
# RDMAV_DRIVERS, no module from the tree. Then purge: the module is
# unloaded and nothing of sroce is left on disk or in dpkg and DKMS.
# Not on the debug kernel, even in check-full: its "headers" are a build
# tree that refers to the kernel source in the host's cache, which guests
# do not see, and what it would add (KASAN etc. on sroce.ko) its other
# tests already check. DKMS alone takes 8 (6.1) to 11 (6.12) minutes under TCG.
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"

require_pair
require_cmd dpkg dkms rdma ibv_rc_pingpong ss
# Only what the packages install may be used.
unset RDMAV_DRIVERS
kver=$(uname -r)
debs=$SROCE_BUILD/deb
packages=(sroce-vm sroce-provider sroce-dkms)

if ! touch /usr/.sroce-writable 2>/dev/null; then
	fail "the root is read-only (run with sroce-vm --overlay-root)"
fi
rm /usr/.sroce-writable
[[ -f /lib/modules/$kver/build/Makefile ]] || fail "no headers for $kver in /lib/modules/$kver/build"
lsmod | grep -q '^sroce ' && fail "sroce is loaded before the install"
shopt -s nullglob
files=("$debs"/sroce-dkms_*_all.deb "$debs"/sroce-provider_*_amd64.deb "$debs"/sroce-vm_*_all.deb)
shopt -u nullglob
[[ ${#files[@]} == 3 ]] || fail "want one of each package in $debs, found: ${files[*]:-none} (run make deb)"
version=$(dpkg-deb -f "${files[0]}" Version)

log "installing sroce $version; DKMS builds sroce.ko for $kver"
dpkg -i "${files[@]}" >"$SROCE_OUT/dpkg-install.txt" 2>&1 ||
	{ cat "$SROCE_OUT/dpkg-install.txt"; fail "dpkg -i failed"; }
dkms status sroce | tee "$SROCE_OUT/dkms-status.txt"
grep -q "sroce/$version, $kver, x86_64: installed" "$SROCE_OUT/dkms-status.txt" ||
	fail "DKMS did not install sroce $version for $kver"
modfile=$(modinfo -n sroce)
[[ $modfile == */updates/dkms/sroce.ko* ]] || fail "modprobe would load $modfile, not DKMS's"
[[ -f /etc/libibverbs.d/sroce.driver && $(cat /etc/libibverbs.d/sroce.driver) == "driver sroce" ]] ||
	fail "no /etc/libibverbs.d/sroce.driver"
# (PATH has the tree's tools first)
usage=$(/usr/bin/sroce-vm 2>&1 || true)
[[ $usage == *"sroce-vm run"* ]] || fail "the installed sroce-vm prints no usage: $usage"

# No modprobe: `rdma link add` loads the module through its alias, as
# README's "Install on a host" says.
rdma link add "$SROCE_DEV" type sroce netdev "$SROCE_NETDEV" || fail "rdma link add failed"
lsmod | grep -q '^sroce ' || fail "rdma link add did not load sroce"
wait_for 60 grep -q ACTIVE "/sys/class/infiniband/$SROCE_DEV/ports/1/state" ||
	fail "$SROCE_DEV is not ACTIVE"
idx=$(gid_index "$SROCE_DEV" 4)
ibv_devinfo -d "$SROCE_DEV" >"$SROCE_OUT/devinfo.txt" || fail "ibv_devinfo -d $SROCE_DEV failed"

port=18700
if [[ $SROCE_ROLE == a ]]; then
	with_timeout 300 ibv_rc_pingpong -d "$SROCE_DEV" -g "$idx" -p "$port" -s 4096 -n 200 -c \
		>"$SROCE_OUT/pingpong.txt" 2>&1 &
	pid=$!
	announce_port "$port" tcp 180
	wait "$pid" || { cat "$SROCE_OUT/pingpong.txt"; fail "ibv_rc_pingpong server failed"; }
else
	wait_peer_port "$port" 600
	with_timeout 300 ibv_rc_pingpong -d "$SROCE_DEV" -g "$idx" -p "$port" -s 4096 -n 200 -c \
		"$SROCE_PEER_IP" >"$SROCE_OUT/pingpong.txt" 2>&1 ||
		{ cat "$SROCE_OUT/pingpong.txt"; fail "ibv_rc_pingpong client failed"; }
fi
grep -q 'iters in' "$SROCE_OUT/pingpong.txt" || fail "ibv_rc_pingpong reported no transfer"
log "ibv_rc_pingpong -c: $(grep 'iters in' "$SROCE_OUT/pingpong.txt")"
barrier pingpong-done 600

rdma link delete "$SROCE_DEV"
modprobe -r sroce
log "purging"
dpkg --purge "${packages[@]}" >"$SROCE_OUT/dpkg-purge.txt" 2>&1 ||
	{ cat "$SROCE_OUT/dpkg-purge.txt"; fail "dpkg --purge failed"; }

left=$(dpkg-query -W -f='${Package} ${db:Status-Abbrev}\n' "${packages[@]}" 2>/dev/null | grep -v ' n $' || true)
[[ -z $left ]] || fail "dpkg still knows: $left"
[[ -z $(dkms status sroce) ]] || fail "DKMS still knows: $(dkms status sroce)"
lsmod | grep -q '^sroce ' && fail "sroce is still loaded"
left=$(find /usr/src /var/lib/dkms /lib/modules/"$kver"/updates /etc/libibverbs.d \
	/usr/lib/x86_64-linux-gnu/libibverbs /usr/share/sroce-vm /usr/bin/sroce-vm \
	/usr/share/doc /usr/share/man/man1 -name '*sroce*' 2>/dev/null || true)
[[ -z $left ]] || fail "left after the purge: $left"
modinfo -n sroce >/dev/null 2>&1 && fail "modprobe still finds a sroce module: $(modinfo -n sroce)"
log "installed, used and purged"
