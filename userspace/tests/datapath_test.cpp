// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// The provider's post_send, post_recv and poll_cq entry points, run against
// rings in plain memory and a pipe standing in for the uverbs command fd:
// the test plays the kernel's part (consuming WQEs, producing CQEs) and
// reads the doorbell writes from the pipe.
#include "provider.h"

#include <sys/syscall.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <memory>
#include <numeric>
#include <set>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include <gtest/gtest.h>

namespace sroce {
namespace {

// Memory laid out as one kernel ring mapping.
class RingMemory {
public:
    RingMemory(std::uint32_t entries, std::uint32_t stride)
        : geometry_{entries, stride}, words_((geometry_.bytes() + 7) / 8) {}
    [[nodiscard]] std::byte* base() { return reinterpret_cast<std::byte*>(words_.data()); }
    [[nodiscard]] RingGeometry geometry() const { return geometry_; }
    [[nodiscard]] sroce_ring_ctrl& ctrl() { return *reinterpret_cast<sroce_ring_ctrl*>(base()); }

private:
    RingGeometry geometry_;
    std::vector<std::uint64_t> words_;
};

class FakeCmdFd {
public:
    FakeCmdFd() {
        std::array<int, 2> fds{-1, -1};
        // Writes block like the real command fd; reads return what is there.
        if (::pipe2(fds.data(), O_CLOEXEC) == 0) {
            read_end_ = fds[0];
            write_end_ = fds[1];
            (void)::fcntl(read_end_, F_SETFL, O_NONBLOCK);
        }
    }
    FakeCmdFd(const FakeCmdFd&) = delete;
    FakeCmdFd& operator=(const FakeCmdFd&) = delete;
    FakeCmdFd(FakeCmdFd&&) = delete;
    FakeCmdFd& operator=(FakeCmdFd&&) = delete;
    ~FakeCmdFd() {
        ::close(read_end_);
        ::close(write_end_);
    }
    [[nodiscard]] int fd() const { return write_end_; }

    // Takes the doorbell commands written so far.
    std::vector<verbs_cmd_post_send> doorbells() const { // NOLINT(modernize-use-nodiscard)
        std::vector<verbs_cmd_post_send> out;
        verbs_cmd_post_send cmd{};
        while (::read(read_end_, &cmd, sizeof(cmd)) == static_cast<ssize_t>(sizeof(cmd)))
            out.push_back(cmd);
        return out;
    }

private:
    int read_end_ = -1;
    int write_end_ = -1;
};

constexpr std::uint32_t kSqEntries = 8;
constexpr std::uint32_t kSqStride = 128; // 4 SGEs or 64 inline bytes
constexpr std::uint32_t kRqEntries = 4;
constexpr std::uint32_t kRqStride = 16 + 2 * 16;
constexpr std::uint32_t kQpHandle = 0x51;

// A QP wired to fake rings, as create_qp leaves one.
class FakeQp : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_GE(cmd_fd_.fd(), 0);
        context_.cmd_fd = cmd_fd_.fd();
        qp_ = std::make_unique<Qp>();
        ibv_qp& ibqp = qp_->vqp.qp;
        ibqp.context = &context_;
        ibqp.handle = kQpHandle;
        ibqp.qp_type = IBV_QPT_RC;
        qp_->sq.ring = ProducerRing{sq_mem_.base(), sq_mem_.geometry()};
        qp_->sq.limits = SendQueueLimits{IBV_QPT_RC, 4, 64, kSqStride};
        qp_->rq.ring = ProducerRing{rq_mem_.base(), rq_mem_.geometry()};
        qp_->rq.limits = RecvQueueLimits{2, kRqStride};
        qp_->state = IBV_QPS_RTS;
        init_doorbell(*qp_);
        for (std::uint32_t i = 0; i < wrs_.size(); ++i) {
            sge_[i] = ibv_sge{.addr = 0x1000ULL * (i + 1), .length = 64, .lkey = 7};
            wrs_[i].wr_id = 100 + i;
            wrs_[i].opcode = IBV_WR_SEND;
            wrs_[i].sg_list = &sge_[i];
            wrs_[i].num_sge = 1;
            rwrs_[i].wr_id = 200 + i;
            rwrs_[i].sg_list = &sge_[i];
            rwrs_[i].num_sge = 1;
        }
    }

    // Chains the first n work requests.
    ibv_send_wr* send_chain(std::size_t n) {
        for (std::size_t i = 0; i < n; ++i)
            wrs_[i].next = i + 1 < n ? &wrs_[i + 1] : nullptr;
        return wrs_.data();
    }
    ibv_recv_wr* recv_chain(std::size_t n) {
        for (std::size_t i = 0; i < n; ++i)
            rwrs_[i].next = i + 1 < n ? &rwrs_[i + 1] : nullptr;
        return rwrs_.data();
    }
    sroce_send_wqe sq_slot(std::uint32_t counter) {
        sroce_send_wqe wqe{};
        std::memcpy(&wqe, qp_->sq.ring.slot_at(counter), sizeof(wqe));
        return wqe;
    }
    ibv_qp* ibqp() { return &qp_->vqp.qp; }

    struct RaceCount {
        std::uint32_t rounds = 0;
        std::uint32_t missed = 0; // neither seen by the "kernel" nor rung for
        std::uint32_t rang = 0;
    };
    // The race a ring's flag protocol closes (sroce-abi.h), for up to 20,000
    // rounds or 3 s. Each round the flags word is `post_flags` as `post()`
    // (one post, false: it failed) starts, while a "kernel" thread does what
    // the kernel does: stores `kernel_flags`, a full barrier, then reads
    // producer. A WQE the kernel's read missed must have rung the doorbell.
    template <typename Post>
    RaceCount race_flags(RingMemory& mem, std::uint32_t post_flags, std::uint32_t kernel_flags,
                         Post post) {
        constexpr std::uint32_t kRounds = 20000;
        constexpr std::uint32_t kStop = ~0U;
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{3};
        const RingView view{mem.base(), mem.geometry()};
        std::atomic<std::uint32_t> start{0};
        std::atomic<std::uint32_t> done{0};
        std::atomic<std::uint32_t> seen_to{0};
        std::thread kernel{[&] {
            for (std::uint32_t r = 1;; ++r) {
                std::uint32_t s = 0;
                while ((s = start.load(std::memory_order_acquire)) != r && s != kStop) {
                }
                if (s == kStop)
                    return;
                view.shared_flags().store(kernel_flags, std::memory_order_relaxed);
                std::atomic_thread_fence(std::memory_order_seq_cst); // smp_mb()
                seen_to.store(view.shared_producer().load(std::memory_order_acquire),
                              std::memory_order_relaxed);
                done.store(r, std::memory_order_release);
            }
        }};
        RaceCount count;
        while (count.rounds < kRounds && std::chrono::steady_clock::now() < deadline) {
            const std::uint32_t r = ++count.rounds;
            view.shared_flags().store(post_flags, std::memory_order_relaxed);
            start.store(r, std::memory_order_release);
            if (!post()) {
                ADD_FAILURE() << "the post of round " << r << " failed";
                break;
            }
            while (done.load(std::memory_order_acquire) != r) {
            }
            const std::uint32_t producer = view.shared_producer().load(std::memory_order_relaxed);
            const bool rang = !cmd_fd_.doorbells().empty();
            count.missed += seen_to.load(std::memory_order_relaxed) != producer && !rang ? 1U : 0U;
            count.rang += rang ? 1U : 0U;
            view.shared_consumer().store(producer, std::memory_order_release); // taken
        }
        start.store(kStop, std::memory_order_release);
        kernel.join();
        return count;
    }

