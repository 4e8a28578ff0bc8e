# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0
# Sourced by tools/sroce-kernel, tools/sroce-libibverbs and
# tools/sroce-ksmbd-tools: a Debian suite's
# package index read directly, without teaching this host's apt another
# release (its sources are its owner's). InRelease is checked by gpgv against
# debian-archive-keyring, Packages.xz against the SHA256 the signed Release
# gives; callers check each .deb against Packages. Only the signature counts,
# not Valid-Until: the mirror may be a frozen snapshot.

DEBIAN_MIRROR=${SROCE_DEBIAN_MIRROR:-http://deb.debian.org/debian}
DEBIAN_KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg

# debian_index DIR SUITE: SUITE's verified main Packages for this host's
# architecture in DIR/Packages. Says why on stderr and returns 1 if not.
debian_index() {
	local dir=$1 suite=$2 arch sum
	arch=$(dpkg --print-architecture)
	if ! curl -fsS --retry 3 -o "$dir/InRelease" "$DEBIAN_MIRROR/dists/$suite/InRelease"; then
		echo "cannot download $suite's InRelease from $DEBIAN_MIRROR" >&2
		return 1
	fi
	if ! gpgv --keyring "$DEBIAN_KEYRING" --output "$dir/Release" "$dir/InRelease" \
		2>"$dir/gpgv.log"; then
		echo "$suite's InRelease has no good signature:" >&2
		cat "$dir/gpgv.log" >&2
		return 1
	fi
	sum=$(awk -v f="main/binary-$arch/Packages.xz" '/^SHA256:/ { on = 1; next }
		/^[^ ]/ { on = 0 } on && $3 == f { print $1 }' "$dir/Release")
	if [[ -z $sum ]]; then
		echo "$suite's Release lists no main/binary-$arch/Packages.xz" >&2
		return 1
	fi
	if ! curl -fsS --retry 3 -o "$dir/Packages.xz" \
		"$DEBIAN_MIRROR/dists/$suite/main/binary-$arch/Packages.xz"; then
		echo "cannot download $suite's Packages.xz" >&2
		return 1
	fi
	if ! echo "$sum  $dir/Packages.xz" | sha256sum -c --quiet -; then
		echo "$suite's Packages.xz does not match its Release" >&2
		return 1
	fi
	xz -d "$dir/Packages.xz"
}

# debian_field PACKAGES NAME FIELD: FIELD of package NAME in a Packages file.
debian_field() {
	awk -v p="$2" -v f="$3:" '$1 == "Package:" { on = ($2 == p) }
		on && $1 == f { print $2; exit }' "$1"
}

# debian_fetch DIR NAME: NAME's .deb as DIR/NAME.deb, checked against the
# index in DIR/Packages. Says why on stderr and returns 1 if not.
debian_fetch() {
	local dir=$1 name=$2 file sum
	file=$(debian_field "$dir/Packages" "$name" Filename)
	sum=$(debian_field "$dir/Packages" "$name" SHA256)
	if [[ -z $file || -z $sum ]]; then
		echo "the index has no $name" >&2
		return 1
	fi
	if ! curl -fsS --retry 3 -o "$dir/$name.deb" "$DEBIAN_MIRROR/$file"; then
		echo "cannot download $DEBIAN_MIRROR/$file" >&2
		return 1
	fi
	if ! echo "$sum  $dir/$name.deb" | sha256sum -c --quiet -; then
		echo "$name.deb does not match the index" >&2
		return 1
	fi
}
