#!/bin/bash
# sroce-test: kernels=6.1,6.12,debug pairs=none timeout=300
# SPDX-License-Identifier: GPL-2.0
# The user-space provider against the real device: userspace/tests/
# device_test.cpp (GoogleTest) connects RC and UD QPs of this guest's sroce
# device to each other and checks data, completions and error paths: sends
# of 1 B..1 MiB, gather/scatter, immediate data, RDMA WRITE/READ, atomics,
# inline limits, ENOMEM on a full SQ, posting before RTS, local protection
# and remote access errors with flushes, CQ resize with completions
# outstanding, completion channel events, UD with GRH.
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"

[[ -n ${RDMAV_DRIVERS:-} ]] || fail "RDMAV_DRIVERS is not set: the provider was not built"
bin=${RDMAV_DRIVERS%/libsroce}/tests/sroce_device_tests
[[ -x $bin ]] || fail "$bin is missing (make provider builds it)"

log "device $SROCE_DEV, provider ${RDMAV_DRIVERS}-rdmav34.so"
status=0
SROCE_DEV=$SROCE_DEV with_timeout 240 "$bin" --gtest_output="xml:$SROCE_OUT/provider-verbs.xml" ||
	status=$?
[[ $status -eq 0 ]] || fail "sroce_device_tests failed (status $status)"
grep -q 'failures="0"' "$SROCE_OUT/provider-verbs.xml" || fail "failures in the GoogleTest report"
log "PASS"