    // From now on the command fd refuses writes (EBADF), as the kernel
    // refuses a doorbell once the device is gone (EIO).
    void refuse_doorbells() {
        refusing_fd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
        ASSERT_GE(refusing_fd_, 0);
        context_.cmd_fd = refusing_fd_;
    }
    void TearDown() override {
        if (refusing_fd_ >= 0)
            ::close(refusing_fd_);
    }

    FakeCmdFd cmd_fd_;
    int refusing_fd_ = -1;
    ibv_context context_{};
    RingMemory sq_mem_{kSqEntries, kSqStride};
    RingMemory rq_mem_{kRqEntries, kRqStride};
    std::unique_ptr<Qp> qp_;
    std::array<ibv_sge, 16> sge_{};
    std::array<ibv_send_wr, 16> wrs_{};
    std::array<ibv_recv_wr, 16> rwrs_{};
};

TEST_F(FakeQp, PostSendWritesTheRingAndRingsTheDoorbellOnce) {
    ibv_send_wr* bad = nullptr;
    ASSERT_EQ(post_send(ibqp(), send_chain(3), &bad), 0);
    EXPECT_EQ(sq_mem_.ctrl().producer, 3U);
    for (std::uint32_t i = 0; i < 3; ++i) {
        const auto wqe = sq_slot(i);
        EXPECT_EQ(wqe.wr_id, 100U + i);
        EXPECT_EQ(wqe.num_sge, 1U);
    }
    const auto bells = cmd_fd_.doorbells();
    ASSERT_EQ(bells.size(), 1U) << "one system call per post_send, not per WR";
    const auto& db = bells[0];
    EXPECT_EQ(db.hdr.command, static_cast<std::uint32_t>(IB_USER_VERBS_CMD_POST_SEND));
    EXPECT_EQ(db.hdr.in_words * 4U, sizeof(verbs_cmd_post_send));
    EXPECT_EQ(db.hdr.out_words * 4U, sizeof(ib_uverbs_post_send_resp));
    EXPECT_EQ(db.core.qp_handle, kQpHandle);
    EXPECT_EQ(db.core.wr_count, 0U);
    EXPECT_EQ(db.core.sge_count, 0U);
    EXPECT_GE(db.core.wqe_size, sizeof(ib_uverbs_send_wr));
    EXPECT_EQ(db.core.response, reinterpret_cast<std::uintptr_t>(&qp_->doorbell_resp));
}

TEST_F(FakeQp, FullSendQueueGivesEnomemAtTheFirstWrThatDoesNotFit) {
    ibv_send_wr* bad = nullptr;
    EXPECT_EQ(post_send(ibqp(), send_chain(kSqEntries + 2), &bad), ENOMEM);
    EXPECT_EQ(bad, &wrs_[kSqEntries]);
    EXPECT_EQ(sq_mem_.ctrl().producer, kSqEntries) << "the WRs that fit are posted";
    EXPECT_EQ(cmd_fd_.doorbells().size(), 1U);

    // Nothing fits until the kernel retires WQEs.
    bad = nullptr;
    EXPECT_EQ(post_send(ibqp(), send_chain(1), &bad), ENOMEM);
    EXPECT_EQ(bad, wrs_.data());
    EXPECT_TRUE(cmd_fd_.doorbells().empty()) << "no doorbell when nothing was posted";

    sq_mem_.ctrl().consumer = 2;
    EXPECT_EQ(post_send(ibqp(), send_chain(2), &bad), 0);
    EXPECT_EQ(sq_mem_.ctrl().producer, kSqEntries + 2);
}

TEST_F(FakeQp, BadWrInTheMiddleStopsThereAndKeepsTheOnesBefore) {
    wrs_[2].num_sge = 5; // more than the QP's 4
    ibv_send_wr* bad = nullptr;
    EXPECT_EQ(post_send(ibqp(), send_chain(4), &bad), EINVAL);
    EXPECT_EQ(bad, &wrs_[2]);
    EXPECT_EQ(sq_mem_.ctrl().producer, 2U);
    EXPECT_EQ(cmd_fd_.doorbells().size(), 1U);
}

// WQEs in the ring are posted: another thread's doorbell or the kernel's
// error flush takes them, and they complete. So a doorbell refused after
// publishing them fails no WR; the next post answers with the refusal.
TEST_F(FakeQp, ARefusedDoorbellLeavesThePublishedWrsPostedAndFailsTheNextPost) {
    refuse_doorbells();
    ibv_send_wr* bad = nullptr;
    EXPECT_EQ(post_send(ibqp(), send_chain(3), &bad), 0);
    EXPECT_EQ(bad, nullptr) << "no WR named as not posted";
    EXPECT_EQ(sq_mem_.ctrl().producer, 3U);

    EXPECT_EQ(post_send(ibqp(), send_chain(2), &bad), EBADF);
    EXPECT_EQ(bad, wrs_.data());
    EXPECT_EQ(sq_mem_.ctrl().producer, 3U) << "nothing published after the refusal";
}

TEST_F(FakeQp, PostSendBeforeRtsIsRefusedUntouched) {
    for (auto state : {IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPS_RTR}) {
        qp_->state = state;
        ibv_send_wr* bad = nullptr;
        EXPECT_EQ(post_send(ibqp(), send_chain(2), &bad), EINVAL) << "state " << state;
        EXPECT_EQ(bad, wrs_.data());
    }
    EXPECT_EQ(sq_mem_.ctrl().producer, 0U);
    EXPECT_TRUE(cmd_fd_.doorbells().empty());

    // Error states still take WRs (they complete flushed).
    qp_->state = IBV_QPS_ERR;
    ibv_send_wr* bad = nullptr;
    EXPECT_EQ(post_send(ibqp(), send_chain(1), &bad), 0);
}

