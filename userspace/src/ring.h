// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// The two ends of a ring shared with the kernel (layout and ordering rules:
// include/uapi/rdma/sroce-abi.h).
//
// Each side owns one free-running 32-bit counter. The owner keeps a private
// copy, so it never reads back its own shared counter, and publishes it
// with a store-release after writing (producer) or reading (consumer)
// slots; the other side's counter is read with a load-acquire. Full is
// producer - consumer == num_entries; unsigned arithmetic makes wrap-around
// of the counters a non-event.
//
// These classes hold no lock: each end must be driven by one thread at a
// time (the verbs objects lock around them).
#pragma once

#include <rdma/sroce-abi.h>

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <type_traits>

namespace sroce {

static_assert(sizeof(sroce_ring_ctrl) == SROCE_RING_SLOTS_OFFSET);
static_assert(offsetof(sroce_ring_ctrl, consumer) == 64, "counters on their own cache lines");
static_assert(offsetof(sroce_ring_ctrl, flags) == 68, "flags: a reserved word of ABI version 1");

// A ring's shape, as the kernel described it in a create response.
struct RingGeometry {
    std::uint32_t num_entries = 0;
    std::uint32_t stride = 0;

    // Bytes the ring occupies from the start of its mapping.
    [[nodiscard]] constexpr std::uint64_t bytes() const noexcept {
        return SROCE_RING_SLOTS_OFFSET + std::uint64_t{num_entries} * stride;
    }
};

// Checks a kernel-provided ring description before it is mapped: a power
// of two of slots, each at least min_stride bytes and 8-byte aligned, all
// within mmap_len. nullopt means "do not touch this ring".
std::optional<RingGeometry> validate_ring(const sroce_queue_info& info,
                                          std::uint32_t min_stride) noexcept;

namespace ring_detail {

inline std::atomic_ref<std::uint32_t> counter(std::byte* base, std::size_t offset) noexcept {
    // The control block is the first bytes of a page-aligned mapping.
    return std::atomic_ref<std::uint32_t>{*reinterpret_cast<std::uint32_t*>(base + offset)};
}

} // namespace ring_detail

// Where a ring's slots are; shared by both ends.
class RingView {
public:
    RingView() noexcept = default;
    RingView(std::byte* base, RingGeometry geometry) noexcept
        : base_{base}, mask_{geometry.num_entries - 1}, stride_{geometry.stride} {}

    [[nodiscard]] std::uint32_t num_entries() const noexcept { return mask_ + 1; }
    [[nodiscard]] std::uint32_t stride() const noexcept { return stride_; }
    [[nodiscard]] bool valid() const noexcept { return base_ != nullptr; }

    // The slot a counter value designates.
    [[nodiscard]] std::byte* slot_at(std::uint32_t counter) const noexcept {
        return base_ + SROCE_RING_SLOTS_OFFSET + std::size_t{counter & mask_} * stride_;
    }

    [[nodiscard]] std::atomic_ref<std::uint32_t> shared_producer() const noexcept {
        return ring_detail::counter(base_, offsetof(sroce_ring_ctrl, producer));
    }
    [[nodiscard]] std::atomic_ref<std::uint32_t> shared_consumer() const noexcept {
        return ring_detail::counter(base_, offsetof(sroce_ring_ctrl, consumer));
    }
    // SROCE_RING_FLAG_* bits; the kernel writes them (0 before it knew any).
    [[nodiscard]] std::atomic_ref<std::uint32_t> shared_flags() const noexcept {
        return ring_detail::counter(base_, offsetof(sroce_ring_ctrl, flags));
    }

    // Slots in use, from a pair of counters; a peer counter further away
    // than the ring holds (a corrupt or hostile peer) reads as a full ring.
    [[nodiscard]] std::uint32_t used(std::uint32_t producer,
                                     std::uint32_t consumer) const noexcept {
        const std::uint32_t n = producer - consumer;
        return n > num_entries() ? num_entries() : n;
    }

private:
    std::byte* base_ = nullptr;
    std::uint32_t mask_ = 0;
    std::uint32_t stride_ = 0;
};

// The end that fills slots: the provider for SQ/RQ/SRQ, the kernel for a CQ.
class ProducerRing {
public:
    ProducerRing() noexcept = default;
    // Starts from the counters found in the ring (the kernel may hand over
    // a ring that is not at zero, e.g. after a CQ resize).
    ProducerRing(std::byte* base, RingGeometry geometry) noexcept
        : view_{base, geometry}, head_{view_.shared_producer().load(std::memory_order_relaxed)},
          cached_consumer_{view_.shared_consumer().load(std::memory_order_acquire)} {}

