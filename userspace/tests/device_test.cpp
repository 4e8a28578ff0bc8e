// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// The provider against a real sroce device (run inside a guest by
// tests/integration/provider-verbs.sh; not a host test). Two RC QPs on the
// one device are connected to each other over the RoCEv2 GID of the
// device's IPv4 address, so every operation crosses the kernel's requester,
// the IP stack and its responder. Everything is checked on data and
// completions, through the public libibverbs API only.
//
// Environment: SROCE_DEV names the device (default: the first one).
#include <infiniband/verbs.h>

#include <algorithm>
#include <arpa/inet.h>
#include <array>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <numeric>
#include <poll.h>
#include <random>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include <gtest/gtest.h>

namespace {

using namespace std::chrono_literals;

template <auto Destroy>
struct Deleter {
    template <typename T>
    void operator()(T* p) const {
        if (p != nullptr) {
            EXPECT_EQ(Destroy(p), 0) << "destroying a verbs object";
        }
    }
};

using ContextPtr = std::unique_ptr<ibv_context, Deleter<ibv_close_device>>;
using PdPtr = std::unique_ptr<ibv_pd, Deleter<ibv_dealloc_pd>>;
using MrPtr = std::unique_ptr<ibv_mr, Deleter<ibv_dereg_mr>>;
using CqPtr = std::unique_ptr<ibv_cq, Deleter<ibv_destroy_cq>>;
using QpPtr = std::unique_ptr<ibv_qp, Deleter<ibv_destroy_qp>>;
using AhPtr = std::unique_ptr<ibv_ah, Deleter<ibv_destroy_ah>>;
using ChannelPtr = std::unique_ptr<ibv_comp_channel, Deleter<ibv_destroy_comp_channel>>;

constexpr std::uint8_t kPort = 1;
constexpr std::uint32_t kQkey = 0x11111111;
constexpr auto kTimeout = 10s;

ContextPtr open_device() {
    int n = 0;
    ibv_device** list = ibv_get_device_list(&n);
    if (list == nullptr)
        return nullptr;
    const char* wanted = std::getenv("SROCE_DEV");
    ibv_context* ctx = nullptr;
    for (int i = 0; i < n && ctx == nullptr; ++i) {
        if (wanted == nullptr || std::strcmp(ibv_get_device_name(list[i]), wanted) == 0)
            ctx = ibv_open_device(list[i]);
    }
    ibv_free_device_list(list);
    return ContextPtr{ctx};
}

// Index of the RoCE v2 GID holding an IPv4 address.
int ipv4_rocev2_gid(ibv_context* ctx) {
    ibv_port_attr port{};
    if (ibv_query_port(ctx, kPort, &port) != 0)
        return -1;
    for (int i = 0; i < port.gid_tbl_len; ++i) {
        ibv_gid_entry entry{};
        if (ibv_query_gid_ex(ctx, kPort, static_cast<std::uint32_t>(i), &entry, 0) != 0)
            continue;
        const auto& raw = entry.gid.raw;
        const bool v4_mapped = std::all_of(raw, raw + 10, [](auto b) { return b == 0; }) &&
                               raw[10] == 0xff && raw[11] == 0xff;
        if (entry.gid_type == IBV_GID_TYPE_ROCE_V2 && v4_mapped)
            return i;
    }
    return -1;
}

// A registered buffer.
struct Buffer {
    std::vector<std::uint8_t> bytes;
    MrPtr mr;

    Buffer(ibv_pd* pd, std::size_t size, unsigned int access) : bytes(size) {
        mr.reset(ibv_reg_mr(pd, bytes.data(), size, access));
    }
    [[nodiscard]] std::uint64_t addr(std::size_t offset = 0) const {
        return reinterpret_cast<std::uintptr_t>(bytes.data() + offset);
    }
    [[nodiscard]] ibv_sge sge(std::size_t offset, std::uint32_t length) const {
        return ibv_sge{addr(offset), length, mr->lkey};
    }
};

constexpr unsigned int kAllAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                                    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

class Device : public ::testing::Test {
protected:
    void SetUp() override {
        ctx_ = open_device();
        ASSERT_TRUE(ctx_) << "no RDMA device"
                          << (std::getenv("SROCE_DEV") ? " named $SROCE_DEV" : "");
        gid_index_ = ipv4_rocev2_gid(ctx_.get());
        ASSERT_GE(gid_index_, 0) << "no RoCE v2 IPv4 GID";
        ASSERT_EQ(ibv_query_gid(ctx_.get(), kPort, gid_index_, &gid_), 0);
        pd_.reset(ibv_alloc_pd(ctx_.get()));
        ASSERT_TRUE(pd_);
    }

    CqPtr make_cq(int cqe = 64, ibv_comp_channel* channel = nullptr) {
        return CqPtr{ibv_create_cq(ctx_.get(), cqe, nullptr, channel, 0)};
    }

    QpPtr make_qp(ibv_qp_type type, ibv_cq* send_cq, ibv_cq* recv_cq, std::uint32_t send_wr = 32,
                  std::uint32_t inline_data = 64, std::uint32_t sge = 4) {
        ibv_qp_init_attr attr{};
        attr.send_cq = send_cq;
        attr.recv_cq = recv_cq;
        attr.qp_type = type;
        attr.cap.max_send_wr = send_wr;
        attr.cap.max_recv_wr = 32;
        attr.cap.max_send_sge = sge;
        attr.cap.max_recv_sge = sge;
        attr.cap.max_inline_data = inline_data;
        return QpPtr{ibv_create_qp(pd_.get(), &attr)};
    }

    [[nodiscard]] ibv_ah_attr ah_to_self() const {
        ibv_ah_attr ah{};
        ah.is_global = 1;
        ah.grh.dgid = gid_;
        ah.grh.sgid_index = static_cast<std::uint8_t>(gid_index_);
        ah.grh.hop_limit = 64;
        ah.port_num = kPort;
        return ah;
    }

