# SPDX-License-Identifier: GPL-2.0
# sroce-library: sourced by the tests, not one itself
# shellcheck shell=bash
#
# What deb-install.sh (make check-full: DKMS builds sroce.ko in the guest)
# and deb-use.sh (make check: the tree's sroce.ko) share: the packages of
# `make deb` installed with dpkg -i in a guest booted with --overlay-root,
# used with nothing but the installed files, then purged. Sourced after
# lib.sh.
#
#   deb_setup                 fail unless the root is writable and nothing
#                             of sroce is installed; sets DEB_FILES (the
#                             three .debs) and DEB_VERSION; turns man-db's
#                             index updates off until the script ends
#   deb_undo CMD [ARGS...]    run CMD when the script ends, however it ends
#   deb_install               dpkg -i "${DEB_FILES[@]}", output in $SROCE_OUT
#   deb_provider_lists DEV    does libibverbs, with no RDMAV_DRIVERS, find a
#                             provider for DEV (ibv_devices lists it)?
#   deb_user_test             run Documentation/examples/verbs-test.sh, the
#                             README's example of a user's test, as the
#                             installed sroce-vm runs it (its lib.sh); check
#                             its data and that libibverbs loaded the
#                             installed provider and no other
#   deb_purge                 dpkg --purge the packages and check that
#                             nothing of them is left in dpkg, DKMS or on disk

DEB_PACKAGES=(sroce-vm sroce-provider sroce-dkms)
DEB_PROVIDER=/usr/lib/x86_64-linux-gnu/libibverbs/libsroce-rdmav34.so
DEB_DRIVER_FILE=/etc/libibverbs.d/sroce.driver
DEB_HARNESS=/usr/share/sroce-vm

