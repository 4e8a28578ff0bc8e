// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// Queue pairs. Send and receive WQEs go straight into rings mapped from the
// kernel; the only system call on the data path is the send doorbell, which
// receives posted to a QP in the error state ring too, to be flushed.
#include "provider.h"

#include <algorithm>
#include <atomic>
#include <ctime>
#include <mutex>
#include <new>
#include <unistd.h>
#include <utility>

namespace sroce {
namespace {

constexpr std::uint32_t kSupportedCreateMask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_XRCD |
                                               IBV_QP_INIT_ATTR_SEND_OPS_FLAGS |
                                               IBV_QP_INIT_ATTR_CREATE_FLAGS;

bool qp_type_supported(ibv_qp_type type) noexcept {
    return type == IBV_QPT_RC || type == IBV_QPT_UC || type == IBV_QPT_UD ||
           type == IBV_QPT_XRC_SEND || type == IBV_QPT_XRC_RECV;
}

// An XRC send QP has only a send queue; an XRC receive QP has no ring at
// all (its messages land in the XRC SRQs their senders name).
bool has_own_recv_queue(const ibv_qp& qp) noexcept {
    return qp.srq == nullptr && qp.qp_type != IBV_QPT_XRC_SEND && qp.qp_type != IBV_QPT_XRC_RECV;
}

// What names the QP's owner: an XRC receive QP's domain, else a PD.
bool owner_given(const ibv_qp_init_attr_ex& attr) noexcept {
    if (attr.qp_type == IBV_QPT_XRC_RECV)
        return (attr.comp_mask & IBV_QP_INIT_ATTR_XRCD) != 0 && attr.xrcd != nullptr;
    return (attr.comp_mask & IBV_QP_INIT_ATTR_PD) != 0 && attr.pd != nullptr &&
           (attr.comp_mask & IBV_QP_INIT_ATTR_XRCD) == 0;
}

int map_queue(int cmd_fd, const sroce_queue_info& info, std::uint32_t min_stride, Mapping& mapping,
              ProducerRing& ring) noexcept {
    const auto geometry = validate_ring(info, min_stride);
    if (!geometry)
        return EPROTO;
    Mapping mapped = Mapping::map_shared(cmd_fd, info.mmap_len, info.mmap_key);
    if (!mapped)
        return errno;
    ring = ProducerRing{static_cast<std::byte*>(mapped.data()), *geometry};
    mapping = std::move(mapped);
    return 0;
}

// Maps the rings of a new QP and fixes the limits posting enforces: what
// the kernel granted, never more than a slot holds. The caps reported to
// the caller are those limits.
int setup_queues(Qp& qp, int cmd_fd, const sroce_create_qp_resp& drv, ibv_qp_cap& cap) noexcept {
    if (drv.sq.mmap_len != 0) {
        const int err = map_queue(cmd_fd, drv.sq, SROCE_SEND_WQE_HDR_SIZE + sizeof(sroce_sge),
                                  qp.sq.mapping, qp.sq.ring);
        if (err != 0)
            return err;
        const std::uint32_t stride = qp.sq.ring.view().stride();
        qp.sq.limits = SendQueueLimits{
                .qp_type = qp.vqp.qp.qp_type,
                .max_sge = std::min(cap.max_send_sge, send_slot_sge_capacity(stride)),
                .max_inline = std::min(cap.max_inline_data, send_slot_inline_capacity(stride)),
                .stride = stride,
        };
        cap.max_send_sge = qp.sq.limits.max_sge;
        cap.max_inline_data = qp.sq.limits.max_inline;
        cap.max_send_wr = std::min(cap.max_send_wr, qp.sq.ring.view().num_entries());
    }
    if (drv.rq.mmap_len != 0) {
        const int err =
                map_queue(cmd_fd, drv.rq, SROCE_RECV_WQE_HDR_SIZE, qp.rq.mapping, qp.rq.ring);
        if (err != 0)
            return err;
        const std::uint32_t stride = qp.rq.ring.view().stride();
        qp.rq.limits = RecvQueueLimits{
                .max_sge = std::min(cap.max_recv_sge, recv_slot_sge_capacity(stride)),
                .stride = stride,
        };
        cap.max_recv_sge = qp.rq.limits.max_sge;
        cap.max_recv_wr = std::min(cap.max_recv_wr, qp.rq.ring.view().num_entries());
    } else if (has_own_recv_queue(qp.vqp.qp)) {
        return EPROTO; // no receive ring and no SRQ to receive into
    }
    return 0;
}

} // namespace

void init_doorbell(Qp& qp) noexcept {
    verbs_cmd_post_send& db = qp.doorbell;
    db.hdr.command = IB_USER_VERBS_CMD_POST_SEND;
    db.hdr.in_words = sizeof(db) / 4;
    db.hdr.out_words = sizeof(qp.doorbell_resp) / 4;
    db.core.response = reinterpret_cast<std::uintptr_t>(&qp.doorbell_resp);
    db.core.qp_handle = qp.vqp.qp.handle;
    db.core.wr_count = 0;
    db.core.sge_count = 0;
    // The kernel sizes its copy buffer by this even with no WRs.
    db.core.wqe_size = sizeof(ib_uverbs_send_wr);
}

// Tells the kernel there are new send WQEs. They are in the ring already,
// and another thread's doorbell or the kernel's error flush may take them
// at any time, so they cannot be reported as not posted: a doorbell that
// failed for want of memory (ib_uverbs allocates a buffer for every
// POST_SEND) is rung again, for up to a second, and any other refusal (EIO
// once the device is gone: its async event says so too) is kept in
// doorbell_error for the next post to return, which publishes nothing.
void ring_doorbell(Qp& qp) noexcept {
    constexpr int kMemoryRetries = 1000;
    constexpr timespec kMemoryWait{.tv_sec = 0, .tv_nsec = 1'000'000};
    const int fd = qp.vqp.qp.context->cmd_fd;
    int retries = kMemoryRetries;
    for (;;) {
        const ssize_t n = ::write(fd, &qp.doorbell, sizeof(qp.doorbell));
        if (n == static_cast<ssize_t>(sizeof(qp.doorbell)))
            return;
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == ENOMEM && retries-- > 0) {
            ::nanosleep(&kMemoryWait, nullptr);
            continue;
        }
        qp.doorbell_error.store(n < 0 ? errno : EIO, std::memory_order_release);
        return;
    }
}

