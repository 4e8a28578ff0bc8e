#!/bin/bash
# sroce-test: kernels=6.1 full-kernels=6.1,6.12,debug pairs=sroce:sroce,sroce:rxe,rxe:sroce pairs.6.1=sroce:sroce full-pairs.debug=sroce:sroce,rxe:sroce timeout=900
# SPDX-License-Identifier: GPL-2.0
# SRP: guest a runs the LIO SRP target (ib_srpt) with an RDMA/CM listener
# (RoCE has no IB CM of its own) exporting a file-backed LUN to guest b's
# address; guest b writes add_target of the SRP initiator (ib_srp) with
# the target's port ID (its device's node GUID) and address. b reads the
# LUN and compares it with a's file, runs fio's crc32c-verified 4 KiB
# random writes, writes random data and reads it back; after b deletes the
# remote port, a checks that its file holds exactly what b wrote. SRP moves
# all data by the target's RDMA READs and WRITEs of the initiator's
# fast-registered buffers. Each sroce side's byte counters must have moved
# by at least the data it carried.
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"
# shellcheck source=tests/integration/storage-lib.sh
. "$SROCE_TOP/tests/integration/storage-lib.sh"

require_pair
require_cmd sha256sum cmp dd fio
mib=16 cm_port=5000
fio_mib=$(blockdev_fio_mib "$mib")
srpt=/sys/kernel/config/target/srpt

gid0() {
	tr -d : <"/sys/class/infiniband/$SROCE_DEV/ports/1/gids/0"
}

target_start() {
	modprobe ib_srpt || fail "cannot load ib_srpt"
	lio_backstore "$mib"
	# the target port named by its GID; ib_srpt has no demo mode: an
	# ACL names the initiator by its port ID (an extension of 0 and the
	# low half of its GID 0) and maps the LUN
	tpg=$srpt/0x$(gid0)/tpg_1
	acl=$tpg/acls/0x0000000000000000$(from_peer initiator)
	mkdir -p "$tpg" || fail "no srpt port 0x$(gid0)"
	mkdir -p "$tpg/lun/lun_0"
	ln -s "$lio_core/fileio_0/disk0" "$tpg/lun/lun_0/disk0"
	mkdir -p "$acl/lun_0"
	ln -s "$tpg/lun/lun_0" "$acl/lun_0/lun_0"
	echo 1 >"$tpg/enable"
	echo "$cm_port" >"$srpt/discovery_auth/rdma_cm_port" ||
		fail "no RDMA/CM listener for ib_srpt"
	tell_peer guid "$(tr -d : <"/sys/class/infiniband/$SROCE_DEV/node_guid")"
}

# (each step may find its object gone: the script failed halfway)
target_stop() {
	echo 0 2>/dev/null >"$srpt/discovery_auth/rdma_cm_port" || true
	if [[ -n ${tpg:-} ]]; then
		echo 0 2>/dev/null >"$tpg/enable" || true
		rm -f "$acl/lun_0/lun_0" "$tpg/lun/lun_0/disk0"
		rmdir "$acl/lun_0" "$acl" "$tpg/lun/lun_0" "$tpg" "${tpg%/*}" \
			2>/dev/null || true
	fi
	lio_backstore_remove
}

initiator_stop() {
	local p
	for p in /sys/class/srp_remote_ports/port-*; do
		[[ -e $p/delete ]] && echo 1 >"$p/delete"
	done
	return 0
}

# srp_disk: the block device of the target's LUN.
srp_disk() {
	local b
	for b in /sys/class/srp_remote_ports/port-*/device/target*/*:*:*:*/block/*; do
		[[ -e $b ]] && { echo "/dev/${b##*/}"; return 0; }
	done
	for b in /sys/block/sd*; do
		[[ -e $b && $(cat "$b/device/vendor" 2>/dev/null) == LIO-ORG* ]] &&
			{ echo "/dev/${b##*/}"; return 0; }
	done
	return 1
}

traffic_begin
if [[ $SROCE_ROLE == a ]]; then
	trap target_stop EXIT
	target_start
	announce_port "$cm_port" rdma
	barrier initiator-done 600
	cmp /tmp/lio-backing "$SROCE_PAIR_DIR/written" ||
		fail "the target's file is not what the initiator wrote"
	log "the target's file holds the $mib MiB the initiator wrote"
	# the initial read, fio's verify pass and the read-back; fio's and the
	# direct writes
	traffic_check $(((2 * mib + fio_mib) << 20)) $(((mib + fio_mib) << 20))
	target_stop
	trap - EXIT
else
	trap initiator_stop EXIT
	modprobe -a ib_srp sd_mod || fail "cannot load ib_srp and sd_mod"
	tell_peer initiator "$(gid0 | cut -c17-)"
	guid=$(from_peer guid)
	wait_peer_port "$cm_port" 120
	add=/sys/class/infiniband_srp/srp-$SROCE_DEV-1/add_target
	wait_for 10 test -e "$add" || fail "no $add"
	echo "id_ext=$guid,ioc_guid=$guid,dest=$SROCE_PEER_IP:$cm_port" >"$add" ||
		fail "add_target failed"
	wait_for 30 srp_disk >/dev/null || fail "no disk appeared"
	dev=$(srp_disk)
	log "SRP remote port $(ls /sys/class/srp_remote_ports), disk $dev"
	[[ $(blockdev --getsize64 "$dev") -eq $((mib << 20)) ]] ||
		fail "$dev has $(blockdev --getsize64 "$dev") bytes, expected $((mib << 20))"
	initiator_check_initial "$dev" "$mib"
	storage_bench srp "$dev"
	blockdev_verify "$dev" "$mib" /tmp/written
	cp /tmp/written "$SROCE_PAIR_DIR/written"
	initiator_stop
	wait_for 30 test ! -e "$dev" || fail "$dev stayed after the remote port was deleted"
	trap - EXIT
	traffic_check $(((mib + fio_mib) << 20)) $(((2 * mib + fio_mib) << 20))
	barrier initiator-done 600
fi
log "PASS"
