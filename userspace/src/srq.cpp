// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// Shared receive queues: a receive ring like a QP's, posted to without a
// system call.
#include "provider.h"

#include <algorithm>
#include <new>
#include <utility>

namespace sroce {

ibv_srq* create_srq(ibv_pd* pd, ibv_srq_init_attr* attr) noexcept {
    auto* srq = new (std::nothrow) Srq{};
    if (srq == nullptr) {
        set_errno(ENOMEM);
        return nullptr;
    }
    ibv_srq_init_attr_ex ex{};
    ex.srq_context = attr->srq_context;
    ex.attr = attr->attr;
    ex.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD;
    ex.srq_type = IBV_SRQT_BASIC;
    ex.pd = pd;

    verbs_cmd_create_xsrq cmd{};
    WithDriverData<ib_uverbs_create_srq_resp, sroce_create_srq_resp> resp;
    int err = ibv_cmd_create_srq_ex(pd->context, &srq->vsrq, &ex, &cmd, sizeof(cmd), resp.core(),
                                    resp.size());
    if (err != 0) {
        delete srq;
        set_errno(err);
        return nullptr;
    }
    const sroce_create_srq_resp drv = resp.driver();
    const auto geometry = validate_ring(drv.rq, SROCE_RECV_WQE_HDR_SIZE);
    Mapping mapped;
    if (geometry)
        mapped = Mapping::map_shared(pd->context->cmd_fd, drv.rq.mmap_len, drv.rq.mmap_key);
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
            .max_sge = std::min(ex.attr.max_sge, recv_slot_sge_capacity(geometry->stride)),
            .stride = geometry->stride,
    };
    srq->vsrq.srq_num = drv.srq_num;
    attr->attr = ex.attr;
    attr->attr.max_sge = srq->rq.limits.max_sge;
    attr->attr.max_wr = std::min(attr->attr.max_wr, geometry->num_entries);
    return &srq->vsrq.srq;
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