    // RESET -> INIT -> RTR -> RTS, connected to remote_qpn on this device.
    ::testing::AssertionResult connect_rc(ibv_qp* qp, std::uint32_t remote_qpn,
                                          std::uint8_t rnr_retry = 7) const {
        ibv_qp_attr a{};
        a.qp_state = IBV_QPS_INIT;
        a.pkey_index = 0;
        a.port_num = kPort;
        a.qp_access_flags =
                IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
        if (int e = ibv_modify_qp(
                    qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
            return ::testing::AssertionFailure() << "to INIT: " << std::strerror(e);
        a = {};
        a.qp_state = IBV_QPS_RTR;
        a.path_mtu = IBV_MTU_1024;
        a.dest_qp_num = remote_qpn;
        a.rq_psn = 0x123;
        a.max_dest_rd_atomic = 4;
        a.min_rnr_timer = 1;
        a.ah_attr = ah_to_self();
        if (int e = ibv_modify_qp(qp, &a,
                                  IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                          IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
                                          IBV_QP_MIN_RNR_TIMER))
            return ::testing::AssertionFailure() << "to RTR: " << std::strerror(e);
        a = {};
        a.qp_state = IBV_QPS_RTS;
        a.timeout = 14;
        a.retry_cnt = 7;
        a.rnr_retry = rnr_retry;
        a.sq_psn = 0x123;
        a.max_rd_atomic = 4;
        if (int e = ibv_modify_qp(qp, &a,
                                  IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                                          IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                                          IBV_QP_MAX_QP_RD_ATOMIC))
            return ::testing::AssertionFailure() << "to RTS: " << std::strerror(e);
        return ::testing::AssertionSuccess();
    }

    // Polls until n completions arrived or the timeout passed.
    static std::vector<ibv_wc> wait_completions(ibv_cq* cq, std::size_t n,
                                                std::chrono::milliseconds timeout = kTimeout) {
        std::vector<ibv_wc> out;
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        std::array<ibv_wc, 16> wc{};
        while (out.size() < n && std::chrono::steady_clock::now() < deadline) {
            const int got = ibv_poll_cq(cq, static_cast<int>(wc.size()), wc.data());
            if (got < 0) {
                ADD_FAILURE() << "ibv_poll_cq: " << got;
                break;
            }
            out.insert(out.end(), wc.begin(), wc.begin() + got);
            if (got == 0)
                std::this_thread::sleep_for(100us);
        }
        return out;
    }

    ContextPtr ctx_;
    int gid_index_ = -1;
    ibv_gid gid_{};
    PdPtr pd_;
};

TEST_F(Device, QueriesDescribeARoceDevice) {
    ibv_device_attr_ex attr{};
    ASSERT_EQ(ibv_query_device_ex(ctx_.get(), nullptr, &attr), 0);
    EXPECT_GT(attr.orig_attr.max_qp, 0);
    EXPECT_GT(attr.orig_attr.max_cqe, 0);
    EXPECT_EQ(attr.orig_attr.phys_port_cnt, 1);
    ibv_port_attr port{};
    ASSERT_EQ(ibv_query_port(ctx_.get(), kPort, &port), 0);
    EXPECT_EQ(port.state, IBV_PORT_ACTIVE);
    EXPECT_EQ(port.link_layer, IBV_LINK_LAYER_ETHERNET);
}

// A connected pair of RC QPs, each with its own CQ.
int post_send(ibv_qp* qp, ibv_send_wr wr) {
    ibv_send_wr* bad = nullptr;
    return ibv_post_send(qp, &wr, &bad);
}

ibv_send_wr send_wr(ibv_wr_opcode op, ibv_sge* sges, int n, std::uint64_t wr_id,
                    unsigned flags = IBV_SEND_SIGNALED) {
    ibv_send_wr wr{};
    wr.wr_id = wr_id;
    wr.opcode = op;
    wr.sg_list = sges;
    wr.num_sge = n;
    wr.send_flags = flags;
    return wr;
}

// A signaled RDMA WRITE of one SGE to remote_addr under rkey.
ibv_send_wr write_wr(ibv_sge* sge, std::uint64_t wr_id, std::uint64_t remote_addr,
                     std::uint32_t rkey) {
    ibv_send_wr wr = send_wr(IBV_WR_RDMA_WRITE, sge, 1, wr_id);
    wr.wr.rdma.remote_addr = remote_addr;
    wr.wr.rdma.rkey = rkey;
    return wr;
}

class RcPair : public Device {
protected:
    void SetUp() override {
        Device::SetUp();
        if (HasFatalFailure())
            return;
        cq_a_ = make_cq();
        cq_b_ = make_cq();
        ASSERT_TRUE(cq_a_ && cq_b_);
        a_ = make_qp(IBV_QPT_RC, cq_a_.get(), cq_a_.get());
        b_ = make_qp(IBV_QPT_RC, cq_b_.get(), cq_b_.get());
        ASSERT_TRUE(a_ && b_) << std::strerror(errno);
        ASSERT_TRUE(connect_rc(a_.get(), b_->qp_num));
        ASSERT_TRUE(connect_rc(b_.get(), a_->qp_num));
    }

    static void post_recv(ibv_qp* qp, ibv_sge sge, std::uint64_t wr_id) {
        ibv_recv_wr wr{};
        wr.wr_id = wr_id;
        wr.sg_list = &sge;
        wr.num_sge = 1;
        ibv_recv_wr* bad = nullptr;
        ASSERT_EQ(ibv_post_recv(qp, &wr, &bad), 0);
    }

    CqPtr cq_a_, cq_b_;
    QpPtr a_, b_;
};

TEST_F(RcPair, SendsArriveIntactAtManySizes) {
    std::mt19937 rng{42};
    Buffer src{pd_.get(), 1 << 20, kAllAccess};
    Buffer dst{pd_.get(), (1 << 20) + 64, kAllAccess}; // a guard zone past any message
    ASSERT_TRUE(src.mr && dst.mr);
    for (std::uint32_t size : {1U, 2U, 63U, 1024U, 1025U, 4096U, 65537U, 1U << 20}) {
        std::generate(src.bytes.begin(), src.bytes.begin() + size, [&] { return rng(); });
        std::fill(dst.bytes.begin(), dst.bytes.end(), 0);
        post_recv(b_.get(), dst.sge(0, 1 << 20), size);
        ibv_sge sge = src.sge(0, size);
        ASSERT_EQ(post_send(a_.get(), send_wr(IBV_WR_SEND, &sge, 1, size)), 0);
        const auto sent = wait_completions(cq_a_.get(), 1);
        const auto got = wait_completions(cq_b_.get(), 1);
        ASSERT_EQ(sent.size(), 1U) << size;
        ASSERT_EQ(got.size(), 1U) << size;
        EXPECT_EQ(sent[0].status, IBV_WC_SUCCESS) << ibv_wc_status_str(sent[0].status);
        EXPECT_EQ(sent[0].opcode, IBV_WC_SEND);
        EXPECT_EQ(sent[0].wr_id, size);
        EXPECT_EQ(got[0].status, IBV_WC_SUCCESS) << ibv_wc_status_str(got[0].status);
        EXPECT_EQ(got[0].opcode, IBV_WC_RECV);
        EXPECT_EQ(got[0].byte_len, size);
        EXPECT_EQ(got[0].wr_id, size);
        EXPECT_EQ(got[0].qp_num, b_->qp_num);
        EXPECT_EQ(std::memcmp(src.bytes.data(), dst.bytes.data(), size), 0) << size;
        EXPECT_TRUE(std::all_of(dst.bytes.begin() + size, dst.bytes.end(),
                                [](std::uint8_t b) { return b == 0; }))
                << "bytes written past a message of " << size;
    }
}

TEST_F(RcPair, GatherScatterAndImmediate) {
    Buffer src{pd_.get(), 4096, kAllAccess};
    Buffer dst{pd_.get(), 4096, kAllAccess};
    std::iota(src.bytes.begin(), src.bytes.end(), 0);
    // Receive into two pieces at odd offsets.
    std::array<ibv_sge, 2> rsge{dst.sge(3, 100), dst.sge(1001, 1000)};
    ibv_recv_wr rwr{};
    rwr.wr_id = 9;
    rwr.sg_list = rsge.data();
    rwr.num_sge = 2;
    ibv_recv_wr* rbad = nullptr;
    ASSERT_EQ(ibv_post_recv(b_.get(), &rwr, &rbad), 0);
    // Send from three pieces.
    std::array<ibv_sge, 3> ssge{src.sge(10, 50), src.sge(500, 50), src.sge(2000, 900)};
    auto wr = send_wr(IBV_WR_SEND_WITH_IMM, ssge.data(), 3, 1);
    wr.imm_data = htonl(0xfeedbeef);
    ASSERT_EQ(post_send(a_.get(), wr), 0);
    ASSERT_EQ(wait_completions(cq_a_.get(), 1).size(), 1U);
    const auto got = wait_completions(cq_b_.get(), 1);
    ASSERT_EQ(got.size(), 1U);
    EXPECT_EQ(got[0].status, IBV_WC_SUCCESS);
    EXPECT_EQ(got[0].byte_len, 1000U);
    EXPECT_TRUE(got[0].wc_flags & IBV_WC_WITH_IMM);
    EXPECT_EQ(ntohl(got[0].imm_data), 0xfeedbeefU);
    std::vector<std::uint8_t> expect;
    for (const auto& s : ssge) {
        const auto* p = src.bytes.data() + (s.addr - src.addr());
        expect.insert(expect.end(), p, p + s.length);
    }
    EXPECT_EQ(std::memcmp(dst.bytes.data() + 3, expect.data(), 100), 0);
    EXPECT_EQ(std::memcmp(dst.bytes.data() + 1001, expect.data() + 100, 900), 0);
}

TEST_F(RcPair, RdmaWriteReadBackAndAtomics) {
    Buffer local{pd_.get(), 8192, kAllAccess};
    Buffer remote{pd_.get(), 8192, kAllAccess};
    std::iota(local.bytes.begin(), local.bytes.end(), 7);

    ibv_sge sge = local.sge(5, 3000);
    auto wr = write_wr(&sge, 1, remote.addr(11), remote.mr->rkey);
    ASSERT_EQ(post_send(a_.get(), wr), 0);
    auto c = wait_completions(cq_a_.get(), 1);
    ASSERT_EQ(c.size(), 1U);
    ASSERT_EQ(c[0].status, IBV_WC_SUCCESS) << ibv_wc_status_str(c[0].status);
    EXPECT_EQ(c[0].opcode, IBV_WC_RDMA_WRITE);
    EXPECT_EQ(std::memcmp(remote.bytes.data() + 11, local.bytes.data() + 5, 3000), 0);

    // Read it back into another place.
    ibv_sge rsge = local.sge(4096, 3000);
    wr = send_wr(IBV_WR_RDMA_READ, &rsge, 1, 2);
    wr.wr.rdma.remote_addr = remote.addr(11);
    wr.wr.rdma.rkey = remote.mr->rkey;
    ASSERT_EQ(post_send(a_.get(), wr), 0);
    c = wait_completions(cq_a_.get(), 1);
    ASSERT_EQ(c.size(), 1U);
    ASSERT_EQ(c[0].status, IBV_WC_SUCCESS) << ibv_wc_status_str(c[0].status);
    EXPECT_EQ(c[0].opcode, IBV_WC_RDMA_READ);
    EXPECT_EQ(c[0].byte_len, 3000U);
    EXPECT_EQ(std::memcmp(local.bytes.data() + 4096, local.bytes.data() + 5, 3000), 0);

    // Atomics on an 8-byte aligned remote word.
    std::uint64_t word = 1000;
    std::memcpy(remote.bytes.data() + 8000, &word, 8);
    ibv_sge asge = local.sge(7000, 8);
    wr = send_wr(IBV_WR_ATOMIC_FETCH_AND_ADD, &asge, 1, 3);
    wr.wr.atomic.remote_addr = remote.addr(8000);
    wr.wr.atomic.rkey = remote.mr->rkey;
    wr.wr.atomic.compare_add = 5;
    ASSERT_EQ(post_send(a_.get(), wr), 0);
    c = wait_completions(cq_a_.get(), 1);
    ASSERT_EQ(c.size(), 1U);
    ASSERT_EQ(c[0].status, IBV_WC_SUCCESS) << ibv_wc_status_str(c[0].status);
    EXPECT_EQ(c[0].opcode, IBV_WC_FETCH_ADD);
    std::uint64_t old = 0;
    std::memcpy(&old, local.bytes.data() + 7000, 8);
    std::memcpy(&word, remote.bytes.data() + 8000, 8);
    EXPECT_EQ(old, 1000U);
    EXPECT_EQ(word, 1005U);

    wr = send_wr(IBV_WR_ATOMIC_CMP_AND_SWP, &asge, 1, 4);
    wr.wr.atomic.remote_addr = remote.addr(8000);
    wr.wr.atomic.rkey = remote.mr->rkey;
    wr.wr.atomic.compare_add = 1005;
    wr.wr.atomic.swap = 0xabcdef;
    ASSERT_EQ(post_send(a_.get(), wr), 0);
    c = wait_completions(cq_a_.get(), 1);
    ASSERT_EQ(c.size(), 1U);
    ASSERT_EQ(c[0].status, IBV_WC_SUCCESS);
    EXPECT_EQ(c[0].opcode, IBV_WC_COMP_SWAP);
    std::memcpy(&old, local.bytes.data() + 7000, 8);
    std::memcpy(&word, remote.bytes.data() + 8000, 8);
    EXPECT_EQ(old, 1005U);
    EXPECT_EQ(word, 0xabcdefU);
}

TEST_F(RcPair, InlineUpToTheReportedLimitAndNoFurther) {
    ibv_qp_attr attr{};
    ibv_qp_init_attr init{};
    ASSERT_EQ(ibv_query_qp(a_.get(), &attr, IBV_QP_CAP, &init), 0);
    const std::uint32_t max_inline = init.cap.max_inline_data;
    ASSERT_GE(max_inline, 64U) << "asked for 64";

    std::vector<std::uint8_t> src(max_inline + 1);
    std::iota(src.begin(), src.end(), 1);
    Buffer dst{pd_.get(), 4096, kAllAccess};
    post_recv(b_.get(), dst.sge(0, 4096), 1);
    // Inline data need not be registered.
    ibv_sge sge{reinterpret_cast<std::uintptr_t>(src.data()), max_inline, 0};
    ASSERT_EQ(post_send(a_.get(),
                        send_wr(IBV_WR_SEND, &sge, 1, 1, IBV_SEND_SIGNALED | IBV_SEND_INLINE)),
              0);
    std::fill(src.begin(), src.end(), 0); // the WQE already holds the bytes
    const auto got = wait_completions(cq_b_.get(), 1);
    ASSERT_EQ(got.size(), 1U);
    ASSERT_EQ(got[0].status, IBV_WC_SUCCESS);
    EXPECT_EQ(got[0].byte_len, max_inline);
    for (std::uint32_t i = 0; i < max_inline; ++i)
        ASSERT_EQ(dst.bytes[i], static_cast<std::uint8_t>(i + 1)) << i;
    EXPECT_EQ(wait_completions(cq_a_.get(), 1).size(), 1U);

    sge.length = max_inline + 1;
    EXPECT_EQ(post_send(a_.get(),
                        send_wr(IBV_WR_SEND, &sge, 1, 2, IBV_SEND_SIGNALED | IBV_SEND_INLINE)),
              EINVAL);
}

TEST_F(RcPair, FullSendQueueGivesEnomem) {
    // b posts no receives and RNR retry is infinite: a's SENDs stay queued.
    QpPtr small = make_qp(IBV_QPT_RC, cq_a_.get(), cq_a_.get(), 4);
    ASSERT_TRUE(small);
    ibv_qp_attr attr{};
    ibv_qp_init_attr init{};
    ASSERT_EQ(ibv_query_qp(small.get(), &attr, IBV_QP_CAP, &init), 0);
    const std::uint32_t depth = init.cap.max_send_wr;
    ASSERT_GE(depth, 4U);
    QpPtr peer = make_qp(IBV_QPT_RC, cq_b_.get(), cq_b_.get());
    ASSERT_TRUE(connect_rc(small.get(), peer->qp_num));
    ASSERT_TRUE(connect_rc(peer.get(), small->qp_num));

    Buffer src{pd_.get(), 64, kAllAccess};
    ibv_sge sge = src.sge(0, 8);
    std::vector<ibv_send_wr> wrs(depth + 1, send_wr(IBV_WR_SEND, &sge, 1, 0));
    for (std::size_t i = 0; i < wrs.size(); ++i) {
        wrs[i].wr_id = i;
        wrs[i].next = i + 1 < wrs.size() ? &wrs[i + 1] : nullptr;
    }
    ibv_send_wr* bad = nullptr;
    EXPECT_EQ(ibv_post_send(small.get(), wrs.data(), &bad), ENOMEM);
    EXPECT_EQ(bad, &wrs[depth]);
    // Let them go: post the receives, all complete in order.
    Buffer dst{pd_.get(), std::size_t{64} * (depth + 1), kAllAccess};
    for (std::uint32_t i = 0; i < depth; ++i)
        post_recv(peer.get(), dst.sge(std::size_t{64} * i, 64), i);
    const auto done = wait_completions(cq_a_.get(), depth, 30s);
    ASSERT_EQ(done.size(), depth);
    for (std::uint32_t i = 0; i < depth; ++i) {
        EXPECT_EQ(done[i].wr_id, i);
        EXPECT_EQ(done[i].status, IBV_WC_SUCCESS) << ibv_wc_status_str(done[i].status);
    }
    EXPECT_EQ(wait_completions(cq_b_.get(), depth).size(), depth);
}

TEST_F(RcPair, PostingBeforeRtsIsRefused) {
    QpPtr fresh = make_qp(IBV_QPT_RC, cq_a_.get(), cq_a_.get());
    ASSERT_TRUE(fresh);
    Buffer buf{pd_.get(), 64, kAllAccess};
    ibv_sge sge = buf.sge(0, 8);
    EXPECT_EQ(post_send(fresh.get(), send_wr(IBV_WR_SEND, &sge, 1, 1)), EINVAL);
    ibv_recv_wr rwr{};
    rwr.sg_list = &sge;
    rwr.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    EXPECT_EQ(ibv_post_recv(fresh.get(), &rwr, &bad), EINVAL) << "RQ in RESET";
}

TEST_F(RcPair, OpcodesRcCannotCarryAreRefused) {
    Buffer buf{pd_.get(), 64, kAllAccess};
    ibv_sge sge = buf.sge(0, 8);
    EXPECT_EQ(post_send(a_.get(), send_wr(IBV_WR_TSO, &sge, 1, 1)), EINVAL);
    // a bind WR names a window; this one names none
    EXPECT_EQ(post_send(a_.get(), send_wr(IBV_WR_BIND_MW, &sge, 1, 1)), EINVAL);
    auto too_many = send_wr(IBV_WR_SEND, &sge, 1, 1);
    too_many.num_sge = 1000;
    EXPECT_EQ(post_send(a_.get(), too_many), EINVAL);
}

TEST_F(RcPair, BadLkeyCompletesInErrorAndFlushesTheRest) {
    Buffer buf{pd_.get(), 64, kAllAccess};
    ibv_sge bad_sge{buf.addr(), 8, buf.mr->lkey ^ 0x5a5a00};
    ibv_sge good_sge = buf.sge(0, 8);
    ASSERT_EQ(post_send(a_.get(), send_wr(IBV_WR_SEND, &bad_sge, 1, 1)), 0);
    const auto c = wait_completions(cq_a_.get(), 1);
    ASSERT_EQ(c.size(), 1U);
    EXPECT_EQ(c[0].status, IBV_WC_LOC_PROT_ERR) << ibv_wc_status_str(c[0].status);
    EXPECT_EQ(c[0].wr_id, 1U);
    // The QP is in error now: more work is flushed, not lost.
    ASSERT_EQ(post_send(a_.get(), send_wr(IBV_WR_SEND, &good_sge, 1, 2)), 0);
    const auto f = wait_completions(cq_a_.get(), 1);
    ASSERT_EQ(f.size(), 1U);
    EXPECT_EQ(f[0].status, IBV_WC_WR_FLUSH_ERR) << ibv_wc_status_str(f[0].status);
    EXPECT_EQ(f[0].wr_id, 2U);
    ibv_qp_attr attr{};
    ibv_qp_init_attr init{};
    ASSERT_EQ(ibv_query_qp(a_.get(), &attr, IBV_QP_STATE, &init), 0);
    EXPECT_EQ(attr.qp_state, IBV_QPS_ERR);
}

TEST_F(RcPair, WrongRkeyIsARemoteAccessError) {
    Buffer local{pd_.get(), 64, kAllAccess};
    Buffer remote{pd_.get(), 64, kAllAccess};
    ibv_sge sge = local.sge(0, 8);
    ASSERT_EQ(post_send(a_.get(), write_wr(&sge, 1, remote.addr(), remote.mr->rkey ^ 0x1000)), 0);
    const auto c = wait_completions(cq_a_.get(), 1, 30s);
    ASSERT_EQ(c.size(), 1U);
    EXPECT_EQ(c[0].status, IBV_WC_REM_ACCESS_ERR) << ibv_wc_status_str(c[0].status);
}

// Work posted to a QP in the error state completes flushed (IBTA 10.3.1):
// receives too, though posting one is no system call.
void expect_flushed(const std::vector<ibv_wc>& got, std::uint64_t first_wr_id, std::size_t n,
                    std::uint32_t qp_num) {
    ASSERT_EQ(got.size(), n) << "completions within the timeout";
    for (std::size_t i = 0; i < n; ++i) {
        EXPECT_EQ(got[i].status, IBV_WC_WR_FLUSH_ERR) << ibv_wc_status_str(got[i].status);
        EXPECT_EQ(got[i].wr_id, first_wr_id + i);
        EXPECT_EQ(got[i].qp_num, qp_num);
    }
}

TEST_F(RcPair, ReceivesPostedAfterModifyToErrorAreFlushed) {
    Buffer buf{pd_.get(), 256, kAllAccess};
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_ERR;
    ASSERT_EQ(ibv_modify_qp(a_.get(), &attr, IBV_QP_STATE), 0);
    std::array<ibv_sge, 3> sge{buf.sge(0, 64), buf.sge(64, 64), buf.sge(128, 64)};
    std::array<ibv_recv_wr, 3> wr{};
    for (std::size_t i = 0; i < wr.size(); ++i) {
        wr[i].wr_id = 10 + i;
        wr[i].sg_list = &sge[i];
        wr[i].num_sge = 1;
        wr[i].next = i + 1 < wr.size() ? &wr[i + 1] : nullptr;
    }
    ibv_recv_wr* bad = nullptr;
    ASSERT_EQ(ibv_post_recv(a_.get(), wr.data(), &bad), 0);
    post_recv(a_.get(), buf.sge(192, 64), 13);
    expect_flushed(wait_completions(cq_a_.get(), 4), 10, 4, a_->qp_num);
    // and sends, whose doorbell is a system call anyway
    ibv_sge s = buf.sge(0, 8);
    ASSERT_EQ(post_send(a_.get(), send_wr(IBV_WR_SEND, &s, 1, 20)), 0);
    expect_flushed(wait_completions(cq_a_.get(), 1), 20, 1, a_->qp_num);
    EXPECT_TRUE(wait_completions(cq_a_.get(), 1, 100ms).empty()) << "nothing more";
}

// The kernel moved the QP to the error state on its own: the application
// posts before it polled or queried anything.
TEST_F(RcPair, ReceivesPostedAfterAFatalErrorAreFlushed) {
    Buffer local{pd_.get(), 256, kAllAccess};
    Buffer remote{pd_.get(), 64, kAllAccess};
    ibv_sge sge = local.sge(0, 8);
    ASSERT_EQ(post_send(a_.get(), write_wr(&sge, 1, remote.addr(), remote.mr->rkey ^ 0x1000)), 0);
    const auto c = wait_completions(cq_a_.get(), 1, 30s);
    ASSERT_EQ(c.size(), 1U);
    ASSERT_EQ(c[0].status, IBV_WC_REM_ACCESS_ERR) << ibv_wc_status_str(c[0].status);
    post_recv(a_.get(), local.sge(0, 64), 30);
    post_recv(a_.get(), local.sge(64, 64), 31);
    expect_flushed(wait_completions(cq_a_.get(), 2), 30, 2, a_->qp_num);
    ASSERT_EQ(post_send(a_.get(), send_wr(IBV_WR_SEND, &sge, 1, 40)), 0);
    expect_flushed(wait_completions(cq_a_.get(), 1), 40, 1, a_->qp_num);
}

TEST_F(RcPair, ResizeKeepsOutstandingCompletions) {
    Buffer src{pd_.get(), 64, kAllAccess};
    Buffer dst{pd_.get(), std::size_t{64} * 8, kAllAccess};
    for (std::uint32_t i = 0; i < 5; ++i)
        post_recv(b_.get(), dst.sge(std::size_t{64} * i, 64), 100 + i);
    ibv_sge sge = src.sge(0, 16);
    for (std::uint32_t i = 0; i < 5; ++i)
        ASSERT_EQ(post_send(a_.get(), send_wr(IBV_WR_SEND, &sge, 1, i)), 0);
    // Wait until all five are in b's CQ without consuming them.
    ASSERT_EQ(wait_completions(cq_a_.get(), 5).size(), 5U);
    std::this_thread::sleep_for(200ms);

    ASSERT_EQ(ibv_resize_cq(cq_b_.get(), 512), 0);
    EXPECT_GE(cq_b_->cqe, 512);
    const auto got = wait_completions(cq_b_.get(), 5);
    ASSERT_EQ(got.size(), 5U);
    for (std::uint32_t i = 0; i < 5; ++i)
        EXPECT_EQ(got[i].wr_id, 100U + i);

    // And the resized ring keeps working.
    post_recv(b_.get(), dst.sge(0, 64), 200);
    ASSERT_EQ(post_send(a_.get(), send_wr(IBV_WR_SEND, &sge, 1, 9)), 0);
    const auto more = wait_completions(cq_b_.get(), 1);
    ASSERT_EQ(more.size(), 1U);
    EXPECT_EQ(more[0].wr_id, 200U);
}

// The extended send API (ibv_create_qp_ex with send_ops_flags, ibv_wr_*).
TEST_F(RcPair, ExtendedSendApiPostsABatch) {
    ibv_qp_init_attr_ex attr{};
    attr.send_cq = cq_a_.get();
    attr.recv_cq = cq_a_.get();
    attr.qp_type = IBV_QPT_RC;
    attr.cap.max_send_wr = 16;
    attr.cap.max_recv_wr = 16;
    attr.cap.max_send_sge = 2;
    attr.cap.max_recv_sge = 2;
    attr.cap.max_inline_data = 32;
    attr.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
    attr.pd = pd_.get();
    attr.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE |
                          IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
    QpPtr x{ibv_create_qp_ex(ctx_.get(), &attr)};
    ASSERT_TRUE(x) << std::strerror(errno);
    ibv_qp_ex* qpx = ibv_qp_to_qp_ex(x.get());
    ASSERT_NE(qpx, nullptr);
    QpPtr peer = make_qp(IBV_QPT_RC, cq_b_.get(), cq_b_.get());
    ASSERT_TRUE(connect_rc(x.get(), peer->qp_num));
    ASSERT_TRUE(connect_rc(peer.get(), x->qp_num));

    Buffer local{pd_.get(), 4096, kAllAccess};
    Buffer remote{pd_.get(), 4096, kAllAccess};
    std::iota(local.bytes.begin(), local.bytes.end(), 3);
    post_recv(peer.get(), remote.sge(2048, 1024), 50);
    std::array<std::uint8_t, 6> text{'s', 'r', 'o', 'c', 'e', '!'};

    ibv_wr_start(qpx);
    qpx->wr_id = 1;
    qpx->wr_flags = IBV_SEND_SIGNALED;
    ibv_wr_rdma_write(qpx, remote.mr->rkey, remote.addr(100));
    ibv_wr_set_sge(qpx, local.mr->lkey, local.addr(0), 500);
    qpx->wr_id = 2;
    ibv_wr_send(qpx);
    ibv_wr_set_inline_data(qpx, text.data(), text.size());
    qpx->wr_id = 3;
    ibv_wr_rdma_read(qpx, remote.mr->rkey, remote.addr(100));
    ibv_wr_set_sge(qpx, local.mr->lkey, local.addr(1000), 500);
    ASSERT_EQ(ibv_wr_complete(qpx), 0);

    const auto done = wait_completions(cq_a_.get(), 3);
    ASSERT_EQ(done.size(), 3U);
    for (std::size_t i = 0; i < 3; ++i) {
        EXPECT_EQ(done[i].wr_id, i + 1);
        EXPECT_EQ(done[i].status, IBV_WC_SUCCESS) << ibv_wc_status_str(done[i].status);
    }
    EXPECT_EQ(std::memcmp(remote.bytes.data() + 100, local.bytes.data(), 500), 0);
    EXPECT_EQ(std::memcmp(local.bytes.data() + 1000, local.bytes.data(), 500), 0);
    const auto got = wait_completions(cq_b_.get(), 1);
    ASSERT_EQ(got.size(), 1U);
    EXPECT_EQ(got[0].byte_len, text.size());
    EXPECT_EQ(std::memcmp(remote.bytes.data() + 2048, text.data(), text.size()), 0);

    // An op the QP was not created for is refused as a whole batch.
    ibv_wr_start(qpx);
    ibv_wr_send(qpx);
    ibv_wr_set_sge(qpx, local.mr->lkey, local.addr(0), 8);
    ibv_wr_send(qpx);
    EXPECT_EQ(ibv_wr_complete(qpx), EINVAL) << "second WR without data";
}

TEST_F(Device, UnsupportedSendOpsAreRefusedAtCreate) {
    CqPtr cq = make_cq();
    ibv_qp_init_attr_ex attr{};
    attr.send_cq = cq.get();
    attr.recv_cq = cq.get();
    attr.qp_type = IBV_QPT_RC;
    attr.cap.max_send_wr = 4;
    attr.cap.max_recv_wr = 4;
    attr.cap.max_send_sge = 1;
    attr.cap.max_recv_sge = 1;
    attr.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
    attr.pd = pd_.get();
    attr.send_ops_flags = IBV_QP_EX_WITH_TSO; // raw packet QPs only
    errno = 0;
    QpPtr x{ibv_create_qp_ex(ctx_.get(), &attr)};
    EXPECT_FALSE(x);
    EXPECT_EQ(errno, EOPNOTSUPP);
}

// One completion read through the extended poll API.
struct ExCompletion {
    std::uint64_t wr_id = 0;
    ibv_wc_status status = IBV_WC_GENERAL_ERR;
    ibv_wc_opcode opcode = IBV_WC_SEND;
    std::uint32_t qp_num = 0;
    std::uint64_t timestamp = 0;    // device clock, when the CQ has it
    std::uint64_t wallclock_ns = 0; // the same
};

std::uint64_t clock_ns(clockid_t clock) {
    timespec ts{};
    (void)clock_gettime(clock, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000U +
           static_cast<std::uint64_t>(ts.tv_nsec);
}

class ExtendedCq : public Device {
protected:
    // A CQ of wc_flags on one side of an RC pair, the peer on a plain CQ.
    void make_pair(std::uint64_t wc_flags) {
        ibv_cq_init_attr_ex cattr{};
        cattr.cqe = 32;
        cattr.wc_flags = wc_flags;
        cqx_ = ibv_create_cq_ex(ctx_.get(), &cattr);
        ASSERT_NE(cqx_, nullptr) << std::strerror(errno);
        cq_.reset(ibv_cq_ex_to_cq(cqx_));
        other_ = make_cq();
        a_ = make_qp(IBV_QPT_RC, cq_.get(), cq_.get());
        b_ = make_qp(IBV_QPT_RC, other_.get(), other_.get());
        ASSERT_TRUE(a_ && b_);
        ASSERT_TRUE(connect_rc(a_.get(), b_->qp_num));
        ASSERT_TRUE(connect_rc(b_.get(), a_->qp_num));
    }

    // Posts n signaled RDMA WRITEs on a_ and reads their completions.
    std::vector<ExCompletion> write_and_poll(std::uint64_t n, bool stamped) {
        Buffer buf{pd_.get(), 256, kAllAccess};
        ibv_sge sge = buf.sge(0, 40);
        for (std::uint64_t id = 1; id <= n; ++id) {
            EXPECT_EQ(post_send(a_.get(), write_wr(&sge, id, buf.addr(128), buf.mr->rkey)), 0);
        }
        std::vector<ExCompletion> got;
        const auto deadline = std::chrono::steady_clock::now() + kTimeout;
        while (got.size() < n && std::chrono::steady_clock::now() < deadline) {
            ibv_poll_cq_attr pattr{};
            if (ibv_start_poll(cqx_, &pattr) != 0) {
                std::this_thread::sleep_for(100us);
                continue;
            }
            do {
                ExCompletion c;
                c.wr_id = cqx_->wr_id;
                c.status = cqx_->status;
                c.opcode = ibv_wc_read_opcode(cqx_);
                c.qp_num = ibv_wc_read_qp_num(cqx_);
                if (stamped) {
                    c.timestamp = ibv_wc_read_completion_ts(cqx_);
                    c.wallclock_ns = ibv_wc_read_completion_wallclock_ns(cqx_);
                }
                got.push_back(c);
            } while (ibv_next_poll(cqx_) == 0);
            ibv_end_poll(cqx_);
        }
        return got;
    }

    void check_writes(const std::vector<ExCompletion>& got, std::uint64_t n) {
        ASSERT_EQ(got.size(), n);
        for (std::uint64_t i = 0; i < n; ++i) {
            EXPECT_EQ(got[i].wr_id, i + 1);
            EXPECT_EQ(got[i].status, IBV_WC_SUCCESS);
            EXPECT_EQ(got[i].opcode, IBV_WC_RDMA_WRITE);
            EXPECT_EQ(got[i].qp_num, a_->qp_num);
        }
    }

    ibv_cq_ex* cqx_ = nullptr;
    CqPtr cq_, other_; // declared before the QPs: destroyed after them
    QpPtr a_, b_;
};

TEST_F(ExtendedCq, PollsCompletions) {
    make_pair(IBV_WC_STANDARD_FLAGS);
    check_writes(write_and_poll(3, false), 3);
    // asked for no timestamps: none to read
    EXPECT_EQ(cqx_->read_completion_ts, nullptr);
    EXPECT_EQ(cqx_->read_completion_wallclock_ns, nullptr);

    ibv_cq_init_attr_ex cattr{};
    cattr.cqe = 32;
    cattr.wc_flags = std::uint64_t{IBV_WC_STANDARD_FLAGS} | IBV_WC_EX_WITH_CVLAN;
    errno = 0;
    EXPECT_EQ(ibv_create_cq_ex(ctx_.get(), &cattr), nullptr);
    EXPECT_EQ(errno, EOPNOTSUPP) << "no VLAN tags rather than zeros";
}

// The device clock is CLOCK_MONOTONIC_RAW in ns, the wall clock
// CLOCK_REALTIME: each completion's pair lies between the clocks read
// before the post and after the poll, and neither goes back.
TEST_F(ExtendedCq, StampsCompletionsWithBothClocks) {
    ibv_device_attr_ex attr{};
    ASSERT_EQ(ibv_query_device_ex(ctx_.get(), nullptr, &attr), 0);
    EXPECT_EQ(attr.completion_timestamp_mask, ~std::uint64_t{0});
    EXPECT_EQ(attr.hca_core_clock, 1000000U) << "kHz: 1 tick = 1 ns";

    make_pair(std::uint64_t{IBV_WC_STANDARD_FLAGS} | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |
              IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK);
    ibv_values_ex before{};
    before.comp_mask = IBV_VALUES_MASK_RAW_CLOCK;
    ASSERT_EQ(ibv_query_rt_values_ex(ctx_.get(), &before), 0);
    EXPECT_EQ(before.comp_mask, IBV_VALUES_MASK_RAW_CLOCK);
    const std::uint64_t raw0 = static_cast<std::uint64_t>(before.raw_clock.tv_sec) * 1000000000U +
                               static_cast<std::uint64_t>(before.raw_clock.tv_nsec);
    const std::uint64_t wall0 = clock_ns(CLOCK_REALTIME);
    const auto got = write_and_poll(8, true);
    const std::uint64_t raw1 = clock_ns(CLOCK_MONOTONIC_RAW);
    const std::uint64_t wall1 = clock_ns(CLOCK_REALTIME);
    check_writes(got, 8);
    std::uint64_t last_raw = raw0;
    std::uint64_t last_wall = wall0;
    for (const ExCompletion& c : got) {
        EXPECT_GE(c.timestamp, last_raw) << "wr " << c.wr_id;
        EXPECT_LE(c.timestamp, raw1) << "wr " << c.wr_id;
        EXPECT_GE(c.wallclock_ns, last_wall) << "wr " << c.wr_id;
        EXPECT_LE(c.wallclock_ns, wall1) << "wr " << c.wr_id;
        last_raw = c.timestamp;
        last_wall = c.wallclock_ns;
    }
}

// ibv_import_device over a copy of the command file: the imported context
// shares the PD and MR (the same kernel objects and keys), and a QP of its
// own moves data with them.
TEST_F(Device, ImportedContextSharesPdAndMr) {
    const int fd = dup(ctx_->cmd_fd);
    ASSERT_GE(fd, 0);
    ContextPtr ictx{ibv_import_device(fd)}; // owns fd from here on
    ASSERT_TRUE(ictx) << std::strerror(errno);
    Buffer buf{pd_.get(), 4096, kAllAccess};
    ASSERT_TRUE(buf.mr);
    ibv_pd* ipd = ibv_import_pd(ictx.get(), pd_->handle);
    ASSERT_NE(ipd, nullptr) << std::strerror(errno);
    ibv_mr* imr = ibv_import_mr(ipd, buf.mr->handle);
    ASSERT_NE(imr, nullptr) << std::strerror(errno);
    EXPECT_EQ(imr->lkey, buf.mr->lkey);
    EXPECT_EQ(imr->rkey, buf.mr->rkey);
    EXPECT_EQ(imr->length, buf.bytes.size());
    EXPECT_EQ(ibv_import_mr(ipd, buf.mr->handle + 1000), nullptr) << "a handle it does not hold";
    {
        CqPtr icq{ibv_create_cq(ictx.get(), 16, nullptr, nullptr, 0)};
        CqPtr cq = make_cq();
        ASSERT_TRUE(icq && cq);
        ibv_qp_init_attr attr{};
        attr.send_cq = icq.get();
        attr.recv_cq = icq.get();
        attr.qp_type = IBV_QPT_RC;
        attr.cap.max_send_wr = 4;
        attr.cap.max_recv_wr = 4;
        attr.cap.max_send_sge = 1;
        attr.cap.max_recv_sge = 1;
        QpPtr a{ibv_create_qp(ipd, &attr)};
        QpPtr b = make_qp(IBV_QPT_RC, cq.get(), cq.get());
        ASSERT_TRUE(a && b) << std::strerror(errno);
        ASSERT_TRUE(connect_rc(a.get(), b->qp_num));
        ASSERT_TRUE(connect_rc(b.get(), a->qp_num));
        std::iota(buf.bytes.begin(), buf.bytes.begin() + 64, std::uint8_t{1});
        ibv_sge sge{buf.addr(0), 64, imr->lkey};
        ASSERT_EQ(post_send(a.get(), write_wr(&sge, 9, buf.addr(2048), imr->rkey)), 0);
        const auto got = wait_completions(icq.get(), 1);
        ASSERT_EQ(got.size(), 1U);
        EXPECT_EQ(got[0].status, IBV_WC_SUCCESS);
        EXPECT_EQ(got[0].wr_id, 9U);
        EXPECT_EQ(std::memcmp(buf.bytes.data() + 2048, buf.bytes.data(), 64), 0);
    }
    ibv_unimport_mr(imr);
    ibv_unimport_pd(ipd);
}

TEST_F(Device, CompletionChannelDeliversAnEventWhenArmed) {
    ChannelPtr channel{ibv_create_comp_channel(ctx_.get())};
    ASSERT_TRUE(channel);
    CqPtr cq = make_cq(16, channel.get());
    CqPtr other = make_cq();
    QpPtr a = make_qp(IBV_QPT_RC, cq.get(), cq.get());
    QpPtr b = make_qp(IBV_QPT_RC, other.get(), other.get());
    ASSERT_TRUE(a && b);
    ASSERT_TRUE(connect_rc(a.get(), b->qp_num));
    ASSERT_TRUE(connect_rc(b.get(), a->qp_num));
    Buffer buf{pd_.get(), 64, kAllAccess};

    ASSERT_EQ(ibv_req_notify_cq(cq.get(), 0), 0);
    pollfd pfd{channel->fd, POLLIN, 0};
    EXPECT_EQ(::poll(&pfd, 1, 0), 0) << "no event before any completion";

    ibv_sge sge = buf.sge(0, 8);
    const ibv_send_wr wr = write_wr(&sge, 5, buf.addr(32), buf.mr->rkey);
    ASSERT_EQ(post_send(a.get(), wr), 0);

    ASSERT_EQ(::poll(&pfd, 1, 10000), 1) << "no completion event";
    ibv_cq* ev_cq = nullptr;
    void* ev_ctx = nullptr;
    ASSERT_EQ(ibv_get_cq_event(channel.get(), &ev_cq, &ev_ctx), 0);
    EXPECT_EQ(ev_cq, cq.get());
    ibv_ack_cq_events(ev_cq, 1);
    const auto c = wait_completions(cq.get(), 1);
    ASSERT_EQ(c.size(), 1U);
    EXPECT_EQ(c[0].wr_id, 5U);

    // Not re-armed: the next completion raises no event.
    ASSERT_EQ(post_send(a.get(), wr), 0);
    ASSERT_EQ(wait_completions(cq.get(), 1).size(), 1U);
    EXPECT_EQ(::poll(&pfd, 1, 200), 0);

    // Objects referring to the channel go first.
    a.reset();
    cq.reset();
}

TEST_F(Device, UnreliableDatagramsCarryAGrhAndTheSource) {
    CqPtr cq = make_cq();
    QpPtr s = make_qp(IBV_QPT_UD, cq.get(), cq.get(), 32, 0, 1);
    QpPtr r = make_qp(IBV_QPT_UD, cq.get(), cq.get(), 32, 0, 1);
    ASSERT_TRUE(cq && s && r) << std::strerror(errno);
    for (ibv_qp* qp : {s.get(), r.get()}) {
        ibv_qp_attr a{};
        a.qp_state = IBV_QPS_INIT;
        a.port_num = kPort;
        a.qkey = kQkey;
        ASSERT_EQ(
                ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY),
                0);
        a = {};
        a.qp_state = IBV_QPS_RTR;
        ASSERT_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
        a.qp_state = IBV_QPS_RTS;
        a.sq_psn = 0;
        ASSERT_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN), 0);
    }
    ibv_ah_attr ah_attr = ah_to_self();
    AhPtr ah{ibv_create_ah(pd_.get(), &ah_attr)};
    ASSERT_TRUE(ah) << std::strerror(errno);

