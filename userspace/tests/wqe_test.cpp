// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// Work request encoding and completion decoding against the ring formats
// of sroce-abi.h.
#include "wqe.h"

#include <arpa/inet.h>
#include <array>
#include <cerrno>
#include <cstring>
#include <numeric>
#include <vector>

#include <gtest/gtest.h>

namespace sroce {
namespace {

struct DecodedSend {
    sroce_send_wqe hdr{};
    std::vector<sroce_sge> sges;
    std::vector<std::byte> inline_data;
};

DecodedSend decode_send(const std::vector<std::byte>& slot) {
    DecodedSend d;
    std::memcpy(&d.hdr, slot.data(), sizeof(d.hdr));
    d.sges.resize(d.hdr.num_sge);
    std::memcpy(d.sges.data(), slot.data() + SROCE_SEND_WQE_HDR_SIZE,
                d.hdr.num_sge * sizeof(sroce_sge));
    d.inline_data.assign(slot.begin() + SROCE_SEND_WQE_HDR_SIZE,
                         slot.begin() + SROCE_SEND_WQE_HDR_SIZE + d.hdr.inline_len);
    return d;
}

class SendEncoding : public ::testing::Test {
protected:
    // A slot with room for 4 SGEs or 64 inline bytes, as the kernel sizes
    // it for max_send_sge 4 / max_inline_data 64.
    SendQueueLimits limits{IBV_QPT_RC, 4, 64, 128};
    std::vector<std::byte> slot = std::vector<std::byte>(128, std::byte{0xee});
    std::array<ibv_sge, 8> sges{};
    ibv_send_wr wr{};

