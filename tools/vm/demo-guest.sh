#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest side of tools/sroce-demo: each guest shows its sroce device in turn,
# then guest a talks to guest b over the link.
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"
require_pair

banner() {
	echo
	echo "==== guest $SROCE_ROLE ($SROCE_LOCAL_IP, $SROCE_LOCAL_IP6): $* ===="
}

# One guest at a time, so the two outputs do not interleave.
show_device() {
	banner "the RDMA link sroce0 on eth0 (rdma link show)"
	rdma link show
	banner "the device as libibverbs sees it (ibv_devinfo -d $SROCE_DEV)"
	ibv_devinfo -d "$SROCE_DEV" || fail "ibv_devinfo -d $SROCE_DEV failed"
	banner "RoCEv2 GIDs of $SROCE_DEV"
	echo "IPv4 GID index $(gid_index "$SROCE_DEV" 4): $(gid_of_ip "$SROCE_LOCAL_IP")"
	echo "IPv6 GID index $(gid_index "$SROCE_DEV" 6): $(gid_of_ip "$SROCE_LOCAL_IP6")"
}

if [[ $SROCE_ROLE == a ]]; then
	show_device
	barrier shown-a
	barrier shown-b
	banner "ping guest b over the link, IPv4 and IPv6"
	ping -c 3 -W 5 "$SROCE_PEER_IP" || fail "no IPv4 ping reply from $SROCE_PEER_IP"
	ping -c 3 -W 5 "$SROCE_PEER_IP6" || fail "no IPv6 ping reply from $SROCE_PEER_IP6"
	barrier pinged
else
	barrier shown-a
	show_device
	barrier shown-b
	barrier pinged
fi
