#!/bin/bash
# sroce-test: kernels=6.12 pairs=sroce:sroce+e1000e full-pairs.6.1=sroce:sroce,sroce:rxe,rxe:sroce,sroce:sroce+e1000e,rxe:sroce+e1000e,sroce:sroce+vmxnet3,sroce:rxe+vmxnet3 full-kernels=6.1 timeout=600
# SPDX-License-Identifier: GPL-2.0
# The guests' NIC (tools/sroce-vm --nic) and the transmit path sroce takes
# on it. Each guest checks that its netdev is driven by the NIC model's
# driver and prints the offloads it exposes. Then a checked sroce-verify
# session (RDMA WRITE, READ, SEND, atomics) runs over IPv4, and each sroce
# guest compares its tx_zcopy_packets counter with what the NIC allows:
# where the netdev has scatter-gather, the RC requester (guest b: WRITEs,
# SENDs) and the READ responder (guest a) must send payload pages by
# reference; where it has not, no packet may leave that way.
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"

require_pair
require_cmd ethtool rdma

declare -A driver_of=([virtio]=virtio_net [e1000e]=e1000e [vmxnet3]=vmxnet3)
driver=$(ethtool -i "$SROCE_NETDEV" | awk '$1 == "driver:" { print $2 }')
[[ $driver == "${driver_of[$SROCE_NIC]}" ]] ||
	fail "--nic $SROCE_NIC: $SROCE_NETDEV is driven by '$driver', not ${driver_of[$SROCE_NIC]}"

# feature NAME: on or off, as ethtool -k prints it.
feature() {
	ethtool -k "$SROCE_NETDEV" | awk -v f="$1:" '$1 == f { print $2; exit }'
}
sg=$(feature scatter-gather)
log "$SROCE_NIC ($driver): scatter-gather $sg, tx-checksumming $(feature tx-checksumming)," \
	"tcp-segmentation-offload $(feature tcp-segmentation-offload)"
[[ $sg == on || $sg == off ]] || fail "ethtool -k $SROCE_NETDEV shows no scatter-gather"

zcopy_before=0 tx_before=0
if [[ $SROCE_DEV_TYPE == sroce ]]; then
	zcopy_before=$(link_counter "$SROCE_DEV" tx_zcopy_packets)
	tx_before=$(link_counter "$SROCE_DEV" tx_packets)
fi

verify_pair nic 4 18900 -q 2 -n 30 -S 0x5eed0e1e
barrier verified 300

[[ $SROCE_DEV_TYPE == sroce ]] || { log "PASS (rxe side: NIC checked)"; exit 0; }
zcopy=$(($(link_counter "$SROCE_DEV" tx_zcopy_packets) - zcopy_before))
tx=$(($(link_counter "$SROCE_DEV" tx_packets) - tx_before))
side="the READ responder (guest a)"
[[ $SROCE_ROLE == b ]] && side="the requester (guest b)"
log "$side sent $tx packets, $zcopy of them zero-copy"
if [[ $sg == on ]]; then
	((zcopy > 0)) ||
		fail "$SROCE_NETDEV has scatter-gather, yet none of $side's $tx packets left zero-copy"
else
	((zcopy == 0)) ||
		fail "$SROCE_NETDEV has no scatter-gather, yet $zcopy of $side's packets left zero-copy"
fi
log "PASS"