TEST_F(FakeQp, PostRecvWritesTheRingWithoutASystemCall) {
    ibv_recv_wr* bad = nullptr;
    ASSERT_EQ(post_recv(ibqp(), recv_chain(3), &bad), 0);
    EXPECT_EQ(rq_mem_.ctrl().producer, 3U);
    sroce_recv_wqe wqe{};
    std::memcpy(&wqe, qp_->rq.ring.slot_at(1), sizeof(wqe));
    EXPECT_EQ(wqe.wr_id, 201U);
    EXPECT_EQ(wqe.num_sge, 1U);
    EXPECT_TRUE(cmd_fd_.doorbells().empty());
}

TEST_F(FakeQp, PostRecvLimits) {
    ibv_recv_wr* bad = nullptr;
    EXPECT_EQ(post_recv(ibqp(), recv_chain(kRqEntries + 1), &bad), ENOMEM);
    EXPECT_EQ(bad, &rwrs_[kRqEntries]);
    EXPECT_EQ(rq_mem_.ctrl().producer, kRqEntries);

    rq_mem_.ctrl().consumer = kRqEntries;
    rwrs_[0].num_sge = 3; // QP has 2
    EXPECT_EQ(post_recv(ibqp(), recv_chain(1), &bad), EINVAL);

    qp_->state = IBV_QPS_RESET;
    rwrs_[0].num_sge = 1;
    EXPECT_EQ(post_recv(ibqp(), recv_chain(1), &bad), EINVAL);
    EXPECT_EQ(rq_mem_.ctrl().producer, kRqEntries);
}

TEST_F(FakeQp, QpOnAnSrqHasNoReceiveRingOfItsOwn) {
    qp_->rq.ring = ProducerRing{};
    ibv_recv_wr* bad = nullptr;
    EXPECT_EQ(post_recv(ibqp(), recv_chain(1), &bad), EINVAL);
    EXPECT_EQ(bad, rwrs_.data());
}

// A QP the kernel moved to the error state flushes receive WQEs published
// after that only on a doorbell (sroce-abi.h): the provider rings it when
// the kernel's flag says so, or when the application moved the QP there
// (kernels that publish no flag).
TEST_F(FakeQp, PostRecvInTheErrorStateRingsTheDoorbell) {
    ibv_recv_wr* bad = nullptr;
    rq_mem_.ctrl().flags = SROCE_RING_FLAG_QP_ERR;
    ASSERT_EQ(post_recv(ibqp(), recv_chain(2), &bad), 0);
    EXPECT_EQ(rq_mem_.ctrl().producer, 2U) << "the WRs are in the ring";
    auto bells = cmd_fd_.doorbells();
    ASSERT_EQ(bells.size(), 1U) << "one doorbell for the whole chain";
    EXPECT_EQ(bells[0].hdr.command, static_cast<std::uint32_t>(IB_USER_VERBS_CMD_POST_SEND));
    EXPECT_EQ(bells[0].core.qp_handle, kQpHandle);
    EXPECT_EQ(bells[0].core.wr_count, 0U);

    // Kernels without the flag: the state the application set.
    rq_mem_.ctrl().flags = 0;
    qp_->state = IBV_QPS_ERR;
    ASSERT_EQ(post_recv(ibqp(), recv_chain(1), &bad), 0);
    EXPECT_EQ(cmd_fd_.doorbells().size(), 1U);

    // Nothing posted (the ring is full): nothing to flush.
    rq_mem_.ctrl().flags = SROCE_RING_FLAG_QP_ERR;
    ASSERT_EQ(post_recv(ibqp(), recv_chain(2), &bad), ENOMEM);
    EXPECT_EQ(bad, &rwrs_[1]) << "the first fits";
    EXPECT_EQ(cmd_fd_.doorbells().size(), 1U) << "its doorbell";
    EXPECT_EQ(post_recv(ibqp(), recv_chain(1), &bad), ENOMEM);
    EXPECT_TRUE(cmd_fd_.doorbells().empty());

    // Back from RESET the flag is clear: no system call again.
    rq_mem_.ctrl().flags = 0;
    rq_mem_.ctrl().consumer = rq_mem_.ctrl().producer;
    qp_->state = IBV_QPS_RTS;
    ASSERT_EQ(post_recv(ibqp(), recv_chain(1), &bad), 0);
    EXPECT_TRUE(cmd_fd_.doorbells().empty());
}

// The race the doorbell closes: a "kernel" thread moves the QP to the error
// state as the kernel does (flag, full barrier, then a flush of what
// producer covers) while the test posts one receive. Each round, the WQE
// is either in the kernel's flush or followed by a doorbell, never neither.
// (Without the provider's fence, this host misses one in a few thousand.)
TEST_F(FakeQp, ARecvRacingTheErrorStateIsFlushedOrRingsTheDoorbell) {
    ibv_recv_wr* bad = nullptr;
    const RaceCount count = race_flags(rq_mem_, 0, SROCE_RING_FLAG_QP_ERR,
                                       [&] { return post_recv(ibqp(), recv_chain(1), &bad) == 0; });
    EXPECT_EQ(count.missed, 0U) << "receives neither flushed nor followed by a doorbell, in "
                                << count.rounds << " rounds";
}

// While the kernel drains the SQ it reads producer again before it stops
// (sroce-abi.h): a post then makes no system call; once it stops, posts
// ring again.
TEST_F(FakeQp, PostSendSkipsTheDoorbellWhileTheKernelDrains) {
    ibv_send_wr* bad = nullptr;
    sq_mem_.ctrl().flags = SROCE_RING_FLAG_SQ_DRAINING;
    ASSERT_EQ(post_send(ibqp(), send_chain(2), &bad), 0);
    ASSERT_EQ(post_send(ibqp(), send_chain(1), &bad), 0);
    EXPECT_EQ(sq_mem_.ctrl().producer, 3U) << "the WQEs are published";
    EXPECT_TRUE(cmd_fd_.doorbells().empty()) << "the draining kernel takes them";

    sq_mem_.ctrl().flags = 0;
    ASSERT_EQ(post_send(ibqp(), send_chain(1), &bad), 0);
    EXPECT_EQ(cmd_fd_.doorbells().size(), 1U) << "an idle kernel needs the doorbell";

    // The RQ's error flag is another ring's: it does not stand for this one.
    rq_mem_.ctrl().flags = SROCE_RING_FLAG_QP_ERR;
    sq_mem_.ctrl().flags = SROCE_RING_FLAG_QP_ERR;
    ASSERT_EQ(post_send(ibqp(), send_chain(1), &bad), 0);
    EXPECT_EQ(cmd_fd_.doorbells().size(), 1U);
}

