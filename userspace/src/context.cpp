// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// Device context, device and port queries, protection domains.
#include "provider.h"

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <new>

namespace sroce {
namespace {

constexpr verbs_context_ops make_context_ops() noexcept {
    verbs_context_ops ops{};
    ops.advise_mr = advise_mr;
    ops.alloc_mw = alloc_mw;
    ops.alloc_parent_domain = alloc_parent_domain;
    ops.alloc_pd = alloc_pd;
    ops.alloc_td = alloc_td;
    ops.attach_mcast = attach_mcast;
    ops.bind_mw = bind_mw;
    ops.close_xrcd = close_xrcd;
    ops.create_ah = create_ah;
    ops.create_cq = create_cq;
    ops.create_cq_ex = create_cq_ex;
    ops.create_qp = create_qp;
    ops.create_qp_ex = create_qp_ex;
    ops.create_srq = create_srq;
    ops.create_srq_ex = create_srq_ex;
    ops.dealloc_mw = dealloc_mw;
    ops.dealloc_pd = dealloc_pd;
    ops.dealloc_td = dealloc_td;
    ops.dereg_mr = dereg_mr;
    ops.destroy_ah = destroy_ah;
    ops.destroy_cq = destroy_cq;
    ops.destroy_qp = destroy_qp;
    ops.destroy_srq = destroy_srq;
    ops.detach_mcast = detach_mcast;
    ops.free_context = free_context;
    ops.get_srq_num = get_srq_num;
    ops.import_mr = import_mr;
    ops.import_pd = import_pd;
    ops.modify_qp = modify_qp;
    ops.modify_srq = modify_srq;
    ops.open_qp = open_qp;
    ops.open_xrcd = open_xrcd;
    ops.poll_cq = poll_cq;
    ops.post_recv = post_recv;
    ops.post_send = post_send;
    ops.post_srq_recv = post_srq_recv;
    ops.query_device_ex = query_device_ex;
    ops.query_port = query_port;
    ops.query_qp = query_qp;
    ops.query_rt_values = query_rt_values;
    ops.query_srq = query_srq;
    ops.reg_mr = reg_mr;
    ops.req_notify_cq = req_notify_cq;
    ops.rereg_mr = rereg_mr;
    ops.resize_cq = resize_cq;
    ops.unimport_mr = unimport_mr;
    ops.unimport_pd = unimport_pd;
    return ops;
}

constexpr verbs_context_ops kContextOps = make_context_ops();

// A context over cmd_fd, from libibverbs' allocator (nullptr, errno set,
// when that fails).
Context* new_context(ibv_device* device, int cmd_fd) noexcept {
    return static_cast<Context*>(_verbs_init_and_alloc_context(
            device, cmd_fd, sizeof(Context), nullptr /* offset of Context::vctx */, kDriverId));
}

// Undoes new_context (which closes cmd_fd, as libibverbs expects) and
// fails with err.
verbs_context* discard_context(Context* ctx, int err) noexcept {
    verbs_uninit_context(&ctx->vctx);
    std::free(ctx); // NOLINT(cppcoreguidelines-no-malloc): allocated by libibverbs
    set_errno(err);
    return nullptr;
}

} // namespace

verbs_context* alloc_context(ibv_device* device, int cmd_fd, void* /*private_data*/) noexcept {
    Context* ctx = new_context(device, cmd_fd);
    if (ctx == nullptr)
        return nullptr;

    verbs_cmd_get_context cmd{};
    WithDriverData<ib_uverbs_get_context_resp, sroce_alloc_ucontext_resp> resp;
    int err = sroce_cmd_get_context(&ctx->vctx, &cmd, sizeof(cmd), resp.core(), resp.size());
    const sroce_alloc_ucontext_resp drv = resp.driver();
    if (err == 0 && drv.abi_version != SROCE_ABI_VERSION) {
        (void)std::fprintf(
                stderr, "libsroce: %s: kernel speaks sroce ABI %" PRIu32 ", provider speaks %d\n",
                device->name, drv.abi_version, SROCE_ABI_VERSION);
        err = EPROTO;
    }
    if (err != 0)
        return discard_context(ctx, err);
    verbs_set_ops(&ctx->vctx, &kContextOps);
    return &ctx->vctx;
}

// ibv_import_device: a context over another open uverbs file of an sroce
// device (the device matched by its ABI version). Nothing per context
// comes from the kernel: each object's rings are described by its own
// create response.
verbs_context* import_context(ibv_device* device, int cmd_fd) noexcept {
    Context* ctx = new_context(device, cmd_fd);
    if (ctx == nullptr)
        return nullptr;
    // Fails (EIO) when the file's context has been disassociated.
    const int err = ibv_cmd_query_context(&ctx->vctx.context, nullptr);
    if (err != 0)
        return discard_context(ctx, err);
    verbs_set_ops(&ctx->vctx, &kContextOps);
    return &ctx->vctx;
}

void free_context(ibv_context* ibctx) noexcept {
    Context* ctx = to_context(ibctx);
    verbs_uninit_context(&ctx->vctx);
    std::free(ctx); // NOLINT(cppcoreguidelines-no-malloc): allocated by libibverbs
}

int query_device_ex(ibv_context* ctx, const ibv_query_device_ex_input* input,
                    ibv_device_attr_ex* attr, std::size_t attr_size) noexcept {
    ib_uverbs_ex_query_device_resp resp{};
    std::size_t resp_size = sizeof(resp);
    const int err = ibv_cmd_query_device_any(ctx, input, attr, attr_size, &resp, &resp_size);
    if (err != 0)
        return err;

    // The kernel reports fw_ver as a number; verbs shows it as text.
    const std::uint64_t fw = resp.base.fw_ver;
    // At most "65535.65535.65535": fw_ver (64 bytes) cannot truncate it.
    (void)std::snprintf(attr->orig_attr.fw_ver, sizeof(attr->orig_attr.fw_ver),
                        "%" PRIu64 ".%" PRIu64 ".%" PRIu64, (fw >> 32) & 0xffff,
                        (fw >> 16) & 0xffff, fw & 0xffff);
    return 0;
}

// The device clock of completion timestamps is the kernel's
// CLOCK_MONOTONIC_RAW (hca_core_clock: 1 GHz), which user space reads too.
int query_rt_values(ibv_context* /*ctx*/, ibv_values_ex* values) noexcept {
    std::uint32_t filled = 0;
    if ((values->comp_mask & IBV_VALUES_MASK_RAW_CLOCK) != 0) {
        if (clock_gettime(CLOCK_MONOTONIC_RAW, &values->raw_clock) != 0)
            return errno;
        filled |= IBV_VALUES_MASK_RAW_CLOCK;
    }
    values->comp_mask = filled;
    return 0;
}

int query_port(ibv_context* ctx, std::uint8_t port_num, ibv_port_attr* attr) noexcept {
    verbs_cmd_query_port cmd{};
    return ibv_cmd_query_port(ctx, port_num, attr, &cmd, sizeof(cmd));
}

ibv_xrcd* open_xrcd(ibv_context* ctx, ibv_xrcd_init_attr* attr) noexcept {
    auto* xrcd = new (std::nothrow) verbs_xrcd{};
    if (xrcd == nullptr) {
        set_errno(ENOMEM);
        return nullptr;
    }
    verbs_cmd_open_xrcd cmd{};
    ib_uverbs_open_xrcd_resp resp{};
    const int err = ibv_cmd_open_xrcd(ctx, xrcd, sizeof(*xrcd), attr, &cmd, sizeof(cmd), &resp,
                                      sizeof(resp));
    if (err != 0) {
        delete xrcd;
        set_errno(err);
        return nullptr;
    }
    return &xrcd->xrcd;
}

int close_xrcd(ibv_xrcd* ibxrcd) noexcept {
    // verbs_xrcd starts with its ibv_xrcd (verbs_private_abi.h).
    auto* xrcd = reinterpret_cast<verbs_xrcd*>(ibxrcd);
    const int err = ibv_cmd_close_xrcd(xrcd);
    if (err != 0)
        return err;
    delete xrcd;
    return 0;
}

ibv_pd* alloc_pd(ibv_context* ctx) noexcept {
    auto* pd = new (std::nothrow) Pd{};
    if (pd == nullptr) {
        set_errno(ENOMEM);
        return nullptr;
    }
    verbs_cmd_alloc_pd cmd{};
    WithDriverData<ib_uverbs_alloc_pd_resp, sroce_alloc_pd_resp> resp;
    const int err = ibv_cmd_alloc_pd(ctx, &pd->pd, &cmd, sizeof(cmd), resp.core(), resp.size());
    if (err != 0) {
        delete pd;
        set_errno(err);
        return nullptr;
    }
    pd->pdn = resp.driver().pdn;
    return &pd->pd;
}

int dealloc_pd(ibv_pd* ibpd) noexcept {
    Pd* pd = to_pd(ibpd);
    if (pd->protection != nullptr) {
        pd->protection->parents.fetch_sub(1, std::memory_order_relaxed);
        if (pd->td != nullptr)
            pd->td->parents.fetch_sub(1, std::memory_order_relaxed);
        delete pd;
        return 0;
    }
    if (pd->parents.load(std::memory_order_relaxed) != 0)
        return EBUSY;
    const int err = ibv_cmd_dealloc_pd(ibpd);
    if (err != 0)
        return err;
    delete pd;
    return 0;
}

// ibv_import_pd: the kernel checks pd_handle on every command that names
// it (a handle this file does not hold fails there). pdn is not known and
// not needed: nothing in the provider reads it.
ibv_pd* import_pd(ibv_context* ctx, std::uint32_t pd_handle) noexcept {
    auto* pd = new (std::nothrow) Pd{};
    if (pd == nullptr) {
        set_errno(ENOMEM);
        return nullptr;
    }
    pd->pd.context = ctx;
    pd->pd.handle = pd_handle;
    return &pd->pd;
}

// The kernel's PD stays: its owner deallocates it.
void unimport_pd(ibv_pd* ibpd) noexcept {
    delete to_pd(ibpd);
}

Pd* parent_domain(ibv_pd* ibpd) noexcept {
    Pd* pd = to_pd(ibpd);
    return pd->protection != nullptr ? pd : nullptr;
}

// IBV_PARENT_DOMAIN_INIT_ATTR_ALLOW_CC_UNPROTECTED_ALLOC (rdma-core 65) lets
// a provider place its buffers in memory shared with the host of a
// confidential guest, for a device that reports IBV_DEVICE_CC_DMA_BOUNCE.
// sroce never does (no device reads guest memory: the kernel copies), so
// it is a permission sroce has no use for and accepts.
constexpr std::uint32_t kParentDomainAllowCcUnprotectedAlloc = 1U << 2;
#if SROCE_RDMA_CORE >= 65
static_assert(kParentDomainAllowCcUnprotectedAlloc ==
              IBV_PARENT_DOMAIN_INIT_ATTR_ALLOW_CC_UNPROTECTED_ALLOC);
#endif

ibv_pd* alloc_parent_domain(ibv_context* ctx, ibv_parent_domain_init_attr* attr) noexcept {
    constexpr std::uint32_t known = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS |
                                    IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT |
                                    kParentDomainAllowCcUnprotectedAlloc;
    if ((attr->comp_mask & ~known) != 0 || attr->pd == nullptr || attr->pd->context != ctx ||
        parent_domain(attr->pd) != nullptr || (attr->td != nullptr && attr->td->context != ctx)) {
        set_errno(EINVAL);
        return nullptr;
    }
    auto* pd = new (std::nothrow) Pd{};
    if (pd == nullptr) {
        set_errno(ENOMEM);
        return nullptr;
    }
    pd->protection = to_pd(attr->pd);
    pd->pd.context = ctx;
    pd->pd.handle = attr->pd->handle; // kernel commands act on the protection domain
    pd->pdn = pd->protection->pdn;
    pd->protection->parents.fetch_add(1, std::memory_order_relaxed);
    if (attr->td != nullptr) {
        pd->td = to_td(attr->td);
        pd->td->parents.fetch_add(1, std::memory_order_relaxed);
    }
    return &pd->pd;
}

ibv_td* alloc_td(ibv_context* ctx, ibv_td_init_attr* attr) noexcept {
    if (attr->comp_mask != 0) {
        set_errno(EINVAL);
        return nullptr;
    }
    auto* td = new (std::nothrow) Td{};
    if (td == nullptr) {
        set_errno(ENOMEM);
        return nullptr;
    }
    td->td.context = ctx;
    return &td->td;
}

int dealloc_td(ibv_td* ibtd) noexcept {
    Td* td = to_td(ibtd);
    if (td->parents.load(std::memory_order_relaxed) != 0)
        return EBUSY;
    delete td;
    return 0;
}

} // namespace sroce
