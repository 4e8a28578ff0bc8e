#!/bin/bash
# sroce-test: kernels=6.1,6.12 pairs=sroce:sroce,rxe:sroce timeout=600 full-only
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

if [[ $SROCE_ROLE == b ]]; then
	[[ $SROCE_DEV == sroce* ]] || fail "the host side must run on sroce, not $SROCE_DEV"
	ibv_devinfo -v -d "$SROCE_DEV" | grep -qw MEM_MGT_EXTENSIONS ||
		fail "$SROCE_DEV does not advertise MEM_MGT_EXTENSIONS"
fi
# shellcheck source=tests/integration/nvmeof-target.sh
. "$SROCE_TOP/tests/integration/nvmeof-target.sh"