    void SetUp() override {
        for (std::uint32_t i = 0; i < sges.size(); ++i) {
            sges[i] =
                    ibv_sge{.addr = 0x10000ULL * (i + 1), .length = 100U + i, .lkey = 0xab00U + i};
        }
        wr.wr_id = 0x1122334455667788ULL;
        wr.sg_list = sges.data();
        wr.num_sge = 2;
        wr.opcode = IBV_WR_SEND;
        wr.send_flags = IBV_SEND_SIGNALED;
    }
    int encode(std::uint32_t ah_num = 0) {
        return encode_send_wqe(wr, limits, ah_num, slot.data());
    }
};

TEST_F(SendEncoding, SendWithSges) {
    ASSERT_EQ(encode(), 0);
    const auto d = decode_send(slot);
    EXPECT_EQ(d.hdr.wr_id, wr.wr_id);
    EXPECT_EQ(d.hdr.opcode, static_cast<std::uint32_t>(IBV_WR_SEND));
    EXPECT_EQ(d.hdr.send_flags, static_cast<std::uint32_t>(IBV_SEND_SIGNALED));
    EXPECT_EQ(d.hdr.num_sge, 2U);
    EXPECT_EQ(d.hdr.inline_len, 0U);
    ASSERT_EQ(d.sges.size(), 2U);
    for (std::size_t i = 0; i < 2; ++i) {
        EXPECT_EQ(d.sges[i].addr, sges[i].addr);
        EXPECT_EQ(d.sges[i].length, sges[i].length);
        EXPECT_EQ(d.sges[i].lkey, sges[i].lkey);
    }
}

TEST_F(SendEncoding, ReservedFieldsAreZero) {
    ASSERT_EQ(encode(), 0);
    const auto d = decode_send(slot);
    EXPECT_EQ(d.hdr.remote_srqn, 0U);
    EXPECT_EQ(d.hdr.wr.atomic.reserved, 0U);
    EXPECT_EQ(d.hdr.wr.atomic.remote_addr, 0U) << "unused union members are zeroed";
}

TEST_F(SendEncoding, RcIgnoresTheXrcSrqNumber) {
    wr.qp_type.xrc.remote_srqn = 0x123456;
    ASSERT_EQ(encode(), 0);
    EXPECT_EQ(decode_send(slot).hdr.remote_srqn, 0U);
}

TEST_F(SendEncoding, XrcCarriesTheRemoteSrqNumber) {
    limits.qp_type = IBV_QPT_XRC_SEND;
    wr.opcode = IBV_WR_RDMA_READ;
    wr.qp_type.xrc.remote_srqn = 0x123456;
    wr.wr.rdma.remote_addr = 0x1000;
    wr.wr.rdma.rkey = 0x77;
    ASSERT_EQ(encode(), 0);
    const auto d = decode_send(slot);
    EXPECT_EQ(d.hdr.remote_srqn, 0x123456U);
    EXPECT_EQ(d.hdr.wr.rdma.rkey, 0x77U);
}

TEST_F(SendEncoding, XrcHasNoUdOrAtomicWrite) {
    EXPECT_TRUE(opcode_supported(IBV_QPT_XRC_SEND, IBV_WR_ATOMIC_FETCH_AND_ADD));
    EXPECT_TRUE(opcode_supported(IBV_QPT_XRC_SEND, IBV_WR_SEND_WITH_INV));
    EXPECT_FALSE(opcode_supported(IBV_QPT_XRC_RECV, IBV_WR_SEND));
    EXPECT_FALSE(opcode_supported(IBV_QPT_XRC_SEND, IBV_WR_ATOMIC_WRITE));
}

TEST_F(SendEncoding, ZeroSgeSend) {
    wr.num_sge = 0;
    wr.sg_list = nullptr;
    ASSERT_EQ(encode(), 0);
    EXPECT_EQ(decode_send(slot).hdr.num_sge, 0U);
}

TEST_F(SendEncoding, RdmaWriteWithImmediate) {
    wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
    wr.imm_data = htonl(0xcafef00d);
    wr.wr.rdma.remote_addr = 0x7f0000001234ULL;
    wr.wr.rdma.rkey = 0x5a5a;
    ASSERT_EQ(encode(), 0);
    const auto d = decode_send(slot);
    EXPECT_EQ(d.hdr.opcode, static_cast<std::uint32_t>(IBV_WR_RDMA_WRITE_WITH_IMM));
    EXPECT_EQ(d.hdr.ex.imm_data, htonl(0xcafef00d));
    EXPECT_EQ(d.hdr.wr.rdma.remote_addr, 0x7f0000001234ULL);
    EXPECT_EQ(d.hdr.wr.rdma.rkey, 0x5a5aU);
}

TEST_F(SendEncoding, AtomicsCarryTheirOperands) {
    sges[0].length = 8;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
    wr.wr.atomic.remote_addr = 0x1000;
    wr.wr.atomic.compare_add = 0x1111111111111111ULL;
    wr.wr.atomic.swap = 0x2222222222222222ULL;
    wr.wr.atomic.rkey = 0x77;
    ASSERT_EQ(encode(), 0);
    auto d = decode_send(slot);
    EXPECT_EQ(d.hdr.wr.atomic.remote_addr, 0x1000U);
    EXPECT_EQ(d.hdr.wr.atomic.compare_add, 0x1111111111111111ULL);
    EXPECT_EQ(d.hdr.wr.atomic.swap, 0x2222222222222222ULL);
    EXPECT_EQ(d.hdr.wr.atomic.rkey, 0x77U);

    wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
    ASSERT_EQ(encode(), 0);
    d = decode_send(slot);
    EXPECT_EQ(d.hdr.opcode, static_cast<std::uint32_t>(IBV_WR_ATOMIC_FETCH_AND_ADD));
    EXPECT_EQ(d.hdr.wr.atomic.compare_add, 0x1111111111111111ULL);
}

TEST_F(SendEncoding, SendWithInvalidateCarriesTheRkey) {
    wr.opcode = IBV_WR_SEND_WITH_INV;
    wr.invalidate_rkey = 0xdeadbeef;
    ASSERT_EQ(encode(), 0);
    EXPECT_EQ(decode_send(slot).hdr.ex.invalidate_rkey, 0xdeadbeefU);
}

TEST_F(SendEncoding, LocalInvCarriesTheRkeyAndNoData) {
    wr.opcode = IBV_WR_LOCAL_INV;
    wr.invalidate_rkey = 0x123456ab;
    wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE | IBV_SEND_SOLICITED;
    ASSERT_EQ(encode(), 0);
    const DecodedSend d = decode_send(slot);
    EXPECT_EQ(d.hdr.opcode, static_cast<std::uint32_t>(IBV_WR_LOCAL_INV));
    EXPECT_EQ(d.hdr.ex.invalidate_rkey, 0x123456abU);
    EXPECT_EQ(d.hdr.num_sge, 0U);
    EXPECT_EQ(d.hdr.inline_len, 0U);
    EXPECT_EQ(d.hdr.send_flags, static_cast<std::uint32_t>(IBV_SEND_SIGNALED));
}

TEST_F(SendEncoding, BindMwCarriesWindowRangeAndKeys) {
    ibv_mr mr{};
    mr.lkey = 0xabcdef01;
    ibv_mw mw{};
    mw.rkey = 0x00123400;
    mw.type = IBV_MW_TYPE_2;
    wr.opcode = IBV_WR_BIND_MW;
    wr.bind_mw.mw = &mw;
    wr.bind_mw.rkey = ibv_inc_rkey(mw.rkey);
    wr.bind_mw.bind_info =
            ibv_mw_bind_info{.mr = &mr,
                             .addr = 0x7000,
                             .length = 0x3000,
                             .mw_access_flags = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE};
    ASSERT_EQ(encode(), 0);
    const DecodedSend d = decode_send(slot);
    EXPECT_EQ(d.hdr.opcode, static_cast<std::uint32_t>(IBV_WR_BIND_MW));
    EXPECT_EQ(d.hdr.wr_id, wr.wr_id);
    EXPECT_EQ(d.hdr.num_sge, 0U);
    EXPECT_EQ(d.hdr.wr.bind_mw.addr, 0x7000U);
    EXPECT_EQ(d.hdr.wr.bind_mw.length, 0x3000U);
    EXPECT_EQ(d.hdr.wr.bind_mw.mr_lkey, 0xabcdef01U);
    EXPECT_EQ(d.hdr.wr.bind_mw.mw_rkey, 0x00123400U);
    EXPECT_EQ(d.hdr.wr.bind_mw.rkey, 0x00123401U);
    EXPECT_EQ(d.hdr.wr.bind_mw.access,
              static_cast<std::uint32_t>(IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE));
}

TEST_F(SendEncoding, BindMwWrRefusesType1WindowsAndRangesWithoutMr) {
    ibv_mw mw{};
    mw.type = IBV_MW_TYPE_1;
    wr.opcode = IBV_WR_BIND_MW;
    wr.bind_mw.mw = &mw;
    wr.bind_mw.bind_info.length = 4096;
    EXPECT_EQ(encode(), EINVAL); // type 1: ibv_bind_mw only
    mw.type = IBV_MW_TYPE_2;
    EXPECT_EQ(encode(), EINVAL); // a range but no MR
    wr.bind_mw.mw = nullptr;
    EXPECT_EQ(encode(), EINVAL);
}

TEST_F(SendEncoding, WindowOpsOnlyOnConnectedQps) {
    limits.qp_type = IBV_QPT_UC;
    wr.opcode = IBV_WR_LOCAL_INV;
    EXPECT_EQ(encode(), 0);
    limits.qp_type = IBV_QPT_UD;
    for (auto op : {IBV_WR_LOCAL_INV, IBV_WR_BIND_MW}) {
        wr.opcode = op;
        EXPECT_EQ(encode(), EINVAL) << "UD opcode " << op;
    }
}

TEST_F(SendEncoding, InlineGathersTheSgeBytes) {
    std::array<std::uint8_t, 10> a{};
    std::array<std::uint8_t, 0> empty{};
    std::array<std::uint8_t, 23> b{};
    std::iota(a.begin(), a.end(), 1);
    std::iota(b.begin(), b.end(), 100);
    std::array<ibv_sge, 3> list{
            ibv_sge{reinterpret_cast<std::uintptr_t>(a.data()), a.size(), 0},
            ibv_sge{reinterpret_cast<std::uintptr_t>(empty.data()), 0, 0},
            ibv_sge{reinterpret_cast<std::uintptr_t>(b.data()), b.size(), 0},
    };
    wr.sg_list = list.data();
    wr.num_sge = 3;
    wr.send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED;
    ASSERT_EQ(encode(), 0);
    const auto d = decode_send(slot);
    EXPECT_EQ(d.hdr.send_flags, static_cast<std::uint32_t>(IBV_SEND_INLINE | IBV_SEND_SIGNALED));
    EXPECT_EQ(d.hdr.num_sge, 0U);
    ASSERT_EQ(d.hdr.inline_len, 33U);
    EXPECT_EQ(std::memcmp(d.inline_data.data(), a.data(), a.size()), 0);
    EXPECT_EQ(std::memcmp(d.inline_data.data() + a.size(), b.data(), b.size()), 0);
}

TEST_F(SendEncoding, InlineUpToTheLimitButNotBeyond) {
    std::vector<std::uint8_t> buf(65, 0x42);
    ibv_sge sge{reinterpret_cast<std::uintptr_t>(buf.data()), 64, 0};
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.send_flags = IBV_SEND_INLINE;
    EXPECT_EQ(encode(), 0);
    EXPECT_EQ(decode_send(slot).hdr.inline_len, 64U);
    sge.length = 65;
    EXPECT_EQ(encode(), EINVAL);

    // Split across SGEs, the total counts.
    std::array<ibv_sge, 2> two{ibv_sge{sge.addr, 40, 0}, ibv_sge{sge.addr, 25, 0}};
    wr.sg_list = two.data();
    wr.num_sge = 2;
    EXPECT_EQ(encode(), EINVAL);
}

TEST_F(SendEncoding, InlineNeverOverrunsTheSlot) {
    // Granted caps larger than the slot (a confused kernel): the slot wins.
    limits.max_inline = 4096;
    std::vector<std::uint8_t> buf(65, 0x42);
    ibv_sge sge{reinterpret_cast<std::uintptr_t>(buf.data()), 65, 0};
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.send_flags = IBV_SEND_INLINE;
    EXPECT_EQ(encode(), EINVAL);
}

TEST_F(SendEncoding, InlineFlagIsDroppedForReads) {
    wr.opcode = IBV_WR_RDMA_READ;
    wr.send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = 0x4000;
    wr.wr.rdma.rkey = 9;
    ASSERT_EQ(encode(), 0);
    const auto d = decode_send(slot);
    EXPECT_EQ(d.hdr.send_flags, static_cast<std::uint32_t>(IBV_SEND_SIGNALED));
    EXPECT_EQ(d.hdr.num_sge, 2U);
    EXPECT_EQ(d.hdr.wr.rdma.remote_addr, 0x4000U);
}

TEST_F(SendEncoding, OnlyKnownSendFlagsPass) {
    wr.send_flags = IBV_SEND_FENCE | IBV_SEND_SOLICITED | IBV_SEND_IP_CSUM | 0x100;
    ASSERT_EQ(encode(), 0);
    EXPECT_EQ(decode_send(slot).hdr.send_flags,
              static_cast<std::uint32_t>(IBV_SEND_FENCE | IBV_SEND_SOLICITED));
}

TEST_F(SendEncoding, SgeCountBeyondTheQpCapsIsRejected) {
    wr.num_sge = 4;
    EXPECT_EQ(encode(), 0);
    wr.num_sge = 5;
    EXPECT_EQ(encode(), EINVAL);
    wr.num_sge = -1;
    EXPECT_EQ(encode(), EINVAL);
    wr.num_sge = 1;
    wr.sg_list = nullptr;
    EXPECT_EQ(encode(), EINVAL);
}

TEST_F(SendEncoding, SgeCountBeyondTheSlotIsRejectedWhateverTheCaps) {
    limits.max_sge = 30; // slot of 128 bytes holds 4
    wr.num_sge = 5;
    EXPECT_EQ(encode(), EINVAL);
}

TEST_F(SendEncoding, OpcodesTheQpTypeCannotCarryAreRejected) {
    for (auto op : {IBV_WR_TSO, IBV_WR_DRIVER1}) {
        wr.opcode = op;
        EXPECT_EQ(encode(), EINVAL) << "opcode " << op;
    }
    limits.qp_type = IBV_QPT_UC;
    for (auto op : {IBV_WR_RDMA_READ, IBV_WR_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_FETCH_AND_ADD,
                    IBV_WR_SEND_WITH_INV}) {
        wr.opcode = op;
        EXPECT_EQ(encode(), EINVAL) << "UC opcode " << op;
    }
    wr.opcode = IBV_WR_RDMA_WRITE;
    EXPECT_EQ(encode(), 0);
}

TEST_F(SendEncoding, UdCarriesAddressAndRefusesRdma) {
    limits.qp_type = IBV_QPT_UD;
    ibv_ah fake_ah{};
    wr.wr.ud.ah = &fake_ah;
    wr.wr.ud.remote_qpn = 0x123456;
    wr.wr.ud.remote_qkey = 0x11111111;
    ASSERT_EQ(encode(42), 0);
    const auto d = decode_send(slot);
    EXPECT_EQ(d.hdr.wr.ud.ah_num, 42U);
    EXPECT_EQ(d.hdr.wr.ud.remote_qpn, 0x123456U);
    EXPECT_EQ(d.hdr.wr.ud.remote_qkey, 0x11111111U);

    wr.wr.ud.ah = nullptr;
    EXPECT_EQ(encode(42), EINVAL);
    wr.wr.ud.ah = &fake_ah;
    wr.opcode = IBV_WR_RDMA_WRITE;
    EXPECT_EQ(encode(42), EINVAL);
}

TEST(AtomicWriteEncoding, ValueBytesUnchangedAndRcOnly) {
    std::vector<std::byte> slot(128, std::byte{0xee});
    const std::array<std::uint8_t, 8> value{1, 2, 3, 4, 5, 6, 7, 8};
    SendQueueLimits rc{IBV_QPT_RC, 1, 0, 128};
    ASSERT_EQ(encode_atomic_write_wqe(5, IBV_SEND_SIGNALED | IBV_SEND_SOLICITED, 0x77, 0x10,
                                      value.data(), rc, slot.data()),
              0);
    sroce_send_wqe hdr{};
    std::memcpy(&hdr, slot.data(), sizeof(hdr));
    EXPECT_EQ(hdr.wr_id, 5U);
    EXPECT_EQ(hdr.opcode, 15U) << "IBV_WR_ATOMIC_WRITE is uverbs opcode 15";
    EXPECT_EQ(hdr.send_flags, static_cast<std::uint32_t>(IBV_SEND_SIGNALED | IBV_SEND_SOLICITED));
    EXPECT_EQ(hdr.num_sge, 0U);
    EXPECT_EQ(hdr.wr.atomic_write.rkey, 0x77U);
    EXPECT_EQ(hdr.wr.atomic_write.remote_addr, 0x10U);
    EXPECT_EQ(std::memcmp(hdr.wr.atomic_write.value, value.data(), 8), 0);
    EXPECT_EQ(hdr.wr.atomic_write.reserved, 0U);

    SendQueueLimits uc{IBV_QPT_UC, 1, 0, 128};
    EXPECT_EQ(encode_atomic_write_wqe(5, 0, 0x77, 0x10, value.data(), uc, slot.data()), EINVAL);
    EXPECT_EQ(encode_atomic_write_wqe(5, 0, 0x77, 0x10, nullptr, rc, slot.data()), EINVAL);
}

TEST(FlushEncoding, TargetCarriedAsIsAndBadArgumentsRefused) {
    std::vector<std::byte> slot(128, std::byte{0xee});
    const SendQueueLimits rc{IBV_QPT_RC, 1, 0, 128};
    const FlushTarget target{.rkey = 0x99,
                             .remote_addr = 0x1000,
                             .length = 0xffffffffU,
                             .type = kFlushGlobal | kFlushPersistent,
                             .level = kFlushMr};
    ASSERT_EQ(encode_flush_wqe(6, IBV_SEND_SIGNALED | IBV_SEND_INLINE, target, rc, slot.data()), 0);
    sroce_send_wqe hdr{};
    std::memcpy(&hdr, slot.data(), sizeof(hdr));
    EXPECT_EQ(hdr.wr_id, 6U);
    EXPECT_EQ(hdr.opcode, 14U) << "IBV_WR_FLUSH is uverbs opcode 14";
    EXPECT_EQ(hdr.send_flags, static_cast<std::uint32_t>(IBV_SEND_SIGNALED))
            << "a FLUSH has no data to inline";
    EXPECT_EQ(hdr.num_sge, 0U);
    EXPECT_EQ(hdr.wr.flush.rkey, 0x99U);
    EXPECT_EQ(hdr.wr.flush.remote_addr, 0x1000U);
    EXPECT_EQ(hdr.wr.flush.length, 0xffffffffU);
    EXPECT_EQ(hdr.wr.flush.type, kFlushGlobal | kFlushPersistent);
    EXPECT_EQ(hdr.wr.flush.level, kFlushMr);
    EXPECT_EQ(hdr.wr.flush.reserved, 0U);

    auto refused = [&](FlushTarget t, const SendQueueLimits& limits) {
        return encode_flush_wqe(6, 0, t, limits, slot.data()) == EINVAL;
    };
    FlushTarget t = target;
    t.length = std::size_t{1} << 32;
    EXPECT_TRUE(refused(t, rc)) << "over the 32-bit DMA length";
    t = target;
    t.type = 0;
    EXPECT_TRUE(refused(t, rc)) << "no type";
    t.type = 4;
    EXPECT_TRUE(refused(t, rc)) << "unknown type bit";
    t = target;
    t.level = 2;
    EXPECT_TRUE(refused(t, rc)) << "unknown level";
    EXPECT_TRUE(refused(target, SendQueueLimits{IBV_QPT_UC, 1, 0, 128})) << "UC";
    EXPECT_TRUE(refused(target, SendQueueLimits{IBV_QPT_XRC_SEND, 1, 0, 128})) << "XRC";
}

TEST(CompletionOpcodes, PlacementOpcodesAreLibibverbsNumbers) {
    // The kernel writes ib_uverbs_wc_opcode values; decode copies them.
    EXPECT_EQ(static_cast<int>(IBV_WC_ATOMIC_WRITE), 9);
    std::vector<std::byte> slot(64);
    sroce_cqe cqe{};
    cqe.opcode = 9;
    cqe.byte_len = 8;
    std::memcpy(slot.data(), &cqe, sizeof(cqe));
    ibv_wc wc{};
    decode_cqe(slot.data(), wc);
    EXPECT_EQ(wc.opcode, IBV_WC_ATOMIC_WRITE);
    EXPECT_EQ(wc.byte_len, 8U);
}

TEST(RecvEncoding, HeaderThenSges) {
    std::vector<std::byte> slot(16 + 3 * 16, std::byte{0xee});
    std::array<ibv_sge, 3> sges{ibv_sge{0x1000, 10, 1}, ibv_sge{0x2000, 20, 2},
                                ibv_sge{0x3000, 30, 3}};
    ibv_recv_wr wr{};
    wr.wr_id = 77;
    wr.sg_list = sges.data();
    wr.num_sge = 3;
    const RecvQueueLimits limits{3, static_cast<std::uint32_t>(slot.size())};
    ASSERT_EQ(encode_recv_wqe(wr, limits, slot.data()), 0);

    sroce_recv_wqe hdr{};
    std::memcpy(&hdr, slot.data(), sizeof(hdr));
    EXPECT_EQ(hdr.wr_id, 77U);
    EXPECT_EQ(hdr.num_sge, 3U);
    EXPECT_EQ(hdr.reserved, 0U);
    for (std::size_t i = 0; i < 3; ++i) {
        sroce_sge sge{};
        std::memcpy(&sge, slot.data() + SROCE_RECV_WQE_HDR_SIZE + i * sizeof(sge), sizeof(sge));
        EXPECT_EQ(sge.addr, sges[i].addr);
        EXPECT_EQ(sge.length, sges[i].length);
        EXPECT_EQ(sge.lkey, sges[i].lkey);
    }

    wr.num_sge = 4;
    EXPECT_EQ(encode_recv_wqe(wr, limits, slot.data()), EINVAL);
    wr.num_sge = 0;
    EXPECT_EQ(encode_recv_wqe(wr, limits, slot.data()), 0);
    wr.num_sge = 2;
    EXPECT_EQ(encode_recv_wqe(wr, RecvQueueLimits{8, 48}, slot.data()), 0);
    wr.num_sge = 3;
    EXPECT_EQ(encode_recv_wqe(wr, RecvQueueLimits{8, 48}, slot.data()), EINVAL)
            << "a 48-byte slot holds 2 SGEs, whatever the caps say";
}

TEST(CqeDecoding, CopiesEveryField) {
    sroce_cqe cqe{};
    cqe.wr_id = 0xfeedULL;
    cqe.status = IBV_WC_REM_ACCESS_ERR;
    cqe.opcode = IBV_WC_RECV_RDMA_WITH_IMM;
    cqe.wc_flags = IBV_WC_WITH_IMM | IBV_WC_GRH;
    cqe.sl = 3;
    cqe.vendor_err = 0x42;
    cqe.byte_len = 4096;
    cqe.ex.imm_data = htonl(0x01020304);
    cqe.qp_num = 0x11;
    cqe.src_qp = 0x22;
    cqe.pkey_index = 1;
    std::array<std::byte, sizeof(sroce_cqe)> slot{};
    std::memcpy(slot.data(), &cqe, sizeof(cqe));

    ibv_wc wc{};
    std::memset(&wc, 0xff, sizeof(wc));
    decode_cqe(slot.data(), wc);
    EXPECT_EQ(wc.wr_id, 0xfeedULL);
    EXPECT_EQ(wc.status, IBV_WC_REM_ACCESS_ERR);
    EXPECT_EQ(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
    EXPECT_EQ(wc.wc_flags, static_cast<unsigned>(IBV_WC_WITH_IMM | IBV_WC_GRH));
    EXPECT_EQ(wc.vendor_err, 0x42U);
    EXPECT_EQ(wc.byte_len, 4096U);
    EXPECT_EQ(wc.imm_data, htonl(0x01020304));
    EXPECT_EQ(wc.qp_num, 0x11U);
    EXPECT_EQ(wc.src_qp, 0x22U);
    EXPECT_EQ(wc.pkey_index, 1);
    EXPECT_EQ(wc.sl, 3);
    EXPECT_EQ(wc.slid, 0);
    EXPECT_EQ(wc.dlid_path_bits, 0);
}

TEST(CqeDecoding, InvalidatedRkey) {
    sroce_cqe cqe{};
    cqe.opcode = IBV_WC_RECV;
    cqe.wc_flags = IBV_WC_WITH_INV;
    cqe.ex.invalidated_rkey = 0xabcdef01;
    std::array<std::byte, sizeof(sroce_cqe)> slot{};
    std::memcpy(slot.data(), &cqe, sizeof(cqe));
    ibv_wc wc{};
    decode_cqe(slot.data(), wc);
    EXPECT_EQ(wc.invalidated_rkey, 0xabcdef01U);
    EXPECT_EQ(wc.wc_flags, static_cast<unsigned>(IBV_WC_WITH_INV));
}

} // namespace
} // namespace sroce
