#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest side of tools/sroce-bench --storage (no sroce-test line: not a
# test): one round of the storage figures. Runs the storage tests one
# after another in this boot, NVMe-oF, iSER, SRP and NFS over RDMA (v4.2),
# each with its data checks as in make check; each initiator runs fio's
# four workloads (storage-lib.sh, storage_bench) on its block device or a
# file in its mount before it writes the data it checks, and guest b
# writes "ROUND PROTOCOL-WORKLOAD VALUE UNIT" lines to $SROCE_OUT/bench.txt.
#   storage.sh ROUND
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"

require_pair
require_cmd fio
export SROCE_STORAGE_BENCH=${1:?round number}
if [[ $SROCE_ROLE == b ]]; then
	echo "kernel $(uname -r) dev $SROCE_DEV mtu $(cat "/sys/class/net/$SROCE_NETDEV/mtu")" |
		tee "$SROCE_OUT/env.txt"
fi
for test in nvmeof-target iser srp; do
	"$SROCE_TOP/tests/integration/$test.sh" || fail "$test failed"
done
"$SROCE_TOP/tests/integration/nfs-rdma.sh" --keep-device || fail "nfs-rdma failed"
log "bench: round $SROCE_STORAGE_BENCH done"
