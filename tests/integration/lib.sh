# SPDX-License-Identifier: GPL-2.0
# sroce-library: sourced by the tests, not one itself
# Helpers for scripts run in guests by tools/sroce-vm. Source it with
#   . "$SROCE_TOP/tests/integration/lib.sh"
# Everything here has a timeout; nothing here passes when it cannot check.
# shellcheck shell=bash

: "${SROCE_ROLE:?lib.sh runs inside a guest started by tools/sroce-vm}"
SROCE_PEER_ROLE=$([[ $SROCE_ROLE == a ]] && echo b || echo a)
_SROCE_LIB_STATE=/tmp/.sroce-lib
mkdir -p "$_SROCE_LIB_STATE"

# log MESSAGE...: a line tagged with this guest's role and the elapsed time.
log() {
	echo "[$SROCE_ROLE +${SECONDS}s] $*"
}

# fail MESSAGE...: report a failed check and end the script.
fail() {
	echo "[$SROCE_ROLE +${SECONDS}s] FAIL: $*" >&2
	exit 1
}

# require_pair: for scripts that need two guests.
require_pair() {
	[[ ${SROCE_PAIR:-0} == 1 ]] || fail "this script needs two guests (sroce-vm run --pair)"
}

# require_cmd CMD...: fail unless every command exists.
require_cmd() {
	local c
	for c in "$@"; do
		command -v "$c" >/dev/null || fail "command '$c' is not available"
	done
}

# retry COUNT DELAY CMD...: run CMD until it succeeds, at most COUNT times,
# sleeping DELAY seconds between tries. Returns CMD's last status.
retry() {
	local count=$1 delay=$2 n=1 rc
	shift 2
	while :; do
		"$@" && return 0
		rc=$?
		((n >= count)) && return "$rc"
		n=$((n + 1))
		sleep "$delay"
	done
}

# wait_for SECONDS CMD...: poll CMD (every 0.2 s) until it succeeds; 1 on
# timeout.
wait_for() {
	local deadline=$((SECONDS + $1))
	shift
	until "$@"; do
		((SECONDS >= deadline)) && return 1
		sleep 0.2
	done
}

# has_uverbs_open PID: has a child of PID (e.g. timeout's ibv_asyncwatch)
# opened an RDMA device (a uverbs fd)? An async event reaches a process
# only once it has, and a fixed sleep is too short on a loaded guest. Its
# GET_CONTEXT follows the open(): allow a moment more after this.
has_uverbs_open() {
	local child fd
	for child in $(pgrep -P "$1"); do
		for fd in "/proc/$child/fd"/*; do
			[[ $(readlink "$fd" 2>/dev/null) == */uverbs* ]] && return 0
		done
	done
	return 1
}

# with_timeout SECONDS CMD...: run CMD, killing it (and its children) after
# SECONDS; status 124 then.
with_timeout() {
	local t=$1
	shift
	timeout -k 5 "$t" "$@"
}

# _peer_wait SECONDS WHAT CMD...: wait_for, but fail at once if the peer's
# script has ended (it will never do WHAT).
_peer_wait() {
	local deadline=$((SECONDS + $1)) what=$2 gone dead
	shift 2
	gone=$SROCE_PAIR_DIR/exit.$SROCE_PEER_ROLE
	dead=${SROCE_PAIR_ROOT:-$SROCE_PAIR_DIR}/dead.$SROCE_PEER_ROLE
	until "$@"; do
		[[ -e $gone ]] && fail "$what: the peer's script already ended (status $(cat "$gone"))"
		[[ -e $dead ]] && fail "$what: the peer's guest died"
		((SECONDS >= deadline)) && fail "$what: the peer did not get there in time"
		sleep 0.2
	done
}

