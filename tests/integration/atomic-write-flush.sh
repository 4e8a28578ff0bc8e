#!/bin/bash
# sroce-test: kernels=6.1,6.12 pairs=sroce:sroce,sroce:rxe,rxe:sroce pairs.6.1=sroce:sroce,rxe:sroce pairs.6.12=sroce:sroce+e1000e timeout=300 full-distros=trixie:6.12,sid:7.2
# SPDX-License-Identifier: GPL-2.0
#
# ATOMIC WRITE and FLUSH (IBTA 1.5 annex A19) with tests/verify/sroce-flush,
# guest a serving, guest b driving over rdma_cm:
# - each side's device reports in device_cap_flags_ex exactly what works
#   on its kernel: sroce ATOMIC WRITE everywhere, FLUSH global from 6.2 on
#   (6.1's ib_core refuses the FLUSH access bits of an MR), never FLUSH
#   persistent; rdma_rxe nothing on 6.1, all three later. An MR with
#   FLUSH global access registers exactly where FLUSH global is reported;
# - where both devices report ATOMIC WRITE: 3 rounds of 64 ATOMIC WRITEs
#   interleaved with RDMA WRITEs to the same slots, read back with RDMA
#   READ and compared byte for byte on the client, and the server's memory
#   compared too; then a misaligned (IBV_WC_REM_INV_REQ_ERR), out-of-range,
#   wrong-rkey and read-only-MR ATOMIC WRITE (IBV_WC_REM_ACCESS_ERR), each
#   on a fresh connection, none of which changes a byte;
# - where one side is rdma_rxe on 6.1 (no ATOMIC WRITE), that the client
#   saw it reported missing and sent none.
# FLUSH itself cannot be posted from user space with rdma-core 44. On
# another release's root (rdma-core 45 or later: ibv_wr_flush()), the
# checker built against Debian 13's headers runs instead and, between two
# sroce devices, also FLUSHes the slots and the whole MR in each round
# (IBV_WC_FLUSH/success) and, on one more connection, an MR without FLUSH
# access (IBV_WC_REM_ACCESS_ERR). Not with rdma_rxe: its FLUSH packets
# carry an ICRC computed over the headers twice (6.12 and 7.2; see
# Documentation/design.md, ATOMIC WRITE and FLUSH), which sroce drops, as
# any conforming device must, and rxe drops sroce's.
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"

require_pair
check=$SROCE_BUILD/sroce-flush
[[ $SROCE_DISTRO != bookworm ]] && check=$SROCE_BUILD/sroce-flush-wr-flush
[[ -x $check ]] || fail "$check is missing (make verify)"
port=18650 rounds=3

# What the device must report: ATOMIC_WRITE,FLUSH_GLOBAL,FLUSH_PERSISTENT.
case $SROCE_DEV_TYPE:$SROCE_KERNEL in
sroce:6.1 | sroce:debug) expect=1,0,0 ;;
sroce:*) expect=1,1,0 ;;
rxe:6.1 | rxe:debug) expect=0,0,0 ;;
rxe:*) expect=1,1,1 ;;
esac
echo "$expect" >"$SROCE_PAIR_DIR/expect.$SROCE_ROLE"
barrier expect 120
peer_expect=$(cat "$SROCE_PAIR_DIR/expect.$SROCE_PEER_ROLE")
aw=0 flush=0
[[ ${expect%%,*} == 1 && ${peer_expect%%,*} == 1 ]] && aw=1
# FLUSH global is the middle field.
[[ $aw == 1 && $SROCE_DISTRO != bookworm && $SROCE_DEV_TYPE == sroce &&
	$SROCE_PEER_DEV_TYPE == sroce && $(cut -d, -f2 <<<"$expect") == 1 &&
	$(cut -d, -f2 <<<"$peer_expect") == 1 ]] && flush=1
flush_opt=()
[[ $flush == 1 ]] && flush_opt=(-f)
log "$SROCE_DEV_TYPE on $SROCE_KERNEL must report $expect, the peer $peer_expect"

out=$SROCE_OUT/flush-$SROCE_ROLE.txt
if [[ $SROCE_ROLE == a ]]; then
	with_timeout 240 "$check" -s -b "$SROCE_LOCAL_IP" -p "$port" -e "$expect" \
		>"$out" 2>&1 &
	pid=$!
	announce_port "$port" rdma
	wait "$pid" || { cat "$out"; fail "sroce-flush server failed"; }
	cat "$out"
	grep -q "^server: .* 0 failed: PASS$" "$out" || fail "server did not report PASS"
	if [[ $aw == 1 ]]; then
		n=$(grep -c "^server: memory after .*: as expected$" "$out")
		[[ $n -eq $((rounds + 4 + flush)) ]] ||
			fail "server checked its memory after $n connections, not $((rounds + 4 + flush))"
	fi
else
	wait_peer_port "$port"
	with_timeout 240 "$check" -c "$SROCE_PEER_IP" -p "$port" -e "$expect" -r "$rounds" \
		"${flush_opt[@]}" >"$out" 2>&1 || { cat "$out"; fail "sroce-flush client failed"; }
	cat "$out"
	grep -q "^client: .* 0 failed: PASS$" "$out" || fail "client did not report PASS"
	if [[ $aw == 1 ]]; then
		n=$(grep -c "^client: round .* read back exact$" "$out")
		[[ $n -eq $rounds ]] || fail "$n of $rounds rounds read back exact"
		n=$(grep -c "^client: .* ATOMIC WRITE: remote .* error$" "$out")
		[[ $n -eq 4 ]] || fail "$n of 4 negative cases failed the right way"
		n=$(grep -c "^client: FLUSH global of the range and of the MR: success$" "$out" || true)
		[[ $n -eq $((flush * rounds)) ]] || fail "$n rounds FLUSHed, not $((flush * rounds))"
		n=$(grep -c "^client: FLUSH without access FLUSH: remote access error$" "$out" || true)
		[[ $n -eq $flush ]] || fail "$n FLUSHes of an MR without FLUSH access failed, not $flush"
	else
		grep -q "^client: ATOMIC WRITE not reported by .*: none sent$" "$out" ||
			fail "no ATOMIC WRITE pair, but the client did not say so"
	fi
fi
if [[ $SROCE_DEV_TYPE == sroce ]]; then
	rdma statistic show link "$SROCE_DEV/1" || fail "no port counters"
fi
barrier finished 120
log "PASS"
