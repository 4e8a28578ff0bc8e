#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# An example of a project's RDMA test run by sroce-vm in two guests:
#
#   sroce-vm run --pair verbs-test.sh
#
# Each guest runs this script with SROCE_ROLE=a or b, its device in
# SROCE_DEV and the other guest's address in SROCE_PEER_IP (see sroce-vm(1));
# guest a serves, guest b connects. The guests see the host's root
# read-only, so they run the host's programs with the host's libibverbs and
# its installed sroce provider. Replace ibv_rc_pingpong (ibverbs-utils) with
# your own program and its own checks. Copied from
# Documentation/examples/verbs-test.sh in sroce's source tree, where
# tests/integration/deb-use.sh runs it with the installed packages.
set -euo pipefail
# Helpers of the harness (log, fail, gid_index, pair...):
# /usr/share/sroce-vm/tests/integration/lib.sh
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"

require_pair
require_cmd ibv_rc_pingpong
gid=$(gid_index "$SROCE_DEV" 4) # the RoCEv2 GID of this guest's IPv4 address
port=18514 # pair takes the next one and passes it with -p
# -c: the receiver compares what it got with what was sent, but only the
# first byte of each page, and says "invalid data" without failing: a
# program of your own should check every byte and fail on a mismatch.
# pair: guest a starts the server, guest b the client with the extra
# arguments once the server listens (a fixed sleep is too short when the
# emulated guests are slow); the output goes to $SROCE_OUT/NAME-a|b.txt.
pair pingpong ibv_rc_pingpong -d "$SROCE_DEV" -g "$gid" -s 4096 -n 100 -c -- "$SROCE_PEER_IP"
out=$SROCE_OUT/pingpong-$SROCE_ROLE.txt
grep -q 'iters in' "$out" || fail "no transfer"
if grep -q 'invalid data' "$out"; then
	fail "wrong data received"
fi
log "passed"
