#!/bin/bash
# sroce-test: kernels=6.1 pairs=none timeout=240
# SPDX-License-Identifier: GPL-2.0
#
# A peer can make a responder queue replies: every duplicate READ asks for
# its whole answer again. tests/verify/sroce-read-flood's requester reads
# 256 KiB from its loopback responder; this script captures that READ
# request on lo and replays it thousands of times, each copy asking for 256
# packets, far more than transmit drains. The responder must hold at most
# its bounded queue and drop the rest (counted in resp_dropped, as lost
# replies the requester would retry), keep unreclaimable slab memory flat
# while the flood lasts and after, and still answer the requester's next
# READ with the right bytes.
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"

require_cmd /usr/bin/python3 rdma
[[ $SROCE_DEV == sroce* ]] || fail "needs an sroce device"
check=$SROCE_BUILD/sroce-read-flood
[[ -x $check ]] || fail "$check is missing (make verify)"
copies=5000
# Unreclaimable slab, in kB; the replies the bound admits, the packets on
# their way and the caches the run warms stay well inside 4 MiB.
sunreclaim() { sed -n 's/^SUnreclaim: *\([0-9]*\) kB$/\1/p' /proc/meminfo; }
slab_slack=4096
# Injected frames arrive on lo without the route a locally sent packet
# carries, so IPv4 input routing sees our own source address: allow it.
sysctl -qw net.ipv4.conf.lo.accept_local=1 || fail "cannot set accept_local"

coproc VICTIM { "$check" "$SROCE_DEV" "$(gid_index "$SROCE_DEV" 4)" 2>&1; }
read -r -t 30 -u "${VICTIM[0]}" word qpn || fail "sroce-read-flood said nothing"
[[ $word == responder ]] || fail "sroce-read-flood: '$word $qpn'"
# one READ first, so that slab caches and counters start warm
echo read >&"${VICTIM[1]}"
read -r -t 60 -u "${VICTIM[0]}" line || fail "the first READ did not end"
[[ $line == "read 1 ok" ]] || fail "first READ: $line"
dropped0=$(link_counter "$SROCE_DEV" resp_dropped)
dups0=$(link_counter "$SROCE_DEV" resp_duplicates)
slab0=$(sunreclaim)

floodlog=$SROCE_OUT/reply-flood.txt
/usr/bin/python3 - "$qpn" "$copies" >"$floodlog" 2>&1 <<'EOF' &
import select
import socket
import struct
import sys
import time

qpn, copies = int(sys.argv[1]), int(sys.argv[2])
sniff = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
sniff.bind(("lo", 0))
print("sniffing", flush=True)
deadline = time.time() + 60
request = None
while request is None and time.time() < deadline:
    if not select.select([sniff], [], [], 1)[0]:
        continue
    data = sniff.recv(65536)
    udp = 14 + (data[14] & 0x0f) * 4
    if data[23] != 17 or struct.unpack("!H", data[udp + 2:udp + 4])[0] != 4791:
        continue
    bth = data[udp + 8:udp + 20]
    if bth[0] == 0x0c and struct.unpack("!I", bth[4:8])[0] & 0xffffff == qpn:
        request = data
if request is None:
    sys.exit("no READ request to the responder seen in 60 s")
out = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
out.bind(("lo", 0))
sent, start = 0, time.time()
# in bursts that lo's input backlog (netdev_max_backlog) takes whole
while sent < copies:
    for _ in range(min(200, copies - sent)):
        try:
            out.send(request)
            sent += 1
        except OSError:
            break
    time.sleep(0.005)
print(f"replayed one READ request {sent} times in {time.time() - start:.1f} s")
EOF
flood=$!
wait_for 20 grep -q sniffing "$floodlog" || fail "the flooder did not start"
echo read >&"${VICTIM[1]}"
read -r -t 60 -u "${VICTIM[0]}" line || fail "the second READ did not end"
[[ $line == "read 2 ok" ]] || fail "second READ: $line"
peak=$slab0
while kill -0 "$flood" 2>/dev/null; do
	s=$(sunreclaim)
	((s > peak)) && peak=$s
	sleep 0.2
done
wait "$flood" || { cat "$floodlog"; fail "the flooder failed"; }
cat "$floodlog"
log "unreclaimable slab: $slab0 kB before, $peak kB at most during the flood"
((peak - slab0 <= slab_slack)) ||
	fail "unreclaimable slab grew by $((peak - slab0)) kB under the flood"
dropped=$(($(link_counter "$SROCE_DEV" resp_dropped) - dropped0))
dups=$(($(link_counter "$SROCE_DEV" resp_duplicates) - dups0))
log "the responder saw $dups duplicates"
((dropped > 0)) || fail "no reply dropped: the queue took $copies answers of 256 KiB"
log "$dropped replies dropped at the bound"

# the responder still answers, with the right bytes, once the queue drained
sleep 2
echo read >&"${VICTIM[1]}"
read -r -t 60 -u "${VICTIM[0]}" line || fail "the third READ did not end"
[[ $line == "read 3 ok" ]] || fail "third READ after the flood: $line"
echo end >&"${VICTIM[1]}"
read -r -t 30 -u "${VICTIM[0]}" line || fail "no summary"
[[ $line =~ ^[0-9]+\ checks,\ 0\ failures$ ]] || fail "sroce-read-flood: $line"
back() { (($(sunreclaim) - slab0 <= slab_slack / 2)); }
wait_for 30 back || fail "unreclaimable slab $(($(sunreclaim) - slab0)) kB above its start"