// After send WQEs were published: the doorbell, unless the kernel's
// requester is draining the SQ and reads producer again before it stops.
// The fence orders the store-release of producer before the load of the
// flag, as the kernel orders its clear of the flag before its load of
// producer (sroce-abi.h): either this sees the flag clear and rings, or
// the kernel sees the WQEs.
void wake_send_queue(Qp& qp) noexcept {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    const std::uint32_t flags = qp.sq.ring.view().shared_flags().load(std::memory_order_relaxed);
    if ((flags & SROCE_RING_FLAG_SQ_DRAINING) == 0)
        ring_doorbell(qp);
}

// What a post that publishes nothing answers: a refused doorbell's errno.
int refused_doorbell(const Qp& qp) noexcept {
    return qp.doorbell_error.load(std::memory_order_acquire);
}

namespace {

// No creation flag is supported; an application may still name the field
// with no flag set, which the kernel command has no room for.
bool create_flags_supported(const ibv_qp_init_attr_ex& attr) noexcept {
    return (attr.comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) == 0 || attr.create_flags == 0;
}

ibv_qp* create_common(ibv_context* ctx, ibv_qp_init_attr_ex* attr) noexcept {
    if ((attr->comp_mask & ~kSupportedCreateMask) != 0 || !qp_type_supported(attr->qp_type) ||
        !create_flags_supported(*attr)) {
        set_errno(EOPNOTSUPP);
        return nullptr;
    }
    if (!owner_given(*attr)) {
        set_errno(EINVAL);
        return nullptr;
    }
    const bool extended = (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) != 0;
    if (extended && !send_ops_supported(attr->qp_type, attr->send_ops_flags)) {
        set_errno(EOPNOTSUPP);
        return nullptr;
    }
    auto* qp = new (std::nothrow) Qp{};
    if (qp == nullptr) {
        set_errno(ENOMEM);
        return nullptr;
    }
    verbs_cmd_create_qp cmd{};
    WithDriverData<ib_uverbs_create_qp_resp, sroce_create_qp_resp> resp;
    ibv_qp_init_attr_ex request = *attr;
    request.comp_mask &= ~static_cast<std::uint32_t>(IBV_QP_INIT_ATTR_CREATE_FLAGS);
    int err = ibv_cmd_create_qp_ex(ctx, &qp->vqp, &request, &cmd, sizeof(cmd), resp.core(),
                                   resp.size());
    if (err != 0) {
        delete qp;
        set_errno(err);
        return nullptr;
    }
    attr->cap = request.cap;
    err = setup_queues(*qp, ctx->cmd_fd, resp.driver(), attr->cap);
    if (err != 0) {
        (void)ibv_cmd_destroy_qp(&qp->vqp.qp);
        delete qp;
        set_errno(err);
        return nullptr;
    }
    init_doorbell(*qp);
    if (extended)
        (void)setup_qp_ex(*qp, attr->send_ops_flags);
    return &qp->vqp.qp;
}

bool can_post_send(int state) noexcept {
    return state != IBV_QPS_RESET && state != IBV_QPS_INIT && state != IBV_QPS_RTR;
}

} // namespace

