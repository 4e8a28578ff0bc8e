#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# check_provider_elf.sh OBJECT PABI [LIBIBVERBS]
#
# A provider (libsroce-rdmav<PABI>.so) or abi_refs object as a loadable
# object: it exports nothing, needs libibverbs, and binds every libibverbs
# symbol to a versioned node (IBVERBS_PRIVATE_<PABI>, or a public
# IBVERBS_1.x one). With LIBIBVERBS, a real libibverbs.so.1 of that ABI
# generation, every such reference must also be defined there under the
# very node it names: what the dynamic linker will demand when it loads the
# object. readelf only, so LIBIBVERBS may be one this host cannot run.
set -eu
[ $# -ge 2 ] || { echo "usage: $0 OBJECT PABI [LIBIBVERBS]" >&2; exit 2; }
so=$1 pabi=$2 lib=${3-}
node=IBVERBS_PRIVATE_$pabi
fail() { echo "FAIL: $*" >&2; exit 1; }

[ -f "$so" ] || fail "$so does not exist"
case $(basename "$so") in
"libsroce-rdmav$pabi.so" | libsroce_abi_refs*.so) ;;
*) fail "unexpected file name $(basename "$so") for ABI $pabi" ;;
esac

syms=$(readelf --dyn-syms -W "$so")
exported=$(printf '%s\n' "$syms" | awk '$7 != "UND" && ($5 == "GLOBAL" || $5 == "WEAK") {print $8}')
[ -z "$exported" ] || fail "exports symbols: $exported"

readelf -d "$so" | grep -q 'NEEDED.*\[libibverbs\.so\.1\]' || fail "does not need libibverbs.so.1"

verbs=$(printf '%s\n' "$syms" | awk '$7 == "UND" {print $8}' | grep -E '^(ibv_|_?verbs_)' || true)
[ -n "$verbs" ] || fail "references no libibverbs symbol"
bad=$(printf '%s\n' "$verbs" | grep -Ev "@($node|IBVERBS_1\\.[0-9]+)( |\$)" || true)
[ -z "$bad" ] || fail "unversioned or wrongly versioned libibverbs references: $bad"
if [ "$(basename "$so")" = "libsroce-rdmav$pabi.so" ]; then
	printf '%s\n' "$verbs" | grep -qx "verbs_register_driver_$pabi@$node" ||
		fail "does not register through verbs_register_driver_$pabi@$node"
fi
echo "ok: $(printf '%s\n' "$verbs" | wc -l) libibverbs references, all versioned; nothing exported"

[ -n "$lib" ] || exit 0
[ -f "$lib" ] || fail "$lib does not exist"
readelf -d "$lib" | grep -q 'SONAME.*\[libibverbs\.so\.1\]' || fail "$lib is not libibverbs.so.1"
# Defined symbols as name@NODE, whether NODE is the default (@@) or not.
defined=$(readelf --dyn-syms -W "$lib" | awk '$7 != "UND" && $8 ~ /@/ {sub(/@@/, "@", $8); print $8}')
missing=$(printf '%s\n' "$verbs" | grep -Fxv "$defined" || true)
[ -z "$missing" ] || fail "not defined in $lib under the node referenced: $missing"
echo "ok: all $(printf '%s\n' "$verbs" | wc -l) bind in $lib"