DEB_UNDO=()
deb_undo() {
	DEB_UNDO+=("$(printf '%q ' "$@")")
}
_deb_exit() {
	local i
	for ((i = ${#DEB_UNDO[@]} - 1; i >= 0; i--)); do
		eval "${DEB_UNDO[i]}" || true
	done
}

deb_setup() {
	local debs=$SROCE_BUILD/deb
	# Only what the packages install may be used.
	unset RDMAV_DRIVERS
	export DEBIAN_FRONTEND=noninteractive
	if ! touch /usr/.sroce-writable 2>/dev/null; then
		fail "the root is read-only (run with sroce-vm --overlay-root)"
	fi
	rm /usr/.sroce-writable
	trap _deb_exit EXIT
	# man-db's trigger (sroce-vm has a manual page) rebuilds the index of
	# every manual page on the root: 1-2 minutes under TCG for each of
	# dpkg -i and --purge. Without this file (debconf's man-db/auto-update
	# false) it says "Not building database" instead.
	if [[ -e /var/lib/man-db/auto-update ]]; then
		rm /var/lib/man-db/auto-update
		deb_undo touch /var/lib/man-db/auto-update
	fi
	shopt -s nullglob
	DEB_FILES=("$debs"/sroce-dkms_*_all.deb "$debs"/sroce-provider_*_amd64.deb "$debs"/sroce-vm_*_all.deb)
	shopt -u nullglob
	[[ ${#DEB_FILES[@]} == 3 ]] ||
		fail "want one of each package in $debs, found: ${DEB_FILES[*]:-none} (run make deb)"
	DEB_VERSION=$(dpkg-deb -f "${DEB_FILES[0]}" Version)
	local left
	left=$(dpkg-query -W -f='${Package} ${db:Status-Abbrev}\n' "${DEB_PACKAGES[@]}" 2>/dev/null |
		grep -v ' n $' || true)
	[[ -z $left ]] || fail "installed before the test: $left"
	[[ ! -e $DEB_PROVIDER && ! -e $DEB_DRIVER_FILE ]] ||
		fail "a sroce provider is installed before the test ($DEB_PROVIDER, $DEB_DRIVER_FILE)"
}

deb_install() {
	log "dpkg -i sroce $DEB_VERSION"
	dpkg -i "${DEB_FILES[@]}" >"$SROCE_OUT/dpkg-install.txt" 2>&1 ||
		{ cat "$SROCE_OUT/dpkg-install.txt"; fail "dpkg -i failed"; }
	local p v
	for p in "${DEB_PACKAGES[@]}"; do
		v=$(dpkg-query -W -f='${db:Status-Abbrev} ${Version}' "$p" 2>/dev/null || true)
		[[ $v == "ii  $DEB_VERSION" ]] || fail "$p is not installed at $DEB_VERSION after dpkg -i: '$v'"
	done
	[[ $(cat "$DEB_DRIVER_FILE" 2>/dev/null) == "driver sroce" ]] ||
		fail "$DEB_DRIVER_FILE does not say 'driver sroce'"
	[[ -f /usr/share/man/man1/sroce-vm.1.gz ]] || fail "no manual page sroce-vm(1)"
	# (PATH has the tree's tools first)
	local usage
	usage=$(/usr/bin/sroce-vm 2>&1 || true)
	[[ $usage == *"sroce-vm run"* ]] || fail "the installed sroce-vm prints no usage: $usage"
}

deb_provider_lists() {
	local out
	out=$(ibv_devices 2>&1 || true)
	echo "$out" >>"$SROCE_OUT/ibv_devices.txt"
	[[ $'\n'$out$'\n' =~ $'\n'[[:space:]]+"$1"[[:space:]] ]]
}

deb_user_test() {
	local out=$SROCE_OUT/user-test.txt ld=$SROCE_OUT/ld-debug loaded
	local example=$SROCE_TOP/Documentation/examples/verbs-test.sh
	# What `sroce-vm run --pair verbs-test.sh` does in each guest with the
	# installed harness: the script with the harness's variables, and
	# SROCE_TOP its installed tree (so the packaged lib.sh). LD_DEBUG=files
	# names every object the dynamic linker opens, in ld-debug.PID.
	log "the example user test, with the installed provider"
	rm -f "$ld".*
	SROCE_TOP=$DEB_HARNESS LD_DEBUG=files LD_DEBUG_OUTPUT=$ld \
		bash "$example" >"$out" 2>&1 ||
		{ cat "$out"; fail "the example test failed"; }
	grep -q 'iters in' "$out" || { cat "$out"; fail "the example test moved no data"; }
	grep -q 'invalid data' "$out" && { cat "$out"; fail "ibv_rc_pingpong received wrong data"; }
	loaded=$(cat "$ld".* 2>/dev/null | sed -n 's/.*file=\([^ ]*libsroce[^ ]*\.so\) .*dynamically loaded by.*/\1/p' |
		sort -u)
	[[ $loaded == "$DEB_PROVIDER" ]] ||
		fail "libibverbs loaded '${loaded//$'\n'/, }' as the sroce provider, not $DEB_PROVIDER"
	log "ibv_rc_pingpong -c with $loaded: $(grep 'iters in' "$out")"
}

deb_purge() {
	log "dpkg --purge"
	dpkg --purge "${DEB_PACKAGES[@]}" >"$SROCE_OUT/dpkg-purge.txt" 2>&1 ||
		{ cat "$SROCE_OUT/dpkg-purge.txt"; fail "dpkg --purge failed"; }
	local left
	left=$(dpkg-query -W -f='${Package} ${db:Status-Abbrev}\n' "${DEB_PACKAGES[@]}" 2>/dev/null |
		grep -v ' n $' || true)
	[[ -z $left ]] || fail "dpkg still knows: $left"
	[[ -z $(dkms status sroce) ]] || fail "DKMS still knows: $(dkms status sroce)"
	left=$(find /usr/src /var/lib/dkms /lib/modules/"$(uname -r)"/updates /etc/libibverbs.d \
		/usr/lib/x86_64-linux-gnu/libibverbs /usr/share/sroce-vm /usr/bin/sroce-vm \
		/usr/share/doc /usr/share/man/man1 -name '*sroce*' 2>/dev/null || true)
	[[ -z $left ]] || fail "left after the purge: $left"
}