// The race the flag's protocol closes: a "kernel" thread stops draining as
// the kernel does (clears the flag, full barrier, reads producer again)
// while the test posts one send with the flag still set when it starts.
// Each round, the WQE is either seen by the kernel's second look or
// followed by a doorbell, never neither.
TEST_F(FakeQp, ASendRacingTheEndOfDrainingIsSeenOrRingsTheDoorbell) {
    ibv_send_wr* bad = nullptr;
    const RaceCount count = race_flags(sq_mem_, SROCE_RING_FLAG_SQ_DRAINING, 0,
                                       [&] { return post_send(ibqp(), send_chain(1), &bad) == 0; });
    EXPECT_EQ(count.missed, 0U)
            << "sends neither seen by the kernel nor followed by a doorbell, in " << count.rounds
            << " rounds";
    EXPECT_LT(count.rang, count.rounds)
            << "no round posted while the kernel drained: nothing was raced";
}

TEST(FakeSrq, PostSrqRecvFillsTheSharedRing) {
    RingMemory mem{4, 16 + 16};
    Srq srq{};
    srq.rq.ring = ProducerRing{mem.base(), mem.geometry()};
    srq.rq.limits = RecvQueueLimits{1, 32};
    std::array<ibv_sge, 6> sge{};
    std::array<ibv_recv_wr, 6> wr{};
    for (std::size_t i = 0; i < wr.size(); ++i) {
        sge[i] = ibv_sge{.addr = 0x100 * (i + 1), .length = 8, .lkey = 3};
        wr[i].wr_id = i;
        wr[i].sg_list = &sge[i];
        wr[i].num_sge = 1;
        wr[i].next = i + 1 < wr.size() ? &wr[i + 1] : nullptr;
    }
    ibv_recv_wr* bad = nullptr;
    EXPECT_EQ(post_srq_recv(&srq.vsrq.srq, wr.data(), &bad), ENOMEM);
    EXPECT_EQ(bad, &wr[4]);
    EXPECT_EQ(mem.ctrl().producer, 4U);
    sroce_recv_wqe wqe{};
    std::memcpy(&wqe, srq.rq.ring.slot_at(3), sizeof(wqe));
    EXPECT_EQ(wqe.wr_id, 3U);

    mem.ctrl().consumer = 4;
    wr[4].num_sge = 2; // the SRQ has 1
    EXPECT_EQ(post_srq_recv(&srq.vsrq.srq, &wr[4], &bad), EINVAL);
    EXPECT_EQ(bad, &wr[4]);
    EXPECT_EQ(mem.ctrl().producer, 4U);
}

// --- the ibv_wr_* API ------------------------------------------------------

class FakeQpEx : public FakeQp {
protected:
    void SetUp() override {
        FakeQp::SetUp();
        ASSERT_TRUE(setup_qp_ex(*qp_, IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE |
                                              IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD));
        qpx_ = ibv_qp_to_qp_ex(ibqp());
        ASSERT_EQ(qpx_, &qp_->vqp.qp_ex) << "libibverbs sees the QP as extended";
    }
    ibv_qp_ex* qpx_ = nullptr;
};

TEST_F(FakeQpEx, ABatchWhileTheKernelDrainsMakesNoSystemCall) {
    sq_mem_.ctrl().flags = SROCE_RING_FLAG_SQ_DRAINING;
    ibv_wr_start(qpx_);
    qpx_->wr_id = 1;
    ibv_wr_send(qpx_);
    ibv_wr_set_sge(qpx_, 0x77, 0x1000, 64);
    ASSERT_EQ(ibv_wr_complete(qpx_), 0);
    EXPECT_EQ(sq_mem_.ctrl().producer, 1U);
    EXPECT_TRUE(cmd_fd_.doorbells().empty());
}

TEST_F(FakeQpEx, ABatchIsPublishedWithOneDoorbellAtComplete) {
    std::array<std::uint8_t, 20> text{};
    std::iota(text.begin(), text.end(), 1);
    ibv_wr_start(qpx_);
    qpx_->wr_id = 1;
    qpx_->wr_flags = IBV_SEND_SIGNALED;
    ibv_wr_send(qpx_);
    ibv_wr_set_sge(qpx_, 0x77, 0x1000, 64);
    qpx_->wr_id = 2;
    qpx_->wr_flags = 0;
    ibv_wr_rdma_write(qpx_, 0x99, 0xabc000);
    ibv_wr_set_inline_data(qpx_, text.data(), text.size());
    qpx_->wr_id = 3;
    ibv_wr_atomic_fetch_add(qpx_, 0x55, 0x8000, 7);
    ibv_wr_set_sge(qpx_, 0x77, 0x2000, 8);
    EXPECT_EQ(sq_mem_.ctrl().producer, 0U) << "nothing visible before complete";
    ASSERT_EQ(ibv_wr_complete(qpx_), 0);

    EXPECT_EQ(sq_mem_.ctrl().producer, 3U);
    EXPECT_EQ(cmd_fd_.doorbells().size(), 1U);
    auto w = sq_slot(0);
    EXPECT_EQ(w.wr_id, 1U);
    EXPECT_EQ(w.opcode, static_cast<std::uint32_t>(IBV_WR_SEND));
    EXPECT_EQ(w.send_flags, static_cast<std::uint32_t>(IBV_SEND_SIGNALED));
    EXPECT_EQ(w.num_sge, 1U);
    w = sq_slot(1);
    EXPECT_EQ(w.opcode, static_cast<std::uint32_t>(IBV_WR_RDMA_WRITE));
    EXPECT_EQ(w.send_flags, static_cast<std::uint32_t>(IBV_SEND_INLINE));
    EXPECT_EQ(w.inline_len, text.size());
    EXPECT_EQ(w.wr.rdma.rkey, 0x99U);
    EXPECT_EQ(w.wr.rdma.remote_addr, 0xabc000U);
    EXPECT_EQ(std::memcmp(qp_->sq.ring.slot_at(1) + SROCE_SEND_WQE_HDR_SIZE, text.data(),
                          text.size()),
              0);
    w = sq_slot(2);
    EXPECT_EQ(w.opcode, static_cast<std::uint32_t>(IBV_WR_ATOMIC_FETCH_AND_ADD));
    EXPECT_EQ(w.wr.atomic.compare_add, 7U);
    EXPECT_EQ(w.wr.atomic.rkey, 0x55U);
}

