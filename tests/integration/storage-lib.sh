# SPDX-License-Identifier: GPL-2.0
# sroce-library: sourced by the tests, not one itself
# shellcheck shell=bash
#
# Helpers for the kernel storage tests (NFS over RDMA, iSER, SRP), sourced
# after lib.sh:
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
#                           on the block device DEV (when fio is installed),
#                           then MIB MiB of random data written (a copy kept
#                           in the file KEEP), caches dropped, read back and
#                           compared
#   lio_backstore MIB       a LIO fileio backstore over a file of random
#                           data (lio_backstore_remove undoes it)
#   initiator_check_initial DEV MIB  DEV reads as the backstore's file
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

blockdev_verify() {
	local dev=$1 mib=$2 keep=$3
	if command -v fio >/dev/null; then
		fio --name=verify --filename="$dev" --direct=1 --ioengine=libaio \
			--rw=randwrite --bs=4k --iodepth=16 --size="${mib}M" \
			--verify=crc32c --verify_fatal=1 --do_verify=1 \
			--output="$SROCE_OUT/fio-verify.txt" ||
			{ cat "$SROCE_OUT/fio-verify.txt"; fail "fio crc32c verify on $dev failed"; }
		grep -q "err= 0" "$SROCE_OUT/fio-verify.txt" ||
			{ cat "$SROCE_OUT/fio-verify.txt"; fail "fio reported errors on $dev"; }
		log "$dev: fio wrote $mib MiB in 4 KiB random writes, QD16, and verified them (crc32c)"
	fi
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
