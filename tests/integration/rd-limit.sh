#!/bin/bash
# sroce-test: kernels=debug pairs=none timeout=180
# SPDX-License-Identifier: GPL-2.0
#
# Responder resources are a limit a peer must keep: tests/verify/
# sroce-rd-limit posts 16 READs (192 KiB, then 4 KiB) at a responder with 2
# resources, once with max_rd_atomic 2 (all must succeed, bytes checked)
# and once with 16 (the excess must be NAKed as an invalid request and the
# responder's QP go to the error state; the old responder overwrote its
# oldest resources and queued every answer). The NAK is counted in the
# device's resp_err_naks.
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"

[[ $SROCE_DEV == sroce* ]] || fail "needs an sroce device"
check=$SROCE_BUILD/sroce-rd-limit
[[ -x $check ]] || fail "$check is missing (make verify)"

naks0=$(link_counter "$SROCE_DEV" resp_err_naks)
out=$SROCE_OUT/rd-limit.txt
rc=0
with_timeout 120 "$check" "$SROCE_DEV" "$(gid_index "$SROCE_DEV" 4)" >"$out" 2>&1 || rc=$?
cat "$out"
((rc == 0)) || fail "sroce-rd-limit failed (status $rc)"
naks=$(($(link_counter "$SROCE_DEV" resp_err_naks) - naks0))
((naks == 1)) || fail "resp_err_naks moved by $naks, expected 1"
log "one invalid request NAK, counted"
