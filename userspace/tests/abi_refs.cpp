// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// A loadable object that references every function src/verbs_private_abi.h
// declares and does nothing else. Linked with -z defs to the libibverbs.so.1
// of its ABI generation, and checked by check_provider_elf.sh, it shows that
// each declaration binds to that release's IBVERBS_PRIVATE_<N> node, also
// where that libibverbs cannot run (rdma-core 65 on this Debian 12 host).
#include "abi_symbols.h"

namespace {

#define SROCE_REFERENCE(fn) reinterpret_cast<const void*>(&(fn)),

[[gnu::used]] const void* const kReferences[] = {SROCE_PRIVATE_FUNCTIONS(SROCE_REFERENCE)};

} // namespace
