#!/bin/bash
# sroce-test: kernels=6.1,6.12 pairs=sroce:sroce,sroce:rxe,rxe:sroce pairs.6.12=sroce:sroce+e1000e timeout=600
# SPDX-License-Identifier: GPL-2.0
#
# Memory windows between the guests: tests/verify/sroce-mw binds type 1
# and type 2 windows on an MR that grants no remote access of its own,
# and the peer writes and reads through them; rebinds change the key,
# accesses outside a window, beyond its rights, with a stale key, after
# LOCAL_INV, after a SEND with Invalidate or through an unbound window
# fail with IBV_WC_REM_ACCESS_ERR; a bind to an MR without MW_BIND fails
# with IBV_WC_MW_BIND_ERR; dereg of an MR with a bound window fails. Run
# twice, windows on a then on b, so against rxe both directions are
# covered. An sroce owner checks that its counters moved by exactly the
# binds, invalidations and error NAKs of the run, and that type 2 windows
# bound through a destroyed QP are free and the others not.
#
# Then, between two sroce guests, guest a times the exit of a process
# holding 256 QPs and 4K MRs with type 2 windows bound through some QPs
# (sroce-mw -T; the figure is printed, not checked): a QP's destruction
# once walked every key, so such an exit cost QPs times keys.
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"

require_pair
require_cmd ss
mwcheck=$SROCE_BUILD/sroce-mw
[[ -x $mwcheck ]] || fail "$mwcheck is missing (make verify)"

port=18950
idx=$(gid_index "$SROCE_DEV" 4)

trap dump_counters EXIT

for owner in a b; do
	own=()
	[[ $SROCE_ROLE == "$owner" ]] && own=(-o)
	pair "mw-owner-$owner" "$mwcheck" -d "$SROCE_DEV" -g "$idx" "${own[@]}" \
		-- -c "$SROCE_PEER_IP"
	out=$SROCE_OUT/mw-owner-$owner-$SROCE_ROLE.txt
	grep -q "^mw: .*, 0 failures: PASS$" "$out" || fail "mw-owner-$owner: no PASS line"
done

if [[ $SROCE_ROLE == a && $SROCE_DEV_TYPE == sroce &&
	$SROCE_PEER_DEV_TYPE == sroce ]]; then
	out=$SROCE_OUT/mw-teardown.txt
	with_timeout 300 "$mwcheck" -d "$SROCE_DEV" -g "$idx" -T 256:4096 \
		>"$out" 2>&1 || { cat "$out"; fail "mw-teardown failed"; }
	cat "$out"
	grep -q "^mw-teardown: .*, 0 failures: PASS$" "$out" ||
		fail "mw-teardown: no PASS line"
fi
barrier mw-teardown 330

log "PASS: memory windows, owned by a and by b"
