#!/bin/bash
# sroce-test: kernels=6.1 full-kernels=6.1,6.12,debug pairs=sroce:sroce,sroce:rxe,rxe:sroce pairs.6.1=sroce:sroce full-pairs.debug=sroce:sroce,rxe:sroce timeout=900
# SPDX-License-Identifier: GPL-2.0
# NFS over RDMA: guest a runs nfsd with an RDMA listener (svcrdma, port
# 20049) exporting a tmpfs; guest b mounts it with proto=rdma (xprtrdma),
# for NFSv3 and then NFSv4.2. For each version: a writes a data set into
# the export, b writes its own through the mount; b unmounts, drops its
# caches, mounts again and checks both sets by their checksums, and a checks
# b's set in the export. Small files go inline in SENDs, larger ones by
# the server's RDMA WRITEs (client reads) and READs (client writes), over
# several RPCs each. The server's svcrdma counters must show RDMA READs
# and WRITEs. Each sroce side's byte counters must have moved by
# at least the data it carried, and the mount must say proto=rdma. Then
# everything is stopped and, on sroce, the device is removed and created
# again with rpcrdma loaded (its ib_client removal path).
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"
# shellcheck source=tests/integration/storage-lib.sh
. "$SROCE_TOP/tests/integration/storage-lib.sh"

require_pair
require_cmd rpcbind rpc.mountd rpc.nfsd exportfs mount.nfs sha256sum
export_dir=/mnt/export mnt=/mnt/nfs nfs_port=20049
set_bytes=$(dataset_bytes)

server_start() {
	modprobe -a nfsd rpcrdma || fail "cannot load nfsd and rpcrdma"
	# nfs-utils keeps its state (etab, rmtab, the NFSv4 recovery
	# directory) in /var/lib/nfs, read-only in the guest
	mount -t tmpfs -o mode=755 tmpfs /var/lib/nfs
	mkdir -p /var/lib/nfs/v4recovery
	: >/var/lib/nfs/etab
	: >/var/lib/nfs/rmtab
	mkdir -p "$export_dir"
	mount -t tmpfs -o size=96m tmpfs "$export_dir"
	mountpoint -q /proc/fs/nfsd || mount -t nfsd nfsd /proc/fs/nfsd
	# no clients to reclaim: the shortest grace period NFSv4 allows
	echo 10 >/proc/fs/nfsd/nfsv4leasetime
	echo 10 >/proc/fs/nfsd/nfsv4gracetime
	rpcbind -f &
	rpcbind_pid=$!
	wait_for 10 listening 111 || fail "rpcbind does not listen"
	rpc.mountd -F &
	mountd_pid=$!
	rpc.nfsd 4 || fail "rpc.nfsd failed"
	echo "rdma $nfs_port" >/proc/fs/nfsd/portlist || fail "no RDMA listener for nfsd"
	# fsid=0: the export is NFSv4's root (the guest's root is 9p, which
	# nfs-utils cannot make a pseudo root of), so v4 mounts "/"
	exportfs -o rw,no_root_squash,insecure,no_subtree_check,fsid=0 \
		"$SROCE_PEER_IP:$export_dir" || fail "exportfs failed"
	log "nfsd listens on: $(tr '\n' ' ' </proc/fs/nfsd/portlist)"
}

server_stop() {
	rpc.nfsd 0 2>/dev/null || true
	exportfs -ua 2>/dev/null || true
	[[ -z ${mountd_pid:-} ]] || kill "$mountd_pid" 2>/dev/null || true
	[[ -z ${rpcbind_pid:-} ]] || kill "$rpcbind_pid" 2>/dev/null || true
	wait 2>/dev/null || true
	umount /proc/fs/nfsd "$export_dir" /var/lib/nfs 2>/dev/null || true
}

client_mount() {
	local vers=$1 opts path=/
	[[ $vers == 3 ]] && path=$export_dir
	mkdir -p "$mnt"
	opts=vers=$vers,proto=rdma,port=$nfs_port,hard,timeo=600
	[[ $vers == 3 ]] && opts+=,nolock	# no rpc.statd here
	retry 10 3 with_timeout 120 mount -t nfs -o "$opts" "$SROCE_PEER_IP:$path" "$mnt" ||
		fail "mount -o $opts failed"
	grep -E "^$SROCE_PEER_IP:$path $mnt nfs4? .*proto=rdma" /proc/mounts >/dev/null ||
		fail "the mount is not over RDMA: $(grep " $mnt " /proc/mounts)"
	awk -v m="$mnt" '$1 == "device" { on = ($5 == m) } on && $1 == "xprt:" { print $2 }' \
		/proc/self/mountstats | grep -qx rdma || fail "mountstats shows no rdma transport"
}

