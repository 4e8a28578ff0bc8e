#!/bin/bash
# sroce-test: kernels=6.12 full-kernels=6.1,6.12,debug pairs=sroce:sroce,rxe:sroce pairs.6.12=sroce:sroce+e1000e timeout=600
# SPDX-License-Identifier: GPL-2.0
# The NVMe-oF host on sroce: the same exchange as nvmeof-target.sh (guest a
# exports a file with nvmet-rdma, guest b reads, writes and reads back
# through nvme-rdma, both sides compare data), with the nvme-rdma host on
# sroce. The host maps every data buffer with ib_map_mr_sg() and an
# IB_WR_REG_MR, advertises the rkey for the target's READs and WRITEs and
# asks for remote invalidation: each response is a SEND with Invalidate
# (or, when not, the host posts an IB_WR_LOCAL_INV), so this runs sroce's
# fast registration, its responder's remote invalidation and its local
# invalidation under a real kernel ULP. Pairs: target on sroce (sroce:sroce)
# and on rdma_rxe (rxe:sroce).
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"

counters=/sys/class/infiniband/$SROCE_DEV/ports/1/hw_counters
mr_counts() {
	echo "$(cat "$counters/mr_fast_regs") $(cat "$counters/mr_local_invs")" \
		"$(cat "$counters/mr_remote_invs")"
}
if [[ $SROCE_ROLE == b ]]; then
	[[ $SROCE_DEV == sroce* ]] || fail "the host side must run on sroce, not $SROCE_DEV"
	ibv_devinfo -v -d "$SROCE_DEV" | grep -qw MEM_MGT_EXTENSIONS ||
		fail "$SROCE_DEV does not advertise MEM_MGT_EXTENSIONS"
	read -r regs0 linv0 rinv0 < <(mr_counts)
fi
# shellcheck source=tests/integration/nvmeof-target.sh
. "$SROCE_TOP/tests/integration/nvmeof-target.sh"
if [[ $SROCE_ROLE == b ]]; then
	# Every registration the host made was invalidated before its MR
	# went back to the pool: by the target's SEND with Invalidate or by
	# the host's LOCAL_INV.
	read -r regs linv rinv < <(mr_counts)
	regs=$((regs - regs0)) linv=$((linv - linv0)) rinv=$((rinv - rinv0))
	log "host: $regs fast registrations, $rinv remote and $linv local invalidations"
	((regs > 0)) || fail "the host made no fast registration"
	((rinv > 0)) || fail "the target invalidated no MR remotely"
	((regs == rinv + linv)) ||
		fail "$regs registrations but $((rinv + linv)) invalidations"
	log "PASS (fast registration and invalidation counted)"
fi
