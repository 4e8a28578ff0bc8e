#!/bin/bash
# sroce-test: kernels=6.1 pairs=sroce:sroce,rxe:sroce timeout=1500 full-only
# SPDX-License-Identifier: GPL-2.0
# verify.sh over a lossy, reordering, duplicating link (netem on both
# guests' egress): retransmission, go-back-N, duplicate detection and READ /
# atomic replay must still deliver exactly the right data and results.
# Guest b drives the traffic, so b=sroce puts sroce's requester and
# completer under loss against sroce's or rxe's responder. Not b=rxe:
# rdma_rxe's requester on 6.1 stalls for good under this loss even against
# rxe (rxe:rxe measured hanging in the WRITE/READ phase, twice: by the
# lead and again on 2026-11-22, client timed out after 380 s on its third
# QP). rxe treats retry_cnt 7 as infinite (rxe_comp.c: "if (retry_cnt !=
# 7) retry_cnt--"), so a retry loop that never progresses hangs instead of
# completing with RETRY_EXC_ERR.
# The run fails unless netem dropped packets on both guests and the
# devices' counters show that the transport recovered (netem-lib.sh).
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"
# shellcheck source=tests/integration/netem-lib.sh
. "$SROCE_TOP/tests/integration/netem-lib.sh"

require_pair
netem=(delay 1ms reorder 5% loss 2% duplicate 1%)
netem_setup "${netem[@]}"
loss_begin verify
"$SROCE_TOP/tests/integration/verify.sh" --netem "${netem[@]}" "$@" ||
	loss_fail "sroce-verify over loss failed"
loss_check verify