# barrier NAME [SECONDS]: wait until the other guest reaches the barrier of
# the same name (the n-th call with NAME meets the peer's n-th). No-op with
# one guest. Fails the script on timeout (default 120 s).
barrier() {
	local name=$1 t=${2:-120} count_file n
	[[ ${SROCE_PAIR:-0} == 1 ]] || return 0
	count_file=$_SROCE_LIB_STATE/barrier.$name
	n=$(($(cat "$count_file" 2>/dev/null || echo 0) + 1))
	echo "$n" >"$count_file"
	: >"$SROCE_PAIR_DIR/barrier.$name.$n.$SROCE_ROLE"
	_peer_wait "$t" "barrier '$name' #$n (${t}s)" \
		test -e "$SROCE_PAIR_DIR/barrier.$name.$n.$SROCE_PEER_ROLE"
}

# listening PORT [tcp|rdma]: is a local TCP socket or rdma_cm id listening on
# PORT?
listening() {
	local port=$1 kind=${2:-tcp}
	case $kind in
	tcp) [[ -n $(ss -Hltn "sport = :$port" 2>/dev/null) ]] ;;
	rdma) rdma resource show cm_id 2>/dev/null | grep -qE "state LISTEN .*src-(port |addr [^ ]*:)$port( |$)" ;;
	*) fail "listening: kind is tcp or rdma, not '$kind'" ;;
	esac
}

# announce_port PORT [tcp|rdma] [SECONDS]: wait until a server of this guest
# listens on PORT, then tell the peer (see wait_peer_port). Probing the port
# over the network would be taken as a client by one-shot servers such as
# ibv_rc_pingpong, so the server side reports it through the pair dir.
announce_port() {
	local port=$1 kind=${2:-tcp} t=${3:-60}
	wait_for "$t" listening "$port" "$kind" ||
		fail "nothing listens on $kind port $port after ${t}s"
	[[ ${SROCE_PAIR:-0} == 1 ]] && : >"$SROCE_PAIR_DIR/port.$port.$SROCE_ROLE"
	return 0
}

# wait_peer_port PORT [SECONDS]: wait for the peer's announce_port PORT, and
# consume it (the next wait needs a new announcement).
wait_peer_port() {
	local port=$1 t=${2:-60} flag
	require_pair
	flag=$SROCE_PAIR_DIR/port.$port.$SROCE_PEER_ROLE
	_peer_wait "$t" "waiting ${t}s for the peer to listen on port $port" test -e "$flag"
	rm -f "$flag"
}

# verify_pair NAME FAMILY PORT CLIENT-ARGS...: one tests/verify/sroce-verify
# session over IPv4 or IPv6 (FAMILY 4 or 6), guest a serving, guest b
# driving with CLIENT-ARGS (-q QPS -n OPS -S SEED ...). Fails unless the
# side's program reports every check passed; its output is left in
# $SROCE_OUT/NAME-ipvFAMILY-ROLE.txt for the caller's own checks.
verify_pair() {
	local name=$1 family=$2 port=$3 verify=$SROCE_BUILD/sroce-verify out pid
	local addr=$SROCE_LOCAL_IP peer=$SROCE_PEER_IP
	shift 3
	[[ -x $verify ]] || fail "$verify is missing (make verify)"
	[[ $family == 6 ]] && addr=$SROCE_LOCAL_IP6 peer=$SROCE_PEER_IP6
	out=$SROCE_OUT/$name-ipv$family-$SROCE_ROLE.txt
	if [[ $SROCE_ROLE == a ]]; then
		with_timeout 400 "$verify" -s -b "$addr" -p "$port" -t 380 >"$out" 2>&1 &
		pid=$!
		announce_port "$port" rdma
		wait "$pid" || { cat "$out"; fail "IPv$family: sroce-verify server failed"; }
		grep -q "^server: .* 0 failed: PASS$" "$out" ||
			{ cat "$out"; fail "IPv$family: server did not report PASS"; }
	else
		wait_peer_port "$port"
		with_timeout 400 "$verify" -c "$peer" -p "$port" -t 380 "$@" >"$out" 2>&1 ||
			{ cat "$out"; fail "IPv$family: sroce-verify client failed"; }
		grep -q "^client: .* 0 failed: PASS$" "$out" ||
			{ cat "$out"; fail "IPv$family: client did not report PASS"; }
	fi
}

# guest_a_host: guest a's host number (the last byte of its IPv4 address),
# for the addresses a test adds on subnets of its own.
guest_a_host() {
	if [[ $SROCE_ROLE == a ]]; then
		echo "${SROCE_LOCAL_IP##*.}"
	else
		echo "${SROCE_PEER_IP##*.}"
	fi
}

