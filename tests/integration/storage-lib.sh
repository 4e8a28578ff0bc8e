# SPDX-License-Identifier: GPL-2.0
# sroce-library: sourced by the tests, not one itself
# shellcheck shell=bash
#
# Helpers for the kernel storage tests (NFS over RDMA, iSER, SRP, NVMe-oF),
# sourced after lib.sh:
#
#   dataset_make DIR TAG    write TAG's data set (files of awkward sizes
#                           around the inline, page and 1 MiB chunk limits)
#                           into DIR and its sha256 manifest into the pair
#                           dir, where both guests find it
#   dataset_sizes_add SIZE...  more files in every data set, for a
#                           protocol's own limits (call before the first
#                           dataset_make, on both guests)
#   dataset_bytes           the bytes of one data set
#   dataset_check DIR TAG   every file of TAG's manifest is in DIR with its
#                           checksum; fails the script otherwise
#   blockdev_verify DEV MIB KEEP  fio 4 KiB random writes with crc32c verify
#                           on the block device DEV over blockdev_fio_mib
#                           MIB of it,
#                           then MIB MiB of random data written (a copy kept
#                           in the file KEEP), caches dropped, read back and
#                           compared
#   blockdev_fio_mib MIB    what blockdev_verify's fio covers of MIB: all
#                           of it, 4 MiB on the debug kernel (KASAN makes
#                           this I/O some ten times slower); fails the
#                           script when fio is missing (tools/install-deps
#                           installs it: the verify is not optional)
#   lio_backstore MIB       a LIO fileio backstore over a file of random
#                           data (lio_backstore_remove undoes it)
#   initiator_check_initial DEV MIB  DEV reads as the backstore's file
#   nvmet_export PATH BUFFERED  guest a: export PATH (a file or a block
#                           device; BUFFERED 1 for tmpfs, which has no
#                           O_DIRECT) as namespace 1 of $nvmet_nqn on an
#                           nvmet-rdma port 4420 (nvmet_unexport undoes it)
#   nvme_connect            guest b: connect to it with nvme-rdma and print
#                           the namespace's block device
#   nvme_disconnect         guest b: delete that controller
#   storage_bench NAME PATH  under tools/sroce-bench --storage only
#                           ($SROCE_STORAGE_BENCH holds the round): fio's
#                           4 KiB random reads and writes at queue depth 16
#                           and 1 MiB sequential reads and writes at queue
#                           depth 4, 5 s each, on PATH (a block device, or
#                           a file it creates); "ROUND NAME_WORKLOAD VALUE
#                           UNIT" lines to $SROCE_OUT/bench.txt. Overwrites
#                           PATH's data: call it before the data checks.
#   traffic_begin           remember this guest's RDMA byte counters
#   traffic_check TX RX     since traffic_begin, this guest's device sent at
#                           least TX and received at least RX bytes (sroce
#                           only: rxe's counters have no byte totals), so
#                           the data crossed RDMA, not TCP

# Sizes: empty, tiny, just under, at and over a page (and the 4 KiB inline
# threshold of NFS/RDMA), over the 1 MiB chunk limit, and a few MiB.
_dataset_sizes=(0 1 511 4095 4096 4097 65537 262144 1048575 1048576 1048577 3145733)

dataset_sizes_add() {
	_dataset_sizes+=("$@")
}

dataset_bytes() {
	local s sum=0
	for s in "${_dataset_sizes[@]}"; do
		sum=$((sum + s))
	done
	echo "$sum"
}

dataset_make() {
	local dir=$1 tag=$2 i manifest=$SROCE_PAIR_DIR/$2.sha256
	mkdir -p "$dir"
	for i in "${!_dataset_sizes[@]}"; do
		head -c "${_dataset_sizes[i]}" /dev/urandom >"$dir/$tag-$i" ||
			fail "cannot write $dir/$tag-$i"
	done
	(cd "$dir" && sha256sum "$tag"-*) >"$manifest.tmp"
	mv "$manifest.tmp" "$manifest"
}