ibv_qp* create_qp(ibv_pd* pd, ibv_qp_init_attr* attr) noexcept {
    ibv_qp_init_attr_ex ex{};
    ex.qp_context = attr->qp_context;
    ex.send_cq = attr->send_cq;
    ex.recv_cq = attr->recv_cq;
    ex.srq = attr->srq;
    ex.cap = attr->cap;
    ex.qp_type = attr->qp_type;
    ex.sq_sig_all = attr->sq_sig_all;
    ex.comp_mask = IBV_QP_INIT_ATTR_PD;
    ex.pd = pd;
    ibv_qp* qp = create_common(pd->context, &ex);
    if (qp != nullptr)
        attr->cap = ex.cap;
    return qp;
}

ibv_qp* create_qp_ex(ibv_context* ctx, ibv_qp_init_attr_ex* attr) noexcept {
    return create_common(ctx, attr);
}

namespace {

void discard_cqes(ibv_qp* qp) noexcept {
    if (qp->recv_cq != nullptr)
        discard_qp_cqes(qp->recv_cq, qp->qp_num);
    if (qp->send_cq != nullptr && qp->send_cq != qp->recv_cq)
        discard_qp_cqes(qp->send_cq, qp->qp_num);
}

} // namespace

int modify_qp(ibv_qp* ibqp, ibv_qp_attr* attr, int attr_mask) noexcept {
    verbs_cmd_modify_qp cmd{};
    const int err = ibv_cmd_modify_qp(ibqp, attr, attr_mask, &cmd, sizeof(cmd));
    if (err != 0 || (attr_mask & IBV_QP_STATE) == 0)
        return err;
    to_qp(ibqp)->state.store(attr->qp_state, std::memory_order_release);
    if (attr->qp_state == IBV_QPS_RESET)
        discard_cqes(ibqp);
    return 0;
}

int query_qp(ibv_qp* ibqp, ibv_qp_attr* attr, int attr_mask, ibv_qp_init_attr* init_attr) noexcept {
    verbs_cmd_query_qp cmd{};
    const int err = ibv_cmd_query_qp(ibqp, attr, attr_mask, init_attr, &cmd, sizeof(cmd));
    if (err != 0)
        return err;
    Qp* qp = to_qp(ibqp);
    qp->state.store(attr->qp_state, std::memory_order_release);
    // Report what posting enforces, as create did.
    if (qp->sq.ring.valid()) {
        init_attr->cap.max_send_sge = std::min(init_attr->cap.max_send_sge, qp->sq.limits.max_sge);
        init_attr->cap.max_inline_data =
                std::min(init_attr->cap.max_inline_data, qp->sq.limits.max_inline);
        attr->cap.max_send_sge = init_attr->cap.max_send_sge;
        attr->cap.max_inline_data = init_attr->cap.max_inline_data;
    }
    if (qp->rq.ring.valid()) {
        init_attr->cap.max_recv_sge = std::min(init_attr->cap.max_recv_sge, qp->rq.limits.max_sge);
        attr->cap.max_recv_sge = init_attr->cap.max_recv_sge;
    }
    return 0;
}

// Opens an XRC receive QP another process (or this one) created in a
// shared domain. The kernel keeps the QP; this handle has no rings.
ibv_qp* open_qp(ibv_context* ctx, ibv_qp_open_attr* attr) noexcept {
    if (attr->qp_type != IBV_QPT_XRC_RECV) {
        set_errno(EOPNOTSUPP);
        return nullptr;
    }
    auto* qp = new (std::nothrow) Qp{};
    if (qp == nullptr) {
        set_errno(ENOMEM);
        return nullptr;
    }
    verbs_cmd_open_qp cmd{};
    ib_uverbs_create_qp_resp resp{};
    const int err = ibv_cmd_open_qp(ctx, &qp->vqp, sizeof(qp->vqp), attr, &cmd, sizeof(cmd), &resp,
                                    sizeof(resp));
    if (err != 0) {
        delete qp;
        set_errno(err);
        return nullptr;
    }
    init_doorbell(*qp);
    return &qp->vqp.qp;
}

int destroy_qp(ibv_qp* ibqp) noexcept {
    const int err = ibv_cmd_destroy_qp(ibqp);
    if (err != 0)
        return err;
    discard_cqes(ibqp);
    delete to_qp(ibqp); // unmaps the rings
    return 0;
}

