#!/bin/bash
# sroce-test: kernels=debug full-kernels=debug pairs=sroce:sroce,rxe:sroce pairs.debug=sroce:sroce timeout=900
# SPDX-License-Identifier: GPL-2.0
# SMB Direct (SMB3 over RDMA): guest a runs ksmbd sharing a tmpfs, which
# listens on RDMA/CM port 445 (5445 on iWARP only) besides TCP; guest b
# mounts it with mount.cifs -o rdma, SMB 3.1.1. Only the debug kernel has
# them (Debian builds neither CIFS_SMB_DIRECT nor SMB_SERVER_SMBDIRECT).
# a writes a data set into the share, b writes its own through the mount;
# b unmounts, drops its caches, mounts again and checks both sets by their
# checksums, and a checks b's set in the share. The data sets add sizes
# around SMB Direct's 1364-byte messages (1340 bytes of payload) to those
# around its 4 KiB RDMA read/write threshold and 1 MiB largest I/O: small
# I/O goes in SENDs, split over several messages; larger by the server's
# RDMA READs and WRITEs of the client's fast-registered buffers. The
# client's DebugData must show an SMB Direct connection, its device must
# have fast-registered MRs, the server an RDMA/CM connection on port 445,
# and each side's byte counters must have moved by at least the data it
# carried. Then b unmounts and unloads cifs, a stops ksmbd and unloads it.
# Not with the client on rdma_rxe: 6.1's rxe reads past its fast-registered
# MR's page map when the server's RDMA READ or WRITE reaches the end
# (KASAN: slab-out-of-bounds in rxe_mr_copy, from rxe_responder), though
# the data arrived intact. Needs ksmbd-tools 3.5 (tools/sroce-ksmbd-tools)
# and the debug kernel's ksmbd fix (tools/debug-kernel/patches).
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"
# shellcheck source=tests/integration/storage-lib.sh
. "$SROCE_TOP/tests/integration/storage-lib.sh"

require_pair
# ksmbd-tools 3.5 from Debian 13 (make's ksmbd-tools target): Debian 12's
# 3.4.7 leaves out a field Linux 6.1.192's ksmbd checks in every share's
# configuration, and each tree connect fails (tools/sroce-ksmbd-tools)
PATH=$SROCE_BUILD/ksmbd-tools/usr/sbin:$PATH
require_cmd ksmbd.mountd ksmbd.adduser ksmbd.control mount.cifs sha256sum
[[ $(command -v ksmbd.mountd) == "$SROCE_BUILD/ksmbd-tools/usr/sbin/ksmbd.mountd" ]] ||
	fail "no ksmbd-tools in $SROCE_BUILD/ksmbd-tools (make ksmbd-tools)"
share=/mnt/share mnt=/mnt/smb smb_port=445 user=sroce pass=sroce-smb-pw
# ksmbd-tools' configuration, user database and the subauth file that
# ksmbd.mountd writes beside them: a tmpfs (the guest's /etc is read-only)
# on the mount point tools/install-deps makes in the host's root
conf_dir=/etc/ksmbd
[[ -d $conf_dir ]] || fail "no $conf_dir to mount ksmbd's configuration on (tools/install-deps)"
# 1228 and 1229: a WRITE's header (112 bytes) and data in one message of
# 1340 payload bytes or two; 1260 and 1261: a READ response's (80 bytes);
# 2681: two full messages and one byte
dataset_sizes_add 1228 1229 1260 1261 2681
set_bytes=$(dataset_bytes)

server_start() {
	modprobe ksmbd || fail "cannot load ksmbd"
	mkdir -p "$share"
	mount -t tmpfs -o mode=755 tmpfs "$conf_dir"
	mount -t tmpfs -o size=96m,mode=1777 tmpfs "$share"
	cat >"$conf_dir/ksmbd.conf" <<-EOF
		[global]
		server min protocol = SMB3
		[share]
		path = $share
		read only = no
	EOF
	ksmbd.adduser -a "$user" -p "$pass" || fail "ksmbd.adduser failed"
	ksmbd.mountd -n &
	mountd_pid=$!
}