dataset_check() {
	local dir=$1 tag=$2 manifest=$SROCE_PAIR_DIR/$2.sha256 n
	n=$(wc -l <"$manifest")
	((n == ${#_dataset_sizes[@]})) || fail "$tag's manifest lists $n files"
	(cd "$dir" && sha256sum --quiet --strict -c "$manifest") ||
		fail "$tag: files in $dir differ from their manifest"
	log "$tag: $n files ($(dataset_bytes) bytes) in $dir match their checksums"
}

blockdev_fio_mib() {
	require_cmd fio
	if [[ $(uname -r) == *-sroce-debug ]]; then
		echo $(($1 < 4 ? $1 : 4))
	else
		echo "$1"
	fi
}

blockdev_verify() {
	local dev=$1 mib=$2 keep=$3 fio_mib
	# in this shell, not only in blockdev_fio_mib's subshell
	require_cmd fio
	fio_mib=$(blockdev_fio_mib "$mib")
	fio --name=verify --filename="$dev" --direct=1 --ioengine=libaio \
		--rw=randwrite --bs=4k --iodepth=16 --size="${fio_mib}M" \
		--verify=crc32c --verify_fatal=1 --do_verify=1 \
		--output="$SROCE_OUT/fio-verify.txt" ||
		{ cat "$SROCE_OUT/fio-verify.txt"; fail "fio crc32c verify on $dev failed"; }
	grep -q "err= 0" "$SROCE_OUT/fio-verify.txt" ||
		{ cat "$SROCE_OUT/fio-verify.txt"; fail "fio reported errors on $dev"; }
	log "$dev: fio wrote $fio_mib MiB in 4 KiB random writes, QD16, and verified them (crc32c)"
	dd if=/dev/urandom of="$keep" bs=1M count="$mib" status=none
	# odd-sized direct writes: requests of several lengths
	dd if="$keep" of="$dev" bs=36k oflag=direct status=none || fail "writing $dev failed"
	echo 3 >/proc/sys/vm/drop_caches
	dd if="$dev" of=/tmp/bd-r bs=1M count="$mib" iflag=direct status=none ||
		fail "reading $dev failed"
	cmp "$keep" /tmp/bd-r || fail "$dev: read back differs from what was written"
	rm -f /tmp/bd-r
	log "$dev: wrote $mib MiB and read it back identical"
}

# lio_backstore MIB: a LIO fileio backstore (fileio_0/disk0) over a MIB MiB
# file of random data in /tmp/lio-backing (tmpfs: buffered, no O_DIRECT);
# its sha256 goes to the pair dir as lio-initial.sha.
lio_core=/sys/kernel/config/target/core
lio_backstore() {
	local d=$lio_core/fileio_0/disk0
	modprobe -a target_core_mod target_core_file || fail "cannot load LIO"
	mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config
	dd if=/dev/urandom of=/tmp/lio-backing bs=1M count="$1" status=none
	sha256sum </tmp/lio-backing | cut -d' ' -f1 >"$SROCE_PAIR_DIR/lio-initial.sha"
	mkdir -p "$d"
	echo "fd_dev_name=/tmp/lio-backing,fd_dev_size=$(($1 << 20)),fd_buffered_io=1" >"$d/control"
	echo 1 >"$d/enable" || fail "cannot enable the LIO backstore"
}

lio_backstore_remove() {
	rmdir "$lio_core/fileio_0/disk0" "$lio_core/fileio_0" 2>/dev/null || true
	rm -f /tmp/lio-backing
}

# initiator_check_initial DEV MIB: reading DEV gives the target's initial
# data.
initiator_check_initial() {
	local got
	got=$(dd if="$1" bs=1M count="$2" iflag=direct status=none | sha256sum | cut -d' ' -f1)
	[[ $got == $(cat "$SROCE_PAIR_DIR/lio-initial.sha") ]] ||
		fail "reading $1 gave other data than the target's file"
	log "$1: read $2 MiB matching the target's file"
}

nvmet_nqn=nqn.2024-01.org.sroce:nvmeof-target
_nvmet=/sys/kernel/config/nvmet
nvmet_export() {
	local ns=$_nvmet/subsystems/$nvmet_nqn/namespaces/1 port=$_nvmet/ports/1
	modprobe nvmet-rdma || fail "cannot load nvmet-rdma"
	mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config
	mkdir "$_nvmet/subsystems/$nvmet_nqn"
	echo 1 >"$_nvmet/subsystems/$nvmet_nqn/attr_allow_any_host"
	mkdir "$ns"
	echo "$1" >"$ns/device_path"
	echo "$2" >"$ns/buffered_io"
	echo 1 >"$ns/enable" || fail "cannot enable the namespace on $1"
	mkdir "$port"
	echo rdma >"$port/addr_trtype"
	echo ipv4 >"$port/addr_adrfam"
	echo "$SROCE_LOCAL_IP" >"$port/addr_traddr"
	echo 4420 >"$port/addr_trsvcid"
	ln -s "$_nvmet/subsystems/$nvmet_nqn" "$port/subsystems/$nvmet_nqn"
	announce_port 4420 rdma
}

nvmet_unexport() {
	rm -f "$_nvmet/ports/1/subsystems/$nvmet_nqn"
	rmdir "$_nvmet/ports/1" "$_nvmet/subsystems/$nvmet_nqn/namespaces/1" \
		"$_nvmet/subsystems/$nvmet_nqn"
}

nvme_connect() {
	modprobe nvme-rdma || fail "cannot load nvme-rdma"
	wait_peer_port 4420 120
	echo "transport=rdma,traddr=$SROCE_PEER_IP,trsvcid=4420,nqn=$nvmet_nqn" \
		>/dev/nvme-fabrics || fail "nvme-rdma connect failed"
	wait_for 30 test -b /dev/nvme0n1 || fail "no namespace appeared"
	echo /dev/nvme0n1
}

nvme_disconnect() {
	echo 1 >/sys/class/nvme/nvme0/delete_controller
}

# _fio_figure JSON RW UNIT PREFIX: "PREFIX VALUE UNIT" from fio's JSON;
# fails when fio counted an error or moved nothing.
_fio_figure='
import json, sys
job = json.load(open(sys.argv[1]))["jobs"][0]
side = job["read" if "read" in sys.argv[2] else "write"]
value = side["iops"] if sys.argv[3] == "IOPS" else side["bw_bytes"] / 1e6
print(f"{sys.argv[4]} {value:.1f} {sys.argv[3]}")
sys.exit(1 if job["error"] or side["io_bytes"] == 0 else 0)
'
storage_bench() {
	local name=$1 path=$2 job rw bs depth out unit line
	[[ -n ${SROCE_STORAGE_BENCH:-} ]] || return 0
	for job in randread:4k:16 randwrite:4k:16 read:1m:4 write:1m:4; do
		IFS=: read -r rw bs depth <<<"$job"
		out=$SROCE_OUT/bench-$name-$rw-$bs.json
		with_timeout 120 fio --name="$name-$rw" --filename="$path" --direct=1 \
			--ioengine=libaio --rw="$rw" --bs="$bs" --iodepth="$depth" \
			--size=16M --runtime=5 --time_based --output-format=json \
			--output="$out" || { cat "$out"; fail "$name: fio $rw $bs failed"; }
		unit=IOPS
		[[ $bs == 1m ]] && unit=MB/s
		line=$(python3 -c "$_fio_figure" "$out" "$rw" "$unit" \
			"$SROCE_STORAGE_BENCH $name-$rw-$bs") ||
			fail "$name: fio $rw $bs counted errors"
		echo "$line" | tee -a "$SROCE_OUT/bench.txt"
	done
}

_traffic_tx0=0 _traffic_rx0=0
traffic_begin() {
	[[ $SROCE_DEV_TYPE == sroce ]] || return 0
	_traffic_tx0=$(link_counter "$SROCE_DEV" tx_bytes)
	_traffic_rx0=$(link_counter "$SROCE_DEV" rx_bytes)
}

traffic_check() {
	local tx rx
	[[ $SROCE_DEV_TYPE == sroce ]] || return 0
	tx=$(($(link_counter "$SROCE_DEV" tx_bytes) - _traffic_tx0))
	rx=$(($(link_counter "$SROCE_DEV" rx_bytes) - _traffic_rx0))
	log "$SROCE_DEV sent $tx and received $rx bytes (at least $1 and $2 expected)"
	((tx >= $1)) || fail "$SROCE_DEV sent $tx bytes, less than the $1 of data"
	((rx >= $2)) || fail "$SROCE_DEV received $rx bytes, less than the $2 of data"
}
