#!/bin/bash
# sroce-test: kernels=debug full-kernels=debug pairs=sroce:sroce timeout=1800 full-only
# SPDX-License-Identifier: GPL-2.0
# SMB Direct over a lossy, reordering, duplicating link (netem on both
# guests' egress, as storage-loss.sh does for the other protocols):
# smb-direct.sh between two sroce guests must still carry every file of
# both data sets intact. Fails unless netem dropped packets on both guests
# and the devices' counters show that the transport recovered
# (netem-lib.sh). Debug kernel only: Debian's kernels lack SMB Direct.
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"
# shellcheck source=tests/integration/netem-lib.sh
. "$SROCE_TOP/tests/integration/netem-lib.sh"

require_pair
netem_setup delay 1ms reorder 5% loss 1% duplicate 1%
loss_begin smb
"$SROCE_TOP/tests/integration/smb-direct.sh" || loss_fail "SMB Direct under loss failed"
loss_check smb
log "PASS: SMB Direct data intact over loss, reordering and duplication"
