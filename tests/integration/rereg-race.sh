#!/bin/bash
# sroce-test: kernels=debug pairs=none timeout=240 full-only
# SPDX-License-Identifier: GPL-2.0
#
# ibv_rereg_mr racing the requester on the MR it sends from, as an
# unprivileged user (tests/verify/sroce-rereg-race): a loopback RC pair
# sends multi-SGE messages large enough for zero copy, every byte checked
# at the receiver, while another thread toggles IBV_ACCESS_ON_DEMAND on
# the send MR (keys kept) and prefetches its ODP pages. Every completion
# must succeed: the key is valid throughout (the old lookup failed SENDs
# with a local protection error when it met the old MR losing its last
# reference). The old requester sized a packet for zero copy from the
# user MR and filled it from the ODP MR that took its key: skb_put() past
# the tail, a guest panic the harness reports. On the debug kernel KASAN
# and lockdep watch the swaps; elsewhere the race runs for a minute, which
# is what catches the old lookup: on 6.1 it failed 18 of 51,557 SENDs in
# 90 s with local protection errors (the debug kernel, 171 SENDs in 15 s,
# met none). The sizing-then-filling window is too narrow for any guest
# to hit: KUnit's sroce_mr suite changes the key's owner at that point.
# check-full only (6.1, 6.12 and debug there).
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"

require_cmd setpriv rdma
[[ $SROCE_DEV_TYPE == sroce ]] || fail "needs an sroce device"
check=$SROCE_BUILD/sroce-rereg-race
[[ -x $check ]] || fail "$check is missing (make verify)"
seconds=60
[[ $(uname -r) == *-sroce-debug ]] && seconds=15

before=$(dev_object_counts "$SROCE_DEV")
idx=$(gid_index "$SROCE_DEV" 4)
out=$SROCE_OUT/rereg-race.txt
with_timeout $((seconds + 90)) setpriv --reuid=65534 --regid=65534 --clear-groups \
	"$check" -d "$SROCE_DEV" -g "$idx" -t "$seconds" >"$out" 2>&1 || true
cat "$out"
grep -q "^rereg-race: .*, 0 failures: PASS$" "$out" || fail "sroce-rereg-race: no PASS line"
back_to_before() { [[ $(dev_object_counts "$SROCE_DEV") == "$before" ]]; }
wait_for 10 back_to_before ||
	fail "objects left on $SROCE_DEV: before '$before', after '$(dev_object_counts "$SROCE_DEV")' (qp cq pd mr)"
log "PASS: SENDs racing rereg of their MR, none failed, every message intact"