# rping_pair LABEL ADDR PORT COUNT SIZE: rping through rdma_cm, the server
# on guest a bound to its address ADDR, the client on b connecting to it;
# COUNT pings of SIZE bytes, every ping's data checked on both sides
# (check_pings). Output in $SROCE_OUT/LABEL-ROLE.txt.
rping_pair() {
	local label=$1 addr=$2 port=$3 count=$4 size=$5 out rc=0 pid
	out=$SROCE_OUT/$label-$SROCE_ROLE.txt
	if [[ $SROCE_ROLE == a ]]; then
		with_timeout 120 rping -s -a "$addr" -p "$port" -C "$count" -S "$size" \
			-v -V >"$out" 2>"$out.err" &
		pid=$!
		announce_port "$port" rdma
		wait "$pid" || rc=$?
		check_pings "$out" "server ping data: " "$size" "$count" ||
			fail "$label: the server's pings are missing or wrong"
	else
		wait_peer_port "$port"
		with_timeout 120 rping -c -a "$addr" -p "$port" -C "$count" -S "$size" \
			-v -V >"$out" 2>"$out.err" || rc=$?
		check_pings "$out" "ping data: " "$size" "$count" ||
			fail "$label: the client's pings are missing or wrong"
	fi
	rping_status "$rc" "$out.err" ||
		{ tail -c 2000 "$out.err"; fail "$label: rping failed ($rc)"; }
	log "$label: $count pings of $size bytes to $addr, every byte checked"
}

# netdev_of_dev DEV: the netdev an RDMA device's port 1 sits on.
netdev_of_dev() {
	cat "/sys/class/infiniband/$1/ports/1/gid_attrs/ndevs/0" 2>/dev/null
}

# dev_of_netdev NETDEV: the RDMA device on NETDEV (first one found).
dev_of_netdev() {
	local d
	for d in /sys/class/infiniband/*; do
		[[ -e $d ]] || continue
		[[ $(netdev_of_dev "${d##*/}") == "$1" ]] && { echo "${d##*/}"; return 0; }
	done
	return 1
}

# gid_of_ip IP: the GID text form sysfs uses for an IPv4 or IPv6 address.
gid_of_ip() {
	python3 - "$1" <<-'EOF'
		import ipaddress, sys
		a = ipaddress.ip_address(sys.argv[1])
		b = (ipaddress.IPv6Address("::ffff:" + str(a)) if a.version == 4 else a).packed
		print(":".join(b[i:i + 2].hex() for i in range(0, 16, 2)))
	EOF
}

