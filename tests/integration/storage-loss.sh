#!/bin/bash
# sroce-test: kernels=6.1 full-kernels=6.1 pairs=sroce:sroce timeout=2400 full-only
# SPDX-License-Identifier: GPL-2.0
# The storage protocols over a lossy, reordering, duplicating link (netem
# on both guests' egress): nfs-rdma.sh (NFSv3 and NFSv4.2), iser.sh,
# srp.sh and nvmeof-target.sh over sroce must still carry exactly the right
# files and blocks, fio's crc32c verify included. Each phase fails unless
# netem dropped packets on both guests and the devices' counters show that
# the transport recovered (netem-lib.sh). 6.1 only: the same code on
# another kernel adds some 10 minutes and little else.
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"
# shellcheck source=tests/integration/netem-lib.sh
. "$SROCE_TOP/tests/integration/netem-lib.sh"

require_pair
netem_setup delay 1ms reorder 5% loss 1% duplicate 1%
loss_begin nfs
"$SROCE_TOP/tests/integration/nfs-rdma.sh" --keep-device || loss_fail "NFS over RDMA under loss failed"
loss_check nfs
for protocol in iser srp nvmeof-target; do
	loss_begin "$protocol"
	"$SROCE_TOP/tests/integration/$protocol.sh" || loss_fail "$protocol under loss failed"
	loss_check "$protocol"
done
log "PASS: NFS, iSER, SRP and NVMe-oF data intact over loss, reordering and duplication"