    Buffer buf{pd_.get(), 4096, kAllAccess};
    std::iota(buf.bytes.begin(), buf.bytes.begin() + 256, 0);
    ibv_sge rsge = buf.sge(1024, 40 + 256);
    ibv_recv_wr rwr{};
    rwr.wr_id = 77;
    rwr.sg_list = &rsge;
    rwr.num_sge = 1;
    ibv_recv_wr* rbad = nullptr;
    ASSERT_EQ(ibv_post_recv(r.get(), &rwr, &rbad), 0);

    ibv_sge ssge = buf.sge(0, 256);
    ibv_send_wr wr{};
    wr.wr_id = 66;
    wr.opcode = IBV_WR_SEND;
    wr.sg_list = &ssge;
    wr.num_sge = 1;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.ud.ah = ah.get();
    wr.wr.ud.remote_qpn = r->qp_num;
    wr.wr.ud.remote_qkey = kQkey;
    ibv_send_wr* bad = nullptr;
    ASSERT_EQ(ibv_post_send(s.get(), &wr, &bad), 0);
    const auto c = wait_completions(cq.get(), 2);
    ASSERT_EQ(c.size(), 2U);
    const ibv_wc& recv = c[0].wr_id == 77 ? c[0] : c[1];
    EXPECT_EQ(recv.status, IBV_WC_SUCCESS) << ibv_wc_status_str(recv.status);
    EXPECT_EQ(recv.byte_len, 40U + 256U);
    EXPECT_TRUE(recv.wc_flags & IBV_WC_GRH);
    EXPECT_EQ(recv.src_qp, s->qp_num);
    EXPECT_EQ(std::memcmp(buf.bytes.data() + 1024 + 40, buf.bytes.data(), 256), 0);
}

} // namespace
