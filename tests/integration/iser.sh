#!/bin/bash
# sroce-test: kernels=6.1 full-kernels=6.1,6.12,debug pairs=sroce:sroce,sroce:rxe,rxe:sroce pairs.6.1=sroce:sroce full-pairs.debug=sroce:sroce,rxe:sroce timeout=900
# SPDX-License-Identifier: GPL-2.0
# iSER: guest a runs a LIO iSCSI target with an iSER portal (ib_isert)
# exporting a file-backed LUN; guest b logs in with open-iscsi over its
# iser interface (ib_iser). b reads the LUN and compares it with a's file,
# runs fio's crc32c-verified 4 KiB random writes, writes random data, drops
# its caches and reads it back; after b logs out, a checks that its file
# holds exactly what b wrote. iSER moves the data by the target's RDMA
# READs and WRITEs of the initiator's registered buffers. Each sroce side's
# byte counters must have moved by at least the data it carried, and the
# session must be an iser one.
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"
# shellcheck source=tests/integration/storage-lib.sh
. "$SROCE_TOP/tests/integration/storage-lib.sh"

require_pair
require_cmd iscsid iscsiadm sha256sum cmp dd fio
iqn=iqn.2024-01.org.sroce:iser-target
mib=16
fio_mib=$(blockdev_fio_mib "$mib")
tpg=/sys/kernel/config/target/iscsi/$iqn/tpgt_1
np=$tpg/np/$SROCE_LOCAL_IP:3260

target_start() {
	modprobe -a iscsi_target_mod ib_isert || fail "cannot load the iSER target"
	lio_backstore "$mib"
	mkdir -p "$tpg/lun/lun_0"
	ln -s "$lio_core/fileio_0/disk0" "$tpg/lun/lun_0/disk0"
	echo 0 >"$tpg/attrib/authentication"
	echo 1 >"$tpg/attrib/generate_node_acls"
	echo 1 >"$tpg/attrib/cache_dynamic_acls"
	echo 0 >"$tpg/attrib/demo_mode_write_protect"
	# a portal starts as iSCSI/TCP; iser=1 adds its iSER listener
	mkdir "$np"
	echo 1 >"$np/iser" || fail "cannot turn the portal into an iSER one"
	echo 1 >"$tpg/enable"
}

# (each step may find its object gone: the script failed halfway)
target_stop() {
	echo 0 2>/dev/null >"$tpg/enable" || true
	echo 0 2>/dev/null >"$np/iser" || true
	rmdir "$np" 2>/dev/null || true
	rm -f "$tpg/lun/lun_0/disk0"
	rmdir "$tpg/lun/lun_0" "$tpg" "${tpg%/*}" 2>/dev/null || true
	lio_backstore_remove
}

initiator_start() {
	modprobe -a ib_iser sd_mod || fail "cannot load ib_iser and sd_mod"
	# open-iscsi keeps its node records in /etc/iscsi, read-only here
	mkdir -p /tmp/iscsi-etc
	sed 's|^iscsid.startup = .*|iscsid.startup = /bin/true|' /etc/iscsi/iscsid.conf \
		>/tmp/iscsi-etc/iscsid.conf
	echo "InitiatorName=iqn.2024-01.org.sroce:initiator-$SROCE_ROLE" \
		>/tmp/iscsi-etc/initiatorname.iscsi
	mount --bind /tmp/iscsi-etc /etc/iscsi
	mkdir -p /run/lock/iscsi
	# its own process group: iscsid signals its group when it stops
	setsid iscsid -f &
	iscsid_pid=$!
	# it took over 10 s on the debug kernel with another guest pair running
	wait_for 60 iscsid_listens || fail "iscsid does not listen"
}

# /proc/net/unix, not ss: the debug kernel has no sock_diag for UNIX sockets
iscsid_listens() {
	grep -q '@ISCSIADM_ABSTRACT_NAMESPACE$' /proc/net/unix
}

initiator_stop() {
	iscsiadm -m node -T "$iqn" --logout >/dev/null 2>&1 || true
	[[ -z ${iscsid_pid:-} ]] || kill "$iscsid_pid" 2>/dev/null || true
	wait 2>/dev/null || true
	! mountpoint -q /etc/iscsi || umount /etc/iscsi
	rm -rf /tmp/iscsi-etc
}

# iser_disk: the block device of the session's LUN.
iser_disk() {
	local b
	for b in /sys/class/iscsi_session/session*/device/target*/*:*:*:*/block/*; do
		[[ -e $b ]] && { echo "/dev/${b##*/}"; return 0; }
	done
	return 1
}

traffic_begin
if [[ $SROCE_ROLE == a ]]; then
	trap target_stop EXIT
	target_start
	announce_port 3260 rdma
	barrier initiator-done 600
	cmp /tmp/lio-backing "$SROCE_PAIR_DIR/written" ||
		fail "the target's file is not what the initiator wrote"
	log "the target's file holds the $mib MiB the initiator wrote"
	# at least: the initial read, fio's writes, the last write and read
	# the initial read, fio's verify pass and the read-back; fio's and the
	# direct writes
	traffic_check $(((2 * mib + fio_mib) << 20)) $(((mib + fio_mib) << 20))
	target_stop
	trap - EXIT
else
	trap initiator_stop EXIT
	initiator_start
	wait_peer_port 3260 120
	iscsiadm -m node -o new -T "$iqn" -p "$SROCE_PEER_IP:3260" -I iser >/dev/null ||
		fail "cannot add the node record"
	retry 3 2 with_timeout 60 iscsiadm -m node -T "$iqn" -p "$SROCE_PEER_IP:3260" -I iser \
		--login || fail "iSER login failed"
	session=$(iscsiadm -m session)
	log "session: $session"
	[[ $session == iser:* ]] || fail "the session is not over iSER"
	wait_for 30 iser_disk >/dev/null || fail "no disk appeared"
	dev=$(iser_disk)
	[[ $(blockdev --getsize64 "$dev") -eq $((mib << 20)) ]] ||
		fail "$dev has $(blockdev --getsize64 "$dev") bytes, expected $((mib << 20))"
	initiator_check_initial "$dev" "$mib"
	storage_bench iser "$dev"
	blockdev_verify "$dev" "$mib" /tmp/written
	cp /tmp/written "$SROCE_PAIR_DIR/written"
	iscsiadm -m node -T "$iqn" -p "$SROCE_PEER_IP:3260" --logout >/dev/null ||
		fail "logout failed"
	wait_for 30 test ! -e "$dev" || fail "$dev stayed after the logout"
	traffic_check $(((mib + fio_mib) << 20)) $(((2 * mib + fio_mib) << 20))
	initiator_stop
	trap - EXIT
	barrier initiator-done 600
fi
log "PASS"
