// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// Translation between libibverbs' work requests / completions and the ring
// formats of include/uapi/rdma/sroce-abi.h. Pure functions over a slot's
// bytes: no locking, no system calls.
#pragma once

#include <infiniband/verbs.h>
#include <rdma/sroce-abi.h>

#include <cstddef>
#include <cstdint>

namespace sroce {

// The ring formats this code writes and reads (sroce-abi.h).
static_assert(sizeof(sroce_send_wqe) == SROCE_SEND_WQE_HDR_SIZE);
static_assert(sizeof(sroce_recv_wqe) == SROCE_RECV_WQE_HDR_SIZE);
static_assert(sizeof(sroce_sge) == 16);
static_assert(sizeof(sroce_cqe) == 64);
static_assert(offsetof(sroce_send_wqe, wr) == 32);
static_assert(offsetof(sroce_send_wqe, wr.atomic_write.rkey) == 40);
static_assert(offsetof(sroce_send_wqe, wr.atomic_write.value) == 48);
static_assert(offsetof(sroce_send_wqe, wr.flush.length) == 40);
static_assert(offsetof(sroce_send_wqe, wr.flush.rkey) == 48);
static_assert(offsetof(sroce_send_wqe, wr.flush.type) == 52);
static_assert(offsetof(sroce_send_wqe, wr.flush.level) == 53);

// What the send queue was created with (the kernel's granted caps, bounded
// by the slot size).
struct SendQueueLimits {
    ibv_qp_type qp_type = IBV_QPT_RC;
    std::uint32_t max_sge = 0;
    std::uint32_t max_inline = 0;
    std::uint32_t stride = 0;
};

struct RecvQueueLimits {
    std::uint32_t max_sge = 0;
    std::uint32_t stride = 0;
};

// Largest SGE count / inline size a slot of `stride` bytes can carry.
constexpr std::uint32_t send_slot_sge_capacity(std::uint32_t stride) noexcept {
    return stride < SROCE_SEND_WQE_HDR_SIZE
                   ? 0
                   : (stride - SROCE_SEND_WQE_HDR_SIZE) / sizeof(sroce_sge);
}
constexpr std::uint32_t send_slot_inline_capacity(std::uint32_t stride) noexcept {
    return stride < SROCE_SEND_WQE_HDR_SIZE ? 0 : stride - SROCE_SEND_WQE_HDR_SIZE;
}
constexpr std::uint32_t recv_slot_sge_capacity(std::uint32_t stride) noexcept {
    return stride < SROCE_RECV_WQE_HDR_SIZE
                   ? 0
                   : (stride - SROCE_RECV_WQE_HDR_SIZE) / sizeof(sroce_sge);
}

// Whether a QP of this type can carry this opcode (what the kernel
// executes).
bool opcode_supported(ibv_qp_type qp_type, ibv_wr_opcode opcode) noexcept;

// Writes one send WQE into `slot` (limits.stride bytes). ah_num is the
// kernel's handle of wr.wr.ud.ah for UD QPs, ignored otherwise. Returns 0,
// or EINVAL for a request the QP cannot carry (opcode, SGE count, inline
// size, missing AH); the slot may then hold garbage but is not published.
int encode_send_wqe(const ibv_send_wr& wr, const SendQueueLimits& limits, std::uint32_t ah_num,
                    std::byte* slot) noexcept;

// Writes one ATOMIC WRITE WQE (ibv_wr_atomic_write: RC only, no data list):
// the 8 bytes at `value` go to remote_addr as they are. Returns 0, or
// EINVAL when the QP is not RC.
int encode_atomic_write_wqe(std::uint64_t wr_id, unsigned int send_flags, std::uint32_t rkey,
                            std::uint64_t remote_addr, const void* value,
                            const SendQueueLimits& limits, std::byte* slot) noexcept;

// FLUSH (IBTA 1.5 annex A19), posted with ibv_wr_flush() from rdma-core 45
// on: its opcode and the type and level arguments, with libibverbs' values
// (IBV_WR_FLUSH, IBV_FLUSH_*), which rdma-core 44's headers do not have.
inline constexpr std::uint32_t kWrFlush = 14;
inline constexpr std::uint8_t kFlushGlobal = 1U << 0;
inline constexpr std::uint8_t kFlushPersistent = 1U << 1;
inline constexpr std::uint8_t kFlushRange = 0;
inline constexpr std::uint8_t kFlushMr = 1;

struct FlushTarget {
    std::uint32_t rkey = 0;
    std::uint64_t remote_addr = 0;
    std::size_t length = 0;
    std::uint8_t type = 0;  // kFlushGlobal and/or kFlushPersistent
    std::uint8_t level = 0; // kFlushRange or kFlushMr
};

// Writes one FLUSH WQE (RC only, no data list). Returns 0, or EINVAL when
// the QP is not RC, the type is empty or has unknown bits, the level is
// unknown or the length exceeds 2^32 - 1 (a FLUSH's DMA length field).
int encode_flush_wqe(std::uint64_t wr_id, unsigned int send_flags, const FlushTarget& target,
                     const SendQueueLimits& limits, std::byte* slot) noexcept;

// Writes a memory window bind WQE (opcode IBV_WR_BIND_MW) giving `mw` the
// key `new_rkey`: ibv_bind_mw for type 1 windows, IBV_WR_BIND_MW WRs for
// type 2. 0, or EINVAL for a range without an MR.
int encode_bind_mw_wqe(std::uint64_t wr_id, unsigned int send_flags, const ibv_mw& mw,
                       std::uint32_t new_rkey, const ibv_mw_bind_info& info,
                       std::byte* slot) noexcept;

// Writes one receive WQE; 0 or EINVAL (too many SGEs).
int encode_recv_wqe(const ibv_recv_wr& wr, const RecvQueueLimits& limits, std::byte* slot) noexcept;

// Fills a work completion from a CQE slot.
void decode_cqe(const std::byte* slot, ibv_wc& wc) noexcept;

} // namespace sroce