client_stop() {
	! mountpoint -q "$mnt" || umount -f "$mnt"
}

# svc_rdma_ops: "READS WRITES", the RDMA READs and WRITEs svcrdma posted
# (it reads the client's write chunks, writes the client's read replies).
svc_rdma_ops() {
	local s=/proc/sys/sunrpc/svc_rdma
	echo "$(cat "$s/rdma_stat_read") $(cat "$s/rdma_stat_write")"
}

# one_version VERS: the exchange above over one NFS version.
one_version() {
	local vers=$1 dir reads0 writes0 reads writes
	dir=v$vers
	traffic_begin
	if [[ $SROCE_ROLE == a ]]; then
		read -r reads0 writes0 < <(svc_rdma_ops)
		dataset_make "$export_dir/$dir" "server-v$vers"
		barrier "v$vers-server-set"
		barrier "v$vers-client-done" 600
		dataset_check "$export_dir/$dir" "client-v$vers"
		# a sent its set and b's back; it received b's set
		traffic_check $((2 * set_bytes)) "$set_bytes"
		read -r reads writes < <(svc_rdma_ops)
		reads=$((reads - reads0)) writes=$((writes - writes0))
		log "svcrdma posted $reads RDMA READs and $writes RDMA WRITEs"
		((reads > 0 && writes > 0)) || fail "no RDMA READ or WRITE carried NFSv$vers data"
	else
		dataset_make "/tmp/client-v$vers" "client-v$vers"
		barrier "v$vers-server-set"
		client_mount "$vers"
		log "mounted NFSv$vers over RDMA: $(grep " $mnt " /proc/mounts)"
		cp "/tmp/client-v$vers"/* "$mnt/$dir/" || fail "writing through NFSv$vers failed"
		if [[ $vers == 4.2 ]]; then
			storage_bench nfs "$mnt/$dir/fio-bench"
			rm -f "$mnt/$dir/fio-bench"
		fi
		umount "$mnt" || fail "umount after writing failed"
		echo 3 >/proc/sys/vm/drop_caches
		client_mount "$vers"
		dataset_check "$mnt/$dir" "server-v$vers"
		dataset_check "$mnt/$dir" "client-v$vers"
		umount "$mnt" || fail "umount after reading failed"
		rm -rf "/tmp/client-v$vers"
		traffic_check "$set_bytes" $((2 * set_bytes))
		barrier "v$vers-client-done" 600
	fi
}

# device_cycle: remove this guest's sroce device with rpcrdma loaded and
# create it again; the harness's next test expects it ACTIVE.
device_cycle() {
	[[ $SROCE_DEV_TYPE == sroce ]] || return 0
	rdma link delete "$SROCE_DEV" || fail "cannot remove $SROCE_DEV"
	rdma link add "$SROCE_DEV" type sroce netdev "$SROCE_NETDEV" ||
		fail "cannot create $SROCE_DEV again"
	wait_for 20 grep -q ACTIVE "/sys/class/infiniband/$SROCE_DEV/ports/1/state" ||
		fail "$SROCE_DEV is not ACTIVE again"
	log "$SROCE_DEV removed and created again with rpcrdma loaded"
}

if [[ $SROCE_ROLE == a ]]; then
	trap server_stop EXIT
	server_start
	announce_port "$nfs_port" rdma
else
	trap client_stop EXIT
	modprobe -a nfs nfsv3 nfsv4 rpcrdma || fail "cannot load the NFS client"
	wait_peer_port "$nfs_port" 120
fi
for vers in 3 4.2; do
	one_version "$vers"
done
if [[ $SROCE_ROLE == a ]]; then
	server_stop
	trap - EXIT
fi
barrier stopped 120
# (storage-loss.sh keeps the device: its counters prove the recovery)
[[ ${1:-} == --keep-device ]] || device_cycle
log "PASS"