    [[nodiscard]] const RingView& view() const noexcept { return view_; }
    [[nodiscard]] bool valid() const noexcept { return view_.valid(); }
    [[nodiscard]] std::byte* slot_at(std::uint32_t counter) const noexcept {
        return view_.slot_at(counter);
    }

    // Slots that can be filled now. Reads the consumer (acquire) only when
    // the cached view does not show `wanted` free slots: the consumer only
    // moves forward, so a stale cache can under-report space, never invent it.
    [[nodiscard]] std::uint32_t free_slots(std::uint32_t wanted = 1) noexcept {
        std::uint32_t free = view_.num_entries() - view_.used(head_, cached_consumer_);
        if (free < wanted) {
            cached_consumer_ = view_.shared_consumer().load(std::memory_order_acquire);
            free = view_.num_entries() - view_.used(head_, cached_consumer_);
        }
        return free;
    }

    // The n-th slot after the last one produced (n < free_slots()).
    [[nodiscard]] std::byte* next_slot(std::uint32_t n = 0) const noexcept {
        return view_.slot_at(head_ + n);
    }

    // Counts n more slots as filled; they stay invisible until publish().
    void advance(std::uint32_t n = 1) noexcept { head_ += n; }

    // Makes every filled slot visible to the consumer.
    void publish() noexcept { view_.shared_producer().store(head_, std::memory_order_release); }

    [[nodiscard]] std::uint32_t head() const noexcept { return head_; }

private:
    RingView view_;
    std::uint32_t head_ = 0;
    std::uint32_t cached_consumer_ = 0;
};

// The end that drains slots: the provider for a CQ, the kernel for SQ/RQ.
class ConsumerRing {
public:
    ConsumerRing() noexcept = default;
    ConsumerRing(std::byte* base, RingGeometry geometry) noexcept
        : view_{base, geometry}, tail_{view_.shared_consumer().load(std::memory_order_relaxed)} {}

    [[nodiscard]] const RingView& view() const noexcept { return view_; }
    [[nodiscard]] bool valid() const noexcept { return view_.valid(); }
    [[nodiscard]] std::byte* slot_at(std::uint32_t counter) const noexcept {
        return view_.slot_at(counter);
    }

    // Slots the producer has published and we have not consumed (acquire:
    // their contents are visible once this returns).
    [[nodiscard]] std::uint32_t available() noexcept {
        return view_.used(view_.shared_producer().load(std::memory_order_acquire), tail_);
    }

    // The n-th unconsumed slot (n < available()).
    [[nodiscard]] const std::byte* peek(std::uint32_t n = 0) const noexcept {
        return view_.slot_at(tail_ + n);
    }

    // Hands n slots back to the producer (release: our reads of them are
    // done before it may overwrite them).
    void consume(std::uint32_t n) noexcept {
        tail_ += n;
        view_.shared_consumer().store(tail_, std::memory_order_release);
    }

    [[nodiscard]] std::uint32_t tail() const noexcept { return tail_; }

    // Drops the unconsumed slots `discard` picks, keeping the order of the
    // rest: kept slots move towards the producer end, then the consumer
    // skips the freed ones. The producer writes only past the index read
    // here, and the slots before it are the consumer's until consumed, so
    // this end alone rewrites them. Returns how many were dropped.
    template <typename Pred>
    std::uint32_t discard_if(Pred discard) noexcept {
        const std::uint32_t n =
                view_.used(view_.shared_producer().load(std::memory_order_acquire), tail_);
        std::uint32_t dropped = 0;
        for (std::uint32_t i = n; i-- > 0;) {
            std::byte* slot = view_.slot_at(tail_ + i);
            if (discard(static_cast<const std::byte*>(slot))) {
                ++dropped;
            } else if (dropped != 0) {
                std::memcpy(view_.slot_at(tail_ + i + dropped), slot, view_.stride());
            }
        }
        if (dropped != 0)
            consume(dropped);
        return dropped;
    }

private:
    RingView view_;
    std::uint32_t tail_ = 0;
};

// The provider's objects embed ring ends after a libibverbs struct and are
// converted from it with reinterpret_cast: keep them standard-layout.
static_assert(std::is_standard_layout_v<ProducerRing> && std::is_standard_layout_v<ConsumerRing>);

inline std::optional<RingGeometry> validate_ring(const sroce_queue_info& info,
                                                 std::uint32_t min_stride) noexcept {
    const RingGeometry geometry{info.num_entries, info.stride};
    if (geometry.num_entries == 0 || !std::has_single_bit(geometry.num_entries))
        return std::nullopt;
    if (geometry.stride < min_stride || geometry.stride % 8 != 0)
        return std::nullopt;
    if (geometry.bytes() > info.mmap_len)
        return std::nullopt;
    return geometry;
}

} // namespace sroce
