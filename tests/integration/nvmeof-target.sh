#!/bin/bash
# sroce-test: kernels=6.1 pairs=sroce:rxe timeout=600 full-only
# SPDX-License-Identifier: GPL-2.0
# A kernel consumer on sroce: guest a exports a 16 MiB file as an NVMe-oF
# namespace with nvmet-rdma over sroce, guest b connects with nvme-rdma over
# rdma_rxe (nvmeof-host.sh runs the nvme-rdma host, with its fast
# registration, on sroce). rdma_cm's MADs go through sroce's GSI QP; commands and
# responses are SENDs into kernel receive buffers; data moves by the
# target's RDMA READs and WRITEs. The host reads the namespace and compares
# it with the target's file, writes random data, reads it back; the target
# then checks that its file holds exactly what the host wrote, and each
# sroce side that its byte counters moved by at least the data it carried
# (traffic_check: the data crossed RDMA, not TCP). In make
# check-full only: make check's nvmeof-load runs the sroce target under
# heavier load (sroce on both sides). On 6.12 the stock rdma_rxe host
# crashed twice in CI runs (once a NULL function call, once a corrupted slab
# freelist in rxe_receiver -> prepare_ack_packet -> __alloc_skb, a double
# fault).
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"
# shellcheck source=tests/integration/storage-lib.sh
. "$SROCE_TOP/tests/integration/storage-lib.sh"

require_pair
require_cmd sha256sum cmp dd
mib=16

traffic_begin
if [[ $SROCE_ROLE == a ]]; then
	dd if=/dev/urandom of=/tmp/backing bs=1M count="$mib" status=none
	sha256sum </tmp/backing | cut -d' ' -f1 >"$SROCE_PAIR_DIR/initial.sha"
	nvmet_export /tmp/backing 1	# tmpfs has no O_DIRECT
	barrier host-done 300
	cmp /tmp/backing "$SROCE_PAIR_DIR/written" ||
		fail "the target's file is not what the host wrote"
	log "target file holds the $mib MiB the host wrote"
	# the host's two reads came by the target's RDMA WRITEs, its write
	# by the target's RDMA READs
	traffic_check $((2 * mib << 20)) $((mib << 20))
	nvmet_unexport
else
	dev=$(nvme_connect)
	[[ $(blockdev --getsize64 "$dev") -eq $((mib << 20)) ]] ||
		fail "namespace size $(blockdev --getsize64 "$dev"), expected $((mib << 20))"
	got=$(dd if="$dev" bs=1M count="$mib" iflag=direct status=none | sha256sum | cut -d' ' -f1)
	[[ $got == $(cat "$SROCE_PAIR_DIR/initial.sha") ]] ||
		fail "reading the namespace gave other data than the target's file"
	log "read $mib MiB matching the target's file"
	storage_bench nvmeof "$dev"
	dd if=/dev/urandom of=/tmp/w bs=1M count="$mib" status=none
	# odd-sized direct writes: several requests of different lengths
	dd if=/tmp/w of="$dev" bs=36k oflag=direct status=none
	dd if="$dev" of=/tmp/r bs=1M count="$mib" iflag=direct status=none
	cmp /tmp/w /tmp/r || fail "read back differs from what was written"
	log "wrote $mib MiB and read it back identical"
	cp /tmp/w "$SROCE_PAIR_DIR/written"
	nvme_disconnect
	traffic_check $((mib << 20)) $((2 * mib << 20))
	barrier host-done 300
fi
log "PASS"
