// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// Ring index math and ordering, on a plain buffer standing in for the
// mapping the kernel provides.
#include "ring.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace sroce {
namespace {

// A ring in ordinary memory, laid out as the kernel lays out a mapping.
class FakeRing {
public:
    FakeRing(std::uint32_t num_entries, std::uint32_t stride, std::uint32_t start = 0)
        : geometry_{num_entries, stride},
          storage_((geometry_.bytes() + sizeof(std::uint64_t) - 1) / sizeof(std::uint64_t)) {
        set_producer(start);
        set_consumer(start);
    }
    [[nodiscard]] std::byte* base() { return reinterpret_cast<std::byte*>(storage_.data()); }
    [[nodiscard]] RingGeometry geometry() const { return geometry_; }
    [[nodiscard]] sroce_ring_ctrl& ctrl() { return *reinterpret_cast<sroce_ring_ctrl*>(base()); }
    void set_producer(std::uint32_t v) { ctrl().producer = v; }
    void set_consumer(std::uint32_t v) { ctrl().consumer = v; }

    [[nodiscard]] ProducerRing producer() { return ProducerRing{base(), geometry_}; }
    [[nodiscard]] ConsumerRing consumer() { return ConsumerRing{base(), geometry_}; }

private:
    RingGeometry geometry_;
    std::vector<std::uint64_t> storage_; // 8-byte aligned, zeroed
};

sroce_queue_info info(std::uint32_t entries, std::uint32_t stride, std::uint32_t mmap_len) {
    sroce_queue_info q{};
    q.mmap_key = 0x1000;
    q.num_entries = entries;
    q.stride = stride;
    q.mmap_len = mmap_len;
    return q;
}

TEST(ValidateRing, AcceptsWhatTheKernelDescribes) {
    const auto g = validate_ring(info(64, 64, 128 + 64 * 64), 16);
    ASSERT_TRUE(g.has_value());
    EXPECT_EQ(g->num_entries, 64U);
    EXPECT_EQ(g->stride, 64U);
    EXPECT_TRUE(validate_ring(info(1, 16, 4096), 16).has_value());
}

TEST(ValidateRing, RejectsBadShapes) {
    EXPECT_FALSE(validate_ring(info(0, 64, 4096), 16));
    EXPECT_FALSE(validate_ring(info(48, 64, 1 << 20), 16)) << "not a power of two";
    EXPECT_FALSE(validate_ring(info(64, 8, 4096), 16)) << "stride below minimum";
    EXPECT_FALSE(validate_ring(info(64, 68, 1 << 20), 16)) << "stride not 8-aligned";
    EXPECT_FALSE(validate_ring(info(64, 64, 128 + 64 * 64 - 1), 16)) << "beyond mmap_len";
    EXPECT_FALSE(validate_ring(info(1U << 31, 1U << 12, 0xffffffffU), 16)) << "64-bit size";
}

TEST(ProducerRing, FillsToCapacityThenReportsFull) {
    FakeRing ring{8, 32};
    auto p = ring.producer();
    EXPECT_EQ(p.free_slots(), 8U);
    for (std::uint32_t i = 0; i < 8; ++i) {
        ASSERT_GE(p.free_slots(), 1U);
        p.advance();
    }
    EXPECT_EQ(p.free_slots(), 0U);
    p.publish();
    EXPECT_EQ(ring.ctrl().producer, 8U);

    // The consumer returns three slots: visible on the next check.
    ring.set_consumer(3);
    EXPECT_EQ(p.free_slots(), 3U);
}

TEST(ProducerRing, NothingIsVisibleBeforePublish) {
    FakeRing ring{4, 16};
    auto p = ring.producer();
    p.advance(2);
    EXPECT_EQ(ring.ctrl().producer, 0U);
    auto c = ring.consumer();
    EXPECT_EQ(c.available(), 0U);
    p.publish();
    EXPECT_EQ(c.available(), 2U);
}

TEST(ProducerRing, SlotsAreStrideApartAfterTheControlBlock) {
    FakeRing ring{4, 48};
    auto p = ring.producer();
    EXPECT_EQ(p.next_slot(), ring.base() + SROCE_RING_SLOTS_OFFSET);
    EXPECT_EQ(p.next_slot(1), ring.base() + SROCE_RING_SLOTS_OFFSET + 48);
    EXPECT_EQ(p.next_slot(4), p.next_slot(0)) << "index wraps at num_entries";
}

TEST(Rings, CountersWrapAroundTwoToThe32) {
    constexpr std::uint32_t kStart = 0xfffffffaU;
    FakeRing ring{8, 16, kStart};
    auto p = ring.producer();
    auto c = ring.consumer();
    EXPECT_EQ(p.head(), kStart);
    EXPECT_EQ(c.tail(), kStart);

    std::uint64_t next_write = 0;
    std::uint64_t next_read = 0;
    for (int round = 0; round < 10; ++round) {
        const std::uint32_t batch = p.free_slots();
        ASSERT_EQ(batch, 8U) << "round " << round;
        for (std::uint32_t i = 0; i < batch; ++i) {
            std::memcpy(p.next_slot(i), &next_write, sizeof(next_write));
            ++next_write;
        }
        p.advance(batch);
        p.publish();
        EXPECT_EQ(p.free_slots(), 0U);
        ASSERT_EQ(c.available(), batch);
        for (std::uint32_t i = 0; i < batch; ++i) {
            std::uint64_t v = 0;
            std::memcpy(&v, c.peek(i), sizeof(v));
            EXPECT_EQ(v, next_read++);
        }
        c.consume(batch);
    }
    EXPECT_EQ(ring.ctrl().producer, kStart + 80);
    EXPECT_LT(ring.ctrl().producer, kStart) << "the counter did wrap";
    EXPECT_EQ(ring.ctrl().consumer, ring.ctrl().producer);
    // Slot of the counter that wrapped to 0 is slot 0.
    EXPECT_EQ(p.slot_at(0), ring.base() + SROCE_RING_SLOTS_OFFSET);
    EXPECT_EQ(p.slot_at(0xffffffffU), ring.base() + SROCE_RING_SLOTS_OFFSET + std::size_t{7} * 16);
}

TEST(Rings, FullAndEmptyAcrossTheWrap) {
    // producer - consumer == num_entries is full even when producer < consumer
    // numerically.
    FakeRing ring{4, 16, 0xfffffffeU};
    auto p = ring.producer();
    p.advance(4);
    p.publish();
    EXPECT_EQ(ring.ctrl().producer, 2U);
    EXPECT_EQ(p.free_slots(), 0U);
    auto c = ring.consumer();
    EXPECT_EQ(c.available(), 4U);
    c.consume(4);
    EXPECT_EQ(c.available(), 0U);
    EXPECT_EQ(p.free_slots(), 4U);
}

TEST(Rings, ACorruptPeerCounterReadsAsFullNotAsHugeSpace) {
    FakeRing ring{16, 16};
    ring.set_consumer(1000); // consumer "ahead" of the producer
    auto p = ring.producer();
    EXPECT_EQ(p.free_slots(), 0U);
    ring.set_consumer(0);
    EXPECT_EQ(p.free_slots(), 16U) << "a full view re-reads the consumer";

    auto c = ring.consumer();
    ring.set_producer(5000); // producer further ahead than the ring holds
    EXPECT_EQ(c.available(), 16U);
}

// Fills a ring of 8-byte slots with the given values, across the wrap.
void produce(FakeRing& ring, const std::vector<std::uint64_t>& values) {
    auto p = ring.producer();
    for (const std::uint64_t v : values) {
        std::memcpy(p.next_slot(), &v, sizeof(v));
        p.advance();
    }
    p.publish();
}

std::vector<std::uint64_t> drain(ConsumerRing& c) {
    std::vector<std::uint64_t> out;
    while (c.available() != 0) {
        std::uint64_t v = 0;
        std::memcpy(&v, c.peek(), sizeof(v));
        out.push_back(v);
        c.consume(1);
    }
    return out;
}

bool odd(const std::byte* slot) {
    std::uint64_t v = 0;
    std::memcpy(&v, slot, sizeof(v));
    return (v & 1) != 0;
}

TEST(Rings, DiscardKeepsTheOrderOfTheRestAcrossTheWrap) {
    FakeRing ring{8, 8, 0xfffffffcU};
    produce(ring, {1, 2, 3, 4, 6, 7, 8});
    auto c = ring.consumer();
    EXPECT_EQ(c.discard_if(odd), 3U);
    EXPECT_EQ(ring.ctrl().consumer, 0xfffffffcU + 3) << "the freed slots go back to the producer";
    EXPECT_EQ(drain(c), (std::vector<std::uint64_t>{2, 4, 6, 8}));
}

TEST(Rings, DiscardOfNothingOrEverything) {
    FakeRing ring{4, 8};
    auto c = ring.consumer();
    EXPECT_EQ(c.discard_if(odd), 0U) << "empty";
    produce(ring, {2, 4});
    EXPECT_EQ(c.discard_if(odd), 0U);
    EXPECT_EQ(drain(c), (std::vector<std::uint64_t>{2, 4}));
    produce(ring, {1, 3, 5, 7});
    EXPECT_EQ(c.discard_if(odd), 4U);
    EXPECT_EQ(c.available(), 0U);
}

TEST(Rings, DiscardLooksAtNoMoreThanTheRingHolds) {
    FakeRing ring{4, 8};
    produce(ring, {1, 2, 3, 4});
    ring.set_producer(5000); // a producer counter beyond the ring
    auto c = ring.consumer();
    std::uint32_t looked = 0;
    c.discard_if([&looked](const std::byte*) {
        ++looked;
        return false;
    });
    EXPECT_EQ(looked, 4U);
}

TEST(Rings, ProducerStartsFromTheCountersInTheRing) {
    // As after a CQ resize: the kernel hands over a ring with CQEs in it.
    FakeRing ring{8, 64};
    ring.set_producer(5);
    auto c = ring.consumer();
    EXPECT_EQ(c.available(), 5U);
    auto p = ring.producer();
    EXPECT_EQ(p.head(), 5U);
    EXPECT_EQ(p.free_slots(), 3U);
}

// Producer and consumer on two threads over the same memory, as the
// provider and the kernel: every slot arrives once, in order, intact, with
// the counters crossing 2^32 on the way.
void stress(std::uint32_t entries, std::uint32_t stride, std::uint32_t start, std::uint64_t total) {
    FakeRing ring{entries, stride, start};
    const std::uint32_t words = stride / sizeof(std::uint64_t);
    std::atomic<bool> failed{false};

    std::thread producer_thread{[&] {
        auto p = ring.producer();
        std::minstd_rand rng{1};
        std::vector<std::uint64_t> slot(words);
        for (std::uint64_t seq = 0; seq < total && !failed;) {
            const std::uint32_t free = p.free_slots();
            if (free == 0) {
                std::this_thread::yield();
                continue;
            }
            const auto batch = static_cast<std::uint32_t>(
                    std::min<std::uint64_t>({free, 1 + rng() % entries, total - seq}));
            for (std::uint32_t i = 0; i < batch; ++i, ++seq) {
                for (std::uint32_t w = 0; w < words; ++w)
                    slot[w] = seq * 0x9e3779b97f4a7c15ULL + w;
                std::memcpy(p.next_slot(i), slot.data(), stride);
            }
            p.advance(batch);
            p.publish();
        }
    }};

    auto c = ring.consumer();
    std::minstd_rand rng{2};
    std::vector<std::uint64_t> slot(words);
    for (std::uint64_t seq = 0; seq < total && !failed;) {
        const std::uint32_t avail = c.available();
        if (avail == 0) {
            std::this_thread::yield();
            continue;
        }
        const auto batch =
                std::min<std::uint32_t>(avail, 1 + static_cast<std::uint32_t>(rng() % entries));
        for (std::uint32_t i = 0; i < batch; ++i, ++seq) {
            std::memcpy(slot.data(), c.peek(i), stride);
            for (std::uint32_t w = 0; w < words; ++w) {
                if (slot[w] != seq * 0x9e3779b97f4a7c15ULL + w) {
                    failed = true;
                    ADD_FAILURE() << "slot " << seq << " word " << w << " is " << slot[w];
                    break;
                }
            }
        }
        c.consume(batch);
    }
    producer_thread.join();
    EXPECT_FALSE(failed);
    EXPECT_EQ(ring.ctrl().producer, static_cast<std::uint32_t>(start + total));
    EXPECT_EQ(ring.ctrl().consumer, ring.ctrl().producer);
}

TEST(RingStress, TwoThreadsSmallRingAcrossTheWrap) {
    stress(8, 64, 0xffff0000U, 400000);
}

TEST(RingStress, TwoThreadsLargeSlotsAcrossTheWrap) {
    stress(256, 256, 0xfffffff0U, 200000);
}

} // namespace
} // namespace sroce
