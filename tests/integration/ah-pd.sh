#!/bin/bash
# sroce-test: kernels=6.1 pairs=none timeout=120
# SPDX-License-Identifier: GPL-2.0
#
# AH numbers are per device and user space writes them into its own SQ
# ring: a UD send WQE naming another process's AH must complete with
# IBV_WC_LOC_QP_OP_ERR and send nothing, while the process's own AHs keep
# working (tests/verify/sroce-ahpd.c: two processes with their own
# contexts and PDs, the device's tx_packets counter, the victim QP's
# receive queue). Run over the IPv4 and the IPv6 GID.
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"

[[ $SROCE_DEV_TYPE == sroce ]] || fail "needs an sroce device"
check=$SROCE_BUILD/sroce-ahpd
[[ -x $check ]] || fail "$check is missing (make verify)"

for family in 4 6; do
	out=$SROCE_OUT/ahpd-ipv$family.txt
	rc=0
	with_timeout 60 "$check" -d "$SROCE_DEV" -g "$(gid_index "$SROCE_DEV" "$family")" \
		>"$out" 2>&1 || rc=$?
	cat "$out"
	((rc == 0)) || fail "IPv$family: sroce-ahpd exited with $rc"
	grep -qx "B: send naming A's AH [0-9]* to QP [0-9]*: local QP operation error, 0 packets sent" "$out" ||
		fail "IPv$family: no error completion without packets for the foreign AH"
	grep -qx "A: AH [0-9]*, QP [0-9]* received 0 messages" "$out" ||
		fail "IPv$family: the victim QP received something"
	grep -qx "B: own AH [0-9]* before and after: delivered intact" "$out" ||
		fail "IPv$family: B's own AH did not work"
	grep -Eqx "[0-9]+ checks \(A\), 0 failed: PASS" "$out" || fail "IPv$family: no PASS line"
done
log "PASS"