int post_send(ibv_qp* ibqp, ibv_send_wr* wr, ibv_send_wr** bad_wr) noexcept {
    Qp* qp = to_qp(ibqp);
    SendQueue& sq = qp->sq;
    if (!sq.ring.valid() || !can_post_send(qp->state.load(std::memory_order_acquire))) {
        *bad_wr = wr;
        return EINVAL;
    }
    if (const int db_err = refused_doorbell(*qp); db_err != 0) {
        *bad_wr = wr;
        return db_err;
    }

    int err = 0;
    std::uint32_t posted = 0;
    ibv_send_wr* w = wr;
    {
        const std::lock_guard guard{sq.lock};
        for (; w != nullptr; w = w->next) {
            if (sq.ring.free_slots() == 0) {
                err = ENOMEM; // like other providers: the SQ is full
                break;
            }
            const std::uint32_t ah_num = (sq.limits.qp_type == IBV_QPT_UD && w->wr.ud.ah != nullptr)
                                                 ? to_ah(w->wr.ud.ah)->ah_num
                                                 : 0;
            err = encode_send_wqe(*w, sq.limits, ah_num, sq.ring.next_slot());
            if (err != 0)
                break;
            sq.ring.advance();
            ++posted;
        }
        if (posted != 0)
            sq.ring.publish();
    }
    // The WQEs are posted whatever the doorbell's fate (see ring_doorbell).
    if (posted != 0)
        wake_send_queue(*qp);
    if (err != 0)
        *bad_wr = w;
    return err;
}

int bind_mw(ibv_qp* ibqp, ibv_mw* mw, ibv_mw_bind* mw_bind) noexcept {
    Qp* qp = to_qp(ibqp);
    SendQueue& sq = qp->sq;
    if (mw->type != IBV_MW_TYPE_1 || !sq.ring.valid() ||
        !opcode_supported(sq.limits.qp_type, IBV_WR_BIND_MW) ||
        !can_post_send(qp->state.load(std::memory_order_acquire)))
        return EINVAL;
    if (const int db_err = refused_doorbell(*qp); db_err != 0)
        return db_err;
    // A new key byte for every bind, so a stale rkey stops working.
    const std::uint32_t rkey = ibv_inc_rkey(mw->rkey);
    {
        const std::lock_guard guard{sq.lock};
        if (sq.ring.free_slots() == 0)
            return ENOMEM;
        const int err = encode_bind_mw_wqe(mw_bind->wr_id, mw_bind->send_flags, *mw, rkey,
                                           mw_bind->bind_info, sq.ring.next_slot());
        if (err != 0)
            return err;
        sq.ring.advance();
        sq.ring.publish();
    }
    // Posted: the bind may happen under the new key whatever the doorbell's
    // fate, so the application learns that key.
    wake_send_queue(*qp);
    mw->rkey = rkey;
    return 0;
}

int post_to_recv_queue(RecvQueue& rq, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) noexcept {
    int err = 0;
    std::uint32_t posted = 0;
    ibv_recv_wr* w = wr;
    const std::lock_guard guard{rq.lock};
    for (; w != nullptr; w = w->next) {
        if (rq.ring.free_slots() == 0) {
            err = ENOMEM;
            break;
        }
        err = encode_recv_wqe(*w, rq.limits, rq.ring.next_slot());
        if (err != 0)
            break;
        rq.ring.advance();
        ++posted;
    }
    if (posted != 0)
        rq.ring.publish();
    if (err != 0)
        *bad_wr = w;
    return err;
}

namespace {

// Is the QP in the error state, where the kernel flushes receive WQEs
// published after it got there only on a doorbell? Called after they were
// published: the fence orders that store-release before the load of the
// kernel's flag, as the kernel orders its store of the flag before its
// load of producer (sroce-abi.h), so a WQE the kernel's own flush missed
// is one this sees the flag for. The state this provider set covers
// kernels that publish no flag, when the application moved the QP there.
bool recv_in_error(Qp& qp) noexcept {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    const std::uint32_t flags = qp.rq.ring.view().shared_flags().load(std::memory_order_acquire);
    return (flags & SROCE_RING_FLAG_QP_ERR) != 0 ||
           qp.state.load(std::memory_order_acquire) == IBV_QPS_ERR;
}

} // namespace

int post_recv(ibv_qp* ibqp, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) noexcept {
    Qp* qp = to_qp(ibqp);
    // A QP on an SRQ has no receive ring of its own.
    if (!qp->rq.ring.valid() || qp->state.load(std::memory_order_acquire) == IBV_QPS_RESET) {
        *bad_wr = wr;
        return EINVAL;
    }
    const int err = post_to_recv_queue(qp->rq, wr, bad_wr);
    const bool posted = err == 0 ? wr != nullptr : *bad_wr != wr;
    // The doorbell's outcome is not the post's: the WRs are in the ring,
    // and a doorbell refused means the QP is gone, with its completions.
    if (posted && recv_in_error(*qp))
        ring_doorbell(*qp);
    return err;
}

} // namespace sroce