server_stop() {
	ksmbd.control -s 2>/dev/null || true
	[[ -z ${mountd_pid:-} ]] || wait "$mountd_pid" 2>/dev/null || true
	mountd_pid=
	umount "$share" "$conf_dir" 2>/dev/null || true
}

client_mount() {
	mkdir -p "$mnt"
	retry 10 3 with_timeout 120 mount -t cifs "//$SROCE_PEER_IP/share" "$mnt" \
		-o "rdma,vers=3.1.1,username=$user,password=$pass" ||
		fail "mount -t cifs -o rdma failed"
	grep -E "^//$SROCE_PEER_IP/share $mnt cifs .*[,]rdma(,|$| )" /proc/mounts >/dev/null ||
		fail "the mount has no rdma option: $(grep " $mnt " /proc/mounts)"
	grep -q "SMBDirect (in hex) protocol version: 100 " /proc/fs/cifs/DebugData ||
		{ cat /proc/fs/cifs/DebugData; fail "cifs shows no SMB Direct connection"; }
}

client_stop() {
	! mountpoint -q "$mnt" || umount -f "$mnt"
}

# server_rdma_connected: ksmbd has an RDMA/CM connection on port 445
server_rdma_connected() {
	rdma resource show cm_id | grep -E "state CONNECT .*src-(port |addr [^ ]*:)$smb_port( |$)"
}

if [[ $SROCE_ROLE == a ]]; then
	trap server_stop EXIT
	server_start
	announce_port "$smb_port" rdma
	traffic_begin
	dataset_make "$share/server" server
	barrier server-set
	barrier client-mounted 600
	server_rdma_connected >"$SROCE_OUT/cm_id.txt" ||
		{ rdma resource show cm_id; fail "ksmbd has no RDMA/CM connection on port $smb_port"; }
	log "ksmbd's RDMA/CM connection: $(cat "$SROCE_OUT/cm_id.txt")"
	barrier client-done 600
	dataset_check "$share/client" client
	# a sent its set and b's back; it received b's set
	traffic_check $((2 * set_bytes)) "$set_bytes"
	server_stop
	trap - EXIT
	rmmod ksmbd || fail "cannot unload ksmbd"
else
	trap client_stop EXIT
	modprobe cifs || fail "cannot load cifs"
	wait_peer_port "$smb_port" 120
	traffic_begin
	# rxe counts no fast registrations
	[[ $SROCE_DEV_TYPE != sroce ]] || fr0=$(link_counter "$SROCE_DEV" mr_fast_regs)
	dataset_make /tmp/client client
	barrier server-set
	client_mount
	log "mounted over SMB Direct: $(grep " $mnt " /proc/mounts)"
	barrier client-mounted 600
	mkdir "$mnt/client" || fail "mkdir through SMB failed"
	cp /tmp/client/* "$mnt/client/" || fail "writing through SMB failed"
	umount "$mnt" || fail "umount after writing failed"
	echo 3 >/proc/sys/vm/drop_caches
	client_mount
	dataset_check "$mnt/server" server
	dataset_check "$mnt/client" client
	cp /proc/fs/cifs/DebugData "$SROCE_OUT/DebugData.txt"
	umount "$mnt" || fail "umount after reading failed"
	trap - EXIT
	rm -rf /tmp/client
	if [[ $SROCE_DEV_TYPE == sroce ]]; then
		fr=$(($(link_counter "$SROCE_DEV" mr_fast_regs) - fr0))
		log "$SROCE_DEV fast-registered $fr MRs for the server's RDMA READs and WRITEs"
		((fr > 0)) || fail "no MR was registered: no data went by RDMA READ or WRITE"
	fi
	traffic_check "$set_bytes" $((2 * set_bytes))
	barrier client-done 600
	rmmod cifs || fail "cannot unload cifs"
fi
barrier stopped 120
log "PASS"
