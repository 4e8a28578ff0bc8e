#!/bin/bash
# sroce-test: kernels=6.1 full-kernels=6.1,6.12 pairs=sroce:sroce timeout=300
# SPDX-License-Identifier: GPL-2.0
#
# A send completion means the application may reuse the buffer. Both
# guests send RoCE through a tbf (lib.sh hold_roce_egress) that holds each
# packet for up to a few hundred milliseconds, and the senders overwrite
# every buffer the moment its completion arrives:
#   UD  tests/verify/sroce-ud -r, both directions, payloads of 0 bytes to
#       the MTU (the old kernel sent those of 512 bytes and more from the
#       user's pages and completed them once built);
#   UC  tests/verify/sroce-msg -R, 2 QPs, messages of 1 byte to 8 packets.
# The receivers check every byte of every message; none may be lost (the
# tbf drops nothing at these sizes), and no packet may arrive with a bad
# ICRC (what changing bytes under a built packet gives).
# (Not on the debug kernel, which has no tbf and prio.)
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"

require_pair
require_cmd tc ss
[[ $SROCE_DEV == sroce* ]] || fail "needs sroce on both sides"
udcheck=$SROCE_BUILD/sroce-ud msgcheck=$SROCE_BUILD/sroce-msg
[[ -x $udcheck && -x $msgcheck ]] || fail "$udcheck or $msgcheck is missing (make verify)"
port=18970
ud_msgs=600 uc_msgs=132
[[ $SROCE_KERNEL == debug ]] && ud_msgs=200 uc_msgs=66

trap release_roce_egress EXIT
hold_roce_egress 20mbit 8000000
icrc0=$(link_counter "$SROCE_DEV" rx_icrc_errors)
idx=$(gid_index "$SROCE_DEV" 4)

pair ud-reuse "$udcheck" -d "$SROCE_DEV" -g "$idx" -n "$ud_msgs" -r -- "$SROCE_PEER_IP"
out=$SROCE_OUT/ud-reuse-$SROCE_ROLE.txt
who=$([[ $SROCE_ROLE == a ]] && echo server || echo client)
grep -Eq "^$who: received $ud_msgs of $ud_msgs UD messages .*, 0 lost, .* 0 mismatches: PASS$" "$out" ||
	fail "ud-reuse: the $who did not receive every message intact"

snd=()
[[ $SROCE_ROLE == b ]] && snd=(-S)
pair uc-reuse "$msgcheck" -d "$SROCE_DEV" -g "$idx" -t uc -q 2 -n "$uc_msgs" \
	-M 8192 -R "${snd[@]}" -- -c "$SROCE_PEER_IP"
out=$SROCE_OUT/uc-reuse-$SROCE_ROLE.txt
if [[ $SROCE_ROLE == a ]]; then
	grep -Eq "^msg: uc receiver, .* 0 lost, 0 failures: PASS$" "$out" ||
		fail "uc-reuse: messages lost or wrong"
else
	grep -Eq "^msg: uc sender, .*\(buffers overwritten on completion\), 0 failures: PASS$" "$out" ||
		fail "uc-reuse: the sender failed"
fi

icrc=$(($(link_counter "$SROCE_DEV" rx_icrc_errors) - icrc0))
((icrc == 0)) || fail "$icrc packets arrived with a bad ICRC: bytes changed after they were built"
log "every message intact, none lost, no ICRC error"