TEST_F(FakeQp, AtomicWriteIsACompleteWrCarryingItsEightBytes) {
    ASSERT_TRUE(setup_qp_ex(*qp_, IBV_QP_EX_WITH_ATOMIC_WRITE | IBV_QP_EX_WITH_SEND));
    ibv_qp_ex* qpx = ibv_qp_to_qp_ex(ibqp());
    ASSERT_NE(qpx, nullptr);
    std::array<std::uint8_t, 8> value{0xf0, 1, 2, 3, 4, 5, 6, 0x0f};
    ibv_wr_start(qpx);
    qpx->wr_id = 9;
    qpx->wr_flags = IBV_SEND_SIGNALED | IBV_SEND_FENCE | IBV_SEND_INLINE;
    ibv_wr_atomic_write(qpx, 0x4321, 0xfeed0008, value.data());
    value.fill(0); // copied at the call
    qpx->wr_id = 10;
    qpx->wr_flags = 0;
    ibv_wr_send(qpx); // the next WR starts fresh
    ibv_wr_set_sge(qpx, 1, 0x1000, 8);
    ASSERT_EQ(ibv_wr_complete(qpx), 0);
    EXPECT_EQ(sq_mem_.ctrl().producer, 2U);
    const auto w = sq_slot(0);
    EXPECT_EQ(w.wr_id, 9U);
    EXPECT_EQ(w.opcode, static_cast<std::uint32_t>(IBV_WR_ATOMIC_WRITE));
    EXPECT_EQ(w.send_flags, static_cast<std::uint32_t>(IBV_SEND_SIGNALED | IBV_SEND_FENCE));
    EXPECT_EQ(w.num_sge, 0U);
    EXPECT_EQ(w.inline_len, 0U);
    EXPECT_EQ(w.wr.atomic_write.rkey, 0x4321U);
    EXPECT_EQ(w.wr.atomic_write.remote_addr, 0xfeed0008U);
    const std::array<std::uint8_t, 8> expect{0xf0, 1, 2, 3, 4, 5, 6, 0x0f};
    EXPECT_EQ(std::memcmp(w.wr.atomic_write.value, expect.data(), expect.size()), 0);
    EXPECT_EQ(sq_slot(1).opcode, static_cast<std::uint32_t>(IBV_WR_SEND));
}

TEST_F(FakeQp, AtomicWriteOnlyOnRc) {
    qp_->vqp.qp.qp_type = IBV_QPT_UC;
    EXPECT_FALSE(setup_qp_ex(*qp_, IBV_QP_EX_WITH_ATOMIC_WRITE));
}

TEST_F(FakeQpEx, AbortDiscardsAndReleasesTheQueue) {
    ibv_wr_start(qpx_);
    ibv_wr_send(qpx_);
    ibv_wr_set_sge(qpx_, 1, 0x1000, 8);
    ibv_wr_abort(qpx_);
    EXPECT_EQ(sq_mem_.ctrl().producer, 0U);
    EXPECT_TRUE(cmd_fd_.doorbells().empty());
    ibv_send_wr* bad = nullptr;
    EXPECT_EQ(post_send(ibqp(), send_chain(1), &bad), 0) << "the SQ lock was released";
    EXPECT_EQ(sq_mem_.ctrl().producer, 1U);
}

TEST_F(FakeQpEx, ErrorsFailTheWholeBatch) {
    // A WR without its data call.
    ibv_wr_start(qpx_);
    ibv_wr_send(qpx_);
    ibv_wr_set_sge(qpx_, 1, 0x1000, 8);
    ibv_wr_send(qpx_);
    EXPECT_EQ(ibv_wr_complete(qpx_), EINVAL);
    EXPECT_EQ(sq_mem_.ctrl().producer, 0U);

    // More WRs than the ring holds.
    ibv_wr_start(qpx_);
    for (std::uint32_t i = 0; i <= kSqEntries; ++i) {
        ibv_wr_send(qpx_);
        ibv_wr_set_sge(qpx_, 1, 0x1000, 8);
    }
    EXPECT_EQ(ibv_wr_complete(qpx_), ENOMEM);
    EXPECT_EQ(sq_mem_.ctrl().producer, 0U);

    // Inline beyond the QP's limit (64).
    std::array<std::uint8_t, 65> big{};
    ibv_wr_start(qpx_);
    ibv_wr_send(qpx_);
    ibv_wr_set_inline_data(qpx_, big.data(), big.size());
    EXPECT_EQ(ibv_wr_complete(qpx_), EINVAL);

    // Before RTS.
    qp_->state = IBV_QPS_INIT;
    ibv_wr_start(qpx_);
    ibv_wr_send(qpx_);
    ibv_wr_set_sge(qpx_, 1, 0x1000, 8);
    EXPECT_EQ(ibv_wr_complete(qpx_), EINVAL);
    EXPECT_EQ(sq_mem_.ctrl().producer, 0U);
    EXPECT_TRUE(cmd_fd_.doorbells().empty());
}

TEST_F(FakeQpEx, InlineDataListIsGatheredAtTheCall) {
    std::array<std::uint8_t, 5> a{1, 2, 3, 4, 5};
    std::array<std::uint8_t, 3> b{6, 7, 8};
    const std::array<ibv_data_buf, 2> bufs{ibv_data_buf{a.data(), a.size()},
                                           ibv_data_buf{b.data(), b.size()}};
    ibv_wr_start(qpx_);
    ibv_wr_send(qpx_);
    ibv_wr_set_inline_data_list(qpx_, bufs.size(), bufs.data());
    a.fill(0); // already copied
    ASSERT_EQ(ibv_wr_complete(qpx_), 0);
    const auto w = sq_slot(0);
    ASSERT_EQ(w.inline_len, 8U);
    const std::array<std::uint8_t, 8> expect{1, 2, 3, 4, 5, 6, 7, 8};
    EXPECT_EQ(std::memcmp(qp_->sq.ring.slot_at(0) + SROCE_SEND_WQE_HDR_SIZE, expect.data(), 8), 0);
}

TEST_F(FakeQpEx, BindAndLocalInvalidateNeedNoDataCall) {
    ibv_mr mr{};
    mr.lkey = 0x4242;
    ibv_mw mw{};
    mw.rkey = 0x777700;
    mw.type = IBV_MW_TYPE_2;
    const ibv_mw_bind_info info{
            .mr = &mr, .addr = 0x1000, .length = 0x800, .mw_access_flags = IBV_ACCESS_REMOTE_READ};
    ibv_wr_start(qpx_);
    qpx_->wr_id = 5;
    qpx_->wr_flags = IBV_SEND_SIGNALED;
    ibv_wr_bind_mw(qpx_, &mw, 0x777701, &info);
    qpx_->wr_id = 6;
    ibv_wr_local_inv(qpx_, 0x777701);
    ASSERT_EQ(ibv_wr_complete(qpx_), 0);
    EXPECT_EQ(sq_mem_.ctrl().producer, 2U);
    auto w = sq_slot(0);
    EXPECT_EQ(w.wr_id, 5U);
    EXPECT_EQ(w.opcode, static_cast<std::uint32_t>(IBV_WR_BIND_MW));
    EXPECT_EQ(w.wr.bind_mw.mw_rkey, 0x777700U);
    EXPECT_EQ(w.wr.bind_mw.rkey, 0x777701U);
    EXPECT_EQ(w.wr.bind_mw.mr_lkey, 0x4242U);
    EXPECT_EQ(w.wr.bind_mw.length, 0x800U);
    w = sq_slot(1);
    EXPECT_EQ(w.opcode, static_cast<std::uint32_t>(IBV_WR_LOCAL_INV));
    EXPECT_EQ(w.ex.invalidate_rkey, 0x777701U);
}

