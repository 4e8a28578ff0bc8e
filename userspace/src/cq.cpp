// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// Completion queues. The kernel writes CQEs into a ring the provider maps;
// polling reads them there without a system call. Arming (req_notify_cq)
// and resizing go through the kernel.
#include "provider.h"

#include <algorithm>
#include <mutex>
#include <new>
#include <utility>

namespace sroce {
namespace {

// Maps the ring a create or resize response describes.
int map_cq_ring(int cmd_fd, const sroce_queue_info& info, Mapping& mapping,
                ConsumerRing& ring) noexcept {
    const auto geometry = validate_ring(info, sizeof(sroce_cqe));
    if (!geometry)
        return EPROTO;
    Mapping mapped = Mapping::map_shared(cmd_fd, info.mmap_len, info.mmap_key);
    if (!mapped)
        return errno;
    ring = ConsumerRing{static_cast<std::byte*>(mapped.data()), *geometry};
    mapping = std::move(mapped);
    return 0;
}

} // namespace

ibv_cq* create_cq(ibv_context* ctx, int cqe, ibv_comp_channel* channel, int comp_vector) noexcept {
    auto* cq = new (std::nothrow) Cq{};
    if (cq == nullptr) {
        set_errno(ENOMEM);
        return nullptr;
    }
    verbs_cmd_create_cq cmd{};
    WithDriverData<ib_uverbs_create_cq_resp, sroce_create_cq_resp> resp;
    int err = ibv_cmd_create_cq(ctx, cqe, channel, comp_vector, &cq->vcq.cq, &cmd, sizeof(cmd),
                                resp.core(), resp.size());
    if (err != 0) {
        delete cq;
        set_errno(err);
        return nullptr;
    }
    err = map_cq_ring(ctx->cmd_fd, resp.driver().cq, cq->mapping, cq->ring);
    if (err != 0) {
        (void)ibv_cmd_destroy_cq(&cq->vcq.cq);
        delete cq;
        set_errno(err);
        return nullptr;
    }
    return &cq->vcq.cq;
}

int destroy_cq(ibv_cq* ibcq) noexcept {
    const int err = ibv_cmd_destroy_cq(ibcq);
    if (err != 0)
        return err;
    delete to_cq(ibcq); // unmaps the ring
    return 0;
}

// The kernel copies the unconsumed CQEs into a new ring and from then on
// writes only there; the lock keeps pollers off the ring while it changes.
int resize_cq(ibv_cq* ibcq, int cqe) noexcept {
    Cq* cq = to_cq(ibcq);
    const std::lock_guard guard{cq->lock};
    verbs_cmd_resize_cq cmd{};
    WithDriverData<ib_uverbs_resize_cq_resp, sroce_resize_cq_resp> resp;
    const int err = ibv_cmd_resize_cq(ibcq, cqe, &cmd, sizeof(cmd), resp.core(), resp.size());
    if (err != 0)
        return err;
    // Should mapping fail now, the old ring stays mapped but is no longer
    // written: the CQ reports no more completions. Only ENOMEM gets here.
    return map_cq_ring(ibcq->context->cmd_fd, resp.driver().cq, cq->mapping, cq->ring);
}

int poll_cq(ibv_cq* ibcq, int num_entries, ibv_wc* wc) noexcept {
    if (num_entries <= 0)
        return num_entries == 0 ? 0 : -EINVAL;
    Cq* cq = to_cq(ibcq);
    const std::lock_guard guard{cq->lock};
    const std::uint32_t n = std::min(cq->ring.available(), static_cast<std::uint32_t>(num_entries));
    for (std::uint32_t i = 0; i < n; ++i)
        decode_cqe(cq->ring.peek(i), wc[i]);
    if (n != 0)
        cq->ring.consume(n);
    return static_cast<int>(n);
}

int req_notify_cq(ibv_cq* ibcq, int solicited_only) noexcept {
    return ibv_cmd_req_notify_cq(ibcq, solicited_only);
}

} // namespace sroce
