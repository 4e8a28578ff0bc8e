// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// Shared receive queues: a receive ring like a QP's, posted to without a
// system call.
#include "provider.h"

#include <algorithm>
#include <new>
#include <utility>

namespace sroce {

namespace {

constexpr std::uint32_t kSupportedSrqMask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
                                            IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ;

// A basic SRQ, or an XRC SRQ with its domain and CQ; always with a PD.
bool srq_attr_supported(const ibv_srq_init_attr_ex& ex) noexcept {
    if ((ex.comp_mask & ~kSupportedSrqMask) != 0)
        return false;
    const ibv_srq_type type =
            (ex.comp_mask & IBV_SRQ_INIT_ATTR_TYPE) != 0 ? ex.srq_type : IBV_SRQT_BASIC;
    const bool xrc_parts = (ex.comp_mask & (IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ)) != 0;
    if (type == IBV_SRQT_BASIC)
        return !xrc_parts;
    return type == IBV_SRQT_XRC;
}

} // namespace

ibv_srq* create_srq_ex(ibv_context* ctx, ibv_srq_init_attr_ex* ex) noexcept {
    if (!srq_attr_supported(*ex)) {
        set_errno(EOPNOTSUPP);
        return nullptr;
    }
    auto* srq = new (std::nothrow) Srq{};
    if (srq == nullptr) {
        set_errno(ENOMEM);
        return nullptr;
    }
    verbs_cmd_create_xsrq cmd{};
    WithDriverData<ib_uverbs_create_srq_resp, sroce_create_srq_resp> resp;
    int err =
            ibv_cmd_create_srq_ex(ctx, &srq->vsrq, ex, &cmd, sizeof(cmd), resp.core(), resp.size());
    if (err != 0) {
        delete srq;
        set_errno(err);
        return nullptr;
    }
    const sroce_create_srq_resp drv = resp.driver();
    const auto geometry = validate_ring(drv.rq, SROCE_RECV_WQE_HDR_SIZE);
    Mapping mapped;
    if (geometry)
        mapped = Mapping::map_shared(ctx->cmd_fd, drv.rq.mmap_len, drv.rq.mmap_key);
    if (!geometry || !mapped) {
        err = geometry ? errno : EPROTO;
        (void)ibv_cmd_destroy_srq(&srq->vsrq.srq);
        delete srq;
        set_errno(err);
        return nullptr;
    }
    srq->rq.ring = ProducerRing{static_cast<std::byte*>(mapped.data()), *geometry};
    srq->rq.mapping = std::move(mapped);
    srq->rq.limits = RecvQueueLimits{
            .max_sge = std::min(ex->attr.max_sge, recv_slot_sge_capacity(geometry->stride)),
            .stride = geometry->stride,
    };
    srq->vsrq.srq_num = drv.srq_num;
    ex->attr.max_sge = srq->rq.limits.max_sge;
    ex->attr.max_wr = std::min(ex->attr.max_wr, geometry->num_entries);
    return &srq->vsrq.srq;
}

ibv_srq* create_srq(ibv_pd* pd, ibv_srq_init_attr* attr) noexcept {
    ibv_srq_init_attr_ex ex{};
    ex.srq_context = attr->srq_context;
    ex.attr = attr->attr;
    ex.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD;
    ex.srq_type = IBV_SRQT_BASIC;
    ex.pd = pd;
    ibv_srq* srq = create_srq_ex(pd->context, &ex);
    if (srq != nullptr)
        attr->attr = ex.attr;
    return srq;
}

int get_srq_num(ibv_srq* ibsrq, std::uint32_t* srq_num) noexcept {
    *srq_num = to_srq(ibsrq)->vsrq.srq_num;
    return 0;
}

int modify_srq(ibv_srq* ibsrq, ibv_srq_attr* attr, int attr_mask) noexcept {
    // The ring is sized at creation; only the limit can change.
    if ((attr_mask & IBV_SRQ_MAX_WR) != 0)
        return EINVAL;
    verbs_cmd_modify_srq cmd{};
    return ibv_cmd_modify_srq(ibsrq, attr, attr_mask, &cmd, sizeof(cmd));
}

int query_srq(ibv_srq* ibsrq, ibv_srq_attr* attr) noexcept {
    verbs_cmd_query_srq cmd{};
    const int err = ibv_cmd_query_srq(ibsrq, attr, &cmd, sizeof(cmd));
    if (err == 0)
        attr->max_sge = std::min(attr->max_sge, to_srq(ibsrq)->rq.limits.max_sge);
    return err;
}

int destroy_srq(ibv_srq* ibsrq) noexcept {
    const int err = ibv_cmd_destroy_srq(ibsrq);
    if (err != 0)
        return err;
    delete to_srq(ibsrq); // unmaps the ring
    return 0;
}

int post_srq_recv(ibv_srq* ibsrq, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) noexcept {
    return post_to_recv_queue(to_srq(ibsrq)->rq, wr, bad_wr);
}

} // namespace sroce
