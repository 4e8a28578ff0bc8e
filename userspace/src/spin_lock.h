// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#pragma once

#include <atomic>

namespace sroce {

// Guards a queue's private state across the few instructions of a post or
// a poll; meets the Lockable requirements (std::lock_guard, unique_lock).
// Posting threads never sleep here, so spinning beats a futex round trip.
class SpinLock {
public:
    void lock() noexcept {
        while (locked_.exchange(true, std::memory_order_acquire)) {
            while (locked_.load(std::memory_order_relaxed))
                cpu_relax();
        }
    }
    bool try_lock() noexcept {
        return !locked_.load(std::memory_order_relaxed) &&
               !locked_.exchange(true, std::memory_order_acquire);
    }
    void unlock() noexcept { locked_.store(false, std::memory_order_release); }

private:
    static void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    }

    std::atomic<bool> locked_{false};
};

} // namespace sroce
