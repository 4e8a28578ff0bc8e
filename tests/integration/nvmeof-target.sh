#!/bin/bash
# sroce-test: kernels=6.1 pairs=sroce:rxe timeout=600
# SPDX-License-Identifier: GPL-2.0
# A kernel consumer on sroce: guest a exports a 16 MiB file as an NVMe-oF
# namespace with nvmet-rdma over sroce, guest b connects with nvme-rdma over
# rdma_rxe (nvmeof-host.sh runs the nvme-rdma host, with its fast
# registration, on sroce). rdma_cm's MADs go through sroce's GSI QP; commands and
# responses are SENDs into kernel receive buffers; data moves by the
# target's RDMA READs and WRITEs. The host reads the namespace and compares
# it with the target's file, writes random data, reads it back; the target
# then checks that its file holds exactly what the host wrote. Not on the
# debug kernel: its minimal config has no NVMe-oF modules. On 6.12 only in
# make check-full: the stock rdma_rxe host there crashed twice in CI runs
# (once a NULL function call, once a corrupted slab freelist in
# rxe_receiver -> prepare_ack_packet -> __alloc_skb, a double fault), and
# nvmeof-host on 6.12 already runs sroce as the target.
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"

require_pair
require_cmd sha256sum cmp dd
nqn=nqn.2024-01.org.sroce:nvmeof-target
mib=16

if [[ $SROCE_ROLE == a ]]; then
	modprobe nvmet-rdma || fail "cannot load nvmet-rdma"
	mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config
	dd if=/dev/urandom of=/tmp/backing bs=1M count="$mib" status=none
	sha256sum </tmp/backing | cut -d' ' -f1 >"$SROCE_PAIR_DIR/initial.sha"
	cfg=/sys/kernel/config/nvmet
	mkdir "$cfg/subsystems/$nqn"
	echo 1 >"$cfg/subsystems/$nqn/attr_allow_any_host"
	ns=$cfg/subsystems/$nqn/namespaces/1
	mkdir "$ns"
	echo /tmp/backing >"$ns/device_path"
	echo 1 >"$ns/buffered_io"	# tmpfs has no O_DIRECT
	echo 1 >"$ns/enable"
	mkdir "$cfg/ports/1"
	echo rdma >"$cfg/ports/1/addr_trtype"
	echo ipv4 >"$cfg/ports/1/addr_adrfam"
	echo "$SROCE_LOCAL_IP" >"$cfg/ports/1/addr_traddr"
	echo 4420 >"$cfg/ports/1/addr_trsvcid"
	ln -s "$cfg/subsystems/$nqn" "$cfg/ports/1/subsystems/$nqn"
	announce_port 4420 rdma
	barrier host-done 300
	cmp /tmp/backing "$SROCE_PAIR_DIR/written" ||
		fail "the target's file is not what the host wrote"
	log "target file holds the $mib MiB the host wrote"
	rm -f "$cfg/ports/1/subsystems/$nqn"
	rmdir "$cfg/ports/1" "$ns" "$cfg/subsystems/$nqn"
else
	modprobe nvme-rdma || fail "cannot load nvme-rdma"
	wait_peer_port 4420 120
	echo "transport=rdma,traddr=$SROCE_PEER_IP,trsvcid=4420,nqn=$nqn" \
		>/dev/nvme-fabrics || fail "nvme-rdma connect failed"
	wait_for 30 test -b /dev/nvme0n1 || fail "no namespace appeared"
	dev=/dev/nvme0n1
	[[ $(blockdev --getsize64 "$dev") -eq $((mib << 20)) ]] ||
		fail "namespace size $(blockdev --getsize64 "$dev"), expected $((mib << 20))"
	got=$(dd if="$dev" bs=1M count="$mib" iflag=direct status=none | sha256sum | cut -d' ' -f1)
	[[ $got == $(cat "$SROCE_PAIR_DIR/initial.sha") ]] ||
		fail "reading the namespace gave other data than the target's file"
	log "read $mib MiB matching the target's file"
	dd if=/dev/urandom of=/tmp/w bs=1M count="$mib" status=none
	# odd-sized direct writes: several requests of different lengths
	dd if=/tmp/w of="$dev" bs=36k oflag=direct status=none
	dd if="$dev" of=/tmp/r bs=1M count="$mib" iflag=direct status=none
	cmp /tmp/w /tmp/r || fail "read back differs from what was written"
	log "wrote $mib MiB and read it back identical"
	cp /tmp/w "$SROCE_PAIR_DIR/written"
	echo 1 >/sys/class/nvme/nvme0/delete_controller
	barrier host-done 300
fi
log "PASS"