TEST_F(FakeQp, BindMwPostsAType1BindAndUpdatesTheKey) {
    ibv_mr mr{};
    mr.lkey = 0x99;
    ibv_mw mw{};
    mw.rkey = 0x1234ff;
    mw.type = IBV_MW_TYPE_1;
    ibv_mw_bind bind{};
    bind.wr_id = 9;
    bind.send_flags = IBV_SEND_SIGNALED;
    bind.bind_info = ibv_mw_bind_info{
            .mr = &mr, .addr = 0x2000, .length = 64, .mw_access_flags = IBV_ACCESS_REMOTE_WRITE};
    ASSERT_EQ(bind_mw(ibqp(), &mw, &bind), 0);
    EXPECT_EQ(mw.rkey, 0x123400U) << "only the key byte changes, with wrap";
    EXPECT_EQ(sq_mem_.ctrl().producer, 1U);
    EXPECT_EQ(cmd_fd_.doorbells().size(), 1U);
    const auto w = sq_slot(0);
    EXPECT_EQ(w.wr_id, 9U);
    EXPECT_EQ(w.opcode, static_cast<std::uint32_t>(IBV_WR_BIND_MW));
    EXPECT_EQ(w.wr.bind_mw.mw_rkey, 0x1234ffU);
    EXPECT_EQ(w.wr.bind_mw.rkey, 0x123400U);
    EXPECT_EQ(w.wr.bind_mw.addr, 0x2000U);

    mw.type = IBV_MW_TYPE_2; // bound by IBV_WR_BIND_MW only
    EXPECT_EQ(bind_mw(ibqp(), &mw, &bind), EINVAL);
    EXPECT_EQ(mw.rkey, 0x123400U);
    EXPECT_EQ(sq_mem_.ctrl().producer, 1U);
}

TEST_F(FakeQp, ABindWhoseDoorbellIsRefusedStillGivesTheNewKey) {
    refuse_doorbells();
    ibv_mr mr{};
    ibv_mw mw{};
    mw.rkey = 0x1234ff;
    mw.type = IBV_MW_TYPE_1;
    ibv_mw_bind bind{};
    bind.bind_info = ibv_mw_bind_info{
            .mr = &mr, .addr = 0x2000, .length = 64, .mw_access_flags = IBV_ACCESS_REMOTE_READ};
    EXPECT_EQ(bind_mw(ibqp(), &mw, &bind), 0);
    EXPECT_EQ(mw.rkey, 0x123400U) << "the bind is posted: its key is the window's";
    EXPECT_EQ(sq_mem_.ctrl().producer, 1U);

    EXPECT_EQ(bind_mw(ibqp(), &mw, &bind), EBADF);
    EXPECT_EQ(mw.rkey, 0x123400U);
    EXPECT_EQ(sq_mem_.ctrl().producer, 1U);
}

TEST_F(FakeQpEx, ABatchWhoseDoorbellIsRefusedIsPostedAndTheNextOneIsNot) {
    refuse_doorbells();
    ibv_wr_start(qpx_);
    ibv_wr_send(qpx_);
    ibv_wr_set_sge(qpx_, 0x77, 0x1000, 64);
    EXPECT_EQ(ibv_wr_complete(qpx_), 0);
    EXPECT_EQ(sq_mem_.ctrl().producer, 1U);

    ibv_wr_start(qpx_);
    ibv_wr_send(qpx_);
    ibv_wr_set_sge(qpx_, 0x77, 0x1000, 64);
    EXPECT_EQ(ibv_wr_complete(qpx_), EBADF);
    EXPECT_EQ(sq_mem_.ctrl().producer, 1U);
}

TEST_F(FakeQp, UdBatchCarriesTheAddressHandle) {
    qp_->vqp.qp.qp_type = IBV_QPT_UD;
    qp_->sq.limits.qp_type = IBV_QPT_UD;
    ASSERT_TRUE(setup_qp_ex(*qp_, IBV_QP_EX_WITH_SEND));
    ibv_qp_ex* qpx = ibv_qp_to_qp_ex(ibqp());
    ASSERT_NE(qpx, nullptr);
    Ah ah{};
    ah.ah_num = 0x1234;
    ibv_wr_start(qpx);
    ibv_wr_send(qpx);
    ibv_wr_set_ud_addr(qpx, &ah.ah, 0xabcdef, 0x11111111);
    ibv_wr_set_sge(qpx, 1, 0x1000, 8);
    ASSERT_EQ(ibv_wr_complete(qpx), 0);
    const auto w = sq_slot(0);
    EXPECT_EQ(w.wr.ud.ah_num, 0x1234U);
    EXPECT_EQ(w.wr.ud.remote_qpn, 0xabcdefU);
    EXPECT_EQ(w.wr.ud.remote_qkey, 0x11111111U);
}

TEST(SendOps, WhatEachQpTypeOffers) {
    EXPECT_TRUE(send_ops_supported(IBV_QPT_RC, IBV_QP_EX_WITH_RDMA_READ |
                                                       IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
                                                       IBV_QP_EX_WITH_SEND_WITH_INV));
    EXPECT_TRUE(send_ops_supported(IBV_QPT_RC, IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV));
    EXPECT_TRUE(send_ops_supported(IBV_QPT_UC, IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV));
    EXPECT_FALSE(send_ops_supported(IBV_QPT_UD, IBV_QP_EX_WITH_BIND_MW));
    EXPECT_FALSE(send_ops_supported(IBV_QPT_UD, IBV_QP_EX_WITH_LOCAL_INV));
    EXPECT_FALSE(send_ops_supported(IBV_QPT_RC, IBV_QP_EX_WITH_TSO));
    EXPECT_TRUE(send_ops_supported(IBV_QPT_UC, IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM));
    EXPECT_FALSE(send_ops_supported(IBV_QPT_UC, IBV_QP_EX_WITH_RDMA_READ));
    EXPECT_TRUE(send_ops_supported(IBV_QPT_UD, IBV_QP_EX_WITH_SEND_WITH_IMM));
    EXPECT_FALSE(send_ops_supported(IBV_QPT_UD, IBV_QP_EX_WITH_RDMA_WRITE));
    EXPECT_TRUE(send_ops_supported(IBV_QPT_XRC_SEND,
                                   IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD));
    EXPECT_FALSE(send_ops_supported(IBV_QPT_XRC_SEND, IBV_QP_EX_WITH_ATOMIC_WRITE));
    EXPECT_FALSE(send_ops_supported(IBV_QPT_XRC_RECV, IBV_QP_EX_WITH_SEND));
}