# _gid_find PORTDIR GID: lowest index of a RoCE v2 entry equal to GID. The
# table has hundreds of entries: one grep, then shell builtins only.
_gid_find() {
	local f i type best=
	while IFS= read -r f; do
		i=${f##*/}
		type=
		read -r type <"$1/gid_attrs/types/$i" 2>/dev/null || true
		[[ $type == "RoCE v2" ]] || continue
		[[ -z $best || $i -lt $best ]] && best=$i
	done < <(grep -lx "$2" "$1"/gids/* 2>/dev/null)
	[[ -n $best ]] && echo "$best"
}

# gid_index DEV [4|6] [IP]: index of DEV's RoCE v2 GID for this guest's IPv4
# (default) or IPv6 address, or for IP. Waits up to 10 s for the GID table.
gid_index() {
	local dev=$1 family=${2:-4} ip=${3:-} gid port
	if [[ -z $ip ]]; then
		ip=$([[ $family == 6 ]] && echo "$SROCE_LOCAL_IP6" || echo "$SROCE_LOCAL_IP")
	fi
	gid=$(gid_of_ip "$ip")
	port=/sys/class/infiniband/$dev/ports/1
	wait_for 10 _gid_find "$port" "$gid" >/dev/null || fail "$dev has no RoCE v2 GID for $ip"
	_gid_find "$port" "$gid"
}

# kmemleak_check: on kernels with kmemleak (debug), scan now and fail on any
# reported leak. Use after rmmod in lifecycle tests; the harness also scans
# after every script.
kmemleak_check() {
	local k=/sys/kernel/debug/kmemleak report
	[[ -w $k ]] || return 0
	sleep 5
	echo scan >"$k"
	sleep 1
	echo scan >"$k"
	report=$(cat "$k")
	[[ -z $report ]] || fail "kmemleak reports leaks:"$'\n'"$report"
}

# dev_objects DEV TYPE: how many objects of TYPE (pd cq qp mr srq ctx cm_id)
# DEV holds, from restrack's summary ("0: sroce0: pd 1 cq 1 qp 1 ... srq 0").
dev_objects() {
	rdma resource show | awk -v dev="$1:" -v t="$2" '
		$2 == dev { for (i = 3; i < NF; i++) if ($i == t) print $(i + 1) }'
}

# sroce_moving [BYTES]: did this guest's sroce device send at least BYTES
# (default 1 MB) in the last second?
sroce_moving() {
	local b0
	b0=$(link_counter "$SROCE_DEV" tx_bytes)
	sleep 1
	(($(link_counter "$SROCE_DEV" tx_bytes) - b0 >= ${1:-1000000}))
}

# dev_object_counts DEV: "QP CQ PD MR" counts of DEV, to compare before and
# after a test.
dev_object_counts() {
	local r
	for r in qp cq pd mr; do
		dev_objects "$1" "$r"
	done | paste -sd' '
}

# link_counter DEV NAME: port 1's counter NAME, read through rdma statistic
# (netlink), which works in any network namespace; fails when absent.
link_counter() {
	local v
	v=$(rdma statistic show link "$1/1" | tr -s ' \n' '\n' |
		awk -v n="$2" '$0 == n { getline; print; exit }')
	[[ $v =~ ^[0-9]+$ ]] || fail "$1 has no counter $2"
	echo "$v"
}

# tell_peer NAME VALUE: hand VALUE to the peer's from_peer NAME (the n-th
# tell_peer NAME meets the peer's n-th from_peer NAME).
tell_peer() {
	local count_file n f
	require_pair
	count_file=$_SROCE_LIB_STATE/tell.$1
	n=$(($(cat "$count_file" 2>/dev/null || echo 0) + 1))
	echo "$n" >"$count_file"
	f=$SROCE_PAIR_DIR/value.$1.$n.$SROCE_ROLE
	echo "$2" >"$f.tmp"
	mv "$f.tmp" "$f"
}

# from_peer NAME [SECONDS]: print the value of the peer's tell_peer NAME;
# fails the script on timeout (default 120 s).
from_peer() {
	local t=${2:-120} count_file n f
	require_pair
	count_file=$_SROCE_LIB_STATE/from.$1
	n=$(($(cat "$count_file" 2>/dev/null || echo 0) + 1))
	echo "$n" >"$count_file"
	f=$SROCE_PAIR_DIR/value.$1.$n.$SROCE_PEER_ROLE
	_peer_wait "$t" "waiting ${t}s for the peer's $1" test -e "$f"
	cat "$f"
}

# rx_drops DEV: the sum of an sroce port's counters of received packets it
# dropped: bad ICRC or headers, no QP or the wrong one, bad P_Key, Q_Key,
# addresses, CNPs no QP took, and requests a responder discarded (a UD QP
# with no receive posted). Status 1 when one is absent.
rx_drops() {
	rdma statistic show link "$1/1" | tr -s ' \n' '\n' | awk -v dev="$1" '
		BEGIN {
			n = split("rx_icrc_errors rx_malformed rx_drop_no_qp rx_drop_qp_type " \
				  "rx_drop_qp_state rx_drop_pkey rx_drop_qkey rx_drop_address " \
				  "rp_cnp_ignored resp_dropped", names)
			for (i = 1; i <= n; i++)
				want[names[i]] = 1
		}
		($0 in want) && !($0 in got) { c = $0; getline; got[c] = 1; sum += $0 }
		END {
			for (c in want)
				if (!(c in got)) {
					print "FAIL: " dev " has no counter " c >"/dev/stderr"
					exit 1
				}
			print sum
		}'
}

# dump_counters: port, netdev and UDP counters, to locate a loss (used as an
# EXIT trap by the UD/UC/SRQ tests).
dump_counters() {
	local c=/sys/class/infiniband/$SROCE_DEV/ports/1/hw_counters
	if [[ -d $c ]]; then
		echo "port counters of $SROCE_DEV:"
		grep -H . "$c"/* 2>/dev/null | sed 's|.*/||' | tr '\n' ' '
		echo
	fi
	ip -s link show dev "$SROCE_NETDEV" || true
	# a qdisc drop (fq_codel drops at dequeue) never reaches the netdev
	tc -s qdisc show dev "$SROCE_NETDEV" || true
	grep "^Udp" /proc/net/snmp || true
}

# pair NAME SERVER-CMD... -- CLIENT-ARGS...
pair() {
	local name=$1 out pid
	shift
	local -a cmd=() extra=()
	while [[ $1 != -- ]]; do cmd+=("$1"); shift; done
	shift
	extra=("$@")
	port=$((port + 1))
	cmd+=(-p "$port")
	out=$SROCE_OUT/$name-$SROCE_ROLE.txt
	log "$name: ${cmd[*]}"
	if [[ $SROCE_ROLE == a ]]; then
		with_timeout 150 "${cmd[@]}" >"$out" 2>&1 &
		pid=$!
		announce_port "$port" tcp 180
		wait "$pid" || { cat "$out"; fail "$name: server failed"; }
	else
		wait_peer_port "$port" 180
		with_timeout 150 "${cmd[@]}" "${extra[@]}" >"$out" 2>&1 ||
			{ cat "$out"; fail "$name: client failed"; }
	fi
	cat "$out"
	barrier "$name"
}

# hold_roce_egress RATE [LIMIT]: RoCEv2 over IPv4 (UDP 4791) leaves
# $SROCE_NETDEV through a tbf at RATE holding up to LIMIT bytes (default
# 1 MB); other traffic passes. Unlike netem, tbf keeps each packet's owner
# (its destructor runs when it leaves), as a slow NIC does. Undo with
# release_roce_egress; roce_egress_backlog prints the packets held.
hold_roce_egress() {
	local nd=$SROCE_NETDEV
	modprobe -qa sch_prio sch_tbf cls_u32 2>/dev/null || true
	tc qdisc replace dev "$nd" root handle 1: prio
	tc qdisc add dev "$nd" parent 1:3 handle 30: tbf rate "$1" burst 1600 \
		limit "${2:-1000000}"
	tc filter add dev "$nd" parent 1: protocol ip u32 \
		match ip protocol 17 0xff match ip dport 4791 0xffff flowid 1:3
}

release_roce_egress() {
	tc qdisc del dev "$SROCE_NETDEV" root 2>/dev/null || true
}

roce_egress_backlog() {
	tc -s qdisc show dev "$SROCE_NETDEV" | awk '
		$1 == "qdisc" { tbf = ($2 == "tbf") }
		tbf && $1 == "backlog" { sub("p", "", $3); n = $3 }
		END { print n + 0 }'
}

# check_pings FILE PREFIX SIZE COUNT: every "<PREFIX>ping data: ..." line of
# FILE (rping -v) is the text rping builds for ping 0, 1, ... (rdma-ping-N:
# then a rotating run of ASCII 'A'..'z'), and there are exactly COUNT.
check_pings() {
	python3 - "$1" "$2" "$3" "$4" <<-'EOF'
		import sys
		path, prefix, size, count = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
		lines = [l[len(prefix):].rstrip("\n") for l in open(path, errors="replace")
		         if l.startswith(prefix)]
		start = 65
		for n, got in enumerate(lines):
		    text = "rdma-ping-%d: " % n
		    c = start
		    chars = []
		    for _ in range(size - 1 - len(text)):
		        chars.append(chr(c))
		        c = 65 if c >= 122 else c + 1
		    start = 65 if start >= 122 else start + 1
		    want = (text + "".join(chars))[: size - 1]
		    if got != want:
		        print("ping %d differs: got %r..., want %r..." % (n, got[:60], want[:60]))
		        sys.exit(1)
		if len(lines) != count:
		    print("%d pings printed, %d expected" % (len(lines), count))
		    sys.exit(1)
	EOF
}

# rping_status STATUS STDERR: did rping succeed? rping's event thread can
# still be in rdma_get_cm_event() when the main thread destroys the channel
# after the disconnect; it then prints "Bad file descriptor" and exits 255.
# That race (in rping, after every ping was done) is not a failure: the data
# of every ping is checked from the output regardless.
rping_status() {
	local rc=$1 err=$2
	((rc == 0)) && return 0
	((rc == 255)) && grep -q "DISCONNECT EVENT" "$err" &&
		grep -qx "rdma_get_cm_event: Bad file descriptor" "$err" || return 1
	log "rping hit its teardown race after the disconnect (status $rc)"
}

# udp_4791_sockets: UDP sockets bound to port 4791 in this namespace.
udp_4791_sockets() {
	ss -Hlun "sport = :4791" | wc -l
}

# netns_enter NS DEV: move this guest's netdev into a new network namespace
# NS (which removes the harness's device on it), configure the same
# addresses there and create the sroce device DEV on it from inside NS.
# Checks that port 4791's UDP socket moves along.
netns_enter() {
	local ns=$1 ns_dev=$2 mtu sockets
	mtu=$(cat "/sys/class/net/$SROCE_NETDEV/mtu")
	sockets=$(udp_4791_sockets)
	((sockets > 0)) || fail "no UDP socket on port 4791 before the move"
	ip netns add "$ns"
	ip link set "$SROCE_NETDEV" netns "$ns"
	wait_for 10 test ! -e "/sys/class/infiniband/$SROCE_DEV" ||
		fail "$SROCE_DEV stayed after its netdev left the namespace"
	sockets=$(udp_4791_sockets)
	((sockets == 0)) || fail "$sockets UDP sockets on port 4791 remain in the initial namespace"
	ip -n "$ns" link set lo up
	ip -n "$ns" link set "$SROCE_NETDEV" mtu "$mtu" up
	ip -n "$ns" addr add "$SROCE_LOCAL_IP/24" dev "$SROCE_NETDEV"
	ip -n "$ns" -6 addr add "$SROCE_LOCAL_IP6/64" dev "$SROCE_NETDEV" nodad
	ip netns exec "$ns" rdma link add "$ns_dev" type sroce netdev "$SROCE_NETDEV" ||
		fail "rdma link add from inside the namespace"
	wait_for 10 grep -q ACTIVE "/sys/class/infiniband/$ns_dev/ports/1/state" ||
		fail "$ns_dev is not ACTIVE"
	sockets=$(ip netns exec "$ns" ss -Hlun "sport = :4791" | wc -l)
	((sockets > 0)) || fail "$ns_dev has no UDP socket on port 4791 in its namespace"
	sockets=$(udp_4791_sockets)
	((sockets == 0)) || fail "$ns_dev opened a socket in the initial namespace"
	log "$ns_dev on $SROCE_NETDEV in namespace $ns; its UDP socket is there only"
}

# netns_leave NS: the netdev back in the initial namespace (NS deleted) with
# its addresses and qdisc, and the harness's device on it again, as the
# next test of this boot expects the guest.
netns_leave() {
	local ns=$1
	ip -n "$ns" link set "$SROCE_NETDEV" netns 1 2>/dev/null || true
	ip netns delete "$ns" 2>/dev/null || true
	wait_for 10 test -e "/sys/class/net/$SROCE_NETDEV" || return 1
	tc qdisc replace dev "$SROCE_NETDEV" root pfifo_fast
	ip link set "$SROCE_NETDEV" up
	ip addr replace "$SROCE_LOCAL_IP/24" dev "$SROCE_NETDEV"
	ip -6 addr replace "$SROCE_LOCAL_IP6/64" dev "$SROCE_NETDEV" nodad
	rdma link add "$SROCE_DEV" type sroce netdev "$SROCE_NETDEV" &&
		wait_for 20 grep -q ACTIVE "/sys/class/infiniband/$SROCE_DEV/ports/1/state"
}
