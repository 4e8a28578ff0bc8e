#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The provider as a loadable object: it exports nothing, needs libibverbs,
# and binds every libibverbs symbol to a versioned node (the private ABI
# node it was written for, or a public IBVERBS_1.x one).
set -eu
so=$1
fail() { echo "FAIL: $*" >&2; exit 1; }

[ -f "$so" ] || fail "$so does not exist"
case $(basename "$so") in
libsroce-rdmav34.so) ;;
*) fail "unexpected file name $(basename "$so")" ;;
esac

syms=$(readelf --dyn-syms -W "$so")
exported=$(printf '%s\n' "$syms" | awk '$7 != "UND" && ($5 == "GLOBAL" || $5 == "WEAK") {print $8}')
[ -z "$exported" ] || fail "exports symbols: $exported"

readelf -d "$so" | grep -q 'NEEDED.*\[libibverbs\.so\.1\]' || fail "does not need libibverbs.so.1"

verbs=$(printf '%s\n' "$syms" | awk '$7 == "UND" {print $8}' | grep -E '^(ibv_|_?verbs_)' || true)
[ -n "$verbs" ] || fail "references no libibverbs symbol"
bad=$(printf '%s\n' "$verbs" | grep -Ev '@(IBVERBS_PRIVATE_34|IBVERBS_1\.[0-9]+)( |$)' || true)
[ -z "$bad" ] || fail "unversioned or wrongly versioned libibverbs references: $bad"
echo "ok: $(printf '%s\n' "$verbs" | wc -l) libibverbs references, all versioned; nothing exported"
