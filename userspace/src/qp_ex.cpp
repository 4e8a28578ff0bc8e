// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// The extended send API (ibv_wr_start ... ibv_wr_complete) of QPs created
// with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS.
//
// wr_start takes the SQ lock and wr_complete or wr_abort releases it, as
// the API makes the sequence one critical section. Each WR is an opcode
// call (staged), optionally wr_set_ud_addr, then one data call, which
// encodes the WR into the next free slot with the same encoder as
// post_send. Nothing is visible to the kernel until wr_complete publishes
// the batch and rings the doorbell; wr_abort and errors simply do not
// advance the ring.
#include "provider.h"

#include <array>
#include <cstdint>
#include <limits>

namespace sroce {
namespace {

// The placement extensions (IBTA annex A19). ibv_wr_flush() arrived in
// rdma-core 45: built against 44, ibv_qp_ex has no wr_flush slot and FLUSH
// cannot be offered.
constexpr std::uint64_t kPlacementOps = IBV_QP_EX_WITH_ATOMIC_WRITE
#if SROCE_RDMA_CORE >= 45
                                        | IBV_QP_EX_WITH_FLUSH
#endif
        ;
constexpr std::uint64_t kRcSendOps =
        IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_SEND |
        IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_RDMA_READ |
        IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD |
        IBV_QP_EX_WITH_SEND_WITH_INV | IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV |
        kPlacementOps;
constexpr std::uint64_t kUcSendOps =
        IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_SEND |
        IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV;
constexpr std::uint64_t kUdSendOps = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;
// XRC has RC's operations but for the placement extensions (no XRC opcodes).
constexpr std::uint64_t kXrcSendOps = kRcSendOps & ~kPlacementOps;

// Inline data lists are gathered through an SGE array of this many entries.
constexpr std::size_t kMaxInlineBufs = 16;

Qp& qp_of(ibv_qp_ex* qpx) noexcept {
    // ibv_qp_ex shares its address with verbs_qp (a union), and verbs_qp is
    // the first member of Qp.
    return *reinterpret_cast<Qp*>(qpx);
}

void fail(WrBatch& b, int err) noexcept {
    if (b.err == 0)
        b.err = err;
}

// Starts a WR: checks room and stages its header fields.
ibv_send_wr* begin(ibv_qp_ex* qpx, ibv_wr_opcode opcode) noexcept {
    Qp& qp = qp_of(qpx);
    WrBatch& b = qp.batch;
    if (b.err != 0)
        return nullptr;
    if (b.pending) { // the previous WR never got its data
        fail(b, EINVAL);
        return nullptr;
    }
    if (qp.sq.ring.free_slots(b.count + 1) < b.count + 1) {
        fail(b, ENOMEM);
        return nullptr;
    }
    b.staged = ibv_send_wr{};
    b.staged.wr_id = qpx->wr_id;
    b.staged.opcode = opcode;
    b.staged.send_flags = qpx->wr_flags;
    b.ah_num = 0;
    b.pending = true;
    return &b.staged;
}

// Finishes the pending WR with its data: encodes it into the next slot.
void finish(ibv_qp_ex* qpx, ibv_sge* sges, std::size_t num_sge, bool inline_data) noexcept {
    Qp& qp = qp_of(qpx);
    WrBatch& b = qp.batch;
    if (b.err != 0)
        return;
    if (!b.pending || num_sge > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
        fail(b, EINVAL);
        return;
    }
    b.pending = false;
    ibv_send_wr& wr = b.staged;
    wr.sg_list = sges;
    wr.num_sge = static_cast<int>(num_sge);
    if (inline_data)
        wr.send_flags |= IBV_SEND_INLINE;
    const int err = encode_send_wqe(wr, qp.sq.limits, b.ah_num, qp.sq.ring.next_slot(b.count));
    if (err != 0) {
        fail(b, err);
        return;
    }
    ++b.count;
}

void wr_start(ibv_qp_ex* qpx) noexcept {
    Qp& qp = qp_of(qpx);
    qp.sq.lock.lock();
    qp.batch = WrBatch{};
    if (!qp.sq.ring.valid())
        qp.batch.err = EINVAL;
    const int state = qp.state.load(std::memory_order_acquire);
    if (state == IBV_QPS_RESET || state == IBV_QPS_INIT || state == IBV_QPS_RTR)
        qp.batch.err = EINVAL;
    if (qp.batch.err == 0)
        qp.batch.err = refused_doorbell(qp);
}

int wr_complete(ibv_qp_ex* qpx) noexcept {
    Qp& qp = qp_of(qpx);
    WrBatch& b = qp.batch;
    if (b.pending)
        fail(b, EINVAL);
    const int err = b.err;
    const std::uint32_t count = err == 0 ? b.count : 0;
    if (count != 0) {
        qp.sq.ring.advance(count);
        qp.sq.ring.publish();
    }
    b = WrBatch{};
    qp.sq.lock.unlock();
    // The batch is posted whatever the doorbell's fate (see ring_doorbell).
    if (count != 0)
        wake_send_queue(qp);
    return err;
}

void wr_abort(ibv_qp_ex* qpx) noexcept {
    Qp& qp = qp_of(qpx);
    qp.batch = WrBatch{};
    qp.sq.lock.unlock();
}

void wr_send(ibv_qp_ex* qpx) noexcept {
    (void)begin(qpx, IBV_WR_SEND);
}

void wr_send_imm(ibv_qp_ex* qpx, __be32 imm_data) noexcept {
    if (ibv_send_wr* wr = begin(qpx, IBV_WR_SEND_WITH_IMM))
        wr->imm_data = imm_data;
}

void wr_send_inv(ibv_qp_ex* qpx, std::uint32_t invalidate_rkey) noexcept {
    if (ibv_send_wr* wr = begin(qpx, IBV_WR_SEND_WITH_INV))
        wr->invalidate_rkey = invalidate_rkey;
}

void rdma(ibv_qp_ex* qpx, ibv_wr_opcode opcode, std::uint32_t rkey, std::uint64_t remote_addr,
          __be32 imm_data) noexcept {
    if (ibv_send_wr* wr = begin(qpx, opcode)) {
        wr->wr.rdma.rkey = rkey;
        wr->wr.rdma.remote_addr = remote_addr;
        wr->imm_data = imm_data;
    }
}

void wr_rdma_write(ibv_qp_ex* qpx, std::uint32_t rkey, std::uint64_t remote_addr) noexcept {
    rdma(qpx, IBV_WR_RDMA_WRITE, rkey, remote_addr, 0);
}

void wr_rdma_write_imm(ibv_qp_ex* qpx, std::uint32_t rkey, std::uint64_t remote_addr,
                       __be32 imm_data) noexcept {
    rdma(qpx, IBV_WR_RDMA_WRITE_WITH_IMM, rkey, remote_addr, imm_data);
}

void wr_rdma_read(ibv_qp_ex* qpx, std::uint32_t rkey, std::uint64_t remote_addr) noexcept {
    rdma(qpx, IBV_WR_RDMA_READ, rkey, remote_addr, 0);
}

void atomic(ibv_qp_ex* qpx, ibv_wr_opcode opcode, std::uint32_t rkey, std::uint64_t remote_addr,
            std::uint64_t compare_add, std::uint64_t swap) noexcept {
    if (ibv_send_wr* wr = begin(qpx, opcode)) {
        wr->wr.atomic.rkey = rkey;
        wr->wr.atomic.remote_addr = remote_addr;
        wr->wr.atomic.compare_add = compare_add;
        wr->wr.atomic.swap = swap;
    }
}

void wr_atomic_cmp_swp(ibv_qp_ex* qpx, std::uint32_t rkey, std::uint64_t remote_addr,
                       std::uint64_t compare, std::uint64_t swap) noexcept {
    atomic(qpx, IBV_WR_ATOMIC_CMP_AND_SWP, rkey, remote_addr, compare, swap);
}

void wr_atomic_fetch_add(ibv_qp_ex* qpx, std::uint32_t rkey, std::uint64_t remote_addr,
                         std::uint64_t add) noexcept {
    atomic(qpx, IBV_WR_ATOMIC_FETCH_AND_ADD, rkey, remote_addr, add, 0);
}

// A complete WR, no data call following: encode(limits, slot) writes it
// into the next free slot.
template <typename Encode>
void whole_wr(ibv_qp_ex* qpx, ibv_wr_opcode opcode, Encode encode) noexcept {
    Qp& qp = qp_of(qpx);
    WrBatch& b = qp.batch;
    if (begin(qpx, opcode) == nullptr)
        return;
    b.pending = false;
    const int err = encode(qp.sq.limits, qp.sq.ring.next_slot(b.count));
    if (err != 0) {
        fail(b, err);
        return;
    }
    ++b.count;
}

void wr_atomic_write(ibv_qp_ex* qpx, std::uint32_t rkey, std::uint64_t remote_addr,
                     const void* atomic_wr) noexcept {
    whole_wr(qpx, IBV_WR_ATOMIC_WRITE, [&](const SendQueueLimits& limits, std::byte* slot) {
        return encode_atomic_write_wqe(qpx->wr_id, qpx->wr_flags, rkey, remote_addr, atomic_wr,
                                       limits, slot);
    });
}

#if SROCE_RDMA_CORE >= 45
void wr_flush(ibv_qp_ex* qpx, std::uint32_t rkey, std::uint64_t remote_addr, std::size_t len,
              std::uint8_t type, std::uint8_t level) noexcept {
    const FlushTarget target{
            .rkey = rkey, .remote_addr = remote_addr, .length = len, .type = type, .level = level};
    whole_wr(qpx, IBV_WR_FLUSH, [&](const SendQueueLimits& limits, std::byte* slot) {
        return encode_flush_wqe(qpx->wr_id, qpx->wr_flags, target, limits, slot);
    });
}
#endif

// Binds and local invalidations carry no data: the opcode call is the
// whole WR.
void wr_bind_mw(ibv_qp_ex* qpx, ibv_mw* mw, std::uint32_t rkey,
                const ibv_mw_bind_info* info) noexcept {
    if (ibv_send_wr* wr = begin(qpx, IBV_WR_BIND_MW)) {
        if (info == nullptr) {
            fail(qp_of(qpx).batch, EINVAL);
            return;
        }
        wr->bind_mw.mw = mw;
        wr->bind_mw.rkey = rkey;
        wr->bind_mw.bind_info = *info;
        finish(qpx, nullptr, 0, false);
    }
}

void wr_local_inv(ibv_qp_ex* qpx, std::uint32_t invalidate_rkey) noexcept {
    if (ibv_send_wr* wr = begin(qpx, IBV_WR_LOCAL_INV)) {
        wr->invalidate_rkey = invalidate_rkey;
        finish(qpx, nullptr, 0, false);
    }
}

void wr_set_ud_addr(ibv_qp_ex* qpx, ibv_ah* ah, std::uint32_t remote_qpn,
                    std::uint32_t remote_qkey) noexcept {
    WrBatch& b = qp_of(qpx).batch;
    if (b.err != 0)
        return;
    if (!b.pending || ah == nullptr) {
        fail(b, EINVAL);
        return;
    }
    b.staged.wr.ud.ah = ah;
    b.staged.wr.ud.remote_qpn = remote_qpn;
    b.staged.wr.ud.remote_qkey = remote_qkey;
    b.ah_num = to_ah(ah)->ah_num;
}

void wr_set_xrc_srqn(ibv_qp_ex* qpx, std::uint32_t remote_srqn) noexcept {
    WrBatch& b = qp_of(qpx).batch;
    if (b.err != 0)
        return;
    if (!b.pending) {
        fail(b, EINVAL);
        return;
    }
    b.staged.qp_type.xrc.remote_srqn = remote_srqn;
}

void wr_set_sge(ibv_qp_ex* qpx, std::uint32_t lkey, std::uint64_t addr,
                std::uint32_t length) noexcept {
    ibv_sge sge{.addr = addr, .length = length, .lkey = lkey};
    finish(qpx, &sge, 1, false);
}

void wr_set_sge_list(ibv_qp_ex* qpx, std::size_t num_sge, const ibv_sge* sg_list) noexcept {
    // The encoder only reads the list; ibv_send_wr merely lacks the const.
    finish(qpx, const_cast<ibv_sge*>(sg_list), // NOLINT(cppcoreguidelines-pro-type-const-cast)
           num_sge, false);
}

void wr_set_inline_data(ibv_qp_ex* qpx, void* addr, std::size_t length) noexcept {
    if (length > std::numeric_limits<std::uint32_t>::max()) {
        fail(qp_of(qpx).batch, EINVAL);
        return;
    }
    ibv_sge sge{.addr = reinterpret_cast<std::uintptr_t>(addr),
                .length = static_cast<std::uint32_t>(length),
                .lkey = 0};
    finish(qpx, &sge, 1, true);
}

void wr_set_inline_data_list(ibv_qp_ex* qpx, std::size_t num_buf,
                             const ibv_data_buf* buf_list) noexcept {
    std::array<ibv_sge, kMaxInlineBufs> sges{};
    if (num_buf > sges.size()) {
        fail(qp_of(qpx).batch, EINVAL);
        return;
    }
    for (std::size_t i = 0; i < num_buf; ++i) {
        if (buf_list[i].length > std::numeric_limits<std::uint32_t>::max()) {
            fail(qp_of(qpx).batch, EINVAL);
            return;
        }
        sges[i] = ibv_sge{.addr = reinterpret_cast<std::uintptr_t>(buf_list[i].addr),
                          .length = static_cast<std::uint32_t>(buf_list[i].length),
                          .lkey = 0};
    }
    finish(qpx, sges.data(), num_buf, true);
}

} // namespace

bool send_ops_supported(ibv_qp_type qp_type, std::uint64_t send_ops_flags) noexcept {
    std::uint64_t supported = 0;
    switch (qp_type) {
    case IBV_QPT_RC:
        supported = kRcSendOps;
        break;
    case IBV_QPT_UC:
        supported = kUcSendOps;
        break;
    case IBV_QPT_UD:
        supported = kUdSendOps;
        break;
    case IBV_QPT_XRC_SEND:
        supported = kXrcSendOps;
        break;
    default:
        return false;
    }
    return (send_ops_flags & ~supported) == 0;
}

bool setup_qp_ex(Qp& qp, std::uint64_t send_ops_flags) noexcept {
    if (!send_ops_supported(qp.vqp.qp.qp_type, send_ops_flags))
        return false;
    ibv_qp_ex& qpx = qp.vqp.qp_ex;
    qpx.wr_start = wr_start;
    qpx.wr_complete = wr_complete;
    qpx.wr_abort = wr_abort;
    qpx.wr_send = wr_send;
    qpx.wr_send_imm = wr_send_imm;
    qpx.wr_send_inv = wr_send_inv;
    qpx.wr_rdma_write = wr_rdma_write;
    qpx.wr_rdma_write_imm = wr_rdma_write_imm;
    qpx.wr_rdma_read = wr_rdma_read;
    qpx.wr_atomic_cmp_swp = wr_atomic_cmp_swp;
    qpx.wr_atomic_fetch_add = wr_atomic_fetch_add;
    qpx.wr_atomic_write = wr_atomic_write;
#if SROCE_RDMA_CORE >= 45
    qpx.wr_flush = wr_flush;
#endif
    qpx.wr_bind_mw = wr_bind_mw;
    qpx.wr_local_inv = wr_local_inv;
    qpx.wr_set_ud_addr = wr_set_ud_addr;
    qpx.wr_set_xrc_srqn = wr_set_xrc_srqn;
    qpx.wr_set_sge = wr_set_sge;
    qpx.wr_set_sge_list = wr_set_sge_list;
    qpx.wr_set_inline_data = wr_set_inline_data;
    qpx.wr_set_inline_data_list = wr_set_inline_data_list;
    qp.vqp.comp_mask |= VERBS_QP_EX;
    return true;
}

} // namespace sroce