TEST_F(FakeQp, AQpWithoutSendOpsIsNotExtended) {
    EXPECT_EQ(ibv_qp_to_qp_ex(ibqp()), nullptr);
}

// Several application threads post to one QP while a "kernel" thread
// drains the SQ: every WR lands exactly once.
TEST_F(FakeQp, ConcurrentPostersAndAConsumingKernel) {
    constexpr int kThreads = 3;
    constexpr std::uint64_t kPerThread = 20000;
    std::atomic<bool> stop{false};
    std::set<std::uint64_t> seen;
    bool duplicate = false;

    std::thread kernel{[&] {
        ConsumerRing sq{sq_mem_.base(), sq_mem_.geometry()};
        while (seen.size() < kThreads * kPerThread && !stop) {
            (void)cmd_fd_.doorbells();
            const std::uint32_t n = sq.available();
            for (std::uint32_t i = 0; i < n; ++i) {
                sroce_send_wqe wqe{};
                std::memcpy(&wqe, sq.peek(i), sizeof(wqe));
                duplicate |= !seen.insert(wqe.wr_id).second;
            }
            if (n != 0) {
                sq.consume(n);
            } else {
                std::this_thread::yield();
            }
        }
    }};
    std::vector<std::thread> posters;
    posters.reserve(kThreads);
    for (int t = 0; t < kThreads; ++t) {
        posters.emplace_back([&, t] {
            ibv_sge sge{.addr = 0x1000, .length = 8, .lkey = 1};
            ibv_send_wr wr{};
            wr.opcode = IBV_WR_SEND;
            wr.sg_list = &sge;
            wr.num_sge = 1;
            for (std::uint64_t i = 0; i < kPerThread;) {
                wr.wr_id = (static_cast<std::uint64_t>(t) << 32) | i;
                ibv_send_wr* bad = nullptr;
                const int err = post_send(ibqp(), &wr, &bad);
                if (err == 0) {
                    ++i;
                } else if (err == ENOMEM) {
                    std::this_thread::yield();
                } else {
                    ADD_FAILURE() << "post_send: " << err;
                    stop = true;
                    return;
                }
            }
        });
    }
    for (auto& p : posters)
        p.join();
    kernel.join();
    EXPECT_FALSE(duplicate);
    EXPECT_EQ(seen.size(), kThreads * kPerThread);
}

class FakeCq : public ::testing::Test {
protected:
    static constexpr std::uint32_t kEntries = 16;
    void SetUp() override {
        cq_ = std::make_unique<Cq>();
        cq_->ring = ConsumerRing{mem_.base(), mem_.geometry()};
        kernel_ = ProducerRing{mem_.base(), mem_.geometry()};
    }
    // The kernel's side: writes n CQEs and publishes them.
    void produce(std::uint32_t n, std::uint64_t first_wr_id) {
        for (std::uint32_t i = 0; i < n; ++i) {
            ASSERT_GT(kernel_.free_slots(), 0U);
            sroce_cqe cqe{};
            cqe.wr_id = first_wr_id + i;
            cqe.status = IBV_WC_SUCCESS;
            cqe.opcode = IBV_WC_RECV;
            cqe.byte_len = 10 + i;
            cqe.qp_num = 0x42;
            std::memcpy(kernel_.next_slot(), &cqe, sizeof(cqe));
            kernel_.advance();
        }
        kernel_.publish();
    }
    ibv_cq* ibcq() { return &cq_->vcq.cq; }

    RingMemory mem_{kEntries, sizeof(sroce_cqe)};
    std::unique_ptr<Cq> cq_;
    ProducerRing kernel_;
};

TEST_F(FakeCq, PollReturnsPublishedCompletionsInOrder) {
    std::array<ibv_wc, 8> wc{};
    EXPECT_EQ(poll_cq(ibcq(), static_cast<int>(wc.size()), wc.data()), 0);
    produce(5, 1000);
    ASSERT_EQ(poll_cq(ibcq(), 3, wc.data()), 3);
    EXPECT_EQ(wc[0].wr_id, 1000U);
    EXPECT_EQ(wc[2].wr_id, 1002U);
    EXPECT_EQ(wc[2].byte_len, 12U);
    EXPECT_EQ(wc[2].qp_num, 0x42U);
    EXPECT_EQ(mem_.ctrl().consumer, 3U) << "slots handed back to the kernel";
    ASSERT_EQ(poll_cq(ibcq(), static_cast<int>(wc.size()), wc.data()), 2);
    EXPECT_EQ(wc[1].wr_id, 1004U);
    EXPECT_EQ(poll_cq(ibcq(), static_cast<int>(wc.size()), wc.data()), 0);
    EXPECT_EQ(poll_cq(ibcq(), -1, wc.data()), -EINVAL);
}

TEST_F(FakeCq, ExtendedPollWalksTheSameRing) {
    setup_cq_ex(*cq_);
    ibv_cq_ex* cqx = &cq_->vcq.cq_ex;
    ibv_poll_cq_attr attr{};
    EXPECT_EQ(ibv_start_poll(cqx, &attr), ENOENT);
    produce(3, 500);
    ASSERT_EQ(ibv_start_poll(cqx, &attr), 0);
    EXPECT_EQ(cqx->wr_id, 500U);
    EXPECT_EQ(cqx->status, IBV_WC_SUCCESS);
    EXPECT_EQ(ibv_wc_read_opcode(cqx), IBV_WC_RECV);
    EXPECT_EQ(ibv_wc_read_byte_len(cqx), 10U);
    EXPECT_EQ(ibv_wc_read_qp_num(cqx), 0x42U);
    ASSERT_EQ(ibv_next_poll(cqx), 0);
    EXPECT_EQ(cqx->wr_id, 501U);
    EXPECT_EQ(ibv_wc_read_byte_len(cqx), 11U);
    ASSERT_EQ(ibv_next_poll(cqx), 0);
    EXPECT_EQ(cqx->wr_id, 502U);
    EXPECT_EQ(ibv_next_poll(cqx), ENOENT);
    EXPECT_EQ(mem_.ctrl().consumer, 0U) << "handed back only at end_poll";
    ibv_end_poll(cqx);
    EXPECT_EQ(mem_.ctrl().consumer, 3U);

    // The classic poll sees what is left, and the lock was released.
    produce(2, 600);
    ASSERT_EQ(ibv_start_poll(cqx, &attr), 0);
    ibv_end_poll(cqx); // consumes one
    std::array<ibv_wc, 4> wc{};
    ASSERT_EQ(poll_cq(ibcq(), 4, wc.data()), 1);
    EXPECT_EQ(wc[0].wr_id, 601U);

    attr.comp_mask = 1;
    EXPECT_EQ(ibv_start_poll(cqx, &attr), EINVAL);
}

