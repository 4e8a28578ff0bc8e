// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// Objects of the sroce provider as libibverbs sees them, and the entry
// points of the verbs it implements. Every entry point is noexcept: nothing
// may unwind into libibverbs' C frames.
#pragma once

#include "udata.h"
#include "verbs_private_abi.h"

#include <rdma/sroce-abi.h>

#include <cerrno>
#include <cstdint>
#include <type_traits>

namespace sroce {

inline constexpr const char* kProviderName = "sroce";

// The kernel registers sroce devices with this driver id; every ioctl the
// provider issues carries it, and the kernel refuses any other.
inline constexpr std::uint32_t kDriverId = RDMA_DRIVER_UNKNOWN;

struct Device {
    verbs_device vdev; // first: libibverbs owns a pointer to it
};

// Allocated (zeroed) by libibverbs' _verbs_init_and_alloc_context, freed with
// free() in free_context: it must stay an implicit-lifetime aggregate.
struct Context {
    verbs_context vctx;
    std::uint32_t max_inline_data;
};
static_assert(std::is_trivially_copyable_v<Context> && std::is_standard_layout_v<Context>);
static_assert(offsetof(Context, vctx) == 0);

struct Pd {
    ibv_pd pd{};
    std::uint32_t pdn = 0;
};

inline Context* to_context(ibv_context* ctx) noexcept {
    // ibv_context is the last member of verbs_context (public verbs.h), and
    // verbs_context is the first member of Context.
    return reinterpret_cast<Context*>(reinterpret_cast<char*>(ctx) -
                                      offsetof(verbs_context, context));
}

inline Pd* to_pd(ibv_pd* pd) noexcept {
    return reinterpret_cast<Pd*>(pd);
}

// ibv_cmd_* return a positive errno value; pointer-returning verbs report
// through errno.
inline int set_errno(int err) noexcept {
    errno = err;
    return err;
}

// --- verbs (context.cpp) ---------------------------------------------------
verbs_context* alloc_context(ibv_device* device, int cmd_fd, void* private_data) noexcept;
void free_context(ibv_context* ctx) noexcept;
int query_device_ex(ibv_context* ctx, const ibv_query_device_ex_input* input,
                    ibv_device_attr_ex* attr, std::size_t attr_size) noexcept;
int query_port(ibv_context* ctx, std::uint8_t port_num, ibv_port_attr* attr) noexcept;
ibv_pd* alloc_pd(ibv_context* ctx) noexcept;
int dealloc_pd(ibv_pd* pd) noexcept;

} // namespace sroce
