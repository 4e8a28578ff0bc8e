// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "wqe.h"

#include <cerrno>
#include <cstring>
#include <limits>

namespace sroce {
namespace {

constexpr unsigned int kPassedSendFlags =
        IBV_SEND_FENCE | IBV_SEND_SIGNALED | IBV_SEND_SOLICITED | IBV_SEND_INLINE;

bool is_read_or_atomic(ibv_wr_opcode opcode) noexcept {
    return opcode == IBV_WR_RDMA_READ || opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
           opcode == IBV_WR_ATOMIC_FETCH_AND_ADD;
}

void put_sges(const ibv_sge* sg_list, std::uint32_t num_sge, std::byte* dst) noexcept {
    for (std::uint32_t i = 0; i < num_sge; ++i) {
        const sroce_sge sge{
                .addr = sg_list[i].addr, .length = sg_list[i].length, .lkey = sg_list[i].lkey};
        std::memcpy(dst + std::size_t{i} * sizeof(sge), &sge, sizeof(sge));
    }
}

// Gathers the SGEs' bytes into the slot; EINVAL if they exceed max_inline.
int put_inline(const ibv_send_wr& wr, std::uint32_t max_inline, std::byte* dst,
               std::uint32_t& total) noexcept {
    total = 0;
    for (int i = 0; i < wr.num_sge; ++i) {
        const ibv_sge& sge = wr.sg_list[i];
        if (sge.length > max_inline - total)
            return EINVAL;
        if (sge.length != 0) {
            // Verbs carries addresses as integers.
            // NOLINTNEXTLINE(performance-no-int-to-ptr)
            const auto* src = reinterpret_cast<const std::byte*>(sge.addr);
            std::memcpy(dst + total, src, sge.length);
        }
        total += sge.length;
    }
    return 0;
}

} // namespace

bool opcode_supported(ibv_qp_type qp_type, ibv_wr_opcode opcode) noexcept {
    switch (opcode) {
    case IBV_WR_SEND:
    case IBV_WR_SEND_WITH_IMM:
        return qp_type == IBV_QPT_RC || qp_type == IBV_QPT_UC || qp_type == IBV_QPT_UD ||
               qp_type == IBV_QPT_XRC_SEND;
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM:
    case IBV_WR_LOCAL_INV:
    case IBV_WR_BIND_MW:
        return qp_type == IBV_QPT_RC || qp_type == IBV_QPT_UC || qp_type == IBV_QPT_XRC_SEND;
    case IBV_WR_RDMA_READ:
    case IBV_WR_ATOMIC_CMP_AND_SWP:
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
    case IBV_WR_SEND_WITH_INV:
        return qp_type == IBV_QPT_RC || qp_type == IBV_QPT_XRC_SEND;
    default:
        return false;
    }
}

int encode_bind_mw_wqe(std::uint64_t wr_id, unsigned int send_flags, const ibv_mw& mw,
                       std::uint32_t new_rkey, const ibv_mw_bind_info& info,
                       std::byte* slot) noexcept {
    if (info.mr == nullptr && info.length != 0)
        return EINVAL;
    sroce_send_wqe hdr{};
    hdr.wr_id = wr_id;
    hdr.opcode = IBV_WR_BIND_MW;
    hdr.send_flags = send_flags & (IBV_SEND_FENCE | IBV_SEND_SIGNALED);
    hdr.wr.bind_mw.addr = info.addr;
    hdr.wr.bind_mw.length = info.length;
    hdr.wr.bind_mw.mr_lkey = info.mr != nullptr ? info.mr->lkey : 0;
    hdr.wr.bind_mw.mw_rkey = mw.rkey;
    hdr.wr.bind_mw.rkey = new_rkey;
    hdr.wr.bind_mw.access = static_cast<std::uint32_t>(info.mw_access_flags);
    std::memcpy(slot, &hdr, sizeof(hdr));
    return 0;
}

int encode_send_wqe(const ibv_send_wr& wr, const SendQueueLimits& limits, std::uint32_t ah_num,
                    std::byte* slot) noexcept {
    if (!opcode_supported(limits.qp_type, wr.opcode) || wr.num_sge < 0)
        return EINVAL;
    if (wr.opcode == IBV_WR_BIND_MW) {
        // Type 1 windows are bound with ibv_bind_mw only.
        const ibv_mw* mw = wr.bind_mw.mw;
        if (mw == nullptr || mw->type != IBV_MW_TYPE_2)
            return EINVAL;
        return encode_bind_mw_wqe(wr.wr_id, wr.send_flags, *mw, wr.bind_mw.rkey,
                                  wr.bind_mw.bind_info, slot);
    }
    if (wr.num_sge > 0 && wr.sg_list == nullptr)
        return EINVAL;
    if (limits.qp_type == IBV_QPT_UD && wr.wr.ud.ah == nullptr)
        return EINVAL;

    // INLINE only means something for data the requester sends; READ and
    // atomics always scatter into memory.
    unsigned int flags = wr.send_flags & kPassedSendFlags;
    if (is_read_or_atomic(wr.opcode))
        flags &= ~static_cast<unsigned int>(IBV_SEND_INLINE);

    sroce_send_wqe hdr{};
    hdr.wr_id = wr.wr_id;
    hdr.opcode = static_cast<std::uint32_t>(wr.opcode);
    hdr.send_flags = flags;
    // The target's SRQ; the kernel only passes it on (the target checks it).
    if (limits.qp_type == IBV_QPT_XRC_SEND)
        hdr.remote_srqn = wr.qp_type.xrc.remote_srqn;
    if (wr.opcode == IBV_WR_SEND_WITH_INV || wr.opcode == IBV_WR_LOCAL_INV) {
        hdr.ex.invalidate_rkey = wr.invalidate_rkey;
    } else {
        hdr.ex.imm_data = wr.imm_data;
    }
    if (wr.opcode == IBV_WR_LOCAL_INV) {
        // no data: whatever SGEs came along are ignored
        hdr.send_flags &= IBV_SEND_FENCE | IBV_SEND_SIGNALED;
        std::memcpy(slot, &hdr, sizeof(hdr));
        return 0;
    }

    switch (wr.opcode) {
    case IBV_WR_ATOMIC_CMP_AND_SWP:
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
        hdr.wr.atomic.remote_addr = wr.wr.atomic.remote_addr;
        hdr.wr.atomic.compare_add = wr.wr.atomic.compare_add;
        hdr.wr.atomic.swap = wr.wr.atomic.swap;
        hdr.wr.atomic.rkey = wr.wr.atomic.rkey;
        break;
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM:
    case IBV_WR_RDMA_READ:
        hdr.wr.rdma.remote_addr = wr.wr.rdma.remote_addr;
        hdr.wr.rdma.rkey = wr.wr.rdma.rkey;
        break;
    default:
        if (limits.qp_type == IBV_QPT_UD) {
            hdr.wr.ud.ah_num = ah_num;
            hdr.wr.ud.remote_qpn = wr.wr.ud.remote_qpn;
            hdr.wr.ud.remote_qkey = wr.wr.ud.remote_qkey;
        }
        break;
    }

    std::byte* const data = slot + SROCE_SEND_WQE_HDR_SIZE;
    const auto num_sge = static_cast<std::uint32_t>(wr.num_sge);
    if ((flags & IBV_SEND_INLINE) != 0) {
        std::uint32_t total = 0;
        const std::uint32_t room = send_slot_inline_capacity(limits.stride);
        const int err =
                put_inline(wr, limits.max_inline < room ? limits.max_inline : room, data, total);
        if (err != 0)
            return err;
        hdr.inline_len = total;
    } else {
        const std::uint32_t room = send_slot_sge_capacity(limits.stride);
        if (num_sge > limits.max_sge || num_sge > room)
            return EINVAL;
        put_sges(wr.sg_list, num_sge, data);
        hdr.num_sge = num_sge;
    }
    std::memcpy(slot, &hdr, sizeof(hdr));
    return 0;
}

int encode_atomic_write_wqe(std::uint64_t wr_id, unsigned int send_flags, std::uint32_t rkey,
                            std::uint64_t remote_addr, const void* value,
                            const SendQueueLimits& limits, std::byte* slot) noexcept {
    if (limits.qp_type != IBV_QPT_RC || value == nullptr)
        return EINVAL;
    sroce_send_wqe hdr{};
    hdr.wr_id = wr_id;
    hdr.opcode = IBV_WR_ATOMIC_WRITE;
    // The value travels in the WQE itself: INLINE means nothing here.
    hdr.send_flags = send_flags & kPassedSendFlags & ~static_cast<unsigned int>(IBV_SEND_INLINE);
    hdr.wr.atomic_write.remote_addr = remote_addr;
    hdr.wr.atomic_write.rkey = rkey;
    std::memcpy(hdr.wr.atomic_write.value, value, sizeof(hdr.wr.atomic_write.value));
    std::memcpy(slot, &hdr, sizeof(hdr));
    return 0;
}

#if SROCE_RDMA_CORE >= 45
static_assert(kWrFlush == IBV_WR_FLUSH && kFlushGlobal == IBV_FLUSH_GLOBAL &&
              kFlushPersistent == IBV_FLUSH_PERSISTENT && kFlushRange == IBV_FLUSH_RANGE &&
              kFlushMr == IBV_FLUSH_MR);
#endif

int encode_flush_wqe(std::uint64_t wr_id, unsigned int send_flags, const FlushTarget& target,
                     const SendQueueLimits& limits, std::byte* slot) noexcept {
    constexpr std::uint8_t known_types = kFlushGlobal | kFlushPersistent;
    if (limits.qp_type != IBV_QPT_RC || target.type == 0 || (target.type & ~known_types) != 0 ||
        target.level > kFlushMr || target.length > std::numeric_limits<std::uint32_t>::max())
        return EINVAL;
    sroce_send_wqe hdr{};
    hdr.wr_id = wr_id;
    hdr.opcode = kWrFlush;
    hdr.send_flags = send_flags & kPassedSendFlags & ~static_cast<unsigned int>(IBV_SEND_INLINE);
    hdr.wr.flush.remote_addr = target.remote_addr;
    hdr.wr.flush.length = target.length;
    hdr.wr.flush.rkey = target.rkey;
    hdr.wr.flush.type = target.type;
    hdr.wr.flush.level = target.level;
    std::memcpy(slot, &hdr, sizeof(hdr));
    return 0;
}

int encode_recv_wqe(const ibv_recv_wr& wr, const RecvQueueLimits& limits,
                    std::byte* slot) noexcept {
    if (wr.num_sge < 0 || (wr.num_sge > 0 && wr.sg_list == nullptr))
        return EINVAL;
    const auto num_sge = static_cast<std::uint32_t>(wr.num_sge);
    if (num_sge > limits.max_sge || num_sge > recv_slot_sge_capacity(limits.stride))
        return EINVAL;
    const sroce_recv_wqe hdr{.wr_id = wr.wr_id, .num_sge = num_sge, .reserved = 0};
    std::memcpy(slot, &hdr, sizeof(hdr));
    put_sges(wr.sg_list, num_sge, slot + SROCE_RECV_WQE_HDR_SIZE);
    return 0;
}

void decode_cqe(const std::byte* slot, ibv_wc& wc) noexcept {
    sroce_cqe cqe{};
    std::memcpy(&cqe, slot, sizeof(cqe));
    wc.wr_id = cqe.wr_id;
    wc.status = static_cast<ibv_wc_status>(cqe.status);
    wc.opcode = static_cast<ibv_wc_opcode>(cqe.opcode);
    wc.vendor_err = cqe.vendor_err;
    wc.byte_len = cqe.byte_len;
    if ((cqe.wc_flags & IBV_WC_WITH_INV) != 0) {
        wc.invalidated_rkey = cqe.ex.invalidated_rkey;
    } else {
        wc.imm_data = cqe.ex.imm_data;
    }
    wc.qp_num = cqe.qp_num;
    wc.src_qp = cqe.src_qp;
    wc.wc_flags = cqe.wc_flags;
    wc.pkey_index = cqe.pkey_index;
    wc.slid = 0;
    wc.sl = cqe.sl;
    wc.dlid_path_bits = 0;
}

} // namespace sroce