TEST_F(FakeCq, PollingKeepsUpWithAKernelThread) {
    constexpr std::uint64_t kTotal = 200000;
    std::thread kernel{[&] {
        for (std::uint64_t next = 0; next < kTotal;) {
            const std::uint32_t n = kernel_.free_slots();
            if (n == 0) {
                std::this_thread::yield();
                continue;
            }
            const auto batch =
                    static_cast<std::uint32_t>(std::min<std::uint64_t>(n, kTotal - next));
            for (std::uint32_t i = 0; i < batch; ++i) {
                sroce_cqe cqe{};
                cqe.wr_id = next + i;
                std::memcpy(kernel_.next_slot(i), &cqe, sizeof(cqe));
            }
            kernel_.advance(batch);
            kernel_.publish();
            next += batch;
        }
    }};
    std::array<ibv_wc, 7> wc{};
    std::uint64_t expected = 0;
    while (expected < kTotal) {
        const int n = poll_cq(ibcq(), static_cast<int>(wc.size()), wc.data());
        ASSERT_GE(n, 0);
        for (int i = 0; i < n; ++i)
            ASSERT_EQ(wc[static_cast<std::size_t>(i)].wr_id, expected++);
        if (n == 0)
            std::this_thread::yield();
    }
    kernel.join();
}

// A verbs context over a pipe whose buffer is full: a command written to it
// (resize_cq's ibv_cmd_resize_cq falls back to write() on a pipe) blocks
// until release() drains it, as a kernel busy allocating the new ring would
// hold the caller. No response is written: the resize then fails.
class StalledCmdFd {
public:
    StalledCmdFd() {
        std::array<int, 2> fds{-1, -1};
        if (::pipe2(fds.data(), O_CLOEXEC | O_NONBLOCK) != 0)
            return;
        read_end_ = fds[0];
        const std::array<char, 512> junk{};
        while (::write(fds[1], junk.data(), junk.size()) > 0) {
        }
        (void)::fcntl(fds[1], F_SETFL, 0); // full, and now blocking
        device_.ops = &device_ops_;
        device_.refcount = 1;
        std::strcpy(device_.device.name, "fake0");
        // The API takes the member offset disguised as a pointer.
        // NOLINTNEXTLINE(performance-no-int-to-ptr)
        auto* const offset = reinterpret_cast<verbs_context*>(offsetof(Context, vctx));
        ctx_ = static_cast<Context*>(
                _verbs_init_and_alloc_context(&device_.device, fds[1], sizeof(Context), offset, 0));
        if (ctx_ == nullptr)
            ::close(fds[1]);
    }
    StalledCmdFd(const StalledCmdFd&) = delete;
    StalledCmdFd& operator=(const StalledCmdFd&) = delete;
    StalledCmdFd(StalledCmdFd&&) = delete;
    StalledCmdFd& operator=(StalledCmdFd&&) = delete;
    ~StalledCmdFd() {
        if (ctx_ != nullptr) {
            ctx_->vctx.context.async_fd = -1;
            verbs_uninit_context(&ctx_->vctx); // closes the write end
            std::free(ctx_); // NOLINT(cppcoreguidelines-no-malloc): libibverbs' calloc
        }
        ::close(read_end_);
    }
    [[nodiscard]] ibv_context* context() const {
        return ctx_ == nullptr ? nullptr : &ctx_->vctx.context;
    }
    void release() const {
        std::array<char, 4096> buf{};
        while (::read(read_end_, buf.data(), buf.size()) > 0) {
        }
    }

private:
    int read_end_ = -1;
    verbs_device_ops device_ops_{};
    verbs_device device_{};
    Context* ctx_ = nullptr;
};

// Whether thread tid is blocked in write(2), from /proc.
bool in_write(pid_t tid) {
    std::ifstream f{"/proc/self/task/" + std::to_string(tid) + "/syscall"};
    long nr = -1;
    return (f >> nr) && nr == SYS_write;
}

TEST_F(FakeCq, PollDoesNotWaitForAResizeInTheKernel) {
    StalledCmdFd cmd_fd;
    ASSERT_NE(cmd_fd.context(), nullptr);
    cq_->vcq.cq.context = cmd_fd.context();
    setup_cq_ex(*cq_);
    produce(3, 700);

    std::atomic<pid_t> resizer_tid{0};
    std::atomic<int> resize_err{-1};
    std::thread resizer{[&] {
        resizer_tid.store(::gettid(), std::memory_order_release);
        resize_err.store(resize_cq(ibcq(), 32), std::memory_order_release);
    }};
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    pid_t tid = 0;
    while ((tid = resizer_tid.load(std::memory_order_acquire)) == 0 || !in_write(tid)) {
        if (std::chrono::steady_clock::now() > deadline)
            break;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    EXPECT_TRUE(tid != 0 && in_write(tid)) << "resize_cq never reached its write()";

    // A poller while the resize is in the kernel: must answer, not spin.
    std::atomic<int> polled{-1};
    std::atomic<int> start{-1};
    std::thread poller{[&] {
        std::array<ibv_wc, 4> wc{};
        polled.store(poll_cq(ibcq(), 4, wc.data()), std::memory_order_release);
        ibv_poll_cq_attr attr{};
        start.store(ibv_start_poll(&cq_->vcq.cq_ex, &attr), std::memory_order_release);
    }};
    const auto poll_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (start.load(std::memory_order_acquire) == -1 &&
           std::chrono::steady_clock::now() < poll_deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const int polled_during = polled.load(std::memory_order_acquire);
    const int start_during = start.load(std::memory_order_acquire);
    cmd_fd.release();
    poller.join();
    resizer.join();
    EXPECT_EQ(polled_during, 0) << "poll_cq blocked (-1) or consumed the ring while resize_cq "
                                   "was in its system call";
    EXPECT_EQ(start_during, ENOENT) << "ibv_start_poll blocked (-1) or walked the ring";
    if (start_during == 0)
        ibv_end_poll(&cq_->vcq.cq_ex);

    // No response came: the resize failed and the CQ polls its ring again.
    EXPECT_NE(resize_err.load(std::memory_order_acquire), 0);
    if (polled_during == 0) {
        std::array<ibv_wc, 4> wc{};
        ASSERT_EQ(poll_cq(ibcq(), 4, wc.data()), 3);
        EXPECT_EQ(wc[0].wr_id, 700U);
    }
}

} // namespace
} // namespace sroce
